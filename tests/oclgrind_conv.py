"""Run every convolution kernel once on small shapes and check it against numpy.

Used by test_ops_oclgrind.py under Oclgrind (out-of-bounds accesses, data races,
uninitialized values are reported in its log); runnable on any device as
``python tests/oclgrind_conv.py [images|buffers|int8]``. Exit status 1 on a numerical
mismatch.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).parent))
from conv_reference import assert_close, conv2d

import qcom_ext
from qcom_ext import ops


def main() -> int:
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    device = qcom_ext.probe().device()
    queue = cl.CommandQueue(cl.Context([device]))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 6, 7)).astype(np.float32)
    checks = 0
    if part not in ("all", "images", "buffers", "int8"):
        raise SystemExit(f"unknown part {part!r}: expected images, buffers or int8")
    if device.image_support and part in ("all", "images"):
        for dtype in (np.float32, np.float16):
            xd = x.astype(dtype)
            for layout in ("NCHW", "NHWC"):
                host = xd if layout == "NCHW" else np.ascontiguousarray(xd.transpose(0, 2, 3, 1))
                back = ops.from_image(queue, ops.to_image(queue, host, layout=layout),
                                      layout=layout)  # fmt: skip
                assert np.array_equal(back, host), "layout round trip"
                checks += 1
        dw = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
        for stride, dilation in ((1, 1), (2, 1), (1, 2)):
            got = ops.depthwise_conv2d(queue, x, dw, stride=stride, padding=1,
                                       dilation=dilation, activation="relu6")  # fmt: skip
            want = conv2d(x, dw, stride=stride, padding=1, dilation=dilation, groups=5,
                          activation="relu6")  # fmt: skip
            assert_close(got, want, np.float32)
            checks += 1
        w = rng.standard_normal((6, 5, 3, 3)).astype(np.float32)
        got = ops.conv2d(queue, x, w, padding=1, stride=(1, 2), method="image")
        assert_close(got, conv2d(x, w, padding=1, stride=(1, 2)), np.float32)
        checks += 1
    if part in ("all", "buffers"):
        checks += buffer_kernels(queue, x, rng)
    if part in ("all", "int8"):
        checks += int8_kernel(queue, rng)
    print(f"{checks} kernel checks OK on {device.name}")
    return 0


def buffer_kernels(queue, x, rng) -> int:
    checks = 0
    w1 = rng.standard_normal((6, 5)).astype(np.float32)
    x1 = x[:1, :, :3, :5]  # 15 output pixels: a tail for every tile
    for tile in ((2, 4), (4, 8), (8, 4)):
        got = ops.conv2d_1x1(queue, x1, w1, tile=tile, activation="relu")
        assert_close(got, conv2d(x1, w1[:, :, None, None], activation="relu"), np.float32)
        checks += 1
    xa = rng.standard_normal((1, 8, 3, 5)).astype(np.float32)  # Ci, Co multiples of 4
    wa = rng.standard_normal((8, 8)).astype(np.float32)
    got = ops.conv2d_1x1(queue, xa, wa, tile=(4, 8))
    assert_close(got, conv2d(xa, wa[:, :, None, None]), np.float32)
    checks += 1
    w = rng.standard_normal((6, 5, 3, 3)).astype(np.float32)
    for block in (4, 8):
        layer = ops.TiledConv2d(queue, w, padding=1, block=block, channels_per_item=4)
        src = ops.BufferTensor(cl.Buffer(queue.context, cl.mem_flags.READ_ONLY
                                         | cl.mem_flags.COPY_HOST_PTR, hostbuf=x),
                               x.shape, np.dtype(np.float32), "NCHW")  # fmt: skip
        assert_close(layer(queue, src).to_numpy(queue), conv2d(x, w, padding=1), np.float32)
        checks += 1
    return checks


def int8_kernel(queue, rng) -> int:
    xq = rng.integers(0, 256, (1, 2, 3, 7), dtype=np.uint8)  # NHWC, Ci = 7
    wq = rng.integers(-128, 128, (5, 7), dtype=np.int8)
    got = ops.conv2d_int8(queue, xq, wq, input_scale=0.02, input_zero_point=120,
                          weight_scale=0.01, layout="NHWC")  # fmt: skip
    real = (xq.astype(np.float64) - 120) @ wq.T.astype(np.float64) * 0.02 * 0.01
    assert_close(got, real, np.float32)
    xq = rng.integers(0, 256, (1, 2, 3, 8), dtype=np.uint8)  # Ci = 8: aligned loads
    wq = rng.integers(0, 256, (4, 8), dtype=np.uint8)
    got = ops.conv2d_int8(
        queue,
        xq,
        wq,
        input_scale=0.02,
        input_zero_point=7,
        weight_scale=0.01,
        weight_zero_point=100,
        layout="NHWC",
    )
    real = (xq.astype(np.float64) - 7) @ (wq.T.astype(np.float64) - 100) * 0.02 * 0.01
    assert_close(got, real, np.float32)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
