"""Sobel edges with qcom_convolve_imagef: a 2-D and a separable weight image, side by side.

    python samples/convolve.py [--device 0:0] [--size 320x240] [--png edges.png]

Builds the spec's 3x3 Sobel filters as qcom_ext.WeightImage objects, both as 2-D filters
(Gx, Gy) and in separable form (horizontal x vertical rows), and runs
qcom_ext.convolve_image on a generated scene (natively on Adreno, the portable kernels
elsewhere). The edge magnitude sqrt(Gx^2 + Gy^2) of both forms is checked against numpy
and against each other; exit status 1 on mismatch. ``--png`` writes input, 2-D result and
separable result side by side (needs Pillow).
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext.ext.accelerated.whole_image import empty_rgba_image, read_rgba_image, rgba_image
from qcom_ext.reference import accelerated as accelerated_reference

SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])
SEPARABLE_X = np.array([[-1, 0, 1], [1, 2, 1]])  # horizontal row, vertical row
SEPARABLE_Y = np.array([[1, 2, 1], [-1, 0, 1]])


def scene(width: int, height: int) -> np.ndarray:
    """A grey gradient with a disc, a square and stripes: edges in every direction."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    grey = 0.2 + 0.3 * x / max(width - 1, 1)
    grey += 0.4 * ((x - width * 0.3) ** 2 + (y - height * 0.5) ** 2 < (height * 0.25) ** 2)
    square = (abs(x - width * 0.72) < height * 0.18) & (abs(y - height * 0.45) < height * 0.18)
    grey = np.where(square, 0.9 - grey * 0.5, grey)
    grey += 0.15 * ((y // 6) % 2) * (y > height * 0.8)
    return np.repeat(np.clip(grey, 0, 1)[..., None], 4, axis=2).astype(np.float32)


def magnitude(gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    return np.sqrt(gx[..., 0].astype(np.float64) ** 2 + gy[..., 0] ** 2)


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", default="320x240", help="WIDTHxHEIGHT")
    parser.add_argument("--png", help="write input | 2-D | separable here (needs Pillow)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_accelerated_image_ops")

    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    filters = {
        "2-D": [
            qcom_ext.WeightImage(ctx, SOBEL_X, center=(1, 1)),
            qcom_ext.WeightImage(ctx, SOBEL_X.T, center=(1, 1)),
        ],
        "separable": [
            qcom_ext.WeightImage(ctx, SEPARABLE_X, center=(1, 1), separable=True),
            qcom_ext.WeightImage(ctx, SEPARABLE_Y, center=(1, 1), separable=True),
        ],
    }
    pixels = scene(width, height)
    src = rgba_image(ctx, pixels)
    dst = empty_rgba_image(ctx, width, height)
    expected = magnitude(
        accelerated_reference.convolve_image(pixels, SOBEL_X, (1, 1)),
        accelerated_reference.convolve_image(pixels, SOBEL_X.T, (1, 1)),
    )
    results, ok = {}, True
    for kind, (wx, wy) in filters.items():

        def both(wx=wx, wy=wy):
            qcom_ext.convolve_image(queue, src, wx, dst)
            gx = read_rgba_image(queue, dst)
            qcom_ext.convolve_image(queue, src, wy, dst)
            return gx, read_rgba_image(queue, dst)

        timing, (gx, gy) = _common.timed(both)
        results[kind] = magnitude(gx, gy)
        error = float(np.abs(results[kind] - expected).max())
        ok &= error < 1e-4
        print(f"{kind:>9}: {wx!r}; 2 passes: {timing}; max error vs numpy {error:.2g}")
    agreement = float(np.abs(results["2-D"] - results["separable"]).max())
    ok &= agreement < 1e-4
    print(
        f"2-D vs separable: max difference {agreement:.2g}; edge pixels "
        f"{int((expected > 0.5).sum())} of {width * height}"
    )
    if args.png:
        try:
            from PIL import Image
        except ImportError:
            print("Pillow is not installed: no PNG written")
        else:
            scale = max(float(expected.max()), 1e-6)
            panels = [pixels[..., 0], results["2-D"] / scale, results["separable"] / scale]
            row = np.concatenate([np.clip(p, 0, 1) for p in panels], axis=1)
            Image.fromarray((row * 255 + 0.5).astype(np.uint8)).save(args.png)
            print(f"wrote {args.png}")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
