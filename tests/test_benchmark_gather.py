"""qcom_ext/tools/bench/cases_gather.py: its cases compute what they claim (no timing checks);
the lab adds its torch row."""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types

import numpy as np
import pytest
from conftest import benchmark_module, lab_module


@pytest.fixture(scope="module")
def cases_module():
    return benchmark_module("cases_gather")


@pytest.fixture
def small(cases_module, monkeypatch, device_caps, kernel_context):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    monkeypatch.setenv(cases_module.SIZE_ENV, "66x34")
    monkeypatch.setattr(cases_module, "REPEATS", 2)
    return cases_module


def reference(data: np.ndarray) -> np.ndarray:
    upper, lower = data[0::2], data[1::2]
    return ((lower[:, 0::2] + lower[:, 1::2]) + (upper[:, 1::2] + upper[:, 0::2])) * 0.25


def test_cases_are_declared_for_the_runner(cases_module):
    names = [c.name for c in cases_module.CASES]  # the wheel's: no torch row
    assert names == ["gather_image_copy", "gather_downscale", "read_downscale"]
    assert [c.name for c in cases_module.CASES if c.baseline] == ["gather_image_copy"]
    assert {c.group for c in cases_module.CASES} == {"gather"}


def _fake_torch(cuda: bool) -> types.ModuleType:
    """A module named torch whose CUDA is (or is not) available: enough for the lab's
    import-time check."""
    torch = types.ModuleType("torch")
    torch.__spec__ = importlib.machinery.ModuleSpec("torch", None)
    torch.cuda = types.SimpleNamespace(is_available=lambda: cuda)
    return torch


@pytest.mark.parametrize("cuda", [True, False])
def test_the_labs_torch_row_joins_the_group(cases_module, monkeypatch, cuda):
    """benchmarks/cases_gather_torch.py adds torch_avg_pool2d to the wheel's group where
    torch with CUDA imports (it moves the gather downscale's bytes); the lab's runner
    times it beside the wheel's baseline."""
    lab = lab_module("cases_gather_torch")
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(cuda))
    try:
        importlib.reload(lab)
        assert [c.name for c in lab.CASES] == (["torch_avg_pool2d"] if cuda else [])
        assert all(c.group == "gather" and not c.baseline for c in lab.CASES)
        run = benchmark_module("run")
        chosen = run.select(run.discover(lab_module("__main__").LAB_PACKAGES), ["gather"])
        assert [c.name for c in chosen] == [c.name for c in cases_module.CASES + lab.CASES]
    finally:
        monkeypatch.undo()
        importlib.reload(lab)  # as this machine's torch has it
    assert cases_module.bytes_moved(lab.NAME, 4, 2) == cases_module.bytes_moved(
        "gather_downscale", 4, 2
    )


def test_copy_and_downscales_compute_their_results(small, device_caps):
    cases = [
        ("gather_image_copy", small.setup_copy, small.run_copy),
        ("gather_downscale", small.setup_gather, small.run_downscale),
        ("read_downscale", small.setup_read, small.run_downscale),
    ]
    for name, setup, run in cases:
        state = setup(device_caps)
        run(state)
        expected = state["data"] if name == "gather_image_copy" else reference(state["data"])
        np.testing.assert_array_equal(small.result_of(state), expected, err_msg=name)


def test_bytes_and_size(cases_module, monkeypatch):
    assert cases_module.bytes_moved("gather_image_copy", 4, 2) == 2 * 8 * 16
    assert cases_module.bytes_moved("gather_downscale", 4, 2) == (8 + 2) * 16
    monkeypatch.setenv(cases_module.SIZE_ENV, "1x9")
    with pytest.raises(ValueError, match="at least 2x2"):
        cases_module.image_size()
    monkeypatch.setenv(cases_module.SIZE_ENV, "big")
    with pytest.raises(ValueError, match="expected WIDTHxHEIGHT"):
        cases_module.image_size()


def test_script_reports_bandwidth_and_target(small, device_caps, capsys, monkeypatch):
    from test_samples import device_spec

    spec = device_spec(device_caps)
    monkeypatch.setenv("PYOPENCL_CTX", spec)  # main() sets it; restored after the test
    assert small.main(["--device", spec, "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "66x34 RGBA float -> 33x17" in out
    assert "gather_downscale" in out and "GB/s" in out
    assert "target: gather_downscale >= 60% of the image-copy bandwidth" in out
    assert "of buffer copy" in out and "buffer copy" in out.splitlines()[0]  # the roofline
