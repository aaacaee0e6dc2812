"""ops.Linear / ops.matmul refuse bad input with a ConfigError naming the value, and the
device layout of the weights is the documented one (docs/ops.md, "Matmul")."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from qcom_ext import ConfigError, ops
from qcom_ext.ops._matmul_layout import FORMATS, pack
from qcom_ext.ops.quant import quantize


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


W = np.ones((4, 64), np.float32)


@pytest.mark.parametrize(
    ("weight", "options", "message"),
    [
        (np.ones(64, np.float32), {}, "non-empty (N, K) matrix"),
        (np.ones((4, 64), np.int32), {}, "has dtype int32"),
        (np.zeros((0, 64), np.float32), {}, "non-empty (N, K) matrix"),
        (W, {"weight_format": "q5_1"}, "weight_format 'q5_1'"),
        (np.ones((4, 40), np.float32), {"weight_format": "q4_0"}, "K = 40"),
        (W * 1e5, {"weight_format": "f16"}, "beyond float16's largest"),
        (W, {"activation_format": "q8_0"}, "takes q8_0 or q4_0 weights, not f32"),
        (W, {"weight_format": "q8_0", "activation_format": "q4_0"}, "activation_format 'q4_0'"),
        (W, {"path": "texture"}, "path 'texture'"),
        (W, {"gemm_tile": "huge"}, "gemm_tile 'huge'"),
        (quantize(W, "q8_0"), {"weight_format": "q4_0"}, "q8_0 QuantizedWeights"),
    ],
)
def test_bad_layers_are_refused(queue, weight, options, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ops.Linear(queue, weight, **options)


def test_bad_bias_is_refused(queue):
    with pytest.raises(ConfigError, match=r"bias must have shape \(4,\)"):
        ops.Linear(queue, W, np.ones(5, np.float32))


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.ones((2, 63), np.float32), "x has 63 columns; the weight (4, 64) takes K = 64"),
        (np.ones((2, 2, 64), np.float32), "non-empty (M, K) or (K,) array"),
        (np.ones((0, 64), np.float32), "non-empty (M, K) or (K,) array"),
        (np.ones((2, 64), np.int64), "x has dtype int64"),
        (np.full((1, 64), 1e6), None),  # float64 -> float32: fine
    ],
)
def test_bad_inputs_are_refused(queue, x, message):
    layer = ops.Linear(queue, W)
    if message is None:
        assert layer(queue, x).shape == (1, 4)
        return
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        layer(queue, x)


def test_bad_device_tensors_are_refused(queue):
    layer = ops.Linear(queue, W)
    x = ops.BufferMatrix.from_numpy(queue.context, np.ones((2, 64), np.float32))
    with pytest.raises(ConfigError, match=r"out must be a float32 BufferMatrix of shape \(2, 4\)"):
        layer(queue, x, ops.BufferMatrix.empty(queue.context, (2, 5)))
    with pytest.raises(ConfigError, match="out must be a float32"):
        layer(queue, x, ops.BufferMatrix.empty(queue.context, (2, 4), np.float16))
    with pytest.raises(ConfigError, match="out= takes a BufferMatrix"):
        layer(queue, np.ones((2, 64), np.float32), x)
    with pytest.raises(ConfigError, match="the buffer has 16"):
        ops.BufferMatrix.wrap(
            cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 16), (2, 4), np.float32
        )
    with pytest.raises(ConfigError, match="2 positive ints"):
        ops.BufferMatrix.empty(queue.context, (2, 4.0))
    with pytest.raises(ConfigError, match="float64"):
        ops.BufferMatrix.empty(queue.context, (2, 4), np.float64)
    with pytest.raises(ConfigError, match="needs shape="):
        ops.matmul(queue, x.buffer, W)
    with pytest.raises(ConfigError, match="local_size"):
        layer(queue, x, local_size=(3, 1))


def test_other_contexts_are_refused(queue):
    layer = ops.Linear(queue, W)
    other = cl.Context([queue.device])
    with pytest.raises(ConfigError, match="queue belongs to another context"):
        layer(cl.CommandQueue(other), np.ones((1, 64), np.float32))
    x = ops.BufferMatrix.from_numpy(other, np.ones((1, 64), np.float32))
    with pytest.raises(ConfigError, match="x belongs to another context"):
        layer(queue, x)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_device_layout(fmt):
    """Word j of block b of row n is word (n * WPB + j) * nb + b (16 bytes each)."""
    rng = np.random.default_rng(0)
    n, k = 3, 96
    w = rng.standard_normal((n, k)).astype(np.float32)
    weight = (
        quantize(w, fmt)
        if fmt.startswith("q")
        else w.astype(np.float16 if fmt == "f16" else np.float32)
    )
    packed = pack(weight, fmt)
    wpb, nb = FORMATS[fmt][1], k // 32
    assert packed.words.shape == (n * wpb * nb, 16) and packed.nb == nb
    if fmt.startswith("q"):
        row_bytes = weight.quants.view(np.uint8).reshape(n, nb, wpb, 16)
        assert np.array_equal(packed.scales[: n * nb], weight.scales.reshape(-1))
        assert packed.scales.size % 4 == 0
    else:
        row_bytes = weight.view(np.uint8).reshape(n, nb, wpb, 16)
        assert packed.scales is None
    for row in range(n):
        for j in range(wpb):
            for b in range(nb):
                word = packed.words[(row * wpb + j) * nb + b]
                assert np.array_equal(word, row_bytes[row, b, j])


def test_float_rows_are_padded_with_zeros():
    packed = pack(np.ones((2, 33), np.float32), "f32")
    values = packed.words.view(np.float32).reshape(2, 8, 2, 4)  # (row, word, block, 4)
    assert packed.nb == 2
    assert values[:, 0, 1, 0].tolist() == [1.0, 1.0]
    assert not values[:, :, 1].reshape(2, -1)[:, 1:].any()
