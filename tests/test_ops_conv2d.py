"""General KxK conv2d (image layout and local-memory tiles) against float64 numpy."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from conv_reference import assert_close, conv2d, conv_option_strategies, rounded
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from qcom_ext import ConfigError, ops


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


def needs_images(queue, method):
    if method == "image" and not queue.device.image_support:
        pytest.skip(f"{queue.device.name}: CL_DEVICE_IMAGE_SUPPORT is 0")


cases = st.fixed_dictionaries(
    {
        "n": st.integers(1, 2),
        "ci": st.integers(1, 9),
        "co": st.integers(1, 9),
        "h": st.integers(1, 10),
        "w": st.integers(1, 11),
        "kh": st.integers(1, 4),
        "kw": st.integers(1, 4),
        **{k: v for k, v in conv_option_strategies().items() if k != "dtype"},
    }
)


def output_exists(case) -> bool:
    dims = zip(
        (case["h"], case["w"]),
        (case["kh"], case["kw"]),
        case["padding"],
        case["dilation"],
        strict=True,
    )
    return all(size + 2 * p - d * (k - 1) - 1 >= 0 for size, k, p, d in dims)


#: 15 shapes a storage type and method, each a build (1 to 2 CPU-s on pocl): 30 a method.
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
@pytest.mark.parametrize("method", ["image", "tiled"])
def test_random_shapes_against_numpy(queue, method, dtype):
    needs_images(queue, method)
    rng = np.random.default_rng(21)

    @settings(max_examples=15, deadline=None)
    @given(cases)
    def check(case):
        assume(output_exists(case))
        x = rng.standard_normal((case["n"], case["ci"], case["h"], case["w"])).astype(dtype)
        w = rng.standard_normal((case["co"], case["ci"], case["kh"], case["kw"])).astype(dtype)
        b = rng.standard_normal(case["co"]).astype(np.float32) if case["bias"] else None
        options = {k: case[k] for k in ("stride", "padding", "dilation", "activation")}
        want = conv2d(rounded(x, dtype), rounded(w, dtype), b, slope=0.05, **options)
        host = x if case["layout"] == "NCHW" else x.transpose(0, 2, 3, 1)
        got = ops.conv2d(
            queue, host, w, b, method=method, layout=case["layout"], negative_slope=0.05, **options
        )
        if case["layout"] == "NHWC":
            got = got.transpose(0, 3, 1, 2)
        assert got.dtype == dtype and got.shape == want.shape
        assert_close(got, want, dtype)

    check()


@pytest.mark.parametrize("pixels", [1, 2, 4, 8])
def test_image_conv_pixels_per_item(queue, pixels):
    needs_images(queue, "image")
    rng = np.random.default_rng(pixels)
    x = rng.standard_normal((2, 7, 9, 11)).astype(np.float32)
    w = rng.standard_normal((6, 7, 3, 3)).astype(np.float32)
    layer = ops.Conv2d(queue, w, padding=1, stride=(1, 2), pixels=pixels)
    out = layer(queue, ops.to_image(queue, x))
    assert out.shape == (2, 6, 9, 6)
    assert_close(ops.from_image(queue, out), conv2d(x, w, padding=1, stride=(1, 2)), np.float32)


@pytest.mark.parametrize("block", [4, 8, 16])
@pytest.mark.parametrize("size", [(1, 1), (7, 13), (17, 16)])
def test_tiled_any_output_size_and_block(queue, block, size):
    rng = np.random.default_rng(block + size[0])
    x = rng.standard_normal((2, 3, *size)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    layer = ops.TiledConv2d(queue, w, padding=1, block=block, channels_per_item=2)
    assert layer.block == block
    src = ops.BufferTensor(
        cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x),
        x.shape,
        np.dtype(np.float32),
        "NCHW",
    )
    out = layer(queue, src)
    assert out.shape == (2, 5, *size)
    assert_close(out.to_numpy(queue), conv2d(x, w, padding=1), np.float32)


def test_tiled_refuses_a_tile_that_does_not_fit(queue):
    w = np.ones((1, 1, 3, 3), np.float32)
    too_big = int(np.sqrt(queue.device.max_work_group_size)) * 2
    with pytest.raises(ConfigError, match="no tile fits this device"):
        ops.TiledConv2d(queue, w, block=too_big)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weight": np.ones((4, 3, 3), np.float32)}, "must have 4 dimensions"),
        ({"weight": np.ones((4, 2, 3, 3), np.float32)}, "input has 3 channels"),
        ({"method": "winograd"}, "method 'winograd' is not one of image, tiled"),
        ({"dilation": 0}, "dilation must be at least 1"),
        ({"padding": -1}, "padding must be at least 0"),
        ({"weight": np.ones((4, 3, 7, 3), np.float32)}, "the output is empty"),
    ],
)
def test_bad_arguments_are_named(queue, kwargs, message):
    x = np.ones((1, 3, 5, 5), np.float32)
    arguments = {"weight": np.ones((4, 3, 3, 3), np.float32), "method": "tiled", **kwargs}
    with pytest.raises(ConfigError, match=message):
        ops.conv2d(queue, x, **arguments)


def test_dtype_converts_numpy_inputs_and_device_tensors_keep_theirs(queue):
    needs_images(queue, "image")
    x = np.random.default_rng(8).standard_normal((1, 4, 5, 5))  # float64
    w = np.random.default_rng(9).standard_normal((2, 4, 3, 3)).astype(np.float32)
    half = ops.conv2d(queue, x, w, padding=1, dtype=np.float16)
    assert half.dtype == np.float16
    assert_close(
        half, conv2d(rounded(x, np.float16), rounded(w, np.float16), padding=1), np.float16
    )
    image = ops.to_image(queue, x.astype(np.float32))
    kept = ops.conv2d(queue, image, w, padding=1, dtype=np.float16)  # the image's storage
    assert isinstance(kept, ops.ImageTensor) and kept.dtype == np.float32
    dw = ops.depthwise_conv2d(queue, x, np.ones((4, 1, 1, 1)), dtype=np.float16)
    assert dw.dtype == np.float16
