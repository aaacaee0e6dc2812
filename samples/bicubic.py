"""2x bicubic upscale of an image with cl_qcom_filter_bicubic, on any device.

    python samples/bicubic.py [--device 0:0] [--size 96x64 | --input photo.png]
                              [--png up.png]

Upscales an RGBA float image 2x with ``kernels/bicubic.cl``: on Adreno the sampler from
``qcom_ext.create_sampler(..., filter="bicubic")`` filters (CL_FILTER_BICUBIC_QCOM);
elsewhere ``qcom_read_imagef_bicubic`` computes the guide's 4x4 Catmull-Rom formula.
The result is compared with the numpy reference (``qcom_ext.reference.bicubic.upscale2x``); exit
status 1 when the largest difference exceeds ``--tolerance``. ``--png up.png`` writes the
result and the reference next to it (``up-reference.png``; needs Pillow).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir
from qcom_ext.reference.bicubic import upscale2x


def size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


def test_image(width: int, height: int) -> np.ndarray:
    """An RGBA float image with smooth gradients and hard edges (where bicubic rings)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    u, v = x / max(width - 1, 1), y / max(height - 1, 1)
    disc = ((u - 0.5) ** 2 + (v - 0.5) ** 2 < 0.1).astype(np.float32)
    checker = ((x // 8 + y // 8) % 2).astype(np.float32)
    return np.stack([u, 0.5 * v + 0.5 * disc, 0.25 + 0.5 * checker * (1 - disc), 1 + 0 * u], -1)


def load(path: str) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGBA"), np.float32) / 255.0


def save(pixels: np.ndarray, path: Path) -> None:
    from PIL import Image

    Image.fromarray(np.round(np.clip(pixels, 0, 1) * 255).astype(np.uint8), "RGBA").save(path)


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", type=size, default=(96, 64), help="WxH of the test image")
    parser.add_argument("--input", help="upscale this image instead (needs Pillow)")
    parser.add_argument("--png", help="write the result here, the reference next to it")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_filter_bicubic")
    if not caps.image_support:
        print(f"{caps.label} has no image support: nothing to upscale")
        return 0

    pixels = load(args.input) if args.input else test_image(*args.size)
    height, width = pixels.shape[:2]
    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    source = (kernels_dir() / "bicubic.cl").read_text()
    program = qcom_ext.build_program(ctx, source, defines={"QCOM_EXT_BICUBIC_NORMALIZED": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)  # the path is printed above
        sampler = qcom_ext.create_sampler(ctx, normalized=True, addressing="clamp")

    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    mf = cl.mem_flags
    src = cl.create_image(
        ctx,
        mf.READ_ONLY | mf.COPY_HOST_PTR,
        fmt,
        shape=(width, height),
        hostbuf=np.ascontiguousarray(pixels),
    )
    dst = cl.create_image(ctx, mf.WRITE_ONLY, fmt, shape=(2 * width, 2 * height))
    kernel = cl.Kernel(program, "upscale2x")
    kernel.set_args(src, sampler, dst)
    timing, _ = _common.timed(
        lambda: cl.enqueue_nd_range_kernel(queue, kernel, (2 * width, 2 * height), None).wait(),
        first_holds="the program built above: the first launch",
    )
    result = np.empty((2 * height, 2 * width, 4), np.float32)
    cl.enqueue_copy(queue, result, dst, origin=(0, 0), region=(2 * width, 2 * height))

    expected = upscale2x(pixels)
    error = float(np.abs(result - expected).max())
    print(
        f"{width}x{height} -> {2 * width}x{2 * height} RGBA float: {timing}; "
        f"max |device - numpy| = {error:.3g} (tolerance {args.tolerance:g})"
    )
    if args.png:
        try:
            out = Path(args.png)
            save(result, out)
            reference = out.with_name(f"{out.stem}-reference{out.suffix or '.png'}")
            save(expected, reference)
            print(f"wrote {out} and {reference}")
        except ImportError:
            print("Pillow is not installed: no PNG written")
    ok = error <= args.tolerance
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
