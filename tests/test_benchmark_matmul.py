"""benchmarks/cases_matmul.py (``python -m benchmarks matmul-suite``) on a CPU device:
the small sizes, every row present and well-formed, the verdicts computed from them (no
timing checks: this VM's numbers mean nothing)."""

from __future__ import annotations

import argparse

import pytest
from conftest import lab_module


@pytest.fixture(scope="module")
def matmul_module():
    return lab_module("cases_matmul")


def test_the_suite_is_registered(matmul_module):
    (suite,) = matmul_module.SUITES
    assert suite.name == "matmul-suite" and matmul_module.CASES == []


def test_small_sizes_on_cpus(matmul_module, device_caps):
    """CPUs get the small sizes whatever is asked; GPUs the issue's unless --small."""
    gemv, gemm = matmul_module.sizes(device_caps, small=False)
    small = (matmul_module.SMALL_GEMV_SHAPES, matmul_module.SMALL_GEMM_SHAPE)
    full = (matmul_module.GEMV_SHAPES, matmul_module.GEMM_SHAPE)
    assert (gemv, gemm) == (small if device_caps.device_type != "gpu" else full)
    assert matmul_module.sizes(device_caps, small=True) == small


def test_the_suite_runs_on_pocl(matmul_module, device_caps, kernel_context, monkeypatch):
    monkeypatch.setattr(matmul_module, "SMALL_GEMV_SHAPES", ((96, 64),))
    monkeypatch.setattr(matmul_module, "SMALL_GEMM_SHAPE", (20, 40, 64))
    monkeypatch.setattr(matmul_module, "TUNE_BUDGET_S", 0.2)
    options = argparse.Namespace(rounds=1, small=True)
    result = matmul_module._run_suite(device_caps, options)
    rows = result.data["gemv"]
    paths = ["image", "buffer"] if device_caps.image_support else ["buffer"]
    formats = [(f, a or "float32") for f, a in matmul_module.GEMV_FORMATS]
    assert [(r["format"], r["activations"], r["path"]) for r in rows] == [
        (f, a, p) for f, a in formats for p in paths
    ]
    for row in rows:
        assert row["shape"] == [96, 64] and row["seconds"] > 0
        assert row["GB_s"] * 1e9 * row["seconds"] == pytest.approx(row["weight_bytes"])
        assert row["of_copy"] == pytest.approx(row["GB_s"] * 1e9 / result.data["buffer_copy_Bps"])
    assert rows[0]["weight_bytes"] == 96 * 64 * 2  # f16
    (gemm,) = result.data["gemm"]  # no torch with CUDA here
    assert gemm["what"].startswith("qcom_ext GEMM") and gemm["TFLOP_s"] > 0
    assert result.data["torch_gemv_s"] == {}
    assert "| (96, 64) | q4_0 | float32 |" in result.markdown
    assert "| read-only kernel, same bytes |" in result.markdown
    assert "an empty kernel" in result.markdown
    assert "| back to back: time, x torch |" in result.markdown
    for row in rows:
        assert row["back_to_back_seconds"] > 0
        assert row["read_only_seconds"] > 0
        assert row["read_only_of_copy"] == pytest.approx(
            row["weight_bytes"] / row["read_only_seconds"] / result.data["buffer_copy_Bps"]
        )
    verdicts = result.data["verdicts"]
    assert all("a kernel that only reads the same bytes" in v for v in verdicts)
    torch_lines = matmul_module.verdicts(rows, {"96x64": 1e-3}, result.data["gemm"])
    assert sum("back to back, as torch's graph runs" in v for v in torch_lines) == 2  # q8_0, q4_0
    assert [v.split(":")[0] for v in verdicts] == ["GEMV f16", "GEMV q8_0", "GEMV q4_0"]


def test_the_read_floor_grows_with_the_bytes(device_caps, kernel_context):
    """A read-only kernel of 64 MiB takes longer than one of 64 KiB (each byte is read:
    the kernel's own correctness is the Oclgrind case bench_read)."""
    import pyopencl as cl

    floor = lab_module("_read_floor")
    empty_seconds, read_only_seconds = floor.empty_seconds, floor.read_only_seconds

    context = cl.Context([device_caps.device()])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    small = read_only_seconds(queue, 64 << 10, copies=2, rounds=3)
    large = read_only_seconds(queue, 64 << 20, copies=2, rounds=3)
    assert 0 < small < large
    assert empty_seconds(queue, rounds=3) > 0
