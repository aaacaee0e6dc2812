"""2x2-gather 2x downscale of a 4K RGBA float image, against the device's own image copy.

    qcom-ext bench gather --device nvidia                          # times and ratios (the runner)
    python -m qcom_ext.tools.bench.cases_gather --device nvidia    # GB/s, fraction of copy, target

Cases (group ``gather``; every ``run`` enqueues ``REPEATS`` operations back to back,
then waits for them, so launch latency overlaps the device work):

* ``gather_image_copy`` (baseline): ``clEnqueueCopyImage`` of the W x H RGBA float image into
  a second one; moves 2 x 16 B per pixel.
* ``gather_downscale``: ``downscale2x_gather`` of ``kernels/downscale.cl``: four
  ``qcom_read_imagef_2x2`` per output pixel (one per component); moves 16 B per input
  pixel + 16 B per output pixel (1.25 x 16 B per input pixel).
* ``read_downscale``: the same average from four ``read_imagef`` (hand-written).

The checkout's lab adds ``torch_avg_pool2d`` to the group (``benchmarks/cases_gather_torch.py``,
``python -m benchmarks gather``).

Bandwidth = bytes moved / time; the fraction of the image copy's bandwidth is
``(1.25 / 2) / ratio`` for the downscales. The script also states each against the
buffer copy's bandwidth (``clEnqueueCopyBuffer`` of at least the image copy's bytes,
profiling events, best of ``--rounds``: the roofline, :mod:`._profiling`). Target
(issue 5): ``gather_downscale`` at >= 60 % of the image-copy bandwidth.
``QCOM_EXT_BENCH_GATHER_SIZE=WxH`` sets the image size (default 3840x2160; the tests use
a small one).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir
from qcom_ext.device import shared
from qcom_ext.tools.bench._case import Case
from qcom_ext.tools.bench._profiling import CopyBandwidth, fraction, measure_copy

SIZE_ENV = "QCOM_EXT_BENCH_GATHER_SIZE"
DEFAULT_SIZE = (3840, 2160)
REPEATS = 10
LOCAL = (32, 8)  # 32 consecutive output pixels of a row per warp / vector
TARGET_FRACTION = 0.60
PIXEL_BYTES = 16  # RGBA float32


def image_size() -> tuple[int, int]:
    """(width, height) from ``QCOM_EXT_BENCH_GATHER_SIZE``, or 4K UHD."""
    text = os.environ.get(SIZE_ENV)
    if not text:
        return DEFAULT_SIZE
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise qcom_ext.ConfigError(f"{SIZE_ENV}={text!r}: expected WIDTHxHEIGHT") from None
    if width < 2 or height < 2:
        raise qcom_ext.ConfigError(f"{SIZE_ENV}={text!r}: the image must be at least 2x2")
    return width, height


def bytes_moved(name: str, width: int, height: int) -> int:
    """Bytes one operation of case ``name`` reads and writes."""
    pixels = width * height
    if name == "gather_image_copy":
        return 2 * pixels * PIXEL_BYTES
    return (pixels + (width // 2) * (height // 2)) * PIXEL_BYTES


def source_image(width: int, height: int) -> np.ndarray:
    return np.random.default_rng(11).random((height, width, 4), dtype=np.float32)


def _images(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    if not caps.image_support:
        raise qcom_ext.ExtensionUnavailable("images", caps.label, "CL_DEVICE_IMAGE_SUPPORT is 0")
    width, height = image_size()
    context = cl.Context([caps.device()])
    queue = cl.CommandQueue(context)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    mf = cl.mem_flags
    data = source_image(width, height)
    src = cl.create_image(
        context, mf.READ_ONLY | mf.COPY_HOST_PTR, fmt, shape=(width, height), hostbuf=data
    )
    return {
        "context": context,
        "queue": queue,
        "src": src,
        "fmt": fmt,
        "data": data,
        "width": width,
        "height": height,
    }


def setup_copy(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = _images(caps)
    shape = (state["width"], state["height"])
    state["dst"] = cl.create_image(
        state["context"], cl.mem_flags.READ_WRITE, state["fmt"], shape=shape
    )
    state["queue"].finish()
    return state


def run_copy(state: dict[str, Any]) -> None:
    queue, src, dst = state["queue"], state["src"], state["dst"]
    region = (state["width"], state["height"])
    for _ in range(REPEATS):
        cl.enqueue_copy(queue, dst, src, src_origin=(0, 0), dest_origin=(0, 0), region=region)
    queue.finish()


def _setup_downscale(caps: qcom_ext.DeviceCaps, kernel_name: str) -> dict[str, Any]:
    state = _images(caps)
    source = (kernels_dir() / "downscale.cl").read_text()
    program = qcom_ext.build_program(state["context"], source)
    out_shape = (state["width"] // 2, state["height"] // 2)
    state["dst"] = cl.create_image(
        state["context"], cl.mem_flags.WRITE_ONLY, state["fmt"], shape=out_shape
    )
    state["out_shape"] = out_shape
    kernel = cl.Kernel(program, kernel_name)
    kernel.set_args(state["src"], state["dst"])
    state["kernel"] = kernel
    state["global"] = tuple(-(-n // m) * m for n, m in zip(out_shape, LOCAL, strict=True))
    return state


def setup_gather(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return _setup_downscale(caps, "downscale2x_gather")


def setup_read(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return _setup_downscale(caps, "downscale2x_read")


def run_downscale(state: dict[str, Any]) -> None:
    queue, kernel, global_size = state["queue"], state["kernel"], state["global"]
    for _ in range(REPEATS):
        cl.enqueue_nd_range_kernel(queue, kernel, global_size, LOCAL)
    queue.finish()


def result_of(state: dict[str, Any]) -> np.ndarray:
    """The destination image of a downscale (or copy) state, as H x W x 4 float32."""
    width, height = state.get("out_shape", (state["width"], state["height"]))
    out = np.empty((height, width, 4), np.float32)
    cl.enqueue_copy(state["queue"], out, state["dst"], origin=(0, 0), region=(width, height))
    return out


_SPECS = [
    {
        "name": "gather_image_copy",
        "group": "gather",
        "setup": setup_copy,
        "run": run_copy,
        "baseline": True,
        "note": f"{REPEATS} x clEnqueueCopyImage, RGBA float: 32 B/pixel",
    },
    {
        "name": "gather_downscale",
        "group": "gather",
        "setup": setup_gather,
        "run": run_downscale,
        "baseline": False,
        "note": f"{REPEATS} x downscale2x_gather (qcom_read_imagef_2x2 x 4): 20 B per input "
        "pixel; fraction of copy bandwidth = 0.625 / ratio; target >= 0.60",
    },
    {
        "name": "read_downscale",
        "group": "gather",
        "setup": setup_read,
        "run": run_downscale,
        "baseline": False,
        "note": f"{REPEATS} x downscale2x_read (read_imagef x 4): 20 B per input pixel",
    },
]
for _spec in _SPECS:  # bytes moved per call, for the runner's GB/s
    _spec["work"] = lambda state, name=_spec["name"]: {
        "bytes": bytes_moved(name, *image_size()) * REPEATS
    }

CASES = [Case(**spec) for spec in _SPECS]


def bandwidth_report(report: Any, copy: CopyBandwidth | None = None) -> list[dict[str, Any]]:
    """Per case of a runner report: GB/s, the share of the image copy's bandwidth (the
    ``gather_image_copy`` case) and, given the buffer-copy reference ``copy``, of the
    buffer copy's."""
    width, height = image_size()
    rows = []
    for r in report.results:
        moved = bytes_moved(r.name, width, height) * REPEATS
        row = {
            "name": r.name,
            "median_s": r.median_s / REPEATS,
            "gb_per_s": moved / r.median_s / 1e9,
        }
        if copy is not None:
            row["of_buffer_copy"] = copy.fraction(moved, r.median_s)
        rows.append(row)
    image = next(r for r in report.results if r.name == "gather_image_copy")
    image_Bps = bytes_moved(image.name, width, height) * REPEATS / image.median_s
    for row, r in zip(rows, report.results, strict=True):
        row["fraction_of_copy"] = fraction(
            bytes_moved(r.name, width, height) * REPEATS, r.median_s, image_Bps
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    from qcom_ext.tools.bench.run import measure, stamps

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", help="as PYOPENCL_CTX: '0:0', 'nvidia', ...")
    parser.add_argument("--size", help=f"WIDTHxHEIGHT (default {SIZE_ENV} or 3840x2160)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    if args.size:
        os.environ[SIZE_ENV] = args.size
    caps = qcom_ext.probe()
    width, height = image_size()
    report = measure(CASES, caps, rounds=args.rounds)
    queue = cl.CommandQueue(
        cl.Context([caps.device()]), properties=cl.command_queue_properties.PROFILING_ENABLE
    )
    copy = measure_copy(queue, bytes_moved("gather_image_copy", width, height), args.rounds)
    rows = bandwidth_report(report, copy)
    print(
        f"{shared.labels([caps])}, driver {caps.driver_version}; "
        f"{width}x{height} RGBA float -> {width // 2}x{height // 2}; "
        f"cl_qcom_vector_image_ops: {caps.path('cl_qcom_vector_image_ops')}; {copy.describe()}"
    )
    print(
        f"{'case':<20}{'per operation':>15}{'GB/s':>10}{'of buffer copy':>16}{'of image copy':>15}"
    )
    for row in rows:
        print(
            f"{row['name']:<20}{row['median_s'] * 1e6:>12.1f} µs{row['gb_per_s']:>10.1f}"
            f"{row['of_buffer_copy']:>16.2f}{row['fraction_of_copy']:>15.2f}"
        )
    gather = next(row for row in rows if row["name"] == "gather_downscale")
    met = gather["fraction_of_copy"] >= TARGET_FRACTION
    print(
        f"target: gather_downscale >= {TARGET_FRACTION:.0%} of the image-copy bandwidth: "
        f"{gather['fraction_of_copy']:.0%}, {'met' if met else 'NOT met'} "
        f"(issue 5's target; {gather['of_buffer_copy']:.0%} of the buffer copy)"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "header": stamps(caps),
                    **copy.as_dict(),
                    "size": [width, height],
                    "repeats": REPEATS,
                    "results": rows,
                    "target_met": met,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
