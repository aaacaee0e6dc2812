"""Accelerated image ops on a 4K RGBA float image, against the buffer copy (the roofline),
the image copy, torch and OpenCV.

    python -m benchmarks accelerated-suite [--device nvidia] [--rounds 20] [--sweep]
        [--update-doc ...]
    python -m benchmarks.cases_accelerated [--device nvidia]
        [--size 3840x2160] [--rounds 20] [--sweep] [--markdown out.md]

Operations (issue 6), on a ``--size`` RGBA ``CL_FLOAT`` image (default 3840x2160):
``convolve_5x5`` (``qcom_ext.convolve_image``, a 5x5 2-D weight image), ``box_7x7``
(``qcom_ext.box_filter_image``, ``box_size(7, 7)``), each as a plain call (the op's
default path; the row names the method, block and work-group it runs), with
``tuned=True`` after the one chooser picked among the op's variants on the same images
(``_tuned``), and with the other methods (``_blocked``, ``_per_pixel``, the former
defaults ``box_7x7_tiled`` and ``convolve_5x5_strips``); ``block_match_8x8``
(``qcom_ext.block_match_image``, 8x8 blocks, SAD, radius 4: 81 candidates a block) and
``image_copy`` (``clEnqueueCopyImage`` of the same image).

The suite times each with OpenCL profiling events (median of ``--rounds``) and states it
as Mpix/s, GB/s (a filter moves 2 x 16 bytes a pixel, one read and one write; the search
reads 2 x 16) and as shares of the buffer copy's bandwidth (``clEnqueueCopyBuffer`` of at
least those bytes, best of ``--rounds``, :mod:`._profiling`: the roofline) and of the
image copy's; then the targets of issue 18 (:mod:`.goals`): box and 5x5 convolution at
>= 85 % of the buffer copy (judged on the default path, the tuned row beside it), block
matching 2x faster than before at 4K. Beside them: torch
on the same GPU when ``torch.cuda`` is usable (depthwise ``conv2d`` 5x5, ``avg_pool2d``
7x7, an ``unfold``-based SAD search; GPU time from a replayed CUDA graph) and OpenCV on
the CPU when ``cv2`` imports (``filter2D``, ``blur``, ``absdiff`` +
``resize(INTER_AREA)`` per displacement; wall time). ``--sweep`` also times the portable
kernels' blocks and work-group sizes. The workload and its timers are in
:mod:`._accelerated_work`.

As cases of ``python -m benchmarks`` (group ``accelerated``; size from
``QCOM_EXT_BENCH_ACCELERATED_SIZE``, e.g. ``640x360`` on a CPU device), one call is
``LAUNCHES`` launches and a ``finish``. The suite ``accelerated-suite`` (``hof-suite`` and
``QCOM_EXT_HOF_SIZE`` are its former names, still accepted) adds its rows to the summary
table (``--summary``).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import qcom_ext
from benchmarks._accelerated_report import markdown, summary, summary_rows, verdicts
from benchmarks._accelerated_work import (
    BLOCK,
    BYTES_PER_PIXEL,
    CV_OPS,
    OPENCL_OPS,
    RADIUS,
    SIZE_ENV,
    TORCH_OPS,
    box,
    convolve,
    cv_state,
    default_options,
    device_seconds,
    opencv,
    parse_size,
    search_tile,
    size_from_environment,
    state_for,
    torch_cuda,
    torch_seconds,
    torch_state,
    tuned_variant,
    wall_seconds,
)
from qcom_ext.ext.variant import describe
from qcom_ext.tools.bench._case import Case, Suite, SuiteResult
from qcom_ext.tools.bench._profiling import CopyBandwidth, measure_copy

__all__ = [
    "BLOCK",
    "CASES",
    "GROUP",
    "RADIUS",
    "SIZE_ENV",
    "SUITES",
    "markdown",
    "measure",
    "parse_size",
    "summary",
    "summary_rows",
    "verdicts",
]

GROUP = "accelerated"
LAUNCHES = 10
SWEEP = {  # method -> (blocks, work-group sizes) that --sweep times
    "blocked": (
        ((1, 1), (2, 2), (4, 2), (2, 4), (4, 4), (8, 2), (4, 8), (8, 4)),
        ((16, 8), (32, 4), (16, 16), (32, 8), (64, 4), (8, 8)),
    ),
    "tiled": (
        ((1, 1), (1, 2), (1, 4), (1, 8), (2, 2), (2, 4)),
        ((32, 8), (64, 4), (16, 16), (32, 4), (16, 8)),
    ),
}
#: operation -> the OpenCL cases timed for it, the default method first
#: The image path's ceiling: a kernel that only copies each texel once through images.
IMAGE_COPY_KERNEL = "kernel: read_imagef -> write_imagef, 2 texels a work-item"
OPENCL_ROWS = {
    "5x5 convolution": (
        "convolve_5x5",
        "convolve_5x5_tuned",
        "convolve_5x5_strips",
        "convolve_5x5_blocked",
        "convolve_5x5_per_pixel",
    ),
    "7x7 box filter": (
        "box_7x7",
        "box_7x7_tuned",
        "box_7x7_tiled",
        "box_7x7_blocked",
        "box_7x7_per_pixel",
    ),
    "8x8 block match, r=4": ("block_match_8x8", "block_match_8x8_tuned"),
}
#: operation -> (its torch case, its OpenCV case)
COMPARISONS = {
    "5x5 convolution": ("torch_conv2d_depthwise_5x5", "opencv_filter2d_5x5"),
    "7x7 box filter": ("torch_avg_pool2d_7x7", "opencv_blur_7x7"),
    "8x8 block match, r=4": ("torch_unfold_sad_8x8", "opencv_sad_8x8"),
}


# ---- runner cases --------------------------------------------------------------------


def _opencl_case(op: Any) -> Any:
    def run(state: dict[str, Any]) -> None:
        for _ in range(LAUNCHES):
            op(state)
        state["queue"].finish()

    return run


def _torch_setup(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = state_for(caps)
    return torch_state(torch_cuda(), state["pixels"], state["reference_pixels"])


def _torch_case(op: Any) -> Any:
    def run(t: dict[str, Any]) -> None:
        for _ in range(LAUNCHES):
            op(t)
        t["torch"].cuda.synchronize()

    return run


def _cv_setup(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = state_for(caps)
    return cv_state(opencv(), state["pixels"], state["reference_pixels"])


_NOTES = {
    "image_copy": "clEnqueueCopyImage of the RGBA float image (the bandwidth reference)",
    "image_copy_kernel": "a kernel copying the image through read_imagef / write_imagef, "
    "2 texels a work-item half the grid apart: the image path's ceiling",
    "convolve_5x5": "qcom_ext.convolve_image, 5x5 2-D weight image (device's path, "
    "default method)",
    "convolve_5x5_tuned": "the same with tuned=True, after choose_variant(remember=True)",
    "convolve_5x5_strips": "the same, portable kernel in strips of rows",
    "convolve_5x5_blocked": "the same, portable kernel in register blocks (no local memory)",
    "convolve_5x5_per_pixel": "the same, portable builtin called once per pixel",
    "box_7x7": "qcom_ext.box_filter_image, box_size(7, 7) (device's path, default method)",
    "box_7x7_tuned": "the same with tuned=True, after choose_variant(remember=True)",
    "box_7x7_tiled": "the same, portable kernel with its tile in local memory",
    "box_7x7_blocked": "the same, portable kernel in register blocks (no local memory)",
    "box_7x7_per_pixel": "the same, portable builtin called once per pixel",
    "block_match_8x8": "qcom_ext.block_match_image, 8x8 SAD, radius 4 (81 candidates)",
    "block_match_8x8_tuned": "the same, the tile qcom_ext.tune picks (portable path)",
}


def _tuned_setup(op: str) -> Any:
    """The setup of a tuned case: the images, and the chooser run before the timing."""

    def setup(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
        state = state_for(caps)
        tuned_variant(state, op)
        return state

    return setup


_SETUPS = {
    "convolve_5x5_tuned": _tuned_setup("convolve"),
    "box_7x7_tuned": _tuned_setup("box_filter"),
}


def _cases() -> list[Case]:
    found = [
        Case(
            name,
            GROUP,
            _SETUPS.get(name, state_for),
            _opencl_case(op),
            baseline=name == "image_copy",
            note=f"{_NOTES[name]}; {LAUNCHES} launches a call",
        )
        for name, op in OPENCL_OPS.items()
    ]
    if torch_cuda() is not None:
        note = f"torch on the GPU; {LAUNCHES} calls a call"
        found += [
            Case(name, GROUP, _torch_setup, _torch_case(op), note=note)
            for name, op in TORCH_OPS.items()
        ]
    if opencv() is not None:
        note = "OpenCV on the CPU; 1 call"
        found += [
            Case(name, GROUP, _cv_setup, op, note=note, max_rounds=5)
            for name, op in CV_OPS.items()
        ]
    return found


CASES: list[Case] = _cases()

# ---- the suite: device times, throughput, bandwidth ----------------------------------


class _Rows(list):
    """The table being measured: one dict per (operation, implementation), each stated
    against the copies of ``copy`` (a filter or the copy moves 2 x 16 bytes a pixel: one
    read, one write; the search reads 2 x 16: target and reference)."""

    def __init__(self, size: tuple[int, int], copy: CopyBandwidth) -> None:
        super().__init__()
        self.pixels, self.copy = size[0] * size[1], copy

    def add(self, operation: str, implementation: str, seconds: float, where: str) -> None:
        moved = 2 * self.pixels * BYTES_PER_PIXEL
        self.append(
            {
                "operation": operation,
                "implementation": implementation,
                "seconds": seconds,
                "bytes": moved,
                "mpix_s": self.pixels / seconds / 1e6,
                "gb_s": moved / seconds / 1e9,
                "of_buffer_copy": self.copy.fraction(moved, seconds),
                "of_image_copy": self.copy.image_fraction(moved, seconds),
                "where": where,
            }
        )


def _sweep(rows: _Rows, state: dict[str, Any], rounds: int, label: str) -> None:
    """The portable kernels' blocks and work-group sizes (those that fit the device)."""
    for operation, op in (("5x5 convolution", convolve), ("7x7 box filter", box)):
        for method, (blocks, locals_) in SWEEP.items():
            for block in blocks:
                for local in locals_:

                    def run(s, op=op, method=method, block=block, local=local):
                        return op(s, method=method, block=block, local_size=local)

                    try:
                        seconds = device_seconds(state, run, max(3, rounds // 4))
                    except qcom_ext.ConfigError:  # does not fit the device
                        continue
                    where = f"block {block[0]}x{block[1]} local {local[0]}x{local[1]}"
                    rows.add(operation, f"sweep {method} {where}", seconds, label)


def _libraries(rows: _Rows, state: dict[str, Any], rounds: int) -> None:
    """The same operations in torch (GPU time, a replayed CUDA graph) and OpenCV (wall
    time), where present."""
    timers = []
    torch, cv2 = torch_cuda(), opencv()
    if torch is not None:
        t = torch_state(torch, state["pixels"], state["reference_pixels"])
        where = f"torch {torch.__version__} {torch.cuda.get_device_name()}"
        timers.append((0, where, lambda name: torch_seconds(t, TORCH_OPS[name], rounds)))
    if cv2 is not None:
        c = cv_state(cv2, state["pixels"], state["reference_pixels"])
        where = f"OpenCV {cv2.__version__} CPU ({os.cpu_count()} CPUs)"
        cv_rounds = max(3, rounds // 4)
        timers.append((1, where, lambda name: wall_seconds(c, CV_OPS[name], cv_rounds)))
    for column, where, seconds in timers:
        for operation, names in COMPARISONS.items():
            rows.add(operation, names[column], seconds(names[column]), where)


def measure(
    caps: qcom_ext.DeviceCaps,
    size: tuple[int, int],
    rounds: int,
    sweep: bool = False,
    copy: CopyBandwidth | None = None,
) -> list[dict[str, Any]]:
    """One row per (operation, implementation): seconds, bytes moved, Mpix/s, GB/s and
    the shares of the buffer copy's bandwidth (``copy``, default: measured here, best of
    ``rounds``) and of the image copy's (this image's, measured here: the first row)."""
    state = state_for(caps, size)
    moved = 2 * size[0] * size[1] * BYTES_PER_PIXEL
    copy = copy or measure_copy(state["queue"], moved, rounds)
    image_copy = device_seconds(state, OPENCL_OPS["image_copy"], rounds)
    rows = _Rows(size, copy.with_image(moved, image_copy))
    label = f"OpenCL {caps.label}"
    rows.add("image copy", "clEnqueueCopyImage", image_copy, label)
    kernel_copy = device_seconds(state, OPENCL_OPS["image_copy_kernel"], rounds)
    rows.add("image copy", IMAGE_COPY_KERNEL, kernel_copy, label)
    for operation, names in OPENCL_ROWS.items():
        for name in names:
            seconds = device_seconds(state, OPENCL_OPS[name], rounds)
            rows.add(operation, _implementation(name, state), seconds, label)
    if sweep and state["path"] == "fallback":
        _sweep(rows, state, rounds, label)
    _libraries(rows, state, rounds)
    return list(rows)


def _implementation(name: str, state: dict[str, Any]) -> str:
    """What the row timed: the path, and for the portable filters the method, block and
    work-group (the default's as the op plans it; the tuned one as the chooser picked)."""
    if state["path"] == "native":
        return "qcom_ext (native builtin)"
    if name.endswith("per_pixel"):
        return "qcom_ext (portable builtin per pixel)"
    op = "convolve" if name.startswith("convolve") else "box_filter"
    if name.endswith("tuned") and not name.startswith("block_match"):
        return f"qcom_ext (portable, tuned: {tuned_variant(state, op).describe()})"
    if not name.startswith("block_match"):
        method = None if name in ("convolve_5x5", "box_7x7") else name.rsplit("_", 1)[1]
        how = "default: " if method is None else ""
        return f"qcom_ext (portable, {how}{describe(default_options(state, op, method))})"
    if name.startswith("block_match"):
        tile = search_tile(state, tuned=name.endswith("tuned"))
        how = "tuned " if name.endswith("tuned") else ""
        return (
            "qcom_ext (portable, per block)"
            if tile is None
            else (f"qcom_ext (portable, {how}tile {tile[0]}x{tile[1]} blocks)")
        )


DEFAULT_ROUNDS = 20


def _suite_arguments(parser: Any) -> None:
    parser.add_argument(
        "--sweep", action="store_true", help="also time the portable kernels' blocks/local sizes"
    )


def _run_suite(caps: qcom_ext.DeviceCaps, options: Any) -> SuiteResult:
    size = size_from_environment()
    rounds = options.rounds or DEFAULT_ROUNDS
    queue = state_for(caps, size)["queue"]
    copy = measure_copy(queue, 2 * size[0] * size[1] * BYTES_PER_PIXEL, rounds)
    rows = measure(caps, size, rounds, sweep=options.sweep, copy=copy)
    copy = copy.with_image(rows[0]["bytes"], rows[0]["seconds"])
    text = (
        f"{size[0]}x{size[1]} RGBA float; median of {rounds} (device time for OpenCL and "
        f"torch, wall time for OpenCV); {copy.describe()}\n\n"
        + summary(rows)
        + "\n"
        + markdown(rows, caps, size, rounds).split("\n", 2)[2]
        + "\n"
        + "".join(f"* {v}\n" for v in verdicts(rows, size))
    )
    data = {
        "size": list(size),
        "rounds": rounds,
        "rows": rows,
        **copy.as_dict(),
        "summary_rows": summary_rows(rows, size),
    }
    return SuiteResult(text, data)


SUITES = [
    Suite(
        "accelerated-suite",
        "convolve/box filter/block match (device time) vs buffer and image copy, torch, "
        f"OpenCV; size from {SIZE_ENV}",
        _run_suite,
        _suite_arguments,
        aliases=("hof-suite",),
    )
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", help="as PYOPENCL_CTX: '0:0', 'nvidia', ...")
    parser.add_argument("--size", default=None, help="WIDTHxHEIGHT (default 3840x2160)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--sweep", action="store_true", help="also time blocks/local sizes")
    parser.add_argument("--markdown", help="write the table here too")
    args = parser.parse_args(argv)
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    size = parse_size(args.size)
    caps = qcom_ext.probe()
    rows = measure(caps, size, max(1, args.rounds), sweep=args.sweep)
    text = markdown(rows, caps, size, args.rounds)
    print(text)
    for line in verdicts(rows, size):
        print(line)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(text + "\n" + "\n".join(f"* {v}" for v in verdicts(rows, size)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
