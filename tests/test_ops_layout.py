"""Tensor <-> RGBA image layout: exact round trips and the documented texel layout."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from conv_reference import pack_image
from hypothesis import given, settings
from hypothesis import strategies as st

from qcom_ext import ConfigError, ops


@pytest.fixture
def queue(kernel_context, device_caps):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label}: CL_DEVICE_IMAGE_SUPPORT is 0")
    return cl.CommandQueue(kernel_context)


def read_texels(queue, tensor: ops.ImageTensor) -> np.ndarray:
    width, height = tensor.image_size
    out = np.empty((height, width, 4), tensor.dtype)
    cl.enqueue_copy(queue, out, tensor.image, origin=(0, 0), region=(width, height))
    return out


shapes = st.tuples(st.integers(1, 3), st.integers(1, 11), st.integers(1, 9), st.integers(1, 9))


def test_round_trips_are_exact_for_any_shape(queue):
    rng = np.random.default_rng(1)

    @settings(max_examples=25, deadline=None)
    @given(shapes, st.sampled_from(["NCHW", "NHWC"]), st.sampled_from([np.float32, np.float16]))
    def check(shape, layout, dtype):
        n, c, h, w = shape
        nchw = rng.standard_normal(shape).astype(dtype)
        host = nchw if layout == "NCHW" else np.ascontiguousarray(nchw.transpose(0, 2, 3, 1))
        image = ops.to_image(queue, host, layout=layout)
        assert image.shape == shape and image.dtype == dtype
        assert image.image_size == (w * -(-c // 4), h * n)
        texels = read_texels(queue, image)
        np.testing.assert_array_equal(texels, pack_image(nchw))  # layout and zero padding
        for back_layout in ("NCHW", "NHWC"):
            back = ops.from_image(queue, image, layout=back_layout)
            want = nchw if back_layout == "NCHW" else nchw.transpose(0, 2, 3, 1)
            assert back.dtype == dtype
            np.testing.assert_array_equal(back, want)

    check()


def test_padding_channels_are_zero_even_over_garbage(queue):
    x = np.full((1, 5, 2, 3), 7.0, np.float32)
    image = ops.ImageTensor.empty(queue.context, queue.device, x.shape, np.float32)
    cl.enqueue_fill_image(
        queue, image.image, np.full(4, np.nan, np.float32), (0, 0), image.image_size
    )
    image = ops.to_image(queue, x)
    texels = read_texels(queue, image)
    assert np.all(texels[:, 3:, 1:] == 0.0) and np.all(texels[:, :3, :] == 7.0)


def test_buffers_in_and_out(queue):
    x = np.random.default_rng(2).standard_normal((2, 6, 4, 3)).astype(np.float32)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    mf = cl.mem_flags
    buf = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=nhwc)
    image = ops.to_image(queue, buf, layout="NHWC", shape=nhwc.shape)
    assert image.shape == x.shape
    out = cl.Buffer(queue.context, mf.READ_WRITE, x.nbytes)
    result = ops.from_image(queue, image, layout="NCHW", out=out)
    assert isinstance(result, ops.BufferTensor) and result.shape == x.shape
    np.testing.assert_array_equal(result.to_numpy(queue), x)
    wrapped = ops.from_image(queue, image.image, shape=x.shape)  # a bare pyopencl Image
    np.testing.assert_array_equal(wrapped, x)
    np.testing.assert_array_equal(ops.from_image(queue, ops.to_image(queue, result)), x)


def test_float64_is_stored_as_float32(queue):
    x = np.linspace(-1, 1, 24).reshape(1, 2, 3, 4)
    image = ops.to_image(queue, x)
    assert image.dtype == np.float32
    np.testing.assert_array_equal(ops.from_image(queue, image), x.astype(np.float32))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda q: ops.to_image(q, np.zeros((2, 3, 4), np.float32)), "must be 4-D"),
        (lambda q: ops.to_image(q, np.zeros((1, 1, 2, 2), np.int32)), "dtype int32"),
        (lambda q: ops.to_image(q, np.zeros((1, 1, 2, 2)), layout="HWCN"), "layout 'HWCN'"),
        (
            lambda q: ops.to_image(q, cl.Buffer(q.context, cl.mem_flags.READ_WRITE, 64)),
            "needs shape=",
        ),
        (
            lambda q: ops.to_image(
                q, cl.Buffer(q.context, cl.mem_flags.READ_WRITE, 64), shape=(1, 4, 4, 4)
            ),
            "needs 256 bytes; the buffer has 64",
        ),
        (lambda q: ops.from_image(q, np.zeros((1, 1, 1, 1))), "ImageTensor or a pyopencl"),
        (
            lambda q: ops.from_image(
                q, ops.to_image(q, np.zeros((1, 5, 2, 2), np.float32)).image, shape=(1, 4, 2, 2)
            ),
            "needs a 2 x 2 image",
        ),
        (lambda q: ops.to_image(q, np.zeros((1, 1, 0, 2), np.float32)), "empty dimension"),
    ],
)
def test_bad_input_is_named(queue, call, message):
    with pytest.raises(ConfigError, match=message):
        call(queue)


def test_too_large_for_the_device_is_explained(queue):
    width = queue.device.image2d_max_width
    with pytest.raises(ConfigError, match=r"W\*ceil\(C/4\) x H\*N"):
        ops.ImageTensor.empty(queue.context, queue.device, (1, 8, 1, width), np.float32)
