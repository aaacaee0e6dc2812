"""Blur with qcom_box_filter_imagef at fractional box sizes (cl_qcom_accelerated_image_ops).

    python samples/box_filter.py [--device 0:0] [--size 320x240] [--boxes 1.5,3.25,7.5]
                                 [--png blur.png]

Each box size w x w (any float up to the device's limit, 16 for the portable code) is
passed as ``qcom_ext.box_size(w, w)``; pixels the box only partly covers count with the
covered fraction, so the blur grows smoothly with w. qcom_ext.box_filter_image runs it at
every pixel (natively on Adreno, the portable kernels elsewhere); each result is checked
against numpy; exit status 1 on mismatch. ``--png`` writes the input and the blurs side by
side (needs Pillow).
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext.ext.accelerated.whole_image import empty_rgba_image, read_rgba_image, rgba_image
from qcom_ext.reference import accelerated as accelerated_reference


def scene(width: int, height: int) -> np.ndarray:
    """A colour checkerboard with a thin grid: sharp edges for the blur to soften."""
    y, x = np.mgrid[0:height, 0:width]
    cells = ((x // 16 + y // 16) % 2).astype(np.float32)
    rgb = np.stack([0.2 + 0.6 * cells, 0.3 + 0.4 * (x / max(width - 1, 1)), 0.8 - 0.6 * cells], -1)
    rgb[(x % 40 == 0) | (y % 40 == 0)] = 1.0
    alpha = np.ones((height, width, 1))
    return np.concatenate([rgb, alpha], -1).astype(np.float32)


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", default="320x240", help="WIDTHxHEIGHT")
    parser.add_argument("--boxes", default="1.5,3.25,7.5", help="box sizes, comma-separated")
    parser.add_argument("--png", help="write input | blurs here (needs Pillow)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_accelerated_image_ops")

    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    pixels = scene(width, height)
    src, dst = rgba_image(ctx, pixels), empty_rgba_image(ctx, width, height)
    panels, ok = [pixels], True
    for text in args.boxes.split(","):
        w = float(text)
        size = qcom_ext.box_size(w, w, device=ctx)  # refuses sizes over the device's limit
        timing, _ = _common.timed(
            lambda s=size: qcom_ext.box_filter_image(queue, src, s, dst).wait()
        )
        blurred = read_rgba_image(queue, dst)
        error = float(
            np.abs(blurred - accelerated_reference.box_filter_image(pixels, (w, w))).max()
        )
        ok &= error < 1e-5
        print(f"box {w:g}x{w:g}: {timing}; max error vs numpy {error:.2g}")
        panels.append(blurred)
    if args.png:
        try:
            from PIL import Image
        except ImportError:
            print("Pillow is not installed: no PNG written")
        else:
            row = np.concatenate([p[..., :3] for p in panels], axis=1)
            Image.fromarray((np.clip(row, 0, 1) * 255 + 0.5).astype(np.uint8)).save(args.png)
            print(f"wrote {args.png}")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
