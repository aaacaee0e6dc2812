"""Convolution kernels at MobileNetV2 layer shapes (qcom_ext.ops, issue 7).

    python -m benchmarks conv-suite --device nvidia --batch 32 --update-doc docs/BENCHMARKS.md
    python -m benchmarks conv-suite --small --device 0:0     # a quick run on a CPU device (pocl)
    python -m benchmarks.cases_conv --device nvidia --batch 32 \
        --markdown conv.md --json conv.json

For every layer of :func:`qcom_ext.ops.suite.suite` (conv0 3x3/2, depthwise 3x3, 1x1,
int8 1x1) and kernel variant (1x1: register tiles 2x4 (MACE), 4x8 and 8x8, the staged
GEMM 4x4 in 8x8 groups; KxK: image layout and local-memory tiles; depthwise: 4 (MNN)
and 8 outputs per work-item; "tuned": the variant ``layer.tune`` picks), the device
time of one launch (median of ``--rounds`` profiling events) with the driver-chosen
local size and with the tuned one (``layer.tune``, cached in the tuning cache), as
GFLOP/s; depthwise layers also as GB/s (input + output tensors), as a share
of the device's peak buffer-copy bandwidth (a copy of at least 256 MiB, best of the
rounds: :mod:`._profiling`) and as a share of a copy of the layer's own bytes
(``clEnqueueCopyBuffer``, which for small layers reaches only part of the peak). Where
torch with CUDA is importable, ``torch.nn.functional.conv2d`` on the same shapes (fp32,
TF32 off, cuDNN benchmark mode, bias, CUDA-event timing) is timed too and each kernel's
throughput is given as a multiple of torch's.

Targets (issue 18, :mod:`.goals`; the summary in :mod:`._conv_report` prints met / NOT
met): 1x1 conv >= 1.25x torch (best tile per layer, tuned; median over the 1x1 layers)
and no layer below 0.8x; depthwise >= 85 % of the peak buffer copy (best variant per
layer, tuned; median over the depthwise layers); and (issue 7) tuning >= 1.15x median
gain over the driver's choice.

``CASES`` (group ``conv``) time a few small layers end to end (enqueue + finish) for
``python -m benchmarks conv``; the copy of the same bytes is the baseline. ``SUITES`` holds
``conv-suite``: the measurements above as ``python -m benchmarks`` runs them (same options as
this script's, less ``--json``/``--markdown``, which the runner has).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from benchmarks._conv_report import (
    TARGETS,
    goal_lines,
    markdown,
    progress_line,
    summarise,
    summary_rows,
)
from benchmarks._torch_timing import cuda_seconds
from qcom_ext import ops
from qcom_ext.ops._variants import VariantLayer
from qcom_ext.ops.suite import SuiteLayer, prepare, suite
from qcom_ext.tools.bench._case import Case, Suite, SuiteResult
from qcom_ext.tools.bench._profiling import (
    CopyBandwidth,
    fraction,
    image_of_bytes,
    measure_copy,
    median_ns,
)

__all__ = [
    "CASES",
    "SUITES",
    "TARGETS",
    "add_arguments",
    "goal_lines",
    "main",
    "markdown",
    "measure_layer",
    "measure_suite",
    "run",
    "same_size_copy_ns",
    "summarise",
    "summary_rows",
    "torch_ns",
]

TILES_1X1 = ((2, 4), (4, 8), (8, 8))
DEPTHWISE_PIXELS = (4, 8)
SMALL_LAYERS = (
    "conv0_3x3_s2",
    "dw32_s1_112",
    "dw96_s2_112",
    "pw16_96_112",
    "pw96_24_56",
    "qpw24_144_56",
)


def same_size_copy_ns(queue: Any, nbytes: int, rounds: int) -> float:
    """Median device time of a buffer copy that reads and writes ``nbytes`` in all."""
    half = max(4, nbytes // 2)
    src, dst = (cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, half) for _ in range(2))
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, half - half % 4)
    return median_ns(queue, lambda: cl.enqueue_copy(queue, dst, src), rounds)


def torch_ns(layer: SuiteLayer, batch: int, rounds: int) -> float | None:
    """Median GPU nanoseconds per ``F.conv2d`` call (fp32, TF32 off) on CUDA
    (``_torch_timing.cuda_seconds``), or None without it."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    groups = layer.in_channels if layer.kind == "depthwise" else 1
    k = layer.kernel
    x = torch.randn(batch, layer.in_channels, layer.size, layer.size, device="cuda")
    w = torch.randn(layer.out_channels, layer.in_channels // groups, k, k, device="cuda")
    b = torch.randn(layer.out_channels, device="cuda")

    def call() -> Any:
        return F.conv2d(x, w, b, stride=layer.stride, padding=layer.padding, groups=groups)

    for _ in range(10):  # cudnn.benchmark picks its algorithm on the first calls
        call()
    return cuda_seconds(torch, lambda _: call(), rounds) * 1e9


def _variants(layer: SuiteLayer) -> list[tuple[str, dict[str, Any]]]:
    """(variant name, the options that make it) of ``layer``'s kind (see the module)."""
    if layer.kind == "1x1":
        tiles = [(f"tile {p}x{c}", {"tile": (p, c)}) for p, c in TILES_1X1]
        return [*tiles, ("staged 4x4 8x8", {"tile": (4, 4), "group": (8, 8)}), ("tuned", {})]
    if layer.kind == "conv":
        return [("image", {}), ("tiled", {"method": "tiled"})]
    if layer.kind == "depthwise":
        return [*((f"{p} px", {"pixels": p}) for p in DEPTHWISE_PIXELS), ("tuned", {})]
    return [("", {})]


def _plan(op: Any, x: Any, out: Any) -> tuple[Any, Any, list[Any], Any]:
    """(launcher, global size, arguments, "tuned" or a required local size) of ``x``."""
    if isinstance(op, VariantLayer):
        return op.plan(op.variant_for(x.shape), x, out)
    local = (op.block, op.block, 1) if isinstance(op, ops.TiledConv2d) else "tuned"
    return (op.launcher, *op.launch_args(x, out), local)


def measure_layer(
    queue: Any,
    layer: SuiteLayer,
    variant: str,
    options: dict[str, Any],
    batch: int,
    dtype: Any,
    rounds: int,
    budget_s: float,
    retune: bool,
) -> dict[str, Any]:
    """Driver-chosen and tuned device times of one layer variant."""
    op, x = prepare(queue, layer, batch=batch, dtype=dtype, **options)
    out = op.output_for(queue, x)
    tiled = isinstance(op, ops.TiledConv2d)  # tune: the local size, and the variant if any
    tuning = None if tiled else op.tune(queue, x, out, budget_s=budget_s, force=retune)
    launcher, global_size, args, local = _plan(op, x, out)

    def launch_ns(local: Any) -> float:
        return median_ns(
            queue, lambda: launcher(queue, global_size, *args, local_size=local), rounds
        )

    required = local != "tuned" or tuning is None  # a required local size: no tuning gain
    driver = launch_ns(local if required else None)
    local = local if required else tuning.local_size
    tuned = driver if required else launch_ns(local)
    variant += " " + "x".join(map(str, op.variant_for(x.shape))) if variant == "tuned" else ""
    itemsize = 1 if layer.kind == "int8" else np.dtype(dtype).itemsize
    return {
        "layer": layer.name,
        "kind": layer.kind,
        "variant": variant,
        "batch": batch,
        "shape": f"{layer.in_channels}x{layer.size}x{layer.size} -> "
        f"{layer.out_channels}x{layer.out_size}x{layer.out_size}",
        "kernel": launcher.identity.kernel,
        "global_size": list(global_size),
        "local_size": None if local is None else list(local),
        "driver_ns": driver,
        "required_local": required,
        "tuned_ns": tuned,
        "gain": driver / tuned,
        "flops": layer.flops(batch),
        "gflops": layer.flops(batch) / tuned,
        "bytes": layer.bytes_moved(batch, itemsize),
        "gbps": layer.bytes_moved(batch, itemsize) / tuned,
    }


def run(
    queue: Any,
    layers: Sequence[SuiteLayer],
    batch: int,
    dtype: Any,
    rounds: int,
    budget_s: float,
    retune: bool,
    use_torch: bool,
    copy_bytes: int,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every measurement, and the summary against the targets."""
    copy = measure_copy(queue, copy_bytes, rounds, image_of_bytes(queue.device, copy_bytes))
    log(copy.describe())
    rows = []
    images = queue.device.image_support
    for layer in layers:
        torch_time = copy_time = None
        if layer.kind == "depthwise" and images:
            nbytes = int(layer.bytes_moved(batch, np.dtype(dtype).itemsize))
            copy_time = same_size_copy_ns(queue, nbytes, rounds)
        if use_torch and layer.kind != "int8" and np.dtype(dtype) == np.float32:
            torch_time = torch_ns(layer, batch, rounds)
        for variant, options in _variants(layer):
            if not images and (layer.kind == "depthwise" or variant == "image"):
                continue
            row = measure_layer(
                queue, layer, variant, options, batch, dtype, rounds, budget_s, retune
            )
            if layer.kind == "depthwise":
                _bandwidths(row, copy, copy_time)
            if torch_time is not None:
                row["torch_ns"] = torch_time
                row["torch_gflops"] = layer.flops(batch) / torch_time
                row["vs_torch"] = torch_time / row["tuned_ns"]
            rows.append(row)
            log(progress_line(row))
    return {"bandwidth": copy.as_dict(), "rows": rows, "summary": summarise(rows)}


def _bandwidths(row: dict[str, Any], copy: CopyBandwidth, copy_ns: float) -> None:
    """A depthwise row's shares of the peak buffer copy and of a copy of its own bytes."""
    seconds = row["tuned_ns"] * 1e-9
    row["bandwidth_fraction"] = copy.fraction(row["bytes"], seconds)
    row["copy_ns"] = copy_ns
    row["roofline_fraction"] = fraction(row["bytes"], seconds, row["bytes"] / (copy_ns * 1e-9))


# ---- cases for python -m benchmarks -----------------------------------------------

#: case name -> (suite layer, variant, where it runs).
_CASE_LAYERS = {
    "conv_depthwise": ("dw144_s1_56", "4 px", "image layout"),
    "conv_1x1": ("pw24_144_56", "tile 2x4", "NHWC buffers, tile 2x4"),
    "conv_kxk_image": ("conv0_3x3_s2", "image", "image layout"),
    "conv_kxk_tiled": ("conv0_3x3_s2", "tiled", "NCHW buffers, local-memory tiles"),
    "conv_int8": ("qpw24_144_56", "", "NHWC uint8 buffers, int8 weights"),
}


def _case_setup(name: str) -> Callable[[qcom_ext.DeviceCaps], dict[str, Any]]:
    def setup(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
        layer_name, variant, _ = _CASE_LAYERS[name]
        layer = next(layer for layer in suite(scale=0.5) if layer.name == layer_name)
        queue = cl.CommandQueue(cl.Context([caps.device()]))
        op, x = prepare(queue, layer, **dict(_variants(layer))[variant])
        out = op.output_for(queue, x)
        return {"queue": queue, "op": op, "x": x, "out": out, "layer": layer}

    return setup


def _case_run(state: dict[str, Any]) -> None:
    state["op"](state["queue"], state["x"], state["out"])
    state["queue"].finish()


def _copy_setup(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    layer = next(layer for layer in suite(scale=0.5) if layer.name == "dw144_s1_56")
    queue = cl.CommandQueue(cl.Context([caps.device()]))
    size = int(layer.bytes_moved(1) // 2)
    a, b = (cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size) for _ in range(2))
    cl.enqueue_fill_buffer(queue, a, np.float32(1.5), 0, size - size % 4)  # what b gets
    return {"queue": queue, "a": a, "b": b}


def _copy_run(state: dict[str, Any]) -> None:
    cl.enqueue_copy(state["queue"], state["b"], state["a"])
    state["queue"].finish()


_SPECS = [
    {
        "name": "conv_copy",
        "group": "conv",
        "setup": _copy_setup,
        "run": _copy_run,
        "baseline": True,
        "note": "buffer copy of dw144_s1_56's input + output bytes (28x28)",
    }
]
_SPECS += [
    {
        "name": name,
        "group": "conv",
        "setup": _case_setup(name),
        "run": _case_run,
        "baseline": False,
        "note": f"{layer} at half size, batch 1, {where}, enqueue + finish",
    }
    for name, (layer, _, where) in _CASE_LAYERS.items()
]
CASES: list[Any] = [Case(**spec) for spec in _SPECS]


# ---- the suite: python -m benchmarks conv-suite, or python -m benchmarks.cases_conv ---------

DEFAULT_ROUNDS = 20


def add_arguments(parser: Any) -> None:
    """The suite's options (also the script's)."""
    parser.add_argument("--batch", type=int, default=None, help="batch N (default 32; 1 small)")
    parser.add_argument(
        "--small",
        action="store_true",
        help="a quick run: quarter-size layers, a few of each kind, batch 1",
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=None,
        help="spatial sizes times this (default 0.25 with --small, else 1)",
    )
    parser.add_argument("--kinds", default="conv,depthwise,1x1,int8", help="layer kinds")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument("--budget-s", type=float, default=3.0, help="tuning budget per layer")
    parser.add_argument("--retune", action="store_true", help="tune even what is cached")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch comparison")


def measure_suite(
    caps: qcom_ext.DeviceCaps, options: Any, log: Callable[[str], None] = print
) -> tuple[str, dict[str, Any]]:
    """Run the suite as ``options`` (see :func:`add_arguments`, plus ``rounds``) say: the
    line describing the workload, and :func:`run`'s result."""
    rounds = options.rounds or DEFAULT_ROUNDS
    device = caps.device()
    queue = cl.CommandQueue(
        cl.Context([device]), device, cl.command_queue_properties.PROFILING_ENABLE
    )
    kinds = [k for k in options.kinds.split(",") if k]
    if options.small:
        scale = options.scale or 0.25
        layers = [layer for layer in suite(kinds, scale=scale) if layer.name in SMALL_LAYERS]
        batch = options.batch or 1
        copy_bytes = 8 << 20
    else:
        scale = options.scale or 1.0
        layers = suite(kinds, scale=scale)
        batch = options.batch or 32
        copy_bytes = min(256 << 20, device.max_mem_alloc_size // 2)
    workload = (
        f"batch {batch} · {options.dtype} · "
        f"{'small ' if options.small else ''}MobileNetV2 shapes"
        f"{f' x {scale:g}' if scale != 1 else ''} · "
        f"median of {rounds} launches · tuning budget {options.budget_s:g} s per layer"
    )
    log(workload)
    result = run(
        queue,
        layers,
        batch,
        np.dtype(options.dtype),
        rounds,
        options.budget_s,
        options.retune,
        not options.no_torch,
        copy_bytes,
        log,
    )
    for line in goal_lines(result["summary"]):
        log(line)
    result["summary_rows"] = summary_rows(result["summary"], batch)
    return workload, result


def _run_suite(caps: qcom_ext.DeviceCaps, options: Any) -> SuiteResult:
    workload, result = measure_suite(caps, options, log=lambda line: print(line, file=sys.stderr))
    return SuiteResult(markdown(result, workload), {"workload": workload, **result})


SUITES = [
    Suite(
        "conv-suite",
        "qcom_ext.ops at MobileNetV2 shapes: driver vs tuned local size, vs torch, vs copy "
        "bandwidth (--small for a CPU device)",
        _run_suite,
        add_arguments,
    )
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", help="as PYOPENCL_CTX: '0:0', 'nvidia', ...")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="timed launches")
    add_arguments(parser)
    parser.add_argument("--json", help="write every measurement as JSON")
    parser.add_argument("--markdown", help="write the tables as markdown")
    args = parser.parse_args(argv)
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    caps = qcom_ext.probe()
    header = f"**{caps.label}** ({caps.device_name.strip()}) · driver {caps.driver_version}"
    print(header)
    workload, result = measure_suite(caps, args)
    header += f" · {workload}"
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"header": header, "device": caps.label, **result}, out, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(markdown(result, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
