"""ggml's q8_0 and q4_0 in numpy (qcom_ext.ops.quant): bit-exact with gguf-py's reference,
blocks worked out by hand from ggml's definition, the error bounds in float64, the ggml
byte layout, and every refused input.

The reference is gguf-py (``gguf.quants``), which llama.cpp's converter uses and which its
authors check bit for bit against ``ggml-quants.c``; the tests that need it name the
missing package. The bounds (the ``_bound`` functions) are derived here from the format's
definition alone, in float64.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qcom_ext.errors import ConfigError
from qcom_ext.ops.quant import (
    BLOCK,
    FORMATS,
    QuantizedWeights,
    dequantize,
    quantize,
    quantize_q4_0,
    quantize_q8_0,
)

#: The code of each format's largest magnitude: q8_0's +-127, q4_0's -8.
TOP = {"q8_0": 127, "q4_0": 8}


def reference():
    """gguf-py's quants module and its type enum (skips the test without the package)."""
    gguf = pytest.importorskip(
        "gguf", reason="the gguf package (pip install 'qcom_ext[gguf]') is the reference"
    )
    return gguf.quants, gguf.GGMLQuantizationType


def quiet(function, *args):
    """``function(*args)``, failing on any warning (numpy's overflow and cast warnings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return function(*args)


# ---- blocks of 32 weights, float32 ----------------------------------------------------------

units = st.lists(st.floats(-1, 1, width=32), min_size=BLOCK, max_size=BLOCK)
#: log10 of a block's largest magnitude: anywhere from 1e-30 to 1e30 (float16 scales that
#: overflow to inf, or flush to zero), typical weights, and float16-subnormal scales.
magnitudes = st.one_of(st.floats(-30, 30), st.floats(-2, 2), st.floats(-6.5, -2))


@st.composite
def random_block(draw):
    """Random weights; one of them at least half the block's magnitude."""
    u = np.array(draw(units), np.float64)
    u[draw(st.integers(0, BLOCK - 1))] = draw(st.sampled_from([-1, 1])) * draw(st.floats(0.5, 1))
    return (u * 10.0 ** draw(magnitudes)).astype(np.float32)


@st.composite
def tie_block(draw, fmt):
    """A power-of-two scale, so ``w / d`` is exact: halves (roundf's ties), whole codes,
    and the float32 neighbours of halves (``0.49999997`` is the classic roundf trap)."""
    step = 2.0 ** draw(st.integers(-20, 20))
    top = TOP[fmt]
    halves = st.one_of(st.sampled_from([-1, 1]), st.integers(-2 * top, 2 * top)).map(
        lambda v: np.float32(v / 2)  # +-0.5 half the time: nudged, the roundf trap
    )
    x = np.array(draw(st.lists(halves, min_size=BLOCK, max_size=BLOCK)), np.float32)
    nudge = draw(st.lists(st.sampled_from([0, 0, -1, 1]), min_size=BLOCK, max_size=BLOCK))
    toward = np.where(np.array(nudge) > 0, np.float32(np.inf), np.float32(-np.inf))
    x = np.where(np.array(nudge) == 0, x, np.nextafter(x, toward))
    x = np.clip(x, -top, top)
    x[draw(st.integers(0, BLOCK - 1))] = draw(st.sampled_from([-top, top]))
    return (x.astype(np.float64) * step).astype(np.float32)


@st.composite
def magnitude_tie_block(draw):
    """The largest magnitude twice, with opposite or equal signs (q4_0 takes the first)."""
    w = draw(random_block())
    i, j = draw(st.lists(st.integers(0, BLOCK - 1), min_size=2, max_size=2, unique=True))
    w[j] = draw(st.sampled_from([-1, 1])) * np.abs(w).max()
    w[i] = draw(st.sampled_from([-1, 1])) * w[j]
    return w


@st.composite
def sparse_block(draw):
    """Zeros (either sign) and a few weights."""
    w = np.where(draw(st.lists(st.booleans(), min_size=BLOCK, max_size=BLOCK)), -0.0, 0.0)
    for at in draw(st.lists(st.integers(0, BLOCK - 1), min_size=1, max_size=3)):
        sign = draw(st.sampled_from([-1, 1]))
        w[at] = sign * draw(st.floats(0.5, 1)) * 10.0 ** draw(magnitudes)
    return w.astype(np.float32)


zero_block = st.just(np.zeros(BLOCK, np.float32))


def blocks(fmt):
    return st.one_of(
        random_block(), tie_block(fmt), magnitude_tie_block(), sparse_block(), zero_block
    )


@st.composite
def matrices(draw, fmt):
    """An (N, K) float32 matrix of 1-4 rows of 1-3 blocks, each block of any kind above."""
    n, per_row = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    rows = [np.concatenate([draw(blocks(fmt)) for _ in range(per_row)]) for _ in range(n)]
    return np.stack(rows)


# ---- bit-exact with gguf-py -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_and_dequantize_are_bit_exact_with_gguf_py(fmt):
    quants, types = reference()
    qtype = types.Q8_0 if fmt == "q8_0" else types.Q4_0

    @settings(max_examples=300, deadline=None)
    @given(matrices(fmt))
    def check(w):
        ours = quiet(quantize, w, fmt)
        with np.errstate(all="ignore"):  # gguf-py warns where float16 scales overflow
            blocks = quants.quantize(w, qtype)
            values = quants.dequantize(blocks, qtype)
        np.testing.assert_array_equal(ours.to_ggml(), blocks)
        np.testing.assert_array_equal(
            quiet(dequantize, ours).view(np.uint32), values.view(np.uint32)
        )
        back = QuantizedWeights.from_ggml(blocks, fmt, w.shape)
        np.testing.assert_array_equal(back.scales.view(np.uint16), ours.scales.view(np.uint16))
        np.testing.assert_array_equal(back.quants, ours.quants)

    check()


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
@pytest.mark.parametrize("fmt", FORMATS)
def test_other_input_dtypes_quantize_as_their_float32_values_as_gguf_py(fmt, dtype):
    quants, types = reference()
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((3, 96)) * 40).astype(dtype)
    ours = quantize(w, fmt)
    ref = quants.quantize(w, types.Q8_0 if fmt == "q8_0" else types.Q4_0)
    np.testing.assert_array_equal(ours.to_ggml(), ref)
    np.testing.assert_array_equal(ours.to_ggml(), quantize(w.astype(np.float32), fmt).to_ggml())


# ---- blocks worked by hand from ggml's definition -------------------------------------------


def one_block(values: dict[int, float]) -> np.ndarray:
    w = np.zeros((1, BLOCK), np.float32)
    for at, value in values.items():
        w[0, at] = value
    return w


def test_q8_0_block_by_hand():
    # amax = 127: d = 127 / 127 = 1 exactly (float16 0x3C00), 1/d = 1, q = roundf(w).
    w = one_block({0: 127, 1: -63.5, 2: 2.5, 3: -2.5, 4: 0.5, 5: np.float32(0.49999997), 6: 1.4})
    got = quantize_q8_0(w)
    assert got.scales.tolist() == [[1.0]]
    # halves away from zero (-64, 3, -3, 1; numpy's round would give -64, 2, -2, 0), and the
    # float32 just below 0.5 is 0 (trunc(x + 0.5) would make it 1)
    assert got.quants[0, :8].tolist() == [127, -64, 3, -3, 1, 0, 1, 0]
    assert got.to_ggml()[0, :10].tolist() == [0x00, 0x3C, 0x7F, 0xC0, 3, 0xFD, 1, 0, 1, 0]
    assert got.to_ggml().shape == (1, 34)
    assert dequantize(got)[0, :8].tolist() == [127, -64, 3, -3, 1, 0, 1, 0]


def test_q8_0_scale_rounds_to_float16_after_its_inverse_is_taken():
    # amax = 1: d = 1/127 in float32, 1/d = 127 (float32), so 0.5 -> roundf(63.5) = 64; the
    # stored d is float16(1/127) = 2**-7 * (1 + 8/1024) (0x2008), not 1/127.
    got = quantize_q8_0(one_block({0: 1.0, 1: 0.5, 2: -0.25}))
    assert got.scales.view(np.uint16).tolist() == [[0x2008]]
    assert got.quants[0, :3].tolist() == [127, 64, -32]
    assert dequantize(got)[0, 0] == np.float32(127 * 2**-7 * (1 + 8 / 1024))


def test_q4_0_block_by_hand():
    # m = -8 (the largest magnitude): d = m / -8 = 1, nibble = min(15, trunc(w + 8.5)).
    w = one_block({0: -8, 1: 7, 2: 8, 3: 0.5, 4: -0.5, 5: 2.5, 6: -2.5, 16: 3.2, 17: -7.9})
    got = quantize_q4_0(w)
    assert got.scales.tolist() == [[1.0]]
    nibbles = [0, 15, 15, 9, 8, 11, 6] + [8] * 9 + [11, 0] + [8] * 14
    packed = [nibbles[j] | nibbles[j + 16] << 4 for j in range(16)]
    assert packed[:7] == [0xB0, 0x0F, 0x8F, 0x89, 0x88, 0x8B, 0x86]
    assert got.quants[0].tolist() == packed
    assert got.to_ggml()[0].tolist() == [0x00, 0x3C, *packed]
    # halves round up (0.5 -> 1, -0.5 -> 0, -2.5 -> -2); +8 clips to 7: an error of d
    assert dequantize(got)[0, :7].tolist() == [-8, 7, 7, 1, 0, 3, -2]


def test_q4_0_takes_the_first_of_equal_magnitudes():
    # +8 comes first: d = 8 / -8 = -1 (0xBC00), so +8 -> -8 * -1 and -8 -> 7 * -1 = -7.
    got = quantize_q4_0(one_block({3: 8, 9: -8}))
    assert got.scales.view(np.uint16).tolist() == [[0xBC00]]
    assert dequantize(got)[0, [3, 9]].tolist() == [8, -7]
    flipped = quantize_q4_0(one_block({3: -8, 9: 8}))
    assert dequantize(flipped)[0, [3, 9]].tolist() == [-8, 7]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_zero_block_has_a_zero_scale_and_zero_values(fmt):
    got = quantize(np.zeros((2, 64), np.float32), fmt)
    assert not got.scales.any()
    assert not dequantize(got).any()
    # q8_0: d = 0/127 = +0; q4_0: d = 0/-8 = -0 (0x8000), nibbles 8 (value 0)
    assert got.scales.view(np.uint16)[0, 0] == (0 if fmt == "q8_0" else 0x8000)
    assert got.quants[0, 0] == (0 if fmt == "q8_0" else 0x88)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("tiny", [3e-39, 1e-40, 1e-43])
def test_blocks_whose_inverse_scale_overflows_float32_have_zero_quants(fmt, tiny):
    # 1/d is inf here (ggml's float-to-int cast is undefined); quants are 0 as ggml on x86
    # and gguf-py write them, the float16 scale is 0, the values are zeros; no warnings.
    w = one_block({0: tiny, 1: -tiny, 5: tiny / 2})
    got = quiet(quantize, w, fmt)
    assert not got.quants.any()
    assert not got.scales.astype(np.float32).any()
    assert not quiet(dequantize, got).any()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_scale_beyond_float16_is_inf_as_in_ggml(fmt):
    # amax / 127 or |m| / 8 over 65504 rounds to inf: nonzero codes give +-inf, zero gives NaN.
    big = {"q8_0": 1e7, "q4_0": 6e5}[fmt]
    got = quiet(quantize, one_block({0: big, 1: -big / 4}), fmt)
    assert np.isinf(got.scales[0, 0])
    values = quiet(dequantize, got)[0]
    assert np.isinf(values[:2]).all() and np.sign(values[0]) == 1 and np.sign(values[1]) == -1
    assert np.isnan(values[2:]).all()


# ---- error bounds in float64 ----------------------------------------------------------------


def _by_block(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float64).reshape(array.shape[0], -1, BLOCK)


def _codes(q: QuantizedWeights) -> np.ndarray:
    """The integer codes in float64, (N, K / 32, 32): q8_0's q, q4_0's nibble - 8."""
    if q.format == "q8_0":
        return _by_block(q.quants)
    low, high = q.quants & 0xF, q.quants >> 4
    n = q.shape[0]
    nibbles = np.concatenate([low.reshape(n, -1, 16), high.reshape(n, -1, 16)], axis=2)
    return nibbles.astype(np.float64) - 8


def _q8_0_bound(w: np.ndarray, q: np.ndarray, d16: np.ndarray) -> np.ndarray:
    """|q d16 - w| <= |q| |d16 - D| + D (1/2 + 2**-14), D = amax / 127 exactly: q is roundf
    of w / D up to three float32 roundings (d, 1 / d, w * (1 / d): < 381 * 2**-24), and the
    stored scale d16 is D rounded to float16."""
    big_d = np.abs(w).max(axis=2, keepdims=True) / 127
    return np.abs(q) * np.abs(d16 - big_d) + big_d * (0.5 + 2**-14)


def _q4_0_bound(w: np.ndarray, q: np.ndarray, d16: np.ndarray) -> np.ndarray:
    """|q d16 - w| <= |q| |d16 - D| + |D| (max(1/2, x - 7) + 2**-18), D = m / -8 exactly
    (m the block's first largest magnitude), x = w / D in [-8, 8]: codes round half up
    from w / D, and x > 7.5 (w of the sign opposite to m) clips to 7, an error of up to d."""
    first = np.abs(w).argmax(axis=2)[..., None]
    big_d = np.take_along_axis(w, first, axis=2) / -8
    x = np.divide(w, big_d, out=np.zeros_like(w), where=big_d != 0)
    return np.abs(q) * np.abs(d16 - big_d) + np.abs(big_d) * (np.maximum(0.5, x - 7) + 2**-18)


BOUND = {"q8_0": _q8_0_bound, "q4_0": _q4_0_bound}


@pytest.mark.parametrize("fmt", FORMATS)
def test_dequantized_error_is_within_the_bound_in_float64(fmt):
    @settings(max_examples=300, deadline=None)
    @given(matrices(fmt))
    def check(w):
        q = quantize(w, fmt)
        blocks, codes = _by_block(w), _codes(q)
        d16 = q.scales.astype(np.float64)[..., None]
        values = _by_block(dequantize(q))
        finite = np.broadcast_to(np.isfinite(d16), values.shape)
        with np.errstate(invalid="ignore"):  # inf scales (float16 overflow): masked below
            exact, bound = codes * d16, BOUND[fmt](blocks, codes, d16)
        # dequantize is exact: code * d16 fits float32
        np.testing.assert_array_equal(values[finite], exact[finite])
        assert (np.abs(values - blocks) <= bound)[finite].all()
        if fmt == "q8_0":
            assert np.abs(codes).max() <= 127
        # where d overflowed float16, the values are +-inf (NaN for a code of 0)
        assert np.array_equal(np.isnan(values[~finite]), codes[~finite] == 0)

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_largest_magnitude_takes_the_extreme_code_and_the_bounds_are_tight(fmt):
    rng = np.random.default_rng(17)
    w = (rng.standard_normal((64, 64)) * 3).astype(np.float32)
    q = quantize(w, fmt)
    blocks, codes = _by_block(w), _codes(q)
    first = np.abs(blocks).argmax(axis=2)[..., None]
    top = np.take_along_axis(codes, first, axis=2)
    if fmt == "q8_0":
        assert (np.abs(top) == 127).all()
    else:
        assert (top == -8).all()
    # normal float16 scales: q8_0's error stays under 0.5625 d and q4_0's under d (1 + 2**-8)
    d = np.abs(blocks).max(axis=2, keepdims=True) / TOP[fmt]
    error = np.abs(_by_block(dequantize(q)) - blocks) / d
    assert error.max() <= (0.5625 if fmt == "q8_0" else 1 + 2**-8)
    assert error.max() > 0.45  # the bound is near what random weights reach


def test_q4_0_error_reaches_d_for_the_opposite_of_the_largest_magnitude():
    w = one_block({0: -1.0, 1: 1.0})  # d = 1/8: +1 is 8 steps up, clipped to 7
    got = dequantize(quantize_q4_0(w))
    assert abs(got[0, 1] - 1.0) == 1 / 8


# ---- the ggml byte layout -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_to_ggml_and_from_ggml_round_trip_in_every_form(fmt):
    rng = np.random.default_rng(3)
    q = quantize((rng.standard_normal((5, 128))).astype(np.float32), fmt)
    data = q.to_ggml()
    per_block = 2 + (32 if fmt == "q8_0" else 16)
    assert data.dtype == np.uint8 and data.shape == (5, 4 * per_block)
    # each block: d (little-endian float16) then its quants, row after row
    block = data.reshape(5, 4, per_block)[2, 3]
    assert block[:2].view("<f2")[0] == q.scales[2, 3]
    assert block[2:].tolist() == q.quants[2].view(np.uint8).reshape(4, -1)[3].tolist()
    for form in (data, data.reshape(-1), data.tobytes(), bytearray(data.tobytes())):
        back = QuantizedWeights.from_ggml(form, fmt, (5, 128))
        assert back.format == fmt and back.shape == (5, 128)
        assert back.scales.dtype == np.float16 and back.quants.dtype == q.quants.dtype
        np.testing.assert_array_equal(back.scales, q.scales)
        np.testing.assert_array_equal(back.quants, q.quants)
        np.testing.assert_array_equal(back.to_ggml(), data)
    assert q.nbytes == data.nbytes


def test_a_quantized_matrix_is_smaller_by_the_format_ratio():
    w = np.ones((8, 256), np.float32)
    assert quantize(w, "q8_0").nbytes == 8 * 8 * 34
    assert quantize(w, "q4_0").nbytes == 8 * 8 * 18


# ---- refused inputs: ConfigError naming the value -------------------------------------------


def _nan_at_1_5():
    w = np.ones((2, 32), np.float32)
    w[1, 5] = np.nan
    return w


def _inf_at_0_7():
    w = np.ones((1, 64))
    w[0, 7] = -np.inf
    return w


Q8 = quantize_q8_0(np.ones((2, 64), np.float32))

BAD = {
    "K not a multiple of 32": (lambda: quantize(np.ones((2, 33)), "q8_0"), "K = 33"),
    "K of 16": (lambda: quantize_q4_0(np.ones((1, 16))), "K = 16"),
    "1-D": (lambda: quantize(np.ones(64), "q4_0"), "(64,)"),
    "3-D": (lambda: quantize_q8_0(np.ones((1, 2, 32))), "(1, 2, 32)"),
    "no rows": (lambda: quantize(np.ones((0, 32)), "q8_0"), "(0, 32)"),
    "NaN": (lambda: quantize(_nan_at_1_5(), "q8_0"), "weights[1, 5] = nan"),
    "inf": (lambda: quantize_q4_0(_inf_at_0_7()), "weights[0, 7] = -inf"),
    "beyond float32": (lambda: quantize(np.full((1, 32), 1e39), "q4_0"), "1e+39"),
    "complex": (lambda: quantize(np.ones((1, 32), complex), "q8_0"), "complex128"),
    "bool": (lambda: quantize(np.ones((1, 32), bool), "q8_0"), "bool"),
    "strings": (lambda: quantize(np.full((1, 32), "a"), "q4_0"), "<U1"),
    "objects": (lambda: quantize(np.full((1, 32), None), "q4_0"), "object"),
    "format q5_0": (lambda: quantize(np.ones((1, 32)), "q5_0"), "'q5_0'"),
    "format case": (lambda: quantize(np.ones((1, 32)), "Q8_0"), "'Q8_0'"),
    "format None": (lambda: quantize(np.ones((1, 32)), None), "None"),
    "format list": (lambda: quantize(np.ones((1, 32)), ["q8_0"]), "['q8_0']"),
    "bytes short": (
        lambda: QuantizedWeights.from_ggml(Q8.to_ggml()[:, :-1], "q8_0", (2, 64)),
        "134 bytes",
    ),
    "bytes of the other format": (
        lambda: QuantizedWeights.from_ggml(Q8.to_ggml(), "q4_0", (2, 64)),
        "136 bytes",
    ),
    "from_ggml format": (lambda: QuantizedWeights.from_ggml(b"", "f16", (1, 32)), "'f16'"),
    "from_ggml K": (lambda: QuantizedWeights.from_ggml(b"", "q8_0", (1, 48)), "K = 48"),
    "from_ggml shape float": (
        lambda: QuantizedWeights.from_ggml(b"", "q8_0", (2.5, 32)),
        "(2.5, 32)",
    ),
    "from_ggml shape 3-D": (
        lambda: QuantizedWeights.from_ggml(b"", "q8_0", (1, 1, 32)),
        "(1, 1, 32)",
    ),
    "from_ggml shape int": (lambda: QuantizedWeights.from_ggml(b"", "q8_0", 32), "32"),
    "from_ggml objects": (
        lambda: QuantizedWeights.from_ggml(np.full(34, None), "q8_0", (1, 32)),
        "object",
    ),
    "from_ggml not bytes": (lambda: QuantizedWeights.from_ggml(17, "q8_0", (1, 32)), "int"),
    "scales float32": (
        lambda: QuantizedWeights("q8_0", (2, 64), Q8.scales.astype(np.float32), Q8.quants),
        "float32 (2, 2)",
    ),
    "scales shape": (
        lambda: QuantizedWeights("q8_0", (2, 64), Q8.scales[:1], Q8.quants),
        "(1, 2)",
    ),
    "quants uint8 for q8_0": (
        lambda: QuantizedWeights("q8_0", (2, 64), Q8.scales, Q8.quants.view(np.uint8)),
        "uint8 (2, 64)",
    ),
    "quants of q8_0 as q4_0": (
        lambda: QuantizedWeights("q4_0", (2, 64), Q8.scales, Q8.quants.view(np.uint8)),
        "(2, 64)",
    ),
    "scales a list": (
        lambda: QuantizedWeights("q8_0", (2, 64), Q8.scales.tolist(), Q8.quants),
        "list",
    ),
    "dequantize an array": (lambda: dequantize(np.ones((2, 64))), "ndarray"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_a_config_error_naming_the_value(case):
    make, named = BAD[case]
    with pytest.raises(ConfigError) as info:
        make()
    assert named in str(info.value), str(info.value)
