"""The benchmark cases of cases_recording: its cases run and compute the same thing (no timing)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def cases_module():
    return benchmark_module("cases_recording")


def test_cases_are_declared_for_the_runner(cases_module):
    specs = cases_module._SPECS
    assert [s["name"] for s in specs] == [
        "naive_call",
        "preset_enqueue",
        "recording_replay",
        "recording_replay_direct",
        "recording_replay_update",
    ]
    assert {s["group"] for s in specs} == {"recording"}
    assert [s["name"] for s in specs if s["baseline"]] == ["preset_enqueue"]
    for spec, case in zip(specs, cases_module.CASES, strict=True):
        name = case["name"] if isinstance(case, dict) else case.name
        assert name == spec["name"] and callable(spec["setup"]) and callable(spec["run"])


def test_every_case_runs_the_same_pipeline(cases_module, device_caps, kernel_context, monkeypatch):
    monkeypatch.setattr(cases_module, "REPLAYS", 3)
    results = {}
    for spec in cases_module._SPECS:
        state = spec["setup"](device_caps)
        assert state["replays"] == 3
        spec["run"](state)
        out = []
        for buf in state["buffers"]:
            host = np.empty(buf.size // 4, np.uint32)
            cl.enqueue_copy(state["queue"], host, buf)
            out.append(host)
        results[spec["name"]] = out
        if "recording" in state:
            state["recording"].release()
    reference = results["naive_call"]
    assert any((b != 1).any() for b in reference)
    for name in ("preset_enqueue", "recording_replay", "recording_replay_direct"):
        for got, want in zip(results[name], reference, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=name)
    updated = results["recording_replay_update"]  # dispatch 0 adds 1 or 2 instead of 1
    assert not np.array_equal(updated[0], reference[0])
