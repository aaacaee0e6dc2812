"""Matmul (``qcom_ext.ops.Linear``): GEMV weight bandwidth, cold and warm, and GEMM FLOP/s,
against the device's buffer copy, a kernel that only reads the same bytes, and torch on
the same GPU.

    python -m benchmarks matmul-suite [--device nvidia] [--rounds 20] [--small] [--update-doc ...]

* GEMV, M = 1, 2, 4 and 8 rows of x, (N, K) = (4096, 4096), (11008, 4096), (4096, 11008),
  (14336, 4096) and (32000, 4096), weights f16, q8_0 and q4_0 (q8_0 and q4_0 also with
  q8_0 activations, the integer path): device time from profiling events (median of
  ``--rounds`` single launches, local size tuned first), weight bytes (quants and scales)
  per second, and their fraction of the buffer-copy bandwidth (``clEnqueueCopyBuffer`` of
  256 MiB, read + write, measured in the same run). M = 1 on each read path the device
  has (image1d_buffer views, buffers); M = 2, 4, 8 on the probe's path.
* **Cold and warm.** *Cold*: each launch reads weights that the last-level cache cannot
  hold: the layer rotates through copies of W spanning at least twice
  ``CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`` and :data:`COLD_SPAN_BYTES` (256 MiB: five times an
  H100's 50 MB L2, for which NVIDIA's driver reports 4 MiB; :func:`cold_copies`).
  *Warm*: one copy, launched again and again, so that W stays in the cache where it
  fits (an H100 holds (4096, 4096) f16, 32 MB, whole: 12.5 µs warm, 20.5 µs cold): what
  a loop over one small layer sees, not what DRAM gives. The verdicts use the cold
  numbers. Beside each row, the time of a kernel that only reads the same bytes, cold
  (``_read_floor``: what any kernel of that size can reach here), and, in the heading,
  an empty kernel's.
* torch ``F.linear`` in float16 on CUDA for the same GEMVs, cold (the same rotation) and
  warm (one weight), where torch and CUDA exist, timed on the GPU alone
  (``_torch_timing``: a CUDA graph of the calls, no Python dispatch).
* GEMM, M = 512, (N, K) = (4096, 4096), f16 weights, float32 x: FLOP/s against torch
  float32 with TF32 off (target >= 50 %) and torch float16.

Issue 28's targets (:func:`verdicts`, cold, the probe's path, at the four shapes past
(4096, 4096)): the integer path no slower than the float path for q8_0 and q4_0 weights
at every shape and M; at M = 1, q4_0 (the faster of its two activation paths) <= 0.45x
torch f16's time and every GEMV within 1.25x of the read-only kernel; f16 at
(32000, 4096) >= 0.9 of the buffer copy.

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
from qcom_ext.tools.bench import _profiling
from qcom_ext.tools.bench._case import Suite, SuiteResult, format_seconds
from qcom_ext.tools.bench._profiling import copy_bandwidth

__all__ = [
    "CASES",
    "SUITES",
    "cold_copies",
    "gemm_rows",
    "gemv_rows",
    "markdown",
    "sizes",
    "verdicts",
]

GEMV_SHAPES = ((4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096), (32000, 4096))
SMALL_GEMV_SHAPES = ((256, 256), (512, 256), (256, 512))
#: Rows of x (M) the GEMVs are timed at: a decode step of 1 to 8 sequences.
GEMV_ROWS = (1, 2, 4, 8)
GEMM_SHAPE, SMALL_GEMM_SHAPE = (512, 4096, 4096), (32, 256, 256)
#: (weight format, activation format) of the GEMV rows.
GEMV_FORMATS = (("f16", None), ("q8_0", None), ("q4_0", None), ("q8_0", "q8_0"), ("q4_0", "q8_0"))
COPY_BYTES = 256 << 20
#: The least span of weight copies a cold launch rotates through (and at least twice
#: the device's reported global-memory cache).
COLD_SPAN_BYTES = 256 << 20
#: The most copies of one W.
MAX_COPIES = _profiling.MAX_COLD_COPIES
DEFAULT_ROUNDS = 20
#: Seconds ``Linear.tune`` may spend on each GEMV (shape, formats, path, M) first.
TUNE_BUDGET_S = 1.0
#: The issue's limits (issue 28), for :func:`verdicts`.
TORCH_Q4_LIMIT, READ_ONLY_LIMIT, F16_COPY_LIMIT = 0.45, 1.25, 0.9
F16_COPY_SHAPE = (32000, 4096)
#: The shapes the targets are judged at ((4096, 4096) is timed, not judged).
TARGET_SHAPES = ((11008, 4096), (4096, 11008), (14336, 4096), (32000, 4096))


def sizes(caps: qcom_ext.DeviceCaps, small: bool) -> tuple[tuple, tuple]:
    """(GEMV shapes, GEMM shape): the issue's, or small ones on CPUs or with --small."""
    if small or caps.device_type != "gpu":
        return SMALL_GEMV_SHAPES, SMALL_GEMM_SHAPE
    return GEMV_SHAPES, GEMM_SHAPE


def cold_copies(cache_bytes: int, nbytes: int) -> int:
    """:func:`~qcom_ext.tools.bench._profiling.cold_copies` with the lab's span of at
    least :data:`COLD_SPAN_BYTES` and at most :data:`MAX_COPIES` copies.

    >>> cold_copies(50 << 20, 32 << 20)  # (4096, 4096) f16 on an H100: 288 MiB
    9
    """
    return min(MAX_COPIES, _profiling.cold_copies(cache_bytes, nbytes, COLD_SPAN_BYTES))


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


def _copies(queue: Any, nbytes: int) -> int:
    return cold_copies(int(queue.device.global_mem_cache_size), nbytes)


def _stored(weight: np.ndarray, fmt: str) -> Any:
    """W as ``fmt`` stores it (quantized once for every layer and copy of a shape)."""
    from qcom_ext.ops.quant import quantize

    return weight.astype(np.float16) if fmt == "f16" else quantize(weight, fmt)


def _layers(queue: Any, stored: Any, fmt: str, act: Any, path: str) -> list[Any]:
    """A Linear of the ``stored`` W and its copies for the cold rotation."""
    from qcom_ext.ops import Linear

    first = Linear(queue, stored, weight_format=fmt, activation_format=act, path=path)
    return [first] + [
        Linear(queue, stored, weight_format=fmt, activation_format=act, path=path)
        for _ in range(_copies(queue, first.weight_bytes) - 1)
    ]


def _gemv(queue: Any, layers: list[Any], rows: int, rounds: int) -> tuple[float, float]:
    """(cold, warm) device seconds of the GEMV of ``rows`` rows of x (tuned first)."""
    from qcom_ext.ops import BufferMatrix

    n, k = layers[0].shape
    rng = np.random.default_rng(rows)
    x = BufferMatrix.from_numpy(queue.context, rng.standard_normal((rows, k), dtype=np.float32))
    out = BufferMatrix.empty(queue.context, (rows, n))
    layers[0].tune(queue, x, budget_s=TUNE_BUDGET_S)  # one cache entry serves every copy
    cold = _timed(lambda i: layers[i % len(layers)].enqueue(queue, x, out), rounds, len(layers))
    warm = _timed(lambda i: layers[0].enqueue(queue, x, out), rounds)
    return cold, warm


def gemv_rows(queue: Any, shapes: tuple, rounds: int, copy_bps: float) -> list[dict[str, Any]]:
    """One row per (shape, weight format, activation format, read path, M): M = 1 on
    every path, M = 2, 4, 8 on the probe's."""
    from qcom_ext.ops import MATMUL_PATHS, Linear

    rows = []
    default_path = Linear(queue, np.ones((1, 32), np.float32)).path  # the probe's choice
    floors: dict[int, tuple[float, float]] = {}  # weight bytes -> read-only (cold, warm)
    for shape in shapes:
        weight = np.random.default_rng(0).standard_normal(shape, dtype=np.float32) * 0.05
        stored = {fmt: _stored(weight, fmt) for fmt in dict(GEMV_FORMATS)}
        for fmt, act in GEMV_FORMATS:
            for path in MATMUL_PATHS:
                try:
                    layers = _layers(queue, stored[fmt], fmt, act, path)
                except qcom_ext.ConfigError as exc:  # no image path on this device
                    if path == "image":
                        continue
                    raise exc
                size = layers[0].weight_bytes
                if size not in floors:
                    copies = _copies(queue, size)
                    floors[size] = (
                        read_only_seconds(queue, size, copies, rounds),
                        read_only_seconds(queue, size, 1, rounds),
                    )
                for m in GEMV_ROWS if path == default_path else GEMV_ROWS[:1]:
                    cold, warm = _gemv(queue, layers, m, rounds)
                    rows.append(
                        {
                            "shape": list(shape),
                            "rows": m,
                            "format": fmt,
                            "activations": act or "float32",
                            "path": path,
                            "default_path": path == default_path,
                            "copies": len(layers),
                            "seconds": cold,
                            "warm_seconds": warm,
                            "weight_bytes": size,
                            "GB_s": size / cold / 1e9,
                            "of_copy": size / cold / copy_bps,
                            "warm_of_copy": size / warm / copy_bps,
                            "read_only_seconds": floors[size][0],
                            "read_only_warm_seconds": floors[size][1],
                            "of_read_only": cold / floors[size][0],
                        }
                    )
                del layers
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


def _key(shape: Any, rows: int) -> str:
    return f"{shape[0]}x{shape[1]}/M{rows}"


def torch_gemv(torch: Any, shapes: tuple, rounds: int, cache_bytes: int) -> dict[str, dict]:
    """ "NxK/Mm" -> {"cold", "warm"}: GPU seconds of F.linear in float16 on CUDA, cold
    (weights rotated as ours, :func:`cold_copies`) and warm (one weight);
    :func:`~benchmarks._torch_timing.cuda_seconds`."""
    found = {}
    for n, k in shapes:
        copies = cold_copies(cache_bytes, n * k * 2)
        weights = [torch.randn(n, k, device="cuda", dtype=torch.float16) for _ in range(copies)]
        for m in GEMV_ROWS:
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            found[_key((n, k), m)] = {
                "cold": cuda_seconds(torch, _rotating(torch, x, weights), rounds),
                "warm": cuda_seconds(torch, _rotating(torch, x, weights[:1]), rounds),
            }
        del weights
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


def _worst(pairs: list[tuple[float, str]], limit: float, above: bool = False) -> tuple:
    """(worst ratio, where, "met" / "NOT met") of ``pairs`` against ``limit`` (ratios that
    must stay at or under it; at or over it where ``above``)."""
    worst = (min if above else max)(pairs)
    ok = worst[0] >= limit if above else worst[0] <= limit
    return worst[0], worst[1], "met" if ok else "NOT met"


def _where(r: dict) -> str:
    return f"{tuple(r['shape'])} M={r['rows']}"


def _judged(rows: list[dict]) -> list[dict]:
    """The rows issue 28's targets speak of: the probe's path at :data:`TARGET_SHAPES`
    (every shape where none of them ran, as with --small)."""
    rows = [r for r in rows if r["default_path"]]
    target = [r for r in rows if tuple(r["shape"]) in TARGET_SHAPES]
    return target or rows


def _integer_lines(by: dict[tuple, dict]) -> list[str]:
    """The integer path against the float path, per weight format, at every shape and M."""
    out = []
    for fmt in ("q8_0", "q4_0"):
        pairs = []
        for (shape, m, weights, activations), r in by.items():
            float_row = by.get((shape, m, fmt, "float32"))
            if weights == fmt and activations == "q8_0" and float_row is not None:
                pairs.append((r["seconds"] / float_row["seconds"], _where(r)))
        if pairs:
            ratio, where, ok = _worst(pairs, 1.0)
            out.append(
                f"integer path (q8_0 activations), {fmt} weights: at worst {ratio:.2f}x the "
                f"float path's time, at {where} (<= 1.00x at every shape and M: {ok})"
            )
    return out


def _fastest(rows: list[dict], fmt: str) -> dict[tuple, dict]:
    """(shape, M) -> the faster activation path's row of weight format ``fmt``."""
    best: dict[tuple, dict] = {}
    for r in rows:
        key = (tuple(r["shape"]), r["rows"])
        if r["format"] == fmt and (key not in best or r["seconds"] < best[key]["seconds"]):
            best[key] = r
    return best


def _at_one_and_over(pairs: list[tuple[float, str]], limit: float, what: str) -> list[str]:
    """``what`` judged at M = 1 against ``limit``, with the worst over M = 1..8 beside."""
    ones = [p for p in pairs if p[1].endswith(" M=1")]
    if not ones:
        return []
    ratio, where, ok = _worst(ones, limit)
    return [
        f"{what.format(ratio=ratio)}, at {where} (<= {limit}x: {ok}); over M = 1..8: "
        f"{max(pairs)[0]:.2f}x at {max(pairs)[1]}"
    ]


def verdicts(gemv: list[dict], torch_times: dict[str, dict], gemm: list[dict]) -> list[str]:
    """Issue 28's targets, from the cold times (see the module): the integer path against
    the float path at every M; q4_0 against torch and every format against the read-only
    kernel at M = 1 (the worst over M = 1..8 beside it); f16 at (32000, 4096) against the
    copy."""
    rows = _judged(gemv)
    by = {(tuple(r["shape"]), r["rows"], r["format"], r["activations"]): r for r in rows}
    out = _integer_lines(by)
    pairs = [
        (r["seconds"] / torch_times[_key(*key)]["cold"], _where(r))
        for key, r in _fastest(rows, "q4_0").items()
        if _key(*key) in torch_times
    ]
    what = "q4_0 GEMV (the faster activation path): at worst {ratio:.2f}x torch f16's time"
    out += _at_one_and_over(pairs, TORCH_Q4_LIMIT, what)
    for fmt in ("f16", "q8_0", "q4_0"):
        pairs = [(r["of_read_only"], _where(r)) for r in _fastest(rows, fmt).values()]
        what = f"GEMV {fmt}: at worst {{ratio:.2f}}x the time of a kernel that only reads "
        out += _at_one_and_over(pairs, READ_ONLY_LIMIT, what + "the same bytes")
    big = [
        (r["of_copy"], _where(r))
        for r in rows
        if r["format"] == "f16" and tuple(r["shape"]) == F16_COPY_SHAPE and r["rows"] == 1
    ]
    if big:
        share, where, ok = _worst(big, F16_COPY_LIMIT, above=True)
        out.append(f"GEMV f16 {where}: {share:.2f} of the buffer copy (>= {F16_COPY_LIMIT}: {ok})")
    fp32 = next((r for r in gemm if r["what"].startswith("torch float32")), None)
    if fp32 is not None:
        share = gemm[0]["TFLOP_s"] / fp32["TFLOP_s"]
        ok = "met" if share >= 0.5 else "NOT met"
        out.append(f"GEMM: {share:.0%} of torch float32 FLOP/s (>= 50%: {ok})")
    return out


def markdown(gemv: list[dict], torch_times: dict[str, dict], gemm: list[dict]) -> str:
    """The GEMV rows (cold, warm, their shares, the read-only kernel, torch), torch's own
    times, and the GEMM rows."""
    lines = [
        "| (N, K) | M | weights | activations | path | cold | warm | x copy (cold) "
        "| read-only kernel, cold | x read-only | x torch f16 (cold) |",
        "|---|--:|---|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in gemv:
        t = torch_times.get(_key(r["shape"], r["rows"]))
        ratio = f"{r['seconds'] / t['cold']:.2f}" if t else "—"
        lines.append(
            f"| {tuple(r['shape'])} | {r['rows']} | {r['format']} | {r['activations']} "
            f"| {r['path']} | {format_seconds(r['seconds'])} "
            f"| {format_seconds(r['warm_seconds'])} | {r['of_copy']:.2f} "
            f"| {format_seconds(r['read_only_seconds'])} | {r['of_read_only']:.2f} | {ratio} |"
        )
    if torch_times:
        lines += ["", "| torch f16 F.linear | cold | warm |", "|---|--:|--:|"]
        lines += [
            f"| {key} | {format_seconds(t['cold'])} | {format_seconds(t['warm'])} |"
            for key, t in torch_times.items()
        ]
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
    cache = int(queue.device.global_mem_cache_size)
    gemv = gemv_rows(queue, gemv_shapes, rounds, copy["buffer_copy_Bps"])
    torch_times = torch_gemv(torch, gemv_shapes, rounds, cache) if torch is not None else {}
    gemm = gemm_rows(queue, gemm_shape, rounds, torch)
    found = verdicts(gemv, torch_times, gemm)
    text = (
        f"median of {rounds} (device time: OpenCL profiling events of single launches; "
        f"torch: GPU time per call, a CUDA graph of {MAX_BATCH} calls replayed between "
        "CUDA events, without Python's dispatch); cold: weights rotated over at least "
        f"{max(2 * cache, COLD_SPAN_BYTES) >> 20} MiB of copies (the device reports a "
        f"{cache >> 20} MiB global-memory cache), warm: one copy; "
        f"buffer copy {copy['buffer_copy_Bps'] / 1e9:.0f} GB/s (read + write); "
        f"an empty kernel {format_seconds(empty_seconds(queue, rounds))}"
        + (" ; small sizes (not targets)" if small else "")
        + "\n\n"
        + markdown(gemv, torch_times, gemm)
        + "\n"
        + "".join(f"* {v}\n" for v in found)
    )
    data = {
        "rounds": rounds,
        "cache_bytes": cache,
        "gemv": gemv,
        "torch_gemv_s": torch_times,
        "gemm": gemm,
        **copy,
    }
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
