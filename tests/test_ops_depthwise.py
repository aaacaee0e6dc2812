"""Depthwise conv2d on the image layout against a float64 numpy reference."""

from __future__ import annotations

import json

import numpy as np
import pyopencl as cl
import pytest
from conv_reference import assert_close, conv2d, conv_option_strategies, pack_image, rounded
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from qcom_ext import ConfigError, ops


@pytest.fixture
def queue(kernel_context, device_caps):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label}: CL_DEVICE_IMAGE_SUPPORT is 0")
    return cl.CommandQueue(kernel_context)


cases = st.fixed_dictionaries(
    {
        "n": st.integers(1, 3),
        "c": st.integers(1, 11),
        "h": st.integers(1, 11),
        "w": st.integers(1, 13),
        "kh": st.integers(1, 4),
        "kw": st.integers(1, 5),
        **conv_option_strategies(),
        "pixels": st.sampled_from([1, 2, 4, 8]),
        "rows": st.sampled_from([1, 2, 4, 8]),
        "weight_buffer": st.booleans(),
    }
)


def fits(case) -> bool:
    """Whether the output is non-empty."""
    dims = zip(
        (case["h"], case["w"]),
        (case["kh"], case["kw"]),
        case["padding"],
        case["dilation"],
        strict=True,
    )
    return all(size + 2 * p - d * (k - 1) - 1 >= 0 for size, k, p, d in dims)


def test_random_shapes_against_numpy(queue):
    rng = np.random.default_rng(3)

    @settings(max_examples=30, deadline=None)
    @given(cases)
    def check(case):
        assume(fits(case))
        dtype = case["dtype"]
        x = rng.standard_normal((case["n"], case["c"], case["h"], case["w"])).astype(dtype)
        w = rng.standard_normal((case["c"], 1, case["kh"], case["kw"])).astype(dtype)
        b = rng.standard_normal(case["c"]).astype(np.float32) if case["bias"] else None
        kwargs = {k: case[k] for k in ("stride", "padding", "dilation", "activation")}
        want = conv2d(
            rounded(x, dtype), rounded(w, dtype), b, groups=case["c"], slope=0.1, **kwargs
        )
        host = x if case["layout"] == "NCHW" else x.transpose(0, 2, 3, 1)
        got = ops.depthwise_conv2d(
            queue,
            host,
            w,
            b,
            layout=case["layout"],
            negative_slope=0.1,
            pixels=case["pixels"],
            rows=case["rows"],
            weight_buffer=case["weight_buffer"],
            **kwargs,
        )
        if case["layout"] == "NHWC":
            got = got.transpose(0, 3, 1, 2)
        assert got.dtype == dtype and got.shape == want.shape
        assert_close(got, want, dtype)

    check()


@pytest.mark.parametrize(
    "pixels, rows, strip",
    [
        *((p, r, False) for p, r in [(1, 1), (4, 1), (8, 1), (2, 2), (4, 4), (4, 8)]),
        *((p, r, "strip") for p, r in [(1, 4), (8, 8), (2, 32)]),
        *((p, r, "tiled") for p, r in [(1, 4), (2, 8), (4, 16)]),
    ],
)
@pytest.mark.parametrize("weight_buffer", [False, True])
@pytest.mark.parametrize("ow", [1, 4, 5, 7, 8, 9])
def test_output_sizes_not_a_multiple_of_the_block_write_only_valid_pixels(
    queue, ow, pixels, rows, strip, weight_buffer
):
    x = np.random.default_rng(ow).standard_normal((2, 6, 3, ow)).astype(np.float32)
    w = np.random.default_rng(9).standard_normal((6, 1, 3, 3)).astype(np.float32)
    kind = {strip: True} if strip else {}  # strip=True or tiled=True
    layer = ops.DepthwiseConv2d(
        queue, w, padding=1, pixels=pixels, rows=rows, weight_buffer=weight_buffer, **kind
    )
    image = ops.to_image(queue, x)
    # The output image is a block larger than the tensor in both directions, so that a
    # write past the last pixel of a row or past the last row lands where it shows.
    width, height = 2 * ow, 2 * 3  # W * ceil(C/4), H * N
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    shape = (width + 8, height + 4)
    big = cl.create_image(queue.context, cl.mem_flags.READ_WRITE, fmt, shape=shape)
    sentinel = np.full(4, 123.0, np.float32)
    cl.enqueue_fill_image(queue, big, sentinel, (0, 0), shape)
    out = ops.ImageTensor(big, (2, 6, 3, ow), np.dtype(np.float32))
    layer(queue, image, out)
    texels = np.empty((shape[1], shape[0], 4), np.float32)
    cl.enqueue_copy(queue, texels, big, origin=(0, 0), region=shape)
    want = conv2d(x, w, padding=1, groups=6)
    assert_close(texels[:height, :width], pack_image(want), np.float32)
    outside = np.ones(texels.shape[:2], bool)
    outside[:height, :width] = False
    np.testing.assert_array_equal(texels[outside], 123.0)  # no pixel written past the tensor


def test_image_tensors_stay_on_the_device(queue):
    x = np.random.default_rng(5).standard_normal((1, 9, 8, 8)).astype(np.float32)
    w = np.random.default_rng(6).standard_normal((9, 3, 3)).astype(np.float32)  # (C, KH, KW)
    image = ops.to_image(queue, x)
    y = ops.depthwise_conv2d(queue, image, w, stride=2, padding=1, activation="relu6")
    assert isinstance(y, ops.ImageTensor) and y.shape == (1, 9, 4, 4)
    want = conv2d(x, w[:, None], stride=2, padding=1, groups=9, activation="relu6")
    assert_close(ops.from_image(queue, y), want, np.float32)
    bare = ops.depthwise_conv2d(queue, image.image, w, shape=image.shape, padding=1)
    assert_close(
        ops.from_image(queue, bare), conv2d(x, w[:, None], padding=1, groups=9), np.float32
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weight": np.ones((4, 2, 3, 3), np.float32)}, "channel multiplier"),
        ({"weight": np.ones((5, 1, 3, 3), np.float32)}, "input has 4 channels"),
        ({"weight": np.ones((4, 3), np.float32)}, "must have 3 or 4 dimensions"),
        ({"weight": np.ones((4, 1, 3, 3), np.int8)}, "non-empty float array"),
        ({"bias": np.ones(3, np.float32)}, r"bias must have shape \(4,\)"),
        ({"stride": 0}, "stride must be at least 1"),
        ({"padding": (1, 2, 3)}, "padding must be an int or a pair"),
        ({"activation": "gelu"}, "activation 'gelu' is not one of"),
        ({"weight": np.ones((4, 1, 9, 3), np.float32)}, "the output is empty"),
        ({"pixels": 3}, r"pixels must be one of \(1, 2, 4, 8\)"),
        ({"rows": 16}, r"rows must be one of \(1, 2, 4, 8\)"),
        ({"rows": 2, "strip": True}, r"rows must be one of \(4, 8, 16, 32\)"),
        ({"strip": "yes"}, "strip must be True or False"),
        ({"weight_buffer": 2}, "weight_buffer must be True or False"),
        ({"tiled": True, "rows": 2}, r"rows must be one of \(4, 8, 16\)"),
        ({"tiled": True, "strip": True}, "strip and tiled are two variants"),
    ],
)
def test_bad_arguments_are_named(queue, kwargs, message):
    x = np.ones((1, 4, 5, 5), np.float32)
    arguments = {"weight": np.ones((4, 1, 3, 3), np.float32), **kwargs}
    with pytest.raises(ConfigError, match=message):
        ops.depthwise_conv2d(queue, x, **arguments)


def test_buffers_are_refused_with_advice(queue):
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 64)
    with pytest.raises(ConfigError, match=r"ops\.to_image"):
        ops.depthwise_conv2d(queue, buf, np.ones((1, 1, 1, 1), np.float32))


strip_cases = st.fixed_dictionaries(
    {
        "n": st.integers(1, 2),
        "c": st.integers(1, 9),
        "h": st.integers(1, 40),
        "w": st.integers(1, 11),
        "kh": st.integers(1, 4),
        "kw": st.integers(1, 4),
        **conv_option_strategies(),
        "pixels": st.sampled_from([1, 2, 4, 8]),
        "rows": st.sampled_from([4, 8, 16, 32]),
        "weight_buffer": st.booleans(),
        "kind": st.sampled_from(["strip", "tiled"]),
    }
)


def test_strips_and_tiles_against_numpy(queue):
    """The sliding-window strip and the local-memory tile: every geometry (strides past
    the window, dilations, kernels of 1 to 4 rows), strips and tiles shorter and longer
    than the output, tails."""
    rng = np.random.default_rng(8)

    @settings(max_examples=15, deadline=None)  # each a build: 13 s on pocl at 15
    @given(strip_cases)
    def check(case):
        assume(fits(case))
        assume(case["kind"] == "strip" or case["rows"] < 32)
        dtype = case["dtype"]
        x = rng.standard_normal((case["n"], case["c"], case["h"], case["w"])).astype(dtype)
        w = rng.standard_normal((case["c"], 1, case["kh"], case["kw"])).astype(dtype)
        b = rng.standard_normal(case["c"]).astype(np.float32) if case["bias"] else None
        kwargs = {k: case[k] for k in ("stride", "padding", "dilation", "activation")}
        kwargs[case["kind"]] = True
        want = conv2d(
            rounded(x, dtype),
            rounded(w, dtype),
            b,
            groups=case["c"],
            slope=0.3,
            **{k: v for k, v in kwargs.items() if k not in ("strip", "tiled")},
        )
        got = ops.depthwise_conv2d(
            queue,
            x,
            w,
            b,
            negative_slope=0.3,
            pixels=case["pixels"],
            rows=case["rows"],
            weight_buffer=case["weight_buffer"],
            **kwargs,
        )
        assert got.dtype == dtype and got.shape == want.shape
        assert_close(got, want, dtype)

    check()


@pytest.fixture
def tuning_cache(tmp_path, monkeypatch):
    from qcom_ext.ops import tuning

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    tuning.forget()
    yield tmp_path / "tuning"
    tuning.forget()


def test_tuning_picks_a_variant_per_shape_and_later_layers_run_it(queue, tuning_cache):
    from qcom_ext.ops import tuning

    rng = np.random.default_rng(2)
    w = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    x = rng.standard_normal((1, 5, 12, 9)).astype(np.float32)
    layer = ops.DepthwiseConv2d(queue, w, padding=1)
    assert layer.fixed is None and layer.variant_for((1, 5, 12, 9)) == (4, 1, 0, 0)
    image = ops.to_image(queue, x)
    space = [(1, 1, 0, 0), (2, 8, 1, 1)]
    report = layer.tune(queue, image, variants=space, budget_s=0.2)
    chosen = layer.variant_for(image.shape)
    assert chosen in space and report.best_ns > 0
    assert layer.variant_for((1, 5, 12, 10)) == (4, 1, 0, 0)  # another shape: untuned
    want = conv2d(x, w, padding=1, groups=5)
    assert_close(ops.from_image(queue, layer(queue, image)), want, np.float32)
    tuning.forget()  # a new process: the entry is read back from the file
    again = ops.DepthwiseConv2d(queue, w, padding=1)
    assert again.variant_for(image.shape) == chosen
    assert ops.DepthwiseConv2d(queue, w, padding=1, pixels=8).variant_for(x.shape) == (8, 1, 0, 0)
    assert ops.DepthwiseConv2d(queue, w, padding=2).variant_for(x.shape) == (4, 1, 0, 0)
    entries = {path: json.loads(path.read_text()) for path in tuning_cache.glob("*.json")}
    (entry,) = [path for path, e in entries.items() if e["format"] == "qcom_ext-variant"]
    data = entries[entry]
    entry.write_text(json.dumps({**data, "variant": [3, 1, 0, 0]}))
    tuning.forget()
    assert again.variant_for(image.shape) == (4, 1, 0, 0)  # pixels=3 is no variant: a miss


def test_tune_refuses_variants_it_cannot_build(queue):
    layer = ops.DepthwiseConv2d(queue, np.ones((4, 1, 3, 3), np.float32))
    image = ops.to_image(queue, np.ones((1, 4, 5, 5), np.float32))
    with pytest.raises(ConfigError, match=r"variant \(4, 2, 1, 0\) is not one"):
        layer.tune(queue, image, variants=[(4, 2, 1, 0)])


def test_the_tune_space_fits_the_output(queue):
    from qcom_ext.ops.depthwise import TUNE_SPACE

    layer = ops.DepthwiseConv2d(queue, np.ones((8, 1, 3, 3), np.float32), stride=2, padding=1)
    space = layer.space((1, 8, 7, 5))  # a 4 x 3 output
    assert {(4, 1, 0, 0), (1, 8, 1, 1), (4, 4, 0, 1), (1, 2, 0, 1)} <= set(space)
    assert not [v for v in space if v[0] > 4 or (not v[2] and v[1] > 4) or v[1] > 8]
    assert not [v for v in space if v[2] == 2]  # no tile: 8 outputs across is too wide
    assert layer.space((32, 8, 111, 111)) == list(TUNE_SPACE)  # 56 x 56: every one fits
