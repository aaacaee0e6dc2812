"""Matmul (``qcom_ext.ops.Linear``): GEMV weight bandwidth and GEMM FLOP/s, against the
device's buffer copy and torch on the same GPU.

    python -m benchmarks matmul-suite [--device nvidia] [--rounds 20] [--small] [--update-doc ...]

* GEMV, M = 1, (N, K) = (4096, 4096), (11008, 4096), (4096, 11008), weights f16, q8_0
  and q4_0 (q8_0 and q4_0 also with q8_0 activations), on each read path the device has
  (image1d_buffer views, buffers): device time from profiling events (median of
  ``--rounds``, local size tuned first), weight bytes (quants and scales) per second, and
  their fraction of the buffer-copy bandwidth (``clEnqueueCopyBuffer`` of 256 MiB,
  read + write, measured in the same run). Weights rotate through enough copies that
  they exceed twice the device's global-memory cache, so no call finds them cached.
  Target >= 75 % of the copy bandwidth for f16, q8_0 and q4_0. Beside each row, the
  time of a kernel that only reads the same bytes (``_read_floor``: what any kernel of
  that size can reach here) and, in the heading, an empty kernel's.
* torch ``F.linear`` in float16 on CUDA for the same GEMVs where torch and CUDA exist
  (the ratio of times; targets q4_0 <= 0.5x and q8_0 <= 0.75x torch's time), timed on
  the GPU alone (``_torch_timing``: a CUDA graph of the calls, no Python dispatch), and
  beside each verdict the read-only kernel's time against torch's: where that is above
  the target, no kernel of this size reaches it through OpenCL here. The verdicts use
  single launches; the "back to back" column times
  :data:`BACK_TO_BACK` calls released at once (queued behind a user event), as torch's
  graph replays its calls and as a decode loop that keeps the device busy runs them.
* GEMM, M = 512, (N, K) = (4096, 4096), f16 weights, float32 x: FLOP/s against torch
  float32 with TF32 off (target >= 50 %) and torch float16.

On a CPU device, or with ``--small`` (the option conv-suite defines), the sizes are
small ((N, K) = (256, 256), (512, 256), (256, 512), GEMM M = 32): a correctness-scale
table, not a target.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

import qcom_ext
from benchmarks._read_floor import empty_seconds, read_only_seconds
from benchmarks._torch_timing import MAX_BATCH, cuda_seconds
from qcom_ext.tools.bench._case import Suite, SuiteResult, format_seconds
from qcom_ext.tools.bench._profiling import copy_bandwidth

__all__ = ["CASES", "SUITES", "gemm_rows", "gemv_rows", "markdown", "sizes", "verdicts"]

GEMV_SHAPES = ((4096, 4096), (11008, 4096), (4096, 11008))
SMALL_GEMV_SHAPES = ((256, 256), (512, 256), (256, 512))
GEMM_SHAPE, SMALL_GEMM_SHAPE = (512, 4096, 4096), (32, 256, 256)
#: (weight format, activation format) of the GEMV rows.
GEMV_FORMATS = (("f16", None), ("q8_0", None), ("q4_0", None), ("q8_0", "q8_0"), ("q4_0", "q8_0"))
COPY_BYTES = 256 << 20
#: GEMV calls timed back to back.
BACK_TO_BACK = 20
DEFAULT_ROUNDS = 20
#: Seconds ``Linear.tune`` may spend on each GEMV before it is timed.
TUNE_BUDGET_S = 3.0


def sizes(caps: qcom_ext.DeviceCaps, small: bool) -> tuple[tuple, tuple]:
    """(GEMV shapes, GEMM shape): the issue's, or small ones on CPUs or with --small."""
    if small or caps.device_type != "gpu":
        return SMALL_GEMV_SHAPES, SMALL_GEMM_SHAPE
    return GEMV_SHAPES, GEMM_SHAPE


def _event_seconds(events: list[Any]) -> float:
    return (events[-1].profile.end - events[0].profile.start) * 1e-9


def _timed(run: Any, rounds: int, warmup: int = 2) -> float:
    """Median device seconds of ``run(i)`` (a list of events) over ``rounds``, after
    ``warmup`` calls (every weight copy once: a buffer's first use costs time)."""
    for i in range(warmup):
        run(i)[-1].wait()
    times = []
    for i in range(rounds):
        events = run(i)
        events[-1].wait()
        times.append(_event_seconds(events))
    return statistics.median(times)


def _back_to_back(queue: Any, run: Any, rounds: int) -> float:
    """Median device seconds per call of :data:`BACK_TO_BACK` calls ``run(i)`` queued
    behind a barrier on a user event that is set only once they are all enqueued, so
    that the device runs them one after another without waiting for the host, as torch's
    replayed CUDA graph runs its calls and as a decode loop that keeps the device busy
    does: from the first call's start to the last one's end, over the calls."""
    import pyopencl as cl

    times = []
    for _ in range(max(3, rounds // 4)):
        gate = cl.UserEvent(queue.context)
        cl.enqueue_barrier(queue, wait_for=[gate])
        events = [run(i) for i in range(BACK_TO_BACK)]
        gate.set_status(cl.command_execution_status.COMPLETE)
        events[-1][-1].wait()
        span = events[-1][-1].profile.end - events[0][0].profile.start
        times.append(span * 1e-9 / BACK_TO_BACK)
    return statistics.median(times)


def _copies(queue: Any, nbytes: int) -> int:
    """Weight copies to rotate through: past twice the global-memory cache (64 MiB at
    least), at most 16."""
    cache = max(int(queue.device.global_mem_cache_size), 64 << 20)
    return max(1, min(16, -(-2 * cache // nbytes) + 1))


def _gemv(queue: Any, shape: tuple[int, int], fmt: str, act: Any, path: str, rounds: int):
    from qcom_ext.ops import BufferMatrix, Linear

    n, k = shape
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((n, k), dtype=np.float32) * 0.05
    first = Linear(queue, weight, weight_format=fmt, activation_format=act, path=path)
    layers = [first] + [
        Linear(queue, weight, weight_format=fmt, activation_format=act, path=path)
        for _ in range(_copies(queue, first.weight_bytes) - 1)
    ]
    x = BufferMatrix.from_numpy(queue.context, rng.standard_normal((1, k), dtype=np.float32))
    out = BufferMatrix.empty(queue.context, (1, n))
    first.tune(queue, x, budget_s=TUNE_BUDGET_S)
    run = lambda i: layers[i % len(layers)].enqueue(queue, x, out)  # noqa: E731
    seconds = _timed(run, rounds, warmup=len(layers) + 1)
    return first, seconds, _back_to_back(queue, run, rounds)


def gemv_rows(queue: Any, shapes: tuple, rounds: int, copy_bps: float) -> list[dict[str, Any]]:
    """One row per (shape, weight format, activation format, read path)."""
    from qcom_ext.ops import MATMUL_PATHS, Linear

    rows = []
    default_path = Linear(queue, np.ones((1, 32), np.float32)).path  # the probe's choice
    floors: dict[int, float] = {}  # weight bytes -> a read-only kernel's seconds
    for shape in shapes:
        for fmt, act in GEMV_FORMATS:
            for path in MATMUL_PATHS:
                try:
                    layer, seconds, stream = _gemv(queue, shape, fmt, act, path, rounds)
                except qcom_ext.ConfigError as exc:  # no image path on this device
                    if path == "image":
                        continue
                    raise exc
                rate = layer.weight_bytes / seconds
                size = layer.weight_bytes
                if size not in floors:
                    floors[size] = read_only_seconds(queue, size, _copies(queue, size), rounds)
                rows.append(
                    {
                        "shape": list(shape),
                        "format": fmt,
                        "activations": act or "float32",
                        "path": path,
                        "default_path": path == default_path,
                        "seconds": seconds,
                        "back_to_back_seconds": stream,
                        "weight_bytes": layer.weight_bytes,
                        "GB_s": rate / 1e9,
                        "of_copy": rate / copy_bps,
                        "read_only_seconds": floors[size],
                        "read_only_of_copy": size / floors[size] / copy_bps,
                    }
                )
    return rows


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _rotating(torch: Any, x: Any, weights: list[Any]) -> Any:
    """``op(i)``: F.linear of ``x`` with the ``i``-th of ``weights`` (cyclically)."""
    return lambda i: torch.nn.functional.linear(x, weights[i % len(weights)])


def torch_gemv(torch: Any, shapes: tuple, rounds: int) -> dict[str, float]:
    """(N, K) -> GPU seconds of F.linear in float16 on CUDA (weights rotated as ours;
    :func:`~benchmarks._torch_timing.cuda_seconds`)."""
    found = {}
    for n, k in shapes:
        copies = max(1, min(16, -(-2 * (64 << 20) // (n * k * 2)) + 1))
        weights = [torch.randn(n, k, device="cuda", dtype=torch.float16) for _ in range(copies)]
        x = torch.randn(1, k, device="cuda", dtype=torch.float16)
        found[f"{n}x{k}"] = cuda_seconds(torch, _rotating(torch, x, weights), rounds)
    return found


def gemm_rows(queue: Any, shape: tuple, rounds: int, torch: Any) -> list[dict[str, Any]]:
    """qcom_ext's GEMM (f16 weights, float32 x) and torch float32 (TF32 off) / float16."""
    from qcom_ext.ops import BufferMatrix, Linear

    m, n, k = shape
    flops = 2.0 * m * n * k
    rng = np.random.default_rng(1)
    layer = Linear(
        queue, rng.standard_normal((n, k), dtype=np.float32) * 0.05, weight_format="f16"
    )
    x = BufferMatrix.from_numpy(queue.context, rng.standard_normal((m, k), dtype=np.float32))
    out = BufferMatrix.empty(queue.context, (m, n))
    seconds = _timed(lambda i: layer.enqueue(queue, x, out), rounds)
    rows = [{"what": f"qcom_ext GEMM (f16 W, {layer.path})", "seconds": seconds}]
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        for dtype, name in (
            (torch.float32, "torch float32 (TF32 off)"),
            (torch.float16, "torch float16"),
        ):
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            w = torch.randn(n, k, device="cuda", dtype=dtype)
            t = cuda_seconds(torch, _rotating(torch, a, [w]), rounds)
            rows.append({"what": name, "seconds": t})
    for row in rows:
        row["TFLOP_s"] = flops / row["seconds"] / 1e12
    return rows


def verdicts(gemv: list[dict], torch_times: dict[str, float], gemm: list[dict]) -> list[str]:
    """The issue's targets, for the default (probe-chosen) path of each GEMV."""
    out = []
    default = [r for r in gemv if r["activations"] == "float32" and r["default_path"]]
    for fmt in ("f16", "q8_0", "q4_0"):
        mine = [r for r in default if r["format"] == fmt]
        worst = min(mine, key=lambda r: r["of_copy"], default=None)
        if worst is not None:
            ok = "met" if worst["of_copy"] >= 0.75 else "NOT met"
            out.append(
                f"GEMV {fmt}: lowest {worst['of_copy']:.0%} of buffer-copy bandwidth "
                f"(>= 75%: {ok}), at {tuple(worst['shape'])}, where a kernel that only "
                f"reads the same bytes reaches {worst['read_only_of_copy']:.0%}"
            )
        for r in mine:
            limit = {"q4_0": 0.5, "q8_0": 0.75}.get(fmt)
            t = torch_times.get(f"{r['shape'][0]}x{r['shape'][1]}")
            if limit and t:
                ratio, stream = r["seconds"] / t, r["back_to_back_seconds"] / t
                ok = "met" if ratio <= limit else "NOT met"
                out.append(
                    f"GEMV {fmt} {r['shape']}: {ratio:.2f}x torch f16 (<= {limit}x: {ok}); "
                    f"back to back, as torch's graph runs: {stream:.2f}x; a kernel that "
                    f"only reads the same bytes: {r['read_only_seconds'] / t:.2f}x"
                )
    fp32 = next((r for r in gemm if r["what"].startswith("torch float32")), None)
    if fp32 is not None:
        share = gemm[0]["TFLOP_s"] / fp32["TFLOP_s"]
        ok = "met" if share >= 0.5 else "NOT met"
        out.append(f"GEMM: {share:.0%} of torch float32 FLOP/s (>= 50%: {ok})")
    return out


def markdown(gemv: list[dict], torch_times: dict[str, float], gemm: list[dict]) -> str:
    lines = [
        "| (N, K) | weights | activations | path | time | weight GB/s | x copy bandwidth "
        "| read-only kernel, same bytes | x torch f16 time | back to back: time, x torch |",
        "|---|---|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in gemv:
        t = torch_times.get(f"{r['shape'][0]}x{r['shape'][1]}")
        ratio = f"{r['seconds'] / t:.2f}" if t else "—"
        stream = format_seconds(r["back_to_back_seconds"])
        stream += f", {r['back_to_back_seconds'] / t:.2f}" if t else ""
        lines.append(
            f"| {tuple(r['shape'])} | {r['format']} | {r['activations']} | {r['path']} "
            f"| {format_seconds(r['seconds'])} | {r['GB_s']:.0f} | {r['of_copy']:.2f} "
            f"| {format_seconds(r['read_only_seconds'])}, {r['read_only_of_copy']:.2f} "
            f"| {ratio} | {stream} |"
        )
    lines += ["", "| GEMM | time | TFLOP/s |", "|---|--:|--:|"]
    lines += [
        f"| {r['what']} | {format_seconds(r['seconds'])} | {r['TFLOP_s']:.2f} |" for r in gemm
    ]
    return "\n".join(lines) + "\n"


def _run_suite(caps: qcom_ext.DeviceCaps, options: Any) -> SuiteResult:
    import pyopencl as cl

    rounds = options.rounds or DEFAULT_ROUNDS
    context = cl.Context([caps.device()])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    gemv_shapes, gemm_shape = sizes(caps, getattr(options, "small", False))
    small = gemv_shapes == SMALL_GEMV_SHAPES
    copy = copy_bandwidth(queue, (16 << 20) if small else COPY_BYTES, rounds)
    torch = None if small else _torch()
    gemv = gemv_rows(queue, gemv_shapes, rounds, copy["buffer_copy_Bps"])
    torch_times = torch_gemv(torch, gemv_shapes, rounds) if torch is not None else {}
    gemm = gemm_rows(queue, gemm_shape, rounds, torch)
    found = verdicts(gemv, torch_times, gemm)
    text = (
        f"median of {rounds} (device time: OpenCL profiling events of single launches; "
        f"torch: GPU time per call, a CUDA graph of {MAX_BATCH} calls replayed between "
        "CUDA events, without Python's dispatch); "
        f"buffer copy {copy['buffer_copy_Bps'] / 1e9:.0f} GB/s (read + write); "
        f"an empty kernel {format_seconds(empty_seconds(queue, rounds))}"
        + (" ; small sizes (not targets)" if small else "")
        + "\n\n"
        + markdown(gemv, torch_times, gemm)
        + "\n"
        + "".join(f"* {v}\n" for v in found)
    )
    data = {"rounds": rounds, "gemv": gemv, "torch_gemv_s": torch_times, "gemm": gemm, **copy}
    return SuiteResult(text, {**data, "verdicts": found})


#: No runner-timed cases: the suite times its kernels with profiling events.
CASES: list[Any] = []
SUITES = [
    Suite(
        "matmul-suite",
        "GEMV weight bandwidth vs buffer copy and torch f16, GEMM FLOP/s vs torch (device "
        "time); small sizes on CPUs or with --small",
        _run_suite,
    )
]
