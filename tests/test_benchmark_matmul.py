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
    monkeypatch.setattr(matmul_module, "GEMV_ROWS", (1, 3))
    # both activation paths, not every format: pocl 3.0 builds each GEMV for 0.5-1 CPU-s
    formats = (("f16", None), ("q4_0", None), ("q4_0", "q8_0"))
    monkeypatch.setattr(matmul_module, "GEMV_FORMATS", formats)
    monkeypatch.setattr(matmul_module, "MAX_COPIES", 3)
    monkeypatch.setattr(matmul_module, "TUNE_BUDGET_S", 0.01)  # the driver's choice and one
    options = argparse.Namespace(rounds=1, small=True)
    result = matmul_module._run_suite(device_caps, options)
    rows = result.data["gemv"]
    paths = ["image", "buffer"] if device_caps.image_support else ["buffer"]
    default = next(r["path"] for r in rows if r["default_path"])
    formats = [(f, a or "float32") for f, a in formats]
    assert [(r["format"], r["activations"], r["path"], r["rows"]) for r in rows] == [
        (f, a, p, m) for f, a in formats for p in paths for m in ((1, 3) if p == default else (1,))
    ]
    for row in rows:
        assert row["shape"] == [96, 64] and row["seconds"] > 0 and row["warm_seconds"] > 0
        assert row["copies"] == 3  # the cold rotation (MAX_COPIES here)
        assert row["GB_s"] * 1e9 * row["seconds"] == pytest.approx(row["weight_bytes"])
        assert row["of_copy"] == pytest.approx(row["GB_s"] * 1e9 / result.data["buffer_copy_Bps"])
        assert row["of_read_only"] == pytest.approx(row["seconds"] / row["read_only_seconds"])
        assert row["read_only_seconds"] > 0 and row["read_only_warm_seconds"] > 0
    assert rows[0]["weight_bytes"] == 96 * 64 * 2  # f16
    (gemm,) = result.data["gemm"]  # no torch with CUDA here
    assert gemm["what"].startswith("qcom_ext GEMM") and gemm["TFLOP_s"] > 0
    assert result.data["torch_gemv_s"] == {}
    assert "| (96, 64) | 3 | q4_0 | float32 |" in result.markdown
    assert "| read-only kernel, cold | x read-only |" in result.markdown
    assert "an empty kernel" in result.markdown and "cold: weights rotated" in result.markdown
    verdicts = result.data["verdicts"]
    assert [v.split(",")[0].split(":")[0] for v in verdicts] == [
        "integer path (q8_0 activations)",
        "GEMV f16",
        "GEMV q4_0",
    ]
    assert verdicts[0].startswith("integer path (q8_0 activations), q4_0 weights: at worst")


def _row(shape, m, fmt, act, seconds, of_read_only=1.0, of_copy=1.0):
    return {
        "shape": list(shape),
        "rows": m,
        "format": fmt,
        "activations": act,
        "path": "buffer",
        "default_path": True,
        "seconds": seconds,
        "of_read_only": of_read_only,
        "of_copy": of_copy,
    }


def test_verdicts_judge_issue_28s_targets_on_cold_times(matmul_module):
    """The integer path against the float path per (shape, M); at M = 1, q4_0's faster
    path against torch's cold time and each format's faster path against the read-only
    kernel; f16 at (32000, 4096) against the copy; (4096, 4096) is not judged."""
    big = (32000, 4096)
    rows = [
        _row(big, 1, "f16", "float32", 90e-6, of_read_only=1.1, of_copy=0.95),
        _row(big, 1, "q4_0", "float32", 40e-6, of_read_only=1.6),
        _row(big, 1, "q4_0", "q8_0", 30e-6, of_read_only=1.4),  # the faster q4_0 path
        _row(big, 2, "q4_0", "float32", 40e-6),
        _row(big, 2, "q4_0", "q8_0", 44e-6),  # the integer path slower at M = 2
        _row(big, 1, "q8_0", "float32", 60e-6),
        _row(big, 1, "q8_0", "q8_0", 55e-6),
    ]
    torch = {"32000x4096/M1": {"cold": 100e-6, "warm": 50e-6}}
    small = _row((4096, 4096), 1, "q4_0", "q8_0", 90e-6)  # 3x its float path: not judged
    small_float = {**small, "activations": "float32", "seconds": 30e-6}
    lines = matmul_module.verdicts([*rows, small, small_float], torch, [])
    assert lines[0].startswith("integer path (q8_0 activations), q8_0 weights: at worst 0.92x")
    assert lines[0].endswith(": met)")
    assert "q4_0 weights: at worst 1.10x the float path's time, at (32000, 4096) M=2" in lines[1]
    assert lines[1].endswith("NOT met)")
    # q4_0's faster path at M = 1 is the integer one: 30 of torch's cold 100 us
    assert "at worst 0.30x torch f16's time, at (32000, 4096) M=1 (<= 0.45x: met)" in lines[2]
    assert lines[5].startswith("GEMV q4_0: at worst 1.40x the time of a kernel that only reads")
    assert "at (32000, 4096) M=1 (<= 1.25x: NOT met); over M = 1..8: 1.40x" in lines[5]
    assert lines[6] == "GEMV f16 (32000, 4096) M=1: 0.95 of the buffer copy (>= 0.9: met)"
    torch["32000x4096/M1"]["cold"] = 50e-6  # 30 us is 0.6x of it
    assert "(<= 0.45x: NOT met)" in matmul_module.verdicts(rows, torch, [])[2]


def test_cold_copies_span_past_the_cache(matmul_module):
    cold = matmul_module.cold_copies
    assert cold(50 << 20, 32 << 20) * (32 << 20) > 2 * (50 << 20) + (32 << 20)
    assert cold(1 << 30, 64 << 20) == 33  # twice a 1 GiB cache, in 64 MiB copies, plus one
    assert cold(0, 1) == matmul_module.MAX_COPIES
    assert cold(0, 1 << 30) == 2  # alternate two: never the same W twice in a row


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
