"""How close to this device's memory bandwidth qcom_ext.ops run: ``qcom-ext bench ops-suite``
(and by default, with the cases: ``qcom-ext bench --summary``).

* GEMV (``qcom_ext.ops.Linear``, M = 1, float32 activations) with f16, q8_0 and q4_0
  weights at a phone-sized layer, (N, K) = (4096, 4096): 32, 17 and 9 MiB of weights;
  the bytes counted are the weights' (quants and scales). Cold: the launches rotate
  through copies of W spanning twice the device's global-memory cache and 64 MiB at
  least (:func:`~._profiling.cold_copies`), so none finds its weights cached (an
  H100's L2 holds all of a (4096, 4096) f16 W).
* One conv layer: MobileNetV2's 3x3 depthwise ``dw144_s1_56`` (``qcom_ext.ops.suite``),
  float32, on the image layout; the bytes counted are its input and output.

Each is timed with OpenCL profiling events (device time, the median of ``--rounds``,
with the local size ``qcom-ext tune`` cached or the driver's choice) and stated as a share
of the buffer copy measured in the same run (:mod:`._profiling`; with ``--summary``, the
one the runner measured for the whole summary). On a CPU device the
sizes are small ((N, K) = (512, 512), the conv layer at a quarter of its size): a quick
check that runs, whose weights may sit in the CPU's caches (shares above 1 are possible).
No torch and no targets here: the checkout's lab (``python -m benchmarks matmul-suite``,
``conv-suite``) compares with torch and judges issue 18's targets.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

import qcom_ext
from qcom_ext.ops import BufferMatrix, Linear
from qcom_ext.ops.suite import prepare, suite
from qcom_ext.tools.bench._case import Suite, SuiteResult, format_seconds
from qcom_ext.tools.bench._profiling import (
    CopyBandwidth,
    cold_copies,
    measure_copy,
    median_ns,
    profiling_queue,
)
from qcom_ext.tools.bench.report import summary_row

__all__ = ["CASES", "SUITES", "conv_row", "gemv_rows", "markdown", "sizes"]

#: (N, K) of the GEMVs: a 7B-class model's square projection.
GEMV_SHAPE, SMALL_GEMV_SHAPE = (4096, 4096), (512, 512)
GEMV_FORMATS = ("f16", "q8_0", "q4_0")
#: The conv layer (``qcom_ext.ops.suite``) and its spatial scale on a GPU / a CPU.
CONV_LAYER, CONV_SCALE, SMALL_CONV_SCALE = "dw144_s1_56", 1.0, 0.25
DEFAULT_ROUNDS = 10


def sizes(caps: qcom_ext.DeviceCaps) -> tuple[tuple[int, int], float]:
    """(GEMV (N, K), conv scale): a phone's on a GPU, small ones on other devices."""
    if caps.device_type == "gpu":
        return GEMV_SHAPE, CONV_SCALE
    return SMALL_GEMV_SHAPE, SMALL_CONV_SCALE


def gemv_rows(queue: Any, shape: tuple[int, int], rounds: int, copy: CopyBandwidth) -> list:
    """A row per weight format: device time, weight bytes, their share of ``copy``."""
    n, k = shape
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((n, k), dtype=np.float32) * 0.05
    x = BufferMatrix.from_numpy(queue.context, rng.standard_normal((1, k), dtype=np.float32))
    out = BufferMatrix.empty(queue.context, (1, n))
    cache = int(queue.device.global_mem_cache_size)
    rows = []
    for fmt in GEMV_FORMATS:
        layer = Linear(queue, weight, weight_format=fmt)
        stored = layer.quantized if layer.quantized is not None else weight.astype(np.float16)
        layers = [layer] + [
            Linear(queue, stored, weight_format=fmt)
            for _ in range(cold_copies(cache, layer.weight_bytes) - 1)
        ]
        turn = itertools.count()

        def launch(layers=layers, turn=turn):
            # cold: the next copy of W; float32 activations: one kernel, one event
            return layers[next(turn) % len(layers)].enqueue(queue, x, out)[-1]

        seconds = median_ns(queue, launch, rounds, warmup=len(layers)) * 1e-9
        rows.append(_row(f"GEMV {fmt} {n}x{k}", layer.path, layer.weight_bytes, seconds, copy))
    return rows


def conv_row(queue: Any, scale: float, rounds: int, copy: CopyBandwidth) -> dict[str, Any]:
    """The conv layer's row: device time, input + output bytes, their share of ``copy``."""
    layer = next(s for s in suite(kinds=("depthwise",), scale=scale) if s.name == CONV_LAYER)
    op, x = prepare(queue, layer)
    out = op.output_for(queue, x)
    launcher, global_size, args, required = op.plan(op.variant_for(x.shape), x, out)

    def launch() -> Any:
        return launcher(queue, global_size, *args, local_size=required)

    seconds = median_ns(queue, launch, rounds) * 1e-9
    what = (
        f"depthwise 3x3 {layer.in_channels}x{layer.size}x{layer.size}"
        f"{'' if layer.stride == 1 else f' stride {layer.stride}'}"
    )
    return _row(what, "image", layer.bytes_moved(1), seconds, copy)


def _row(op: str, path: str, moved: float, seconds: float, copy: CopyBandwidth) -> dict:
    share = copy.fraction(moved, seconds)
    row = summary_row(op, seconds=seconds, of_buffer_copy=share)
    return row | {"path": path, "bytes": moved, "GB_s": moved / seconds / 1e9}


def markdown(rows: list[dict[str, Any]]) -> str:
    """``op | path | time | MB moved | GB/s | of buffer copy`` of the suite's rows."""
    lines = [
        "| op | path | time | MB moved | GB/s | of buffer copy |",
        "|---|---|--:|--:|--:|--:|",
    ]
    lines += [
        f"| {r['op']} | {r['path']} | {format_seconds(r['seconds'])} | {r['bytes'] / 1e6:.3g} "
        f"| {r['GB_s']:.3g} | {r['of_buffer_copy']:.2f} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def _run_suite(caps: qcom_ext.DeviceCaps, options: Any) -> SuiteResult:
    rounds = getattr(options, "rounds", None) or DEFAULT_ROUNDS
    queue = profiling_queue(caps)
    shape, scale = sizes(caps)
    copy = getattr(options, "same_run_copy", None) or measure_copy(queue, 0, rounds)
    rows = gemv_rows(queue, shape, rounds, copy)
    images = bool(queue.device.image_support)
    if images:  # the conv layer runs on the image layout
        rows.append(conv_row(queue, scale, rounds, copy))
    small = "" if caps.device_type == "gpu" else "; small sizes (not a GPU)"
    small += "" if images else "; no images: the conv layer did not run"
    text = (
        f"device time, median of {rounds} (OpenCL profiling events); "
        f"{copy.describe()}, measured in this run{small}\n\n{markdown(rows)}"
    )
    return SuiteResult(
        text, {"rounds": rounds, "rows": rows, "summary_rows": rows, **copy.as_dict()}
    )


#: No runner-timed cases: the suite times its kernels with profiling events.
CASES: list[Any] = []
SUITES = [
    Suite(
        "ops-suite",
        "qcom_ext.ops on this device: GEMV f16/q8_0/q4_0 at (4096, 4096) and a depthwise "
        "conv layer, device time and share of the same run's buffer copy (small on CPUs)",
        _run_suite,
        default=True,
    )
]
