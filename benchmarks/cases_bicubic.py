"""Bicubic 2x upscale of a 4K RGBA float image, against the buffer copy (the roofline).

    python -m benchmarks bicubic-suite [--device nvidia] [--rounds 20] [--update-doc ...]
    python -m benchmarks.cases_bicubic [--device nvidia] [--size 3840x2160]
                                                    [--runs 20]

Cases (group ``bicubic``; each call enqueues once and finishes the queue):

* ``bicubic_image_copy`` (baseline): ``clEnqueueCopyImage`` of the source image (W x H RGBA
  float) to another image: reads and writes 2 x W x H x 16 bytes;
* ``bicubic_2x``: ``kernels/bicubic.cl`` (``qcom_read_imagef_bicubic`` with a sampler from
  ``qcom_ext.create_sampler``) writing the 2W x 2H result: reads W x H x 16 bytes once
  at least and writes 4 x W x H x 16;
* ``bicubic_2x_blocks``: the same upscale and formula specialised for 2x
  (``upscale2x_blocks``): each work-item reads the 5x5 texels its 2x2 output block needs
  once, with the weights at a = 0.75 / 0.25 as constants (portable code on every device);
* ``bicubic_2x_default``: ``qcom_ext.upscale2x_image(queue, src, dst)``, the op's own
  enqueue with its defaults (:func:`~qcom_ext.ext.images.upscale.default_method`: the
  hardware filter where cl_qcom_filter_bicubic is native, ``"tiles"`` elsewhere): what a
  user's call runs;
* ``bicubic_2x_tuned``: the same with ``tuned=True`` after the one chooser
  (:func:`qcom_ext.ops.variant_tuning.choose_variant` with ``remember=True``) picked among
  :func:`~qcom_ext.ext.images.upscale.upscale2x_variants` on the same images;
* ``torch_bicubic_2x``: ``torch.nn.functional.interpolate(mode="bicubic")`` on a
  (1, 4, H, W) float32 CUDA tensor, present only when torch with CUDA is importable
  (torch's kernel uses a = -0.75, Catmull-Rom is a = -0.5: same memory traffic).

With the runner (``python -m benchmarks bicubic``) the ratio column gives the
time over the image copy's (wall time: enqueue + finish); an upscale moves 2.5 times the
copy's bytes. ``python -m benchmarks bicubic-suite`` (``SUITES``; also this script) reads device
times from profiling events (torch: GPU time, a replayed CUDA graph) and states each as
GB/s and as shares of the buffer copy's bandwidth (``clEnqueueCopyBuffer`` of at least
the upscale's bytes, best of the runs: the roofline) and of the image copy's, with the
target of issue 18 (:mod:`.goals`) judged on the default path (the tuned one beside
it): >= 85 % of the buffer copy, counting the source read once and the output written
once. Each row names the method, block and work-group it timed. The size defaults to 4K
(3840x2160: 133 MB in, 531 MB out); ``QCOM_EXT_BENCH_BICUBIC_SIZE=WxH`` (runner and
suite) or ``--size`` (script) makes it small for pocl.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import warnings
from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from benchmarks._bicubic_report import UPSCALES, suite_markdown, summary_rows
from benchmarks._torch_timing import MIN_BATCH, cuda_seconds
from qcom_ext._resources import kernels_dir
from qcom_ext.device import shared
from qcom_ext.ext.images.upscale import (
    DEFAULT_BLOCK,
    default_method,
    upscale2x_image,
    upscale2x_launch,
)
from qcom_ext.ext.images.upscale import upscale2x_variants as _variants
from qcom_ext.ext.variant import describe
from qcom_ext.ops.variant_tuning import choose_variant
from qcom_ext.tools.bench._case import Case, Suite, SuiteResult
from qcom_ext.tools.bench._profiling import copy_image, measure_copy

__all__ = [
    "CASES",
    "SUITES",
    "UPSCALES",
    "check_result",
    "measure_suite",
    "suite_markdown",
    "summary_rows",
]

SIZE_ENV = "QCOM_EXT_BENCH_BICUBIC_SIZE"
DEFAULT_SIZE = (3840, 2160)
PIXEL = 16  # RGBA float32
RGBA_FLOAT = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)


def parse_size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    size = int(width), int(height)
    if min(size) < 1:
        raise ValueError(f"size {text!r}: expected WxH with positive W and H")
    return size


def size() -> tuple[int, int]:
    """The source size: ``QCOM_EXT_BENCH_BICUBIC_SIZE`` or 4K."""
    text = os.environ.get(SIZE_ENV)
    return parse_size(text) if text else DEFAULT_SIZE


def bytes_moved(width: int, height: int) -> dict[str, int]:
    """Bytes each case must move at least: copy reads + writes the source; bicubic reads
    the source and writes four times as many pixels."""
    source = width * height * PIXEL
    return {"copy": 2 * source, "bicubic": source + 4 * source}


def source_pixels(width: int, height: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    return rng.random((height, width, 4), dtype=np.float32)


def _local_size(device: Any, global_size: tuple[int, int]) -> tuple[int, int] | None:
    if device.max_work_group_size >= 256 and all(g % 16 == 0 for g in global_size):
        return (16, 16)
    return None


#: seconds the tuned case's chooser may spend timing the upscale's variants
TUNE_BUDGET_S = 60.0


def upscale2x_variants(queue: Any, src: Any, dst: Any) -> list[Any]:
    """What the tuned case chooses among: every variant of the op (tests narrow it)."""
    return _variants(queue, src, dst)


def _the_op(state: dict[str, Any], which: str) -> None:
    """``state["upscale"]``: the op's own enqueue (``tuned=True`` for "tuned", after the
    chooser), and ``state["options"]``: the method, block and work-group it runs."""
    queue, src, dst = state["queue"], state["src"], state["dst"]
    if which == "tuned":
        variants = upscale2x_variants(queue, src, dst)
        best = choose_variant(
            variants, queue=queue, budget_s=TUNE_BUDGET_S, repeats=3, remember=True
        )
        state["options"] = {k: v for k, v in best.options.items() if v is not None}
    else:
        _, _, (_, local) = upscale2x_launch(queue, src, dst)
        method = default_method(queue.context)
        block = DEFAULT_BLOCK if method == "tiles" else None
        state["options"] = {"method": method, "block": block, "local_size": local}
    state["upscale"] = lambda: upscale2x_image(queue, src, dst, tuned=which == "tuned")


def describe_case(state: dict[str, Any]) -> str:
    """``method block BXxBY local LXxLY`` of what an upscale case runs."""
    return describe(state["options"])


def setup_images(caps: qcom_ext.DeviceCaps, which: str = "copy") -> dict[str, Any]:
    """Context, queue, the source image and what the case ``which`` enqueues ("copy",
    "bicubic", "blocks": the kernels of kernels/bicubic.cl; "default", "tuned": the op)."""
    if not caps.image_support:
        raise qcom_ext.ExtensionUnavailable(
            "cl_qcom_filter_bicubic", caps.label, "the device has no image support"
        )
    width, height = size()
    context = cl.Context([caps.device()])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    mf = cl.mem_flags
    src = cl.create_image(
        context,
        mf.READ_ONLY | mf.COPY_HOST_PTR,
        RGBA_FLOAT,
        shape=(width, height),
        hostbuf=source_pixels(width, height),
    )
    state: dict[str, Any] = {
        "context": context,
        "queue": queue,
        "src": src,
        "size": (width, height),
    }
    if which == "copy":
        state["dst"] = cl.create_image(context, mf.WRITE_ONLY, RGBA_FLOAT, shape=(width, height))
    elif which in ("default", "tuned"):
        state["dst"] = cl.create_image(
            context, mf.READ_WRITE, RGBA_FLOAT, shape=(2 * width, 2 * height)
        )
        _the_op(state, which)
    else:
        source = (kernels_dir() / "bicubic.cl").read_text()
        program = qcom_ext.build_program(
            context, source, defines={"QCOM_EXT_BICUBIC_NORMALIZED": 1}
        )
        dst = cl.create_image(context, mf.WRITE_ONLY, RGBA_FLOAT, shape=(2 * width, 2 * height))
        if which == "blocks":
            kernel = cl.Kernel(program, "upscale2x_blocks")
            kernel.set_args(src, dst)
            state["global_size"] = (width, height)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
                state["sampler"] = qcom_ext.create_sampler(
                    context, normalized=True, addressing="clamp"
                )
            kernel = cl.Kernel(program, "upscale2x")
            kernel.set_args(src, state["sampler"], dst)
            state["global_size"] = (2 * width, 2 * height)
        state.update(dst=dst, kernel=kernel)
        state["local_size"] = _local_size(caps.device(), state["global_size"])
        state["options"] = {"method": "blocks" if which == "blocks" else "sampler"}
        state["options"]["local_size"] = state["local_size"]
    enqueue(state).wait()  # warm-up: first launches compile work-group functions (pocl)
    return state


def setup_bicubic(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return setup_images(caps, "bicubic")


def setup_blocks(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return setup_images(caps, "blocks")


def setup_default(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return setup_images(caps, "default")


def setup_tuned(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return setup_images(caps, "tuned")


def enqueue(state: dict[str, Any]) -> cl.Event:
    """One copy or one upscale, enqueued; its event."""
    if "upscale" in state:
        return state["upscale"]()
    if "kernel" in state:
        return cl.enqueue_nd_range_kernel(
            state["queue"], state["kernel"], state["global_size"], state["local_size"]
        )
    return copy_image(state["queue"], state["dst"], state["src"], state["size"])


def run_once(state: dict[str, Any]) -> None:
    enqueue(state)
    state["queue"].finish()


def torch_cuda_available() -> bool:
    """Whether torch with a CUDA device can be imported (torch is only imported if found)."""
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        import torch
    except Exception:  # a broken install counts as absent
        return False
    return bool(torch.cuda.is_available())


def setup_torch(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    import torch

    width, height = size()
    pixels = torch.from_numpy(source_pixels(width, height)).permute(2, 0, 1)[None]
    state = {"x": pixels.contiguous().cuda(), "torch": torch}
    run_torch(state)
    torch.cuda.synchronize()
    return state


def run_torch(state: dict[str, Any]) -> None:
    torch = state["torch"]
    state["y"] = torch.nn.functional.interpolate(
        state["x"], scale_factor=2, mode="bicubic", align_corners=False
    )
    torch.cuda.synchronize()


def _note(kind: str) -> str:
    width, height = size()
    moved = bytes_moved(width, height)
    mb = moved[kind] / 1e6
    return f"{width}x{height} RGBA float, {mb:.0f} MB moved"


def _work(kind: str) -> dict[str, float]:
    """Bytes moved and output pixels of one call (the runner turns them into rates)."""
    width, height = size()
    pixels = width * height * (1 if kind == "copy" else 4)
    return {"bytes": bytes_moved(width, height)[kind], "pixels": pixels}


_SPECS = [
    {
        "name": "bicubic_image_copy",
        "group": "bicubic",
        "setup": setup_images,
        "run": run_once,
        "baseline": True,
        "note": "clEnqueueCopyImage of the source; " + _note("copy"),
        "work": lambda state: _work("copy"),
    },
    {
        "name": "bicubic_2x",
        "group": "bicubic",
        "setup": setup_bicubic,
        "run": run_once,
        "baseline": False,
        "note": "kernels/bicubic.cl upscale2x; fraction of image-copy bandwidth = 2.5 / ratio; "
        + _note("bicubic"),
        "work": lambda state: _work("bicubic"),
    },
    {
        "name": "bicubic_2x_blocks",
        "group": "bicubic",
        "setup": setup_blocks,
        "run": run_once,
        "baseline": False,
        "note": "kernels/bicubic.cl upscale2x_blocks (2x2 outputs from 5x5 texels per "
        "work-item); " + _note("bicubic"),
        "work": lambda state: _work("bicubic"),
    },
    {
        "name": "bicubic_2x_default",
        "group": "bicubic",
        "setup": setup_default,
        "run": run_once,
        "baseline": False,
        "note": "qcom_ext.upscale2x_image with its defaults (what a plain call runs); "
        + _note("bicubic"),
        "work": lambda state: _work("bicubic"),
    },
    {
        "name": "bicubic_2x_tuned",
        "group": "bicubic",
        "setup": setup_tuned,
        "run": run_once,
        "baseline": False,
        "note": "qcom_ext.upscale2x_image(tuned=True) after choose_variant(remember=True); "
        + _note("bicubic"),
        "work": lambda state: _work("bicubic"),
    },
]
if torch_cuda_available():
    _SPECS.append(
        {
            "name": "torch_bicubic_2x",
            "group": "bicubic",
            "setup": setup_torch,
            "run": run_torch,
            "baseline": False,
            "note": "torch.nn.functional.interpolate(mode='bicubic') on CUDA, "
            "another API on the same GPU; " + _note("bicubic"),
            "work": lambda state: _work("bicubic"),
        }
    )

CASES: list[Any] = [Case(**spec) for spec in _SPECS]


def device_seconds(state: dict[str, Any], runs: int) -> list[float]:
    """Profiling-event durations of ``runs`` enqueues, one at a time."""
    times = []
    for _ in range(runs):
        event = enqueue(state)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-9)
    return times


def torch_seconds(state: dict[str, Any], runs: int) -> float:
    """GPU seconds per bicubic ``interpolate`` on CUDA (median; one timer for every
    suite: :func:`~benchmarks._torch_timing.cuda_seconds`)."""
    torch = state["torch"]

    def upscale(_: int) -> Any:
        return torch.nn.functional.interpolate(
            state["x"], scale_factor=2, mode="bicubic", align_corners=False
        )

    return cuda_seconds(torch, upscale, runs, batch=MIN_BATCH)


def check_result(state: dict[str, Any], samples: int = 256) -> float:
    """Largest difference from the numpy reference at ``samples`` random output pixels."""
    from qcom_ext.reference.bicubic import bicubic

    width, height = state["size"]
    out = np.empty((2 * height, 2 * width, 4), np.float32)
    cl.enqueue_copy(
        state["queue"], out, state["dst"], origin=(0, 0), region=(2 * width, 2 * height)
    )
    rng = np.random.default_rng(0)
    xs, ys = rng.integers(0, 2 * width, samples), rng.integers(0, 2 * height, samples)
    coords = np.stack([(xs + 0.5) / 2, (ys + 0.5) / 2], axis=1)
    expected = bicubic(source_pixels(width, height), coords)
    return float(np.abs(out[ys, xs] - expected).max())


DEFAULT_RUNS = 20


def measure_suite(caps: qcom_ext.DeviceCaps, runs: int) -> dict[str, Any]:
    """Median device seconds of each case (profiling events; torch: GPU time, a replayed
    CUDA graph), GB/s,
    the shares of the buffer copy's bandwidth (best of ``runs``, a buffer at least as
    large as the upscale's traffic) and of the image copy's (the source's, median), what
    each upscale ran (method, block, work-group) and its largest difference from numpy."""
    width, height = size()
    moved = bytes_moved(width, height)
    copy_state = setup_images(caps)
    seconds = {"copy": statistics.median(device_seconds(copy_state, runs))}
    states = {kind: setup_images(caps, kind) for kind in UPSCALES}
    for kind, state in states.items():
        seconds[kind] = statistics.median(device_seconds(state, runs))
    if torch_cuda_available():
        seconds["torch"] = torch_seconds(setup_torch(caps), runs)
    copy = measure_copy(copy_state["queue"], moved["bicubic"], runs)
    copy = copy.with_image(moved["copy"], seconds["copy"])
    rows = {}
    for kind, t in seconds.items():
        nbytes = moved["copy" if kind == "copy" else "bicubic"]
        rows[kind] = {
            "seconds": t,
            "bytes": nbytes,
            "GBps": nbytes / t / 1e9,
            "of_buffer_copy": copy.fraction(nbytes, t),
            "of_image_copy": copy.image_fraction(nbytes, t),
        }
        if kind in states:
            rows[kind]["implementation"] = describe_case(states[kind])
    return {
        "size": [width, height],
        "runs": runs,
        "path": caps.path("cl_qcom_filter_bicubic"),
        **copy.as_dict(),
        "copy": copy.describe(),
        "rows": rows,
        "max_error": {kind: check_result(state) for kind, state in states.items()},
        "summary_rows": summary_rows(rows, (width, height)),
    }


def _run_suite(caps: qcom_ext.DeviceCaps, options: Any) -> SuiteResult:
    data = measure_suite(caps, options.rounds or DEFAULT_RUNS)
    return SuiteResult(suite_markdown(data), data)


SUITES = [
    Suite(
        "bicubic-suite",
        "2x bicubic upscale (device time) vs buffer and image copy and torch; size from "
        f"{SIZE_ENV}",
        _run_suite,
    )
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", help="as PYOPENCL_CTX: '0:0', 'nvidia', ...")
    parser.add_argument("--size", type=parse_size, default=None, help="source WxH (4K)")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    args = parser.parse_args()
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    if args.size:
        os.environ[SIZE_ENV] = f"{args.size[0]}x{args.size[1]}"
    caps = qcom_ext.probe()
    print(f"{shared.labels([caps])}, driver {caps.driver_version}")
    data = measure_suite(caps, args.runs)
    print(suite_markdown(data))
    return 0 if max(data["max_error"].values()) <= 1e-3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
