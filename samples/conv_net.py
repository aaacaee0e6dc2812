"""A MobileNet-style block on an image with qcom_ext's convolution kernels (qcom_ext.ops).

    python samples/conv_net.py [--device 0:0] [--image photo.png] [--size 96x64]

The inverted-residual block of MobileNetV2 on an RGB image: a 1x1 expansion (3 -> 24
channels, ReLU6) on NHWC buffers, a 3x3 depthwise convolution (stride 2, ReLU6) on the
RGBA image layout, and a linear 1x1 projection (24 -> 16 channels) back on buffers;
layout conversions between them run on the device (buffer -> image -> buffer). These
kernels are qcom_ext's fallback for CLML (cl_qcom_ml_ops) convolutions; the path each
layer takes is printed. Without ``--image`` a synthetic picture is used. The output is
compared with a float64 numpy reference; exit status 1 on mismatch.
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

from qcom_ext import ops


def picture(width: int, height: int) -> np.ndarray:
    """A synthetic RGB picture in [0, 1]: gradients and a disc, (1, H, W, 3)."""
    y, x = np.mgrid[0:height, 0:width] / np.array([[[max(height - 1, 1)]], [[max(width - 1, 1)]]])
    disc = ((x - 0.6) ** 2 + (y - 0.4) ** 2 < 0.08).astype(np.float64)
    return np.stack([x, y, 0.5 * disc + 0.25 * (1 - x)], axis=-1)[None].astype(np.float32)


def load(path: str) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        rgb = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    return rgb[None]


def reference(x: np.ndarray, w1, b1, wd, bd, w2, b2) -> np.ndarray:
    """The same block in float64 numpy, NHWC in and out."""
    h = np.clip(x.astype(np.float64) @ w1.T + b1, 0, 6)  # 1x1 expansion, ReLU6
    n, height, width, c = h.shape
    padded = np.zeros((n, height + 2, width + 2, c))
    padded[:, 1:-1, 1:-1] = h
    oh, ow = (height - 1) // 2 + 1, (width - 1) // 2 + 1
    d = np.zeros((n, oh, ow, c)) + bd
    for ky in range(3):
        for kx in range(3):
            d += padded[:, ky : ky + 2 * oh - 1 : 2, kx : kx + 2 * ow - 1 : 2] * wd[:, 0, ky, kx]
    d = np.clip(d, 0, 6)  # depthwise 3x3 stride 2, ReLU6
    return d @ w2.T + b2  # linear 1x1 projection


def size(text: str) -> tuple[int, int]:
    width, height = (int(v) for v in text.lower().split("x"))
    if min(width, height) < 1:
        raise ValueError(text)
    return width, height


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--image", help="an image file (Pillow); default: a synthetic one")
    parser.add_argument(
        "--size", type=size, default=(96, 64), metavar="WxH", help="size of the synthetic image"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_ml_ops")
    device = caps.device()
    if not device.image_support:
        print(
            f"{caps.label}: no image support (CL_DEVICE_IMAGE_SUPPORT is 0); the depthwise "
            "layer runs on the image layout, so this sample needs images. Skipped."
        )
        return 0
    queue = cl.CommandQueue(cl.Context([device]))

    x = load(args.image) if args.image else picture(*args.size)
    rng = np.random.default_rng(args.seed)
    w1, b1 = rng.standard_normal((24, 3)) * 0.8, rng.standard_normal(24) * 0.1
    wd, bd = rng.standard_normal((24, 1, 3, 3)) * 0.4, rng.standard_normal(24) * 0.1
    w2, b2 = rng.standard_normal((16, 24)) * 0.3, rng.standard_normal(16) * 0.1

    expand = ops.Conv2d1x1(queue, w1, b1, activation="relu6")
    depthwise = ops.DepthwiseConv2d(queue, wd, bd, stride=2, padding=1, activation="relu6")
    project = ops.Conv2d1x1(queue, w2, b2)
    mf = cl.mem_flags
    nhwc = ops.BufferTensor(
        cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x),
        x.shape,
        np.dtype(np.float32),
        "NHWC",
    )
    h = expand(queue, nhwc)  # NHWC buffer
    h_image = ops.to_image(queue, h, layout="NHWC")  # buffer -> image
    d = depthwise(queue, h_image)
    d_nhwc = ops.from_image(
        queue,
        d,
        layout="NHWC",
        out=ops.BufferTensor.empty(
            queue.context, (d.shape[0], d.shape[2], d.shape[3], d.shape[1]), np.float32, "NHWC"
        ),
    )
    out = project(queue, d_nhwc)
    y = out.to_numpy(queue)
    steps = (
        ("expand 1x1 3->24", expand, nhwc, h, "NHWC buffers"),
        ("depthwise 3x3/2", depthwise, h_image, d, "RGBA image layout"),
        ("project 1x1 24->16", project, d_nhwc, out, "NHWC buffers"),
    )
    for name, layer, source, result, where in steps:
        tile = f", tile {layer.tile[0]}x{layer.tile[1]}" if hasattr(layer, "tile") else ""
        local = layer.launcher.local_size(layer.global_size(source, result))
        chosen = f"tuned local size {local}" if local else "driver-chosen local size"
        print(f"{name:<19} {layer.launcher.identity.kernel} on {where}{tile}, {chosen}")

    want = reference(x, w1, b1, wd, bd, w2, b2)
    error = float(np.abs(y - want).max())
    scale = float(np.abs(want).max())
    ok = y.shape == want.shape and error <= 1e-4 * max(1.0, scale)
    print(
        f"input {x.shape[2]}x{x.shape[1]}x3 -> output {y.shape[2]}x{y.shape[1]}x{y.shape[3]} "
        f"(NHWC {y.shape}); max |error| {error:.2e} vs numpy float64 (max |y| {scale:.2f})"
    )
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
