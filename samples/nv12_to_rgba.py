"""NV12 to RGBA by a kernel that reads the frame's planes (cl_qcom_other_image), on any device.

    python samples/nv12_to_rgba.py [--device 0:0] [--size 640x480] [--input frame.nv12]
                                   [--range limited|full] [--memfd] [--png out.png]

Makes an NV12 frame (a generated test card, or the raw NV12 bytes of --input, whose
size --size gives), puts it in a ``qcom_ext.Nv12Image`` and converts it with
``kernels/nv12_to_rgba.cl``, which reads pixels through ``qcom_ext_read_nv12f``: the
plane children of a CL_QCOM_NV12 image on Adreno, two ordinary plane images elsewhere.
``--memfd`` puts the frame in a memfd imported as a dma-buf (the zero-copy path of the
fallback; Adreno imports real dma-bufs only). The result is checked against numpy's
BT.601 conversion (``qcom_ext.ext.images.yuv``); exit status 1 on mismatch. ``--png`` writes the
RGBA result if Pillow is installed.
"""

from __future__ import annotations

import os
from pathlib import Path

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir
from qcom_ext.ext.images import yuv


def load_frame(args, parser) -> np.ndarray:
    width, height = (int(v) for v in args.size.lower().split("x"))
    try:
        yuv.check_nv12_shape(width, height)
    except qcom_ext.ConfigError as exc:
        parser.error(str(exc))
    if args.input is None:
        return yuv.rgb_to_nv12(yuv.test_pattern(width, height), full_range=args.range == "full")
    data = np.fromfile(args.input, np.uint8)
    if data.size != width * height * 3 // 2:
        parser.error(
            f"{args.input} holds {data.size} bytes; a {width}x{height} NV12 frame "
            f"has {width * height * 3 // 2}"
        )
    return data.reshape(height * 3 // 2, width)


def nv12_image(ctx, queue, frame: np.ndarray, use_memfd: bool):
    height, width = frame.shape[0] * 2 // 3, frame.shape[1]
    if not use_memfd:
        image = qcom_ext.nv12_image(ctx, (width, height))
        image.write(queue, frame)
        return image, None
    fd = os.memfd_create("nv12-frame")
    os.ftruncate(fd, frame.nbytes)
    os.pwrite(fd, frame.tobytes(), 0)
    image = qcom_ext.nv12_image(ctx, (width, height), memory=qcom_ext.ExternalMemory.dmabuf(fd))
    return image, fd


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT, both even")
    parser.add_argument("--input", type=Path, help="raw NV12 frame (Y plane, then UV)")
    parser.add_argument(
        "--range",
        choices=("limited", "full"),
        default="limited",
        help="BT.601 video range (16-235) or full range (JPEG)",
    )
    parser.add_argument("--memfd", action="store_true", help="frame in a memfd, as a dma-buf")
    parser.add_argument("--png", help="write the RGBA result here (needs Pillow)")
    args = parser.parse_args()
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_other_image")
    if args.memfd and caps.path("cl_qcom_dmabuf_host_ptr") == "native":
        parser.error("--memfd: this device imports real dma-bufs natively and a memfd is none")
    if args.memfd and not hasattr(os, "memfd_create"):
        parser.error("--memfd needs Linux")
    frame = load_frame(args, parser)
    height, width = frame.shape[0] * 2 // 3, frame.shape[1]
    full_range = args.range == "full"

    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    source = (kernels_dir() / "nv12_to_rgba.cl").read_text()
    kernel = cl.Kernel(qcom_ext.build_program(ctx, source), "nv12_to_rgba")
    image, fd = nv12_image(ctx, queue, frame, args.memfd)
    where = ", on a memfd (dma-buf import)" if fd is not None else ""
    print(
        f"Nv12Image {width}x{height}: path {image.path}, chroma plane {image.uv_layout}"
        f"{where} ({image.reason})"
    )

    rgba = np.empty((height, width, 4), np.uint8)
    dst = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, rgba.nbytes)

    def convert():
        kernel(
            queue,
            (width, height),
            None,
            *image.kernel_args,
            dst,
            np.int32(width),
            np.int32(height),
            np.int32(full_range),
        )
        cl.enqueue_copy(queue, rgba, dst)  # blocking

    timing, _ = _common.timed(convert)
    if fd is not None:
        os.close(fd)

    expected = yuv.nv12_to_rgb(frame, full_range=full_range)
    difference = np.abs(rgba[..., :3].astype(np.int16) - expected)
    # The kernel computes in float32, numpy in float64: a rounding tie may differ by 1.
    ok = difference.max() <= 1 and (difference > 0).mean() < 0.02 and (rgba[..., 3] == 255).all()
    differ = np.count_nonzero(difference.max(axis=-1))
    print(
        f"converted: {timing} ({args.range} range); max difference from "
        f"the numpy BT.601 reference {difference.max()}, {differ} of {width * height} "
        "pixels differ"
    )
    if args.png:
        _common.write_png(args.png, rgba, "RGBA")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
