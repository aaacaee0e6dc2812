"""Kernel profiles of the suites' default paths: ``python -m benchmarks profile-suite``.

    CUDA_CACHE_DISABLE=1 QCOM_EXT_CACHE_DIR=$(mktemp -d) \\
        python -m benchmarks profile-suite --device nvidia --json profile.json \\
        --update-doc docs/BENCHMARKS.md

Each op below is called once with its defaults (which builds its programs; a default
reads a remembered tuning, never makes one), then once more with its launches recorded
(:func:`._kernel_profile.captured_launches`); every kernel launched becomes a row of
:func:`._kernel_profile.profile_launch`:

* ``box 7x7`` and ``convolve 5x5``: ``box_filter_image`` / ``convolve_image`` on a 4K
  RGBA float image (:mod:`._accelerated_work`; ``QCOM_EXT_BENCH_ACCELERATED_SIZE``);
* ``bicubic 2x``: ``upscale2x_image`` of a 4K RGBA float image
  (``QCOM_EXT_BENCH_BICUBIC_SIZE``);
* ``block match 8x8 r4``: ``block_match_image`` of the same image and a shifted copy;
* ``depthwise`` and ``1x1``: the MobileNetV2 layers :data:`LAYERS` of
  :mod:`qcom_ext.ops.suite`, batch 1, float32, as the conv suite prepares them;
* ``gemv q4_0`` and ``gemv f16``: ``Linear`` with M = 1 and (N, K) = (4096, 4096); the
  q4_0 GEMV also with q8_0 activations (the one-launch integer GEMV) and at M = 8 rows
  of x, on both activation paths.

``--profile-small`` shrinks what the size variables leave at 4K (images 64x48), the
layers (a quarter size) and the GEMV (256 x 256), for CPUs and tests. Bytes and FLOPs
come from each op's definition: inputs read once and outputs written once, and the
arithmetic the formula asks for (a box window's 49 adds-and-scale per channel, 25
multiply-adds of the 5x5 kernel, 16 taps of bicubic, 3 operations per pixel per
candidate of a SAD block match, a layer's :meth:`~qcom_ext.ops.suite.SuiteLayer.flops`,
2 N K of a GEMV). The ptxas numbers need programs built from source in this process:
hence the fresh cache directory above
(``CUDA_CACHE_DISABLE=1`` keeps the driver's own cache from skipping ptxas).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from benchmarks import _accelerated_work as work
from benchmarks._kernel_profile import (
    OpWork,
    captured_launches,
    markdown,
    profile_launch,
)
from qcom_ext.tools.bench._case import Suite, SuiteResult

__all__ = ["CASES", "GEMV_SHAPE", "LAYERS", "OPS", "SMALL_SIZE", "SUITES", "profile_rows"]

#: the MobileNetV2 layers profiled (one of each kind, from qcom_ext.ops.suite)
LAYERS = {"depthwise": "dw144_s1_56", "1x1": "pw24_144_56"}
GEMV_SHAPE, SMALL_GEMV_SHAPE = (4096, 4096), (256, 256)
SMALL_SIZE = (64, 48)
PIXEL = 16  # RGBA float32 bytes
#: SAD per pixel per candidate: subtract, absolute value, accumulate (per channel)
SAD_FLOPS = 3

#: (op, call) -> ``prepare(caps, small)`` returns ``(run, OpWork)``
Prepare = Callable[[qcom_ext.DeviceCaps, bool], tuple[Callable[[], Any], OpWork]]


def _image_state(caps: qcom_ext.DeviceCaps, small: bool) -> dict[str, Any]:
    return work.state_for(caps, SMALL_SIZE if small else None)


def _filter(kind: str) -> Prepare:
    def prepare(caps: qcom_ext.DeviceCaps, small: bool) -> tuple[Callable[[], Any], OpWork]:
        state = _image_state(caps, small)
        width, height = state["size"]
        pixels = width * height
        flops = 49 * 4 if kind == "box" else 2 * 25 * 4
        call = work.box if kind == "box" else work.convolve
        return (lambda: call(state)), OpWork(pixels, 2.0 * pixels * PIXEL, pixels * flops)

    return prepare


def _block_match(caps: qcom_ext.DeviceCaps, small: bool) -> tuple[Callable[[], Any], OpWork]:
    state = _image_state(caps, small)
    width, height = state["size"]
    (bw, bh), radius = work.BLOCK, work.RADIUS
    blocks = (width // bw) * (height // bh)
    field = state.get("field")
    out_bytes = 0 if field is None else field.vectors.size + field.costs.size
    candidates = (2 * radius + 1) ** 2
    flops = blocks * candidates * bw * bh * 4 * SAD_FLOPS
    moved = 2.0 * width * height * PIXEL + out_bytes
    return (lambda: work.block_match(state)), OpWork(blocks, moved, flops)


def _bicubic(caps: qcom_ext.DeviceCaps, small: bool) -> tuple[Callable[[], Any], OpWork]:
    from benchmarks import cases_bicubic

    wanted = os.environ.get(cases_bicubic.SIZE_ENV)
    if small and not wanted:
        os.environ[cases_bicubic.SIZE_ENV] = "x".join(map(str, SMALL_SIZE))
    try:
        state = cases_bicubic.setup_images(caps, "default")
    finally:
        if small and not wanted:
            del os.environ[cases_bicubic.SIZE_ENV]
    width, height = state["size"]
    outputs = 4 * width * height
    moved = float(width * height * PIXEL + outputs * PIXEL)
    return state["upscale"], OpWork(outputs, moved, outputs * 16 * 2 * 4)


def _layer(kind: str) -> Prepare:
    def prepare(caps: qcom_ext.DeviceCaps, small: bool) -> tuple[Callable[[], Any], OpWork]:
        from qcom_ext.ops.suite import prepare as prepare_layer
        from qcom_ext.ops.suite import suite

        found = next(x for x in suite(kinds=(kind,)) if x.name == LAYERS[kind])
        layer = found.scaled(0.25) if small else found
        context = cl.Context([caps.device()])
        queue = cl.CommandQueue(context)
        op, x = prepare_layer(queue, layer)
        out = op.output_for(queue, x)
        taps = layer.kernel * layer.kernel * (1 if kind == "depthwise" else layer.in_channels)
        weights = 4.0 * (layer.out_channels * taps + layer.out_channels)
        outputs = layer.out_channels * layer.out_size**2
        moved = layer.bytes_moved(1) + weights
        return (lambda: op(queue, x, out)), OpWork(outputs, moved, layer.flops(1))

    return prepare


def _gemv(fmt: str, activations: str | None = None, rows: int = 1) -> Prepare:
    def prepare(caps: qcom_ext.DeviceCaps, small: bool) -> tuple[Callable[[], Any], OpWork]:
        from qcom_ext.ops import BufferMatrix, Linear

        n, k = SMALL_GEMV_SHAPE if small else GEMV_SHAPE
        context = cl.Context([caps.device()])
        queue = cl.CommandQueue(context)
        rng = np.random.default_rng(0)
        weight = rng.standard_normal((n, k), dtype=np.float32) * 0.05
        layer = Linear(queue, weight, weight_format=fmt, activation_format=activations)
        x = rng.standard_normal((rows, k), dtype=np.float32)
        x = BufferMatrix.from_numpy(context, x)
        out = BufferMatrix.empty(context, (rows, n))
        moved = float(layer.weight_bytes + 4 * k * rows + 4 * n * rows)
        return (lambda: layer.enqueue(queue, x, out)), OpWork(n * rows, moved, 2.0 * n * k * rows)

    return prepare


#: The ops profiled, in table order: name -> how to prepare its default call.
OPS: dict[str, Prepare] = {
    "box 7x7": _filter("box"),
    "convolve 5x5": _filter("convolve"),
    "bicubic 2x": _bicubic,
    "block match 8x8 r4": _block_match,
    "depthwise " + LAYERS["depthwise"]: _layer("depthwise"),
    "1x1 " + LAYERS["1x1"]: _layer("1x1"),
    "gemv q4_0": _gemv("q4_0"),
    "gemv f16": _gemv("f16"),
    "gemv q4_0 x q8_0": _gemv("q4_0", "q8_0"),
    "gemv q4_0 M=8": _gemv("q4_0", rows=8),
    "gemv q4_0 x q8_0 M=8": _gemv("q4_0", "q8_0", rows=8),
}


def _finish(result: Any) -> None:
    events = result if isinstance(result, list) else [result]
    for event in events:
        if isinstance(event, cl.Event):
            event.wait()


def profile_op(caps: qcom_ext.DeviceCaps, name: str, small: bool) -> list[dict[str, Any]]:
    """The rows of op ``name``: one per kernel its default call launches."""
    run, op_work = OPS[name](caps, small)
    _finish(run())  # builds the programs
    if name.startswith("block match"):  # the output's bytes are known after a call
        run, op_work = OPS[name](caps, small)
    with captured_launches() as launches:
        _finish(run())
    return [profile_launch(name, launch, caps.device(), op_work) for launch in launches]


def profile_rows(
    caps: qcom_ext.DeviceCaps, small: bool = False, names: Any = None
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(rows, skipped): every kernel of the ops ``names`` (all of :data:`OPS`), and why
    an op has no rows on this device (its typed or OpenCL error)."""
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for name in names or OPS:
        try:
            rows += profile_op(caps, name, small)
        except (qcom_ext.QcomExtError, cl.Error) as exc:
            skipped[name] = f"{type(exc).__name__}: {exc}"
    return rows, skipped


def add_arguments(parser: Any) -> None:
    parser.add_argument(
        "--profile-small",
        action="store_true",
        help="profile-suite: small images, layers and GEMV (CPUs, tests)",
    )


def _run_suite(caps: qcom_ext.DeviceCaps, options: Any) -> SuiteResult:
    small = bool(getattr(options, "profile_small", False))
    rows, skipped = profile_rows(caps, small)
    text = (
        "static profile of each op's default launch (work-group used, kernel_info; on "
        "NVIDIA: ptxas registers and spills of a -cl-nv-verbose rebuild, PTX instruction "
        "mix, theoretical occupancy); B/output and FLOP/B from the op's definition"
        + (" ; small sizes" if small else "")
        + "\n\n"
        + markdown(rows)
        + "".join(f"\n* {name}: not profiled ({why})\n" for name, why in skipped.items())
    )
    return SuiteResult(text, {"small": small, "kernels": rows, "skipped": skipped})


#: No runner-timed cases: the suite profiles kernels, it does not time them.
CASES: list[Any] = []
SUITES = [
    Suite(
        "profile-suite",
        "per kernel of the suites' default paths: work-group, kernel_info, bytes per "
        "output and FLOP/byte; on NVIDIA registers, spills, PTX mix, occupancy",
        _run_suite,
        arguments=add_arguments,
    )
]
