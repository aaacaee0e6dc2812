"""float64 references of ``ops.Linear`` and the tolerance rule the matmul tests use
(tests only).

Tolerance rule: a float32 sum of K products, in any order, is within
``(K + 4) * 2**-24 * sum_k |x_k| * c_k`` of the exact sum (the classic bound gamma_n
with n = K additions plus the scale and bias steps), where ``c_k = |w_k|`` for the
dequantized weight (the kernels multiply x by each weight's exact value, or a block's
sum of x times quants by the block's scale). Inputs (x in its dtype, the dequantized
weights) are exact in float32, so nothing else differs from the float64 reference.
"""

from __future__ import annotations

import numpy as np

from qcom_ext.ops.quant import BLOCK, QuantizedWeights, dequantize, quantize_q8_0

EPS32 = 2.0**-24


def stored(weight: np.ndarray, fmt: str, quantized: QuantizedWeights | None) -> np.ndarray:
    """The float64 weights the device multiplies by (after the format's rounding)."""
    if quantized is not None:
        return dequantize(quantized).astype(np.float64)
    return weight.astype(np.float16 if fmt == "f16" else np.float32).astype(np.float64)


def magnitudes(w: np.ndarray, quantized: QuantizedWeights | None = None) -> np.ndarray:
    """``c_k`` of the tolerance rule (see the module)."""
    return np.abs(w)


def reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    y = np.asarray(x, np.float64) @ w.T
    return y if bias is None else y + bias.astype(np.float64)


def bound(x: np.ndarray, c: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """The tolerance of each output (see the module)."""
    k = x.shape[-1]
    tol = (k + 4) * EPS32 * (np.abs(np.asarray(x, np.float64)) @ c.T)
    if bias is not None:
        tol = tol + EPS32 * np.abs(bias.astype(np.float64))
    return tol + 1e-30


def assert_within(got: np.ndarray, want: np.ndarray, tol: np.ndarray, what: str = "") -> None:
    assert got.shape == want.shape, (got.shape, want.shape)
    excess = np.abs(got.astype(np.float64) - want) - tol
    worst = np.unravel_index(np.argmax(excess), excess.shape)
    assert excess.max() <= 0, (
        f"{what}: |error| {abs(got[worst] - want[worst]):.3g} > tolerance {tol[worst]:.3g} "
        f"at {worst}"
    )


def integer_model(x: np.ndarray, quantized: QuantizedWeights) -> tuple[np.ndarray, np.ndarray]:
    """The q8_0 x q8_0 arithmetic in float64: x quantized as ggml does, each block's
    integer dot product exact, times both scales; and its tolerance (float32 sums of
    ``nb`` block terms: ``(nb + 4) * 2**-24 * sum |term|``)."""
    xq = quantize_q8_0(np.asarray(x, np.float32))
    m, k = x.shape
    n = quantized.shape[0]
    nb = k // BLOCK
    if quantized.format == "q8_0":
        qw = quantized.quants.reshape(n, nb, BLOCK).astype(np.int64)
    else:
        packed = quantized.quants.reshape(n, nb, 16)
        qw = np.concatenate([packed & 15, packed >> 4], axis=2).astype(np.int64) - 8
    qx = xq.quants.reshape(m, nb, BLOCK).astype(np.int64)
    dots = np.einsum("mbk,nbk->mnb", qx, qw).astype(np.float64)
    terms = (
        dots * xq.scales.astype(np.float64)[:, None, :] * quantized.scales[None].astype(np.float64)
    )
    return terms.sum(-1), (nb + 4) * EPS32 * np.abs(terms).sum(-1) + 1e-30


def quantization_bound(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """How far the q8_0 x q8_0 result may be from the float64 product of x and the
    dequantized weights: each activation moves by at most half its block's step ``d``
    plus ``|q|`` times the rounding of ``d`` to float16 (127 * 2**-11 * d), under
    ``0.57 d`` (plus the float32 accumulation allowance of :func:`bound`)."""
    xq = quantize_q8_0(np.asarray(x, np.float32))
    step = np.repeat(xq.scales.astype(np.float64), BLOCK, axis=1) * 0.57
    return step @ np.abs(w).T + bound(x, np.abs(w), None)
