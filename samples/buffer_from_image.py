"""One pixel store, two views: an image and a buffer (cl_qcom_create_buffer_from_image).

    python samples/buffer_from_image.py [--device 0:0] [--size 200x120] [--existing]

A kernel writes a pattern through the image; a second kernel inverts it through the
buffer, addressing rows by the pair's row pitch; a third reads it back through the
image. ``qcom_ext.image_with_buffer`` makes the pair (``--existing``: an image made
first, then ``qcom_ext.buffer_from_image``). Natively, and with
cl_khr_image2d_from_buffer, the two views alias (zero-copy); elsewhere the syncs copy.
Every step is checked against numpy; exit status 1 on mismatch.
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir

EXTENSION = "cl_qcom_create_buffer_from_image"


def pattern(width: int, height: int) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([x & 255, y & 255, (x ^ y) & 255, np.full_like(x, 255)], -1).astype(np.uint8)


def inverted(pixels: np.ndarray) -> np.ndarray:
    out = pixels.copy()
    out[..., :3] = 255 - out[..., :3]
    out[..., 3] = (2 * np.arange(pixels.shape[0]) % 256)[:, None]
    return out


def check(name: str, got: np.ndarray, expected: np.ndarray) -> bool:
    ok = np.array_equal(got, expected)
    wrong = "" if ok else f" ({np.count_nonzero(np.any(got != expected, -1))} pixels differ)"
    print(f"{name:<40} {'ok' if ok else 'MISMATCH'}{wrong}")
    return ok


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", default="200x120", help="WIDTHxHEIGHT")
    parser.add_argument(
        "--existing",
        action="store_true",
        help="make the image first, then buffer_from_image(image)",
    )
    parser.add_argument("--png", help="write the final image here (needs Pillow)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    caps = _common.probe_device(args)
    _common.report(caps, EXTENSION)

    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    program = qcom_ext.build_program(ctx, (kernels_dir() / "buffer_from_image.cl").read_text())
    fmt = ("RGBA", "UNSIGNED_INT8")
    if args.existing:
        rgba = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
        image = cl.create_image(ctx, cl.mem_flags.READ_WRITE, rgba, (width, height))
        pair = qcom_ext.buffer_from_image(image)
    else:
        pair = qcom_ext.image_with_buffer(ctx, (width, height), fmt)
    copies = "aliased, syncs are no-ops" if pair.zero_copy else "separate, syncs copy"
    print(
        f"pair path {pair.path}: zero-copy {pair.zero_copy} ({copies}); "
        f"row pitch {pair.row_pitch} bytes for {width * 4} bytes of pixels"
    )

    program.paint(queue, (width, height), None, pair.image)
    pair.sync_to_buffer(queue)
    painted = pattern(width, height)
    ok = check("written through the image, read via buffer", pair.read_buffer(queue), painted)

    program.invert_rows(queue, (width, height), None, pair.buffer, np.uint32(pair.row_pitch))
    pair.sync_to_image(queue)
    packed = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, width * height * 4)
    program.gather(queue, (width, height), None, pair.image, packed, np.uint32(width))
    back = np.empty((height, width, 4), np.uint8)
    cl.enqueue_copy(queue, back, packed)
    ok &= check("changed through the buffer, read via image", back, inverted(painted))

    if args.png:
        _common.write_png(args.png, back, "RGBA")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
