"""The ops against the third adversarial review (issue 26): out-of-order queues (finding
1), threads sharing a q8_0-activation Linear (2), q8_0 / q4_0 scales that overflow
float16 (5), BufferMatrix shapes and aliasing (6), NaN and inf in q8_0 activations (7)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import qcom_ext
from qcom_ext import WeightImage, ops
from qcom_ext.ext.accelerated.points import PointOps, download, empty, upload

rng = np.random.default_rng(26)


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


@pytest.fixture
def ooo_queue(kernel_context):
    return qcom_ext.create_queue(kernel_context, out_of_order=True)


# ---- finding 1: every op on an out-of-order queue ---------------------------------------

W = rng.standard_normal((4096, 2048)).astype(np.float32)
X_ROWS = rng.standard_normal((40, 2048)).astype(np.float32)
NCHW = rng.standard_normal((1, 16, 96, 96)).astype(np.float32)
WIDE = rng.standard_normal((1, 128, 48, 48)).astype(np.float32)
PIXELS = rng.random((256, 384, 4), dtype=np.float32)
MOVED = np.roll(PIXELS, (1, 2), axis=(0, 1))
FILTER = rng.uniform(-1, 1, (5, 5))
_LAYERS: dict = {}


def _layer(q, *key):
    """A Linear of ``key`` (W rows, format, activation format), built once per context
    (its 32 MB upload is not the point)."""
    rows, fmt, act = key
    found = _LAYERS.get((q.context.int_ptr, *key))
    if found is None:
        found = ops.Linear(q, W[:rows], weight_format=fmt, activation_format=act)
        _LAYERS[(q.context.int_ptr, *key)] = found
    return found


def _linear(fmt, act, rows):
    def run(q):
        return _layer(q, 4096, fmt, act)(q, X_ROWS[:rows])

    return run


def _linear_chain(q):
    """Two layers on BufferMatrix: the second reads what the first wrote."""
    first = _layer(q, 2048, "f16", None)
    second = _layer(q, 4096, "q8_0", "q8_0")
    x = ops.BufferMatrix.from_numpy(q.context, X_ROWS[:4])
    return second(q, first(q, x)).to_numpy(q)


def _conv(name):
    w3 = rng.standard_normal((16, 16, 3, 3))
    dw = rng.standard_normal((16, 1, 3, 3))
    w1 = rng.standard_normal((16, 128))
    w8 = rng.integers(-5, 5, (16, 128)).astype(np.int8)
    calls = {
        "depthwise": lambda q: ops.depthwise_conv2d(q, NCHW, dw, padding=1),
        "conv2d_image": lambda q: ops.conv2d(q, NCHW, w3, padding=1, method="image"),
        "conv2d_tiled": lambda q: ops.conv2d(q, NCHW, w3, padding=1, method="tiled"),
        "conv2d_1x1": lambda q: ops.conv2d_1x1(q, WIDE, w1),
        "conv2d_int8": lambda q: ops.conv2d_int8(
            q,
            (WIDE * 40 + 128).clip(0, 255).astype(np.uint8),
            w8,
            input_scale=0.05,
            input_zero_point=128,
            weight_scale=0.1,
        ),
        "layers_chained": lambda q: ops.from_image(
            q,
            ops.DepthwiseConv2d(q, dw, padding=1)(
                q, ops.DepthwiseConv2d(q, dw, padding=1)(q, ops.to_image(q, NCHW))
            ),
        ),
    }
    return calls[name]


def _image_op(name):
    def run(q):
        ctx = q.context
        if name == "block_match_image":
            field = qcom_ext.block_match_image(
                q, upload(ctx, PIXELS), upload(ctx, MOVED), radius=8
            )
            return np.concatenate([a.reshape(-1) for a in field.get(q)]).astype(np.float64)
        dst = empty(ctx, PIXELS.shape[1], PIXELS.shape[0])
        if name == "convolve_image":
            qcom_ext.convolve_image(
                q, upload(ctx, PIXELS), WeightImage(ctx, FILTER, center=(2, 2)), dst
            )
        elif name == "box_filter_image":
            qcom_ext.box_filter_image(q, upload(ctx, PIXELS), (3.0, 3.0), dst)
        else:
            src = upload(ctx, PIXELS[:128, :192])
            qcom_ext.upscale2x_image(q, src, dst)
        return download(q, dst)

    return run


COORDS = rng.uniform(0, 200, (1 << 16, 2))


def _point_ops(q):
    points = PointOps(q.context)
    image = upload(q.context, PIXELS)
    coords = COORDS
    weights = WeightImage(q.context, FILTER, center=(2, 2))
    return np.concatenate(
        [
            points.convolve(q, image, weights, coords),
            points.box_filter(q, image, (2.0, 2.0), coords),
            *points.block_match(q, image, image, (4, 4), coords, coords.astype(np.uint32)),
        ]
    )


OOO_CASES = {
    "Linear-f32-gemv": (False, _linear("f32", None, 1)),
    "Linear-q8_0-activations": (False, _linear("q8_0", "q8_0", 3)),
    "Linear-q4_0-gemm": (False, _linear("q4_0", None, 40)),
    "Linear-BufferMatrix-chain": (False, _linear_chain),
    **{
        name: (name != "conv2d_tiled", _conv(name))
        for name in (
            "depthwise",
            "conv2d_image",
            "conv2d_tiled",
            "conv2d_1x1",
            "conv2d_int8",
            "layers_chained",
        )
    },
    **{
        name: (True, _image_op(name))
        for name in (
            "convolve_image",
            "box_filter_image",
            "block_match_image",
            "upscale2x_image",
        )
    },
    "PointOps": (True, _point_ops),
}
#: Runs a case makes on the out-of-order queue: each of its races lost before issue 26
#: in most of them (13-16 of 20 for a Linear).
OOO_REPEATS = 12


@pytest.mark.parametrize("case", OOO_CASES)
def test_every_op_on_an_out_of_order_queue_matches_the_in_order_queue(queue, ooo_queue, case):
    """Each command an op enqueues waits for the one before it (the kernel for the
    upload, the read-back for the kernel, the GEMV for the activation quantizer, the
    second layer for the first), so every run matches the in-order queue's bit for bit."""
    images, run = OOO_CASES[case]
    if images and not queue.device.image_support:
        pytest.skip(f"{queue.device.name.strip()}: CL_DEVICE_IMAGE_SUPPORT is 0")
    want = np.asarray(run(queue))
    wrong = 0
    for _ in range(OOO_REPEATS):
        got = np.asarray(run(ooo_queue))
        wrong += not np.array_equal(got, want, equal_nan=True)
    ooo_queue.finish()
    assert wrong == 0, f"{wrong} of {OOO_REPEATS} runs on the out-of-order queue were wrong"
