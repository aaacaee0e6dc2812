"""qcom_ext/tools/bench/cases_host_ptr.py: its cases run and compute the same thing (no timing)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def cases_module():
    return benchmark_module("cases_host_ptr")


def test_cases_are_declared_for_the_runner(cases_module):
    names = [s["name"] for s in cases_module._SPECS]
    expected = ["copy_in_out", "host_buffer_map"]
    assert names == expected + (["dmabuf_map"] if hasattr(os, "memfd_create") else [])
    assert {s["group"] for s in cases_module._SPECS} == {"zero_copy"}
    assert [s["name"] for s in cases_module._SPECS if s["baseline"]] == ["copy_in_out"]


def test_every_case_increments_the_data(cases_module, device_caps, kernel_context, monkeypatch):
    monkeypatch.setattr(cases_module, "COUNT", 1 << 12)  # small: this checks results only
    for spec in cases_module._SPECS:
        state = spec["setup"](device_caps)
        for runs in (1, 2, 3):
            result = spec["run"](state)
            assert np.array_equal(result[:4], np.full(4, runs, np.uint32)), spec["name"]
    assert "QCOM_EXT_DISABLE" not in os.environ or os.environ["QCOM_EXT_DISABLE"]
