"""float64 numpy references for the convolution ops (tests only)."""

from __future__ import annotations

import numpy as np


def out_size(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def activate(x: np.ndarray, activation: str | None, slope: float = 0.01) -> np.ndarray:
    if activation is None:
        return x
    if activation == "relu":
        return np.maximum(x, 0.0)
    if activation == "relu6":
        return np.clip(x, 0.0, 6.0)
    if activation == "leaky_relu":
        return np.where(x > 0, x, x * slope)
    raise ValueError(activation)


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, activation=None, slope=0.01):
    """NCHW x, (Co, Ci/groups, KH, KW) w, in float64; groups = 1 or C (depthwise)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    sh, sw = (stride, stride) if np.isscalar(stride) else stride
    ph, pw = (padding, padding) if np.isscalar(padding) else padding
    dh, dw = (dilation, dilation) if np.isscalar(dilation) else dilation
    n, c, h, wd = x.shape
    co, _, kh, kw = w.shape
    oh, ow = out_size(h, kh, sh, ph, dh), out_size(wd, kw, sw, pw, dw)
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    out = np.zeros((n, co, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dh, kx * dw
            patch = xp[:, :, y0 : y0 + (oh - 1) * sh + 1 : sh, x0 : x0 + (ow - 1) * sw + 1 : sw]
            if groups == 1:
                out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
            else:
                assert groups == c == co
                out += patch * w[:, 0, ky, kx][None, :, None, None]
    if b is not None:
        out += np.asarray(b, np.float64)[None, :, None, None]
    return activate(out, activation, slope)


def pack_image(x: np.ndarray) -> np.ndarray:
    """NCHW -> the RGBA image layout as a (H*N, W*ceil(C/4), 4) array, zero-padded."""
    n, c, h, w = x.shape
    blocks = -(-c // 4)
    padded = np.zeros((n, blocks * 4, h, w), x.dtype)
    padded[:, :c] = x
    # texel (cb * W + w, n * H + h) = channels 4cb..4cb+3 of (n, h, w)
    t = padded.reshape(n, blocks, 4, h, w).transpose(0, 3, 1, 4, 2)  # n, h, cb, w, 4
    return np.ascontiguousarray(t.reshape(n * h, blocks * w, 4))


def tolerance(dtype) -> dict[str, float]:
    """assert_allclose tolerances: float32 storage, or float16 storage of the inputs,
    weights and outputs (the kernels accumulate in float)."""
    if np.dtype(dtype) == np.float16:
        return {"rtol": 4e-3, "atol": 4e-3}
    return {"rtol": 2e-5, "atol": 2e-5}


def assert_close(actual, expected, dtype) -> None:
    """Compare with the tolerance of ``dtype``, scaled by the magnitude of the result."""
    expected = np.asarray(expected, np.float64)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    tol = tolerance(dtype)
    np.testing.assert_allclose(
        np.asarray(actual, np.float64), expected, rtol=tol["rtol"], atol=tol["atol"] * scale
    )


def rounded(array, dtype) -> np.ndarray:
    """``array`` as stored in ``dtype``, back in float64 (what the kernel sees)."""
    return np.asarray(array).astype(dtype).astype(np.float64)


def conv_option_strategies() -> dict:
    """Hypothesis strategies for the options the conv property tests share (stride,
    padding, dilation, activation, bias, layout, dtype)."""
    from hypothesis import strategies as st

    from qcom_ext import ops

    return {
        "stride": st.tuples(st.integers(1, 2), st.integers(1, 3)),
        "padding": st.tuples(st.integers(0, 2), st.integers(0, 2)),
        "dilation": st.tuples(st.integers(1, 2), st.integers(1, 2)),
        "activation": st.sampled_from(list(ops.ACTIVATIONS)),
        "bias": st.booleans(),
        "layout": st.sampled_from(["NCHW", "NHWC"]),
        "dtype": st.sampled_from([np.float32, np.float16]),
    }
