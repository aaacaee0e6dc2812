"""Bad-input fuzzing (the rule and the settings: tests/fuzzing.py): recording
updates, the convolution ops' shapes, dtypes and parameters, bfloat16.
"""

from __future__ import annotations

import math

import fuzz_oracles as oracle
import fuzzing
import numpy as np
import pytest
from conv_reference import assert_close
from conv_reference import conv2d as conv2d_reference
from fuzzing import FUZZ, RECORDED, N, Recorded, counted, one_spoilt, typed_error
from hypothesis import given
from hypothesis import strategies as st

from qcom_ext import ConfigError, ops

# pytest finds fixtures among a module's names: the shared ones, from tests/fuzzing.py
ctx, queue, report_counts = fuzzing.ctx, fuzzing.queue, fuzzing.report_counts


# ---- recording updates -------------------------------------------------------------------


@pytest.fixture(scope="module", params=["own path", "replay"])
def recorded(request, ctx, queue):
    rec = Recorded(ctx, queue, request.param)
    assert request.param != "replay" or rec.rec.path == "replay"
    yield rec
    rec.rec.release()


_BAD_SCALAR = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.sampled_from(
        [
            1e300,
            math.nan,
            math.inf,
            10**400,
            True,
            None,
            "3",
            2**31,
            -(2**31) - 1,
            np.int64(1),
            np.int16(1),
            np.float16(1),
            b"abc",
            2.5,
        ]
    ),
)
_BAD_KEY = st.sampled_from(
    [(3, 0), (-1, 1), (0, 2), 0, (0,), (True, 1), (0, 1, 2), "0,1", (0.0, 1)]
)
_BAD_DIMS = st.sampled_from([0, -1, 2**64, 2**70, 1.5, None, "4", (), (4, 4), (1, 2, 3, 4), [0]])
_BAD_OFFSET = st.sampled_from([-1, 2**64 - 1, 2**70, 0.5, None, (0, 0)])
_BAD_INDEX = st.sampled_from([-1, 3, True, 1.0, "0", None])


@st.composite
def valid_args(draw):
    """Updates every recording takes: a buffer for argument 0, a scalar of the recorded
    type (numpy, a Python number that fits, raw bytes of its size) for argument 1."""
    keys = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), max_size=3, unique=True))
    out = {}
    for d, a in keys:
        if a == 0:
            out[(d, a)] = draw(st.sampled_from("ABF"))
        elif RECORDED[d][0] == "add":
            out[(d, a)] = draw(
                st.one_of(
                    st.integers(-50, 50),
                    st.integers(-50, 50).map(np.int32),
                    st.binary(min_size=4, max_size=4),
                )
            )
        else:
            out[(d, a)] = draw(
                st.one_of(st.floats(-9, 9), st.integers(-9, 9), st.floats(-9, 9).map(np.float32))
            )
    return out


_GS = st.one_of(st.integers(1, 10).map(lambda k: 4 * k), st.tuples(st.integers(1, 40)))
_SIZES = st.fixed_dictionaries(
    {},
    optional={
        "global_size": st.dictionaries(st.integers(0, 2), _GS, max_size=2),
        "local_size": st.dictionaries(st.just(0), st.sampled_from([1, 2, 4, (4,), [2]])),
        "global_offset": st.dictionaries(st.integers(0, 2), st.integers(0, 24), max_size=2),
    },
)
_UPDATES = one_spoilt(
    {"args": valid_args(), "sizes": _SIZES, "not_a_mapping": st.none()},
    {
        "args": st.one_of(
            st.dictionaries(_BAD_KEY, st.integers(0, 3), min_size=1, max_size=1),
            st.dictionaries(
                st.tuples(st.integers(0, 2), st.just(1)), _BAD_SCALAR, min_size=1, max_size=1
            ),
            st.dictionaries(
                st.tuples(st.integers(0, 2), st.just(0)),
                st.sampled_from([1, "nope", np.int32(0), b"\0" * 8]),
                min_size=1,
                max_size=1,
            ),
        ),
        "sizes": st.one_of(
            st.fixed_dictionaries(
                {
                    "global_size": st.dictionaries(
                        st.integers(0, 2) | _BAD_INDEX, _BAD_DIMS | _GS, min_size=1
                    )
                }
            ),
            st.fixed_dictionaries(
                {
                    "local_size": st.dictionaries(
                        st.integers(0, 2), _BAD_DIMS | st.integers(1, 16), min_size=1
                    )
                }
            ),
            st.fixed_dictionaries(
                {"global_offset": st.dictionaries(st.integers(0, 2), _BAD_OFFSET, min_size=1)}
            ),
        ),
        "not_a_mapping": st.sampled_from([5, "ab", [(0, 1)]]),
    },
)


@FUZZ
@given(updates=_UPDATES)
def test_recording_updates(recorded, updates):
    counted("recording updates")
    rec = recorded
    arg_updates, sizes, not_a_mapping = updates["args"], updates["sizes"], updates["not_a_mapping"]
    if not_a_mapping is not None:
        typed_error(
            lambda: rec.rec.replay(rec.queue, args=not_a_mapping), "args", kinds=(ConfigError,)
        )
        return
    args = {k: rec.buffers.get(v, v) if isinstance(v, str) else v for k, v in arg_updates.items()}
    plan = [[k, b, s.tobytes(), gs, ls, off] for k, b, s, gs, ls, off in RECORDED]
    ok = True
    for key, value in arg_updates.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(map(oracle.is_int, key))) or not (
            0 <= key[0] < 3 and 0 <= key[1] < 2
        ):
            ok = False
        elif key[1] == 0:  # the buffer
            ok &= isinstance(value, str) and value in rec.buffers
            plan[key[0]][1] = value
        else:
            raw = (
                None
                if isinstance(value, str)
                else oracle.scalar_oracle(value, RECORDED[key[0]][2].dtype)
            )
            ok &= raw is not None
            plan[key[0]][2] = raw
    for name, minimum, column in (
        ("global_size", 1, 3),
        ("local_size", 1, 4),
        ("global_offset", 0, 5),
    ):
        for d, value in sizes.get(name, {}).items():
            dims = oracle.dims_oracle(value, minimum)
            if not (oracle.is_int(d) and 0 <= d < 3) or dims is None:
                ok = False
                continue
            ok &= not (name == "local_size" and RECORDED[d][4] is None)
            plan[d][column] = dims
    for _, _, _, gs, ls, off in plan:
        ok &= len(gs) == 1
        if ls is not None:
            ok &= len(ls) == len(gs) and gs[0] % ls[0] == 0 and math.prod(ls) <= rec.max_wg
        if off is not None:
            ok &= len(off) == len(gs) and gs[0] + off[0] <= oracle.SIZE_MAX
    if not ok:
        typed_error(lambda: rec.run(args=args, **sizes), kinds=(ConfigError,))
        return
    got = rec.run(args=args, **sizes)
    memory = {name: np.zeros(N * 4, np.uint8) for name in "ABF"}
    for kernel, buf, raw, gs, _, off in plan:
        start = (off or (0,))[0]
        hit = slice(min(start, N), min(start + gs[0], N))
        if kernel == "add":
            view = memory[buf].view(np.int32)
            view[hit] = view[hit] + np.frombuffer(raw, np.int32)[0]  # wraps, as on the device
        else:
            memory[buf].view(np.float32)[hit] = np.frombuffer(raw, np.float32)[0]
    assert got == {name: data.tobytes() for name, data in memory.items()}


# ---- convolution ops: shapes, dtypes, parameters -----------------------------------------

_BAD_PARAMS = {
    "stride": st.sampled_from([0, -1, 1.5, 2.0, True, None, "1", (1,), (1, 1, 1), (1.0, 1)]),
    "padding": st.sampled_from([-1, 0.5, None, "0", (0, -1), (True, 0), [0, 0, 0]]),
    "dilation": st.sampled_from([0, 1.0, None, (1, 0), "2"]),
    "activation": st.sampled_from(["RELU", "gelu", "", 1, ["relu"], b"relu"]),
    "negative_slope": st.sampled_from([math.nan, math.inf, 1e39, "0.1", None, True, 1j, [0.1]]),
    "dtype": st.sampled_from(["junk", np.int32, np.complex64, np.bool_, "int", object, 3]),
    "pixels": st.sampled_from([3, 0, 16, 4.0, True, "4", None]),
}
_OPS = ("depthwise_conv2d", "conv2d", "conv2d_1x1")
_WEIGHTS = {"depthwise_conv2d": (4, 1, 3, 3), "conv2d": (4, 4, 3, 3), "conv2d_1x1": (4, 4)}


@FUZZ
@given(op=st.sampled_from(_OPS), param=st.sampled_from(sorted(_BAD_PARAMS)), data=st.data())
def test_conv_op_parameters(queue, op, param, data):
    counted("ops: conv parameters")
    value = data.draw(_BAD_PARAMS[param], label=param)
    if op == "conv2d_1x1" and param in ("padding", "dilation", "pixels"):  # what 1x1 takes
        param, value = ("tile", (3, 4)) if param == "pixels" else ("stride", value)
    if op == "conv2d" and param == "pixels":  # conv2d picks its own; its method is checked
        param, value = "method", {None: "IMAGE", True: None}.get(value, value)
    x, weight = np.ones((1, 4, 5, 5), np.float32), np.ones(_WEIGHTS[op], np.float32)
    typed_error(
        lambda: getattr(ops, op)(queue, x, weight, **{param: value}), param, kinds=(ConfigError,)
    )


_BAD_ARRAYS = st.sampled_from(
    [
        np.ones((4, 5, 5, 1, 1), np.float32),
        np.ones((1, 4, 0, 5), np.float32),
        np.ones((1, 4, 5, 5), np.complex64),
        np.ones((1, 4, 5, 5), np.int32),
        "x",
        [[[[1.0]]], [[[1.0, 2.0]]]],
        np.ones((1, 4, 5, 5), object),
        np.ones((2,), np.float32),
    ]
)


@FUZZ
@given(
    op=st.sampled_from(_OPS), which=st.sampled_from(["input", "weight", "bias"]), bad=_BAD_ARRAYS
)
def test_conv_op_arrays(queue, op, which, bad):
    counted("ops: conv arrays")
    arrays = {
        "input": np.ones((1, 4, 5, 5), np.float32),
        "bias": None,
        "weight": np.ones(_WEIGHTS[op], np.float32),
    }
    arrays[which] = bad
    call = lambda: getattr(ops, op)(queue, arrays["input"], arrays["weight"], arrays["bias"])  # noqa: E731
    typed_error(call, which, kinds=(ConfigError,))


@FUZZ
@given(
    n=st.integers(1, 2),
    c=st.integers(1, 9),
    h=st.integers(1, 8),
    w=st.integers(1, 8),
    padding=st.one_of(st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2))),
    layout=st.sampled_from(["NCHW", "NHWC"]),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_depthwise_shapes(queue, n, c, h, w, padding, layout, bias, seed):
    counted("ops: depthwise shapes")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32) if bias else None
    given_x = x if layout == "NCHW" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    ph, pw = (padding, padding) if isinstance(padding, int) else padding

    def call():
        return ops.depthwise_conv2d(queue, given_x, weight, b, padding=padding, layout=layout)

    if h + 2 * ph < 3 or w + 2 * pw < 3:
        typed_error(call, "smaller", kinds=(ConfigError,))
        return
    got = call()
    want = conv2d_reference(x, weight, b, padding=(ph, pw), groups=c)
    want = want if layout == "NCHW" else want.transpose(0, 2, 3, 1)
    assert got.shape == want.shape
    assert_close(got, want, np.float32)


# ---- bfloat16 ----------------------------------------------------------------------------

_F32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
_F32_BITS = st.integers(0, 0xFFFFFFFF).map(lambda b: np.array(b, np.uint32).view(np.float32)[()])


@FUZZ
@given(
    values=st.lists(st.one_of(_F32, _F32_BITS), min_size=1, max_size=8),
    a=st.integers(0, 0xFFFF),
    b=st.integers(0, 0xFFFF),
    acc=_F32,
    bad=st.sampled_from([1 + 2j, "1.0", [1, [2]], None, object()]),
    bad_bits=st.sampled_from([-1, 0x10000, 2**40, 1.5, np.float32(16256), "0x3f80", [1, -2]]),
)
def test_bfloat16_conversions(values, a, b, acc, bad, bad_bits):
    counted("bfloat16")
    from qcom_ext.ext.program.bfloat16 import from_bfloat16, mad32_bf16, to_bfloat16

    floats = np.array(values, np.float32)
    bits = to_bfloat16(floats)
    assert bits.dtype == np.uint16
    assert bits.tolist() == [oracle.to_bf16_reference(f) for f in floats]
    assert from_bfloat16(bits).view(np.uint32).tolist() == [v << 16 for v in bits.tolist()]
    got, want = float(mad32_bf16(a, b, acc)), oracle.mad32_bf16_reference(a, b, acc)
    assert (math.isnan(got) and math.isnan(want)) or (
        got == want and math.copysign(1, got) == math.copysign(1, want)
    ), (hex(a), hex(b), acc, got, want)
    typed_error(lambda: to_bfloat16(bad), "to_bfloat16", kinds=(ConfigError,), main=False)
    typed_error(lambda: from_bfloat16(bad_bits), "from_bfloat16", kinds=(ConfigError,), main=False)
    typed_error(lambda: mad32_bf16(a, b, bad), "acc", kinds=(ConfigError,), main=False)
