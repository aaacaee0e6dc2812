"""int8 1x1 conv2d (qcom_dot8_acc / qcom_udot8_acc) against an int64/float64 numpy model."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from conv_reference import activate, assert_close
from hypothesis import given, settings
from hypothesis import strategies as st

from qcom_ext import ConfigError, ops


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


def reference(xq, wq, bias, sx, zx, sw, zw, stride, activation, slope):
    """NHWC uint8 input, (Co, Ci) weights -> real NHWC output in float64."""
    sh, swd = stride
    x = xq[:, ::sh, ::swd].astype(np.int64) - zx
    acc = x @ (wq.astype(np.int64) - zw).T
    real = sx * sw * acc.astype(np.float64)
    if bias is not None:
        real = real + bias.astype(np.float64)
    return activate(real, activation, slope)


def requantise(real, scale, zero, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.rint(real / scale) + zero, info.min, info.max)


cases = st.fixed_dictionaries(
    {
        "n": st.integers(1, 2),
        "h": st.integers(1, 6),
        "w": st.integers(1, 7),
        "ci": st.integers(1, 21),
        "co": st.integers(1, 11),
        "stride": st.tuples(st.integers(1, 2), st.integers(1, 2)),
        "signed": st.booleans(),
        "zx": st.integers(0, 255),
        "zw": st.integers(0, 255),
        "out": st.sampled_from([np.float32, np.int8, np.uint8]),
        "activation": st.sampled_from(list(ops.ACTIVATIONS)),
        "bias": st.booleans(),
        "pixels": st.sampled_from([1, 2, 4, 8]),
        "layout": st.sampled_from(["NCHW", "NHWC"]),
    }
)


def test_random_against_numpy(queue):
    rng = np.random.default_rng(31)

    @settings(max_examples=40, deadline=None)
    @given(cases)
    def check(case):
        shape = (case["n"], case["h"], case["w"], case["ci"])
        xq = rng.integers(0, 256, shape, dtype=np.uint8)
        if case["signed"]:
            wq, zw = rng.integers(-128, 128, (case["co"], case["ci"]), dtype=np.int8), 0
        else:
            wq, zw = rng.integers(0, 256, (case["co"], case["ci"]), dtype=np.uint8), case["zw"]
        bias = rng.standard_normal(case["co"]).astype(np.float32) if case["bias"] else None
        sx, sw, sy = 0.02, 0.004, 0.05
        zy = {np.float32: 0, np.int8: -3, np.uint8: 100}[case["out"]]
        real = reference(
            xq, wq, bias, sx, case["zx"], sw, zw, case["stride"], case["activation"], 0.1
        )
        host = xq if case["layout"] == "NHWC" else xq.transpose(0, 3, 1, 2)
        got = ops.conv2d_int8(
            queue,
            host,
            wq,
            bias,
            input_scale=sx,
            input_zero_point=case["zx"],
            weight_scale=sw,
            weight_zero_point=zw,
            output_scale=sy,
            output_zero_point=zy,
            out_dtype=case["out"],
            stride=case["stride"],
            activation=case["activation"],
            negative_slope=0.1,
            layout=case["layout"],
        )
        if case["layout"] == "NCHW":
            got = got.transpose(0, 2, 3, 1)
        assert got.dtype == case["out"] and got.shape == real.shape
        if case["out"] == np.float32:
            assert_close(got, real, np.float32)
        else:  # float32 requantisation: at most one step from the float64 model
            want = requantise(real, sy, zy, case["out"])
            assert np.abs(got.astype(np.int64) - want).max(initial=0) <= 1

    check()


def test_exact_integer_path_on_a_known_case(queue):
    """Signed weights, zero points, ReLU6 and uint8 requantisation by hand."""
    x = np.array([[[[10, 200, 3, 0, 255]]]], np.uint8)  # NHWC, Ci = 5
    w = np.array([[1, -1, 2, 0, -128], [127, 0, 0, 0, 1]], np.int8)
    # real = 0.5 * 0.25 * sum((x - 3) * w): [7 - 197 + 0 + 0 - 32256 = -32446, 889 + 252]
    y = ops.conv2d_int8(
        queue,
        x,
        w,
        input_scale=0.5,
        input_zero_point=3,
        weight_scale=0.25,
        output_scale=0.125,
        output_zero_point=10,
        out_dtype=np.uint8,
        activation="relu6",
        layout="NHWC",
    )
    # ReLU6 -> [0, 6]; /0.125 + 10 -> [10, 58]
    assert y.tolist() == [[[[10, 58]]]]
    f = ops.conv2d_int8(
        queue, x, w, input_scale=0.5, input_zero_point=3, weight_scale=0.25, layout="NHWC"
    )
    np.testing.assert_allclose(f[0, 0, 0], [-32446 * 0.125, 1141 * 0.125])


def test_buffer_tensors(queue):
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 5, 6), dtype=np.uint8)
    w = np.random.default_rng(2).integers(-128, 128, (4, 6), dtype=np.int8)
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
    out = ops.conv2d_int8(
        queue,
        buf,
        w,
        input_scale=1.0,
        input_zero_point=0,
        weight_scale=1.0,
        layout="NHWC",
        shape=x.shape,
    )
    assert isinstance(out, ops.BufferTensor) and out.shape == (1, 3, 5, 4)
    np.testing.assert_array_equal(out.to_numpy(queue), x.astype(np.int64) @ w.T.astype(np.int64))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weight": np.ones((3, 4), np.float32)}, "must be int8 or uint8"),
        ({"weight_zero_point": 4}, r"weight_zero_point must be an integer in \[0, 0\]"),
        ({"input_zero_point": 256}, r"input_zero_point must be an integer in \[0, 255\]"),
        ({"input_scale": 0.0}, "input_scale must be a positive finite number"),
        ({"out_dtype": np.int8}, "needs output_scale"),
        ({"out_dtype": np.int16}, "out_dtype int16 is not one of"),
        (
            {"out_dtype": np.int8, "output_scale": 1.0, "output_zero_point": 200},
            r"output_zero_point must be an integer in \[-128, 127\]",
        ),
        ({"weight": np.ones((3, 4, 3, 3), np.int8)}, r"must be \(Co, Ci\)"),
    ],
)
def test_bad_arguments_are_named(queue, kwargs, message):
    x = np.ones((1, 2, 2, 4), np.uint8)
    arguments = {
        "weight": np.ones((3, 4), np.int8),
        "input_scale": 0.1,
        "input_zero_point": 0,
        "weight_scale": 0.1,
        "layout": "NHWC",
        **kwargs,
    }
    with pytest.raises(ConfigError, match=message):
        ops.conv2d_int8(queue, x, **arguments)


def test_float_inputs_are_refused(queue):
    with pytest.raises(ConfigError, match="uint8 array"):
        ops.conv2d_int8(
            queue,
            np.ones((1, 2, 2, 4), np.float32),
            np.ones((3, 4), np.int8),
            input_scale=0.1,
            input_zero_point=0,
            weight_scale=0.1,
        )
