"""2x downscale of an RGBA image with 2x2 gathers (cl_qcom_vector_image_ops) on any device.

    python samples/vector_image_gather.py [--device 0:0] [--size 640x480] [--input in.png]
                                          [--png half.png]

``kernels/downscale.cl`` averages each 2x2 quad of a float RGBA image with four
``qcom_read_imagef_2x2`` calls (one per component, the quad's elements in the spec's
counter-clockwise order): native on Adreno, the ``kernels/qcom_ext.h`` fallback
elsewhere. The input is a generated pattern, or ``--input`` (any image Pillow reads).
The result is checked against a numpy box average (bit-exact: same additions, same
order); exit status 1 on mismatch. ``--png`` writes the half-size image.
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir


def generated_image(width: int, height: int) -> np.ndarray:
    """RGBA float32 in [0, 1]: colour gradients, a checkerboard and a soft disc."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    u, v = x / max(width - 1, 1), y / max(height - 1, 1)
    checker = ((x // 8 + y // 8) % 2).astype(np.float32)
    disc = np.exp(-(((x - width / 2) ** 2 + (y - height / 2) ** 2) / (0.1 * width * height)))
    rgba = np.stack([u, v, 0.5 * checker + 0.5 * disc, 0.5 + 0.5 * u * v], axis=-1)
    return np.ascontiguousarray(rgba, dtype=np.float32)


def loaded_image(path: str) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        rgba = np.asarray(image.convert("RGBA"), dtype=np.float32) / 255.0
    return np.ascontiguousarray(rgba)


def reference(image: np.ndarray) -> np.ndarray:
    """The 2x2 box average, summed in the kernel's order: (e0 + e1) + (e2 + e3)."""
    h, w = image.shape[0] // 2 * 2, image.shape[1] // 2 * 2
    upper, lower = image[0:h:2, :w], image[1:h:2, :w]
    e0, e1 = lower[:, 0::2], lower[:, 1::2]  # lower-left, lower-right
    e2, e3 = upper[:, 1::2], upper[:, 0::2]  # upper-right, upper-left (the base)
    return ((e0 + e1) + (e2 + e3)) * np.float32(0.25)


def downscale(
    ctx: cl.Context, image: np.ndarray, kernel_name: str = "downscale2x_gather"
) -> np.ndarray:
    """The kernel's half-size image of ``image`` (H x W x 4 float32)."""
    queue = cl.CommandQueue(ctx)
    program = qcom_ext.build_program(ctx, (kernels_dir() / "downscale.cl").read_text())
    height, width = image.shape[:2]
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    mf = cl.mem_flags
    src = cl.create_image(
        ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, fmt, shape=(width, height), hostbuf=image
    )
    out_shape = (width // 2, height // 2)
    dst = cl.create_image(ctx, mf.WRITE_ONLY, fmt, shape=out_shape)
    cl.Kernel(program, kernel_name)(queue, out_shape, None, src, dst)
    result = np.empty((out_shape[1], out_shape[0], 4), np.float32)
    cl.enqueue_copy(queue, result, dst, origin=(0, 0), region=out_shape)
    return result


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT of the generated image")
    parser.add_argument("--input", help="downscale this image instead (needs Pillow)")
    parser.add_argument("--png", help="write the half-size image here (needs Pillow)")
    args = parser.parse_args()
    caps = _common.probe_device(args)
    status = _common.report(caps, "cl_qcom_vector_image_ops")
    if not status.usable:
        print(f"no 2x2 gathers on {caps.label}: {status.reason}")
        return 0

    if args.input:
        image = loaded_image(args.input)
    else:
        width, height = (int(v) for v in args.size.lower().split("x"))
        if width < 2 or height < 2:
            parser.error("--size must be at least 2x2")
        image = generated_image(width, height)
    ctx = cl.Context([caps.device()])
    result = downscale(ctx, image)
    expected = reference(image)
    ok = np.array_equal(result, expected)
    h, w = image.shape[:2]
    print(
        f"{w}x{h} -> {result.shape[1]}x{result.shape[0]} RGBA float, "
        f"max |kernel - numpy| = {np.abs(result - expected).max():.3g}"
    )
    if args.png:
        from PIL import Image

        pixels = np.clip(np.rint(result * 255), 0, 255).astype(np.uint8)
        Image.fromarray(pixels, "RGBA").save(args.png)
        print(f"wrote {args.png}")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
