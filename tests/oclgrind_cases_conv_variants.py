"""Oclgrind cases (tests/oclgrind_cases.py runs them, tests/oclgrind_trial.py is the
harness): the variants issue 18 added to the depthwise and 1x1 convolutions, against
the float64 numpy reference of the conv tests (tests/conv_reference.py), at shapes that
reach every path.

* ``conv_depthwise_strips``: the sliding-window strip (``depthwise_conv2d_strip``) and
  the local-memory tile (``depthwise_conv2d_tiled``) with strides 1 and 2 (and a stride
  larger than the window), dilation, strips and tiles shorter and longer than the
  output, channel counts not multiples of 4, widths not multiples of the block, weights
  from images and from buffers (``WEIGHTS_BUFFER``), half storage; the unrolled kernel
  with weight buffers and 8 rows.
* ``conv_1x1_staged``: the staged GEMM (``conv2d_1x1_staged``) with every work-group of
  ``GROUPS``, tiles of 1 to 8 pixels and 4 or 8 channels, Ci with and without a tail of
  4 and of the K step (16), several K steps, Co tails, pixel tails, strides, half.
* ``conv_variants_mad24``: both with ``-DUSE_MAD24`` (the Adreno index arithmetic).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from conv_reference import assert_close, conv2d
from oclgrind_cases_kernels import adreno_index_maths
from oclgrind_trial import Trial, case

from qcom_ext import ops


def depthwise(t: Trial, variants: Any) -> None:
    """(shape N C H W, kernel, stride, dilation, pixels, rows, kind, weight buffer, dtype):
    kind None (unrolled), "strip" or "tiled"."""
    for shape, kernel, stride, dilation, pixels, rows, kind, buffers, dtype in variants:
        x = t.rng.standard_normal(shape).astype(np.float32)
        w = t.rng.standard_normal((shape[1], 1, *kernel)).astype(np.float32)
        b = t.rng.standard_normal(shape[1]).astype(np.float32)
        got = ops.depthwise_conv2d(
            t.queue,
            x.astype(dtype),
            w,
            b,
            stride=stride,
            padding=1,
            dilation=dilation,
            activation="relu6",
            pixels=pixels,
            rows=rows,
            weight_buffer=buffers,
            **({kind: True} if kind else {}),
        )
        hx, hw = x.astype(dtype).astype(np.float64), w.astype(dtype).astype(np.float64)
        want = conv2d(
            hx,
            hw,
            b,
            stride=stride,
            padding=1,
            dilation=dilation,
            groups=shape[1],
            activation="relu6",
        )
        t.checks += 1
        assert_close(got, want, dtype)


def staged(t: Trial, variants: Any) -> None:
    """(shape N H W Ci, Co, tile, group, stride, dtype)"""
    for shape, co, tile, group, stride, dtype in variants:
        x = t.rng.standard_normal(shape).astype(np.float32)  # NHWC
        w = t.rng.standard_normal((co, shape[3])).astype(np.float32)
        b = t.rng.standard_normal(co).astype(np.float32)
        layer = ops.Conv2d1x1(
            t.queue,
            w,
            b,
            tile=tile,
            group=group,
            stride=stride,
            activation="leaky_relu",
            dtype=dtype,
        )
        src = ops.BufferTensor(t.buffer(x.astype(dtype)), shape, np.dtype(dtype), "NHWC")
        got = layer(t.queue, src).to_numpy(t.queue)
        hx, hw = x.astype(dtype).astype(np.float64), w.astype(dtype).astype(np.float64)
        want = conv2d(
            hx.transpose(0, 3, 1, 2),
            hw[:, :, None, None],
            b,
            stride=stride,
            activation="leaky_relu",
        ).transpose(0, 2, 3, 1)
        t.checks += 1
        assert_close(got, want, dtype)


F32, F16 = np.float32, np.float16
DEPTHWISE = [
    ((1, 5, 9, 7), (3, 3), 1, 1, 4, 4, "strip", False, F32),  # 3 strips, the last short
    ((2, 6, 7, 9), (3, 3), 2, 1, 2, 8, "strip", True, F32),  # stride 2, a strip an image
    ((1, 3, 10, 6), (3, 3), 1, 2, 8, 16, "strip", False, F32),  # dilation, longer than H
    ((1, 7, 8, 5), (1, 2), (3, 1), 1, 1, 4, "strip", True, F32),  # stride past the window
    ((1, 5, 6, 7), (3, 3), 1, 1, 4, 8, "strip", True, F16),
    ((2, 5, 6, 7), (3, 3), 1, 1, 8, 8, None, True, F32),  # unrolled, weight buffers
    ((1, 9, 5, 6), (3, 2), 2, 1, 2, 1, None, True, F32),
    ((1, 5, 9, 19), (3, 3), 1, 1, 2, 4, "tiled", True, F32),  # 2 x 3 tiles, both short
    ((2, 6, 7, 9), (3, 3), 2, 1, 1, 8, "tiled", False, F32),  # stride 2, one tile an image
    ((1, 3, 6, 6), (2, 3), (1, 3), 2, 4, 4, "tiled", True, F16),  # dilation, half
]
STAGED = [
    ((1, 3, 5, 5), 6, (1, 4), (4, 16), 1, F32),  # Ci < 4: one short step
    ((2, 3, 7, 37), 21, (4, 4), (8, 8), 1, F32),  # Ci % 16 = 5, Co % 4 = 1, 3 steps
    ((1, 5, 6, 20), 40, (8, 8), (16, 16), 2, F32),  # strided, more groups than pixels
    ((1, 4, 4, 32), 12, (2, 8), (8, 16), 1, F32),  # whole vectors in and out
    ((1, 6, 3, 16), 8, (4, 4), (16, 8), (1, 2), F16),
]


@case("image-reads")
def case_conv_depthwise_strips(t: Trial) -> None:
    depthwise(t, DEPTHWISE)


@case()
def case_conv_1x1_staged(t: Trial) -> None:
    staged(t, STAGED)


@case("image-reads")
def case_conv_variants_mad24(t: Trial) -> None:
    with adreno_index_maths():
        depthwise(t, [DEPTHWISE[0], DEPTHWISE[1], DEPTHWISE[7]])
        staged(t, [STAGED[1]])
