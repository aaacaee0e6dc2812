"""qcom_ext/tools/bench/cases_factories.py: its cases make what they say (no timing)."""

from __future__ import annotations

import pyopencl as cl
import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def cases_module():
    return benchmark_module("cases_factories")


def test_each_group_compares_a_factory_with_pyopencls(cases_module):
    groups: dict[str, list] = {}
    for case in cases_module.CASES:
        groups.setdefault(case.group, []).append(case)
    assert {g: [c.name for c in cs] for g, cs in groups.items()} == {
        "factories": ["cl_context", "create_context", "create_context_caps"],
        "queue_factories": ["cl_command_queue", "create_queue"],
    }
    for members in groups.values():
        assert [c.baseline for c in members] == [True] + [False] * (len(members) - 1)
        assert all(c.target.limit_s == 10e-6 and c.target.over_baseline for c in members[1:])


def test_every_case_makes_its_object_on_the_device(cases_module, device_caps):
    kinds = {"factories": cl.Context, "queue_factories": cl.CommandQueue}
    for case in cases_module.CASES:
        made = case.run(case.setup(device_caps))
        assert isinstance(made, kinds[case.group]), case.name
        devices = made.devices if isinstance(made, cl.Context) else [made.device]
        assert [d.int_ptr for d in devices] == [device_caps.device_id], case.name
