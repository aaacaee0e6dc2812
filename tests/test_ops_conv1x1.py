"""1x1 conv2d on NHWC buffers (every register tile) against a float64 numpy reference."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from conv_reference import assert_close, conv2d, rounded
from hypothesis import given, settings
from hypothesis import strategies as st

from qcom_ext import ConfigError, ops
from qcom_ext.ops.conv_1x1 import GROUPS, TILES, TUNE_SPACE


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


cases = st.fixed_dictionaries(
    {
        "n": st.integers(1, 3),
        "h": st.integers(1, 7),
        "w": st.integers(1, 9),
        "ci": st.integers(1, 13),
        "co": st.integers(1, 13),
        "stride": st.tuples(st.integers(1, 2), st.integers(1, 3)),
        "tile": st.sampled_from(TILES),
        "activation": st.sampled_from(list(ops.ACTIVATIONS)),
        "bias": st.booleans(),
        "layout": st.sampled_from(["NCHW", "NHWC"]),
        "dtype": st.sampled_from([np.float32, np.float16]),
    }
)


def case_arrays(rng, case):
    """x (NCHW), w, b and the float64 reference of a drawn case (at its dtype)."""
    dtype = case["dtype"]
    x = rng.standard_normal((case["n"], case["ci"], case["h"], case["w"])).astype(dtype)
    w = rng.standard_normal((case["co"], case["ci"])).astype(dtype)
    b = rng.standard_normal(case["co"]).astype(np.float32) if case["bias"] else None
    want = conv2d(
        rounded(x, dtype),
        rounded(w, dtype)[:, :, None, None],
        b,
        stride=case["stride"],
        activation=case["activation"],
        slope=0.2,
    )
    return x, w, b, want


def test_random_shapes_and_tiles_against_numpy(queue):
    rng = np.random.default_rng(11)

    @settings(max_examples=40, deadline=None)
    @given(cases)
    def check(case):
        dtype = case["dtype"]
        x, w, b, want = case_arrays(rng, case)
        host = x if case["layout"] == "NCHW" else x.transpose(0, 2, 3, 1)
        got = ops.conv2d_1x1(
            queue,
            host,
            w,
            b,
            stride=case["stride"],
            tile=case["tile"],
            activation=case["activation"],
            negative_slope=0.2,
            layout=case["layout"],
        )
        if case["layout"] == "NHWC":
            got = got.transpose(0, 3, 1, 2)
        assert got.dtype == dtype and got.shape == want.shape
        assert_close(got, want, dtype)

    check()


@pytest.mark.parametrize("tile", TILES)
def test_every_tile_with_tails_in_pixels_and_channels(queue, tile):
    rng = np.random.default_rng(sum(tile))
    x = rng.standard_normal((2, 10, 3, 5)).astype(np.float32)  # 30 pixels, Ci % 4 = 2
    w = rng.standard_normal((13, 10, 1, 1)).astype(np.float32)  # Co % 8 = 5
    b = rng.standard_normal(13).astype(np.float32)
    got = ops.conv2d_1x1(queue, x, w, b, tile=tile)
    assert_close(got, conv2d(x, w, b), np.float32)


def test_buffer_tensors_in_and_out_and_exact_output_bounds(queue):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 7, 6)).astype(np.float32)  # NHWC
    w = rng.standard_normal((5, 6)).astype(np.float32)
    layer = ops.Conv2d1x1(queue, w, stride=2, tile=(4, 8))
    mf = cl.mem_flags
    buf = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    src = ops.BufferTensor(buf, x.shape, np.dtype(np.float32), "NHWC")
    out_shape = layer.output_shape(x.shape)
    assert out_shape == (2, 3, 4, 5)
    # one element of guard on each side of the output: never written
    guard = np.full(int(np.prod(out_shape)) + 2, 99.0, np.float32)
    big = cl.Buffer(queue.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=guard)
    out = ops.BufferTensor(big, out_shape, np.dtype(np.float32), "NHWC")
    layer(queue, src, out)
    result = np.empty_like(guard)
    cl.enqueue_copy(queue, result, big)
    assert result[-2:].tolist() == [99.0, 99.0]
    want = conv2d(x.transpose(0, 3, 1, 2), w[:, :, None, None], stride=2)
    assert_close(result[:-2].reshape(out_shape).transpose(0, 3, 1, 2), want, np.float32)
    again = ops.conv2d_1x1(queue, src, w, stride=2)
    assert isinstance(again, ops.BufferTensor) and again.layout == "NHWC"
    assert_close(again.to_numpy(queue).transpose(0, 3, 1, 2), want, np.float32)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weight": np.ones((4, 3, 3, 3), np.float32)}, "use ops.conv2d"),
        ({"weight": np.ones((4, 5), np.float32)}, "input has 3 channels"),
        ({"tile": (3, 4)}, r"tile \(3, 4\) is not one of"),
        ({"group": (3, 3)}, r"group \(3, 3\) is not one of"),
        ({"tile": (4, 4), "group": (8.0, 8)}, r"group \(8.0, 8\) is not one of"),
        ({"stride": (1, 0)}, "stride must be at least 1"),
        ({"bias": np.ones((4, 1), np.float32)}, r"bias must have shape \(4,\)"),
    ],
)
def test_bad_arguments_are_named(queue, kwargs, message):
    x = np.ones((1, 3, 4, 4), np.float32)
    arguments = {"weight": np.ones((4, 3), np.float32), **kwargs}
    with pytest.raises(ConfigError, match=message):
        ops.conv2d_1x1(queue, x, **arguments)


def test_nchw_buffers_are_refused(queue):
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * 48)
    with pytest.raises(ConfigError, match="needs an NHWC buffer, got NCHW"):
        ops.conv2d_1x1(queue, buf, np.ones((4, 3), np.float32), shape=(1, 3, 4, 4))
    tensor = ops.conv2d_1x1(
        queue, buf, np.ones((4, 3), np.float32), shape=(1, 4, 4, 3), layout="NHWC"
    )
    assert tensor.shape == (1, 4, 4, 4)


staged_cases = st.fixed_dictionaries(
    {
        "n": st.integers(1, 2),
        "h": st.integers(1, 9),
        "w": st.integers(1, 11),
        "ci": st.integers(1, 40),
        "co": st.integers(1, 40),
        "stride": st.tuples(st.integers(1, 2), st.integers(1, 3)),
        "tile": st.sampled_from(TILES),
        "group": st.sampled_from(GROUPS),
        "activation": st.sampled_from(list(ops.ACTIVATIONS)),
        "bias": st.booleans(),
        "dtype": st.sampled_from([np.float32, np.float16]),
    }
)


def test_staged_gemm_against_numpy(queue):
    """The staged kernel: every group and tile, Ci over several K steps and with tails
    (Ci % 4, Ci % 16), pixel and channel tails, strides, half storage."""
    rng = np.random.default_rng(12)

    @settings(max_examples=12, deadline=None)  # each a new build: a minute on pocl at 20
    @given(staged_cases)
    def check(case):
        dtype = case["dtype"]
        x, w, b, want = case_arrays(rng, case)
        got = ops.conv2d_1x1(
            queue,
            x,
            w,
            b,
            stride=case["stride"],
            tile=case["tile"],
            group=case["group"],
            activation=case["activation"],
            negative_slope=0.2,
        )
        assert got.dtype == dtype and got.shape == want.shape
        assert_close(got, want, dtype)

    check()


@pytest.mark.parametrize("variant", [v for v in TUNE_SPACE if v[2]])
def test_staged_variants_write_only_the_output(queue, variant):
    """Each staged variant of the tune space on 2 x 3 x 7 pixels (not a multiple of any
    group tile), 37 -> 21 channels (tails in every direction), inside a guarded buffer."""
    rng = np.random.default_rng(sum(variant))
    x = rng.standard_normal((2, 3, 7, 37)).astype(np.float32)  # NHWC
    w = rng.standard_normal((21, 37)).astype(np.float32)
    layer = ops.Conv2d1x1(queue, w, tile=variant[:2], group=variant[2:])
    assert layer.fixed == variant and layer.launcher.identity.kernel == "conv2d_1x1_staged"
    mf = cl.mem_flags
    src = ops.BufferTensor.from_numpy(queue.context, x, "NHWC")
    size = 2 * 3 * 7 * 21
    guard = np.full(size + 64, 99.0, np.float32)
    big = cl.Buffer(queue.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=guard)
    layer(queue, src, ops.BufferTensor(big, (2, 3, 7, 21), np.dtype(np.float32), "NHWC"))
    result = np.empty_like(guard)
    cl.enqueue_copy(queue, result, big)
    np.testing.assert_array_equal(result[size:], 99.0)
    want = conv2d(x.transpose(0, 3, 1, 2), w[:, :, None, None]).transpose(0, 2, 3, 1)
    assert_close(result[:size].reshape(2, 3, 7, 21), want, np.float32)


@pytest.fixture
def tuning_cache(tmp_path, monkeypatch):
    from qcom_ext.ops import tuning

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    tuning.forget()
    yield tmp_path / "tuning"
    tuning.forget()


def test_tuning_picks_a_variant_and_later_layers_run_it(queue, tuning_cache, device_caps):
    from qcom_ext.ops import tuning
    from qcom_ext.ops.conv_1x1 import STAGED_DEFAULT, default_tile

    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 6, 5, 20)).astype(np.float32)  # NHWC
    w = rng.standard_normal((12, 20)).astype(np.float32)
    layer = ops.Conv2d1x1(queue, w)
    untuned = layer.variant_for(x.shape)
    gpu = default_tile(queue.device) == (4, 8)
    assert untuned == (STAGED_DEFAULT if gpu else (*default_tile(queue.device), 0, 0))
    src = ops.BufferTensor.from_numpy(queue.context, x, "NHWC")
    space = [(2, 4, 0, 0), (4, 4, 8, 8)]
    report = layer.tune(queue, src, variants=space, budget_s=0.2)
    chosen = layer.variant_for(x.shape)
    assert chosen in space and report.best_ns > 0
    want = conv2d(x.transpose(0, 3, 1, 2), w[:, :, None, None]).transpose(0, 2, 3, 1)
    assert_close(layer(queue, src).to_numpy(queue), want, np.float32)
    tuning.forget()
    again = ops.Conv2d1x1(queue, w)
    assert again.variant_for(x.shape) == chosen
    assert_close(again(queue, src).to_numpy(queue), want, np.float32)
    assert ops.Conv2d1x1(queue, w[:, :19]).variant_for((1, 6, 5, 19)) == untuned
    assert ops.Conv2d1x1(queue, w, tile=(8, 8)).variant_for(x.shape) == (8, 8, 0, 0)


def test_the_tune_space_fits_the_output_and_the_device(queue):
    layer = ops.Conv2d1x1(queue, np.ones((6, 40), np.float32), tile=(2, 4))
    space = layer.space((1, 2, 3, 40))  # 6 pixels, 6 channels: no 16-row groups
    assert (2, 4, 0, 0) in space and (4, 4, 0, 0) in space
    assert not [v for v in space if v[0] * max(1, v[2]) > 12 or v[1] * max(1, v[3]) > 16]
    wide = layer.space((32, 16, 16, 40))
    assert set(wide) == {v for v in TUNE_SPACE if v[1] * max(1, v[3]) <= 16}
