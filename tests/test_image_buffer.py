"""buffer_from_image / image_with_buffer on the local devices, against numpy.

Pixels go in through one view and come out through the other, with the syncs the
protocol asks for; whatever path the device takes (``caps.path``), the bytes must match.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import ConfigError, ImageBuffer, buffer_from_image, image_with_buffer
from qcom_ext.binding.lib import C
from qcom_ext.ext.memory.formats import parse_image_format

EXTENSION = "cl_qcom_create_buffer_from_image"
KHR = "khr:cl_khr_image2d_from_buffer"
mf = cl.mem_flags
_CL_TYPES = {
    "2d": cl.mem_object_type.IMAGE2D,
    "2d_array": cl.mem_object_type.IMAGE2D_ARRAY,
    "3d": cl.mem_object_type.IMAGE3D,
}


@pytest.fixture
def images(device_caps, cl_context):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support (CL_DEVICE_IMAGE_SUPPORT)")
    return cl_context


def expected_path(caps, kind: str) -> str:
    path = caps.path(EXTENSION)
    return path if path == "native" or (path == KHR and kind == "2d") else "fallback"


def random_pixels(rng: np.random.Generator, pair: ImageBuffer) -> np.ndarray:
    dtype = pair.format.dtype
    if dtype.kind == "f":
        return rng.uniform(-4, 4, pair.array_shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, pair.array_shape, dtype=dtype, endpoint=True)


def write_image(queue, pair: ImageBuffer, pixels: np.ndarray) -> None:
    origin = (0,) * len(pair.shape)
    cl.enqueue_copy(queue, pair.image, pixels, origin=origin, region=pair.shape).wait()


def read_image(queue, pair: ImageBuffer) -> np.ndarray:
    out = np.empty(pair.array_shape, pair.format.dtype)
    cl.enqueue_copy(queue, out, pair.image, origin=(0,) * len(pair.shape), region=pair.shape)
    queue.finish()
    return out


def supported(context, kind: str) -> list:
    found = []
    for fmt in cl.get_supported_image_formats(context, mf.READ_WRITE, _CL_TYPES[kind]):
        with contextlib.suppress(ConfigError):
            found.append(parse_image_format(fmt))
    return found


@pytest.mark.parametrize("kind", list(_CL_TYPES))
def test_pixels_round_trip_through_both_views(device_caps, images, cl_queue, kind):
    formats = supported(images, kind)
    if not formats:
        pytest.skip(f"{device_caps.label} supports no {kind} format qcom_ext describes")
    dims = 2 if kind == "2d" else 3

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        fmt=st.sampled_from(formats),
        shape=st.lists(st.integers(1, 37), min_size=dims, max_size=dims),
        seed=st.integers(0, 2**32 - 1),
    )
    def check(fmt, shape, seed):
        rng = np.random.default_rng(seed)
        pair = image_with_buffer(images, tuple(shape), fmt, image_type=kind)
        assert pair.path == expected_path(device_caps, kind)
        assert pair.zero_copy == (pair.path != "fallback")
        assert pair.row_pitch >= shape[0] * fmt.element_size
        first = random_pixels(rng, pair)
        write_image(cl_queue, pair, first)
        pair.sync_to_buffer(cl_queue)
        assert np.array_equal(pair.read_buffer(cl_queue).view(np.uint8), first.view(np.uint8))
        second = random_pixels(rng, pair)
        pair.write_buffer(cl_queue, second)
        pair.sync_to_image(cl_queue)
        assert np.array_equal(read_image(cl_queue, pair).view(np.uint8), second.view(np.uint8))

    check()


def test_existing_image_gets_a_buffer(device_caps, images, cl_queue):
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
    image = cl.create_image(images, mf.READ_WRITE, fmt, (19, 7))
    pair = buffer_from_image(image)
    # an existing image cannot be put over a buffer: the Khronos tier is never taken
    assert pair.path == ("native" if device_caps.path(EXTENSION) == "native" else "fallback")
    assert pair.image is image and pair.buffer.size >= 19 * 4 * 7
    assert pair.buffer.flags & (mf.READ_WRITE | mf.READ_ONLY | mf.WRITE_ONLY) == mf.READ_WRITE
    pixels = np.random.default_rng(1).integers(0, 256, (7, 19, 4), dtype=np.uint8)
    write_image(cl_queue, pair, pixels)
    event = pair.sync_to_buffer(cl_queue)
    assert (event is None) == pair.zero_copy
    assert np.array_equal(pair.read_buffer(cl_queue), pixels)


def test_kernels_see_one_pixel_store(device_caps, kernel_context, images):
    queue = cl.CommandQueue(kernel_context)
    source = """
    __kernel void paint(write_only image2d_t img) {
        int x = get_global_id(0), y = get_global_id(1);
        write_imageui(img, (int2)(x, y), (uint4)(x, y, x ^ y, 255));
    }
    __kernel void invert(__global uchar *px, uint row_pitch) {
        int x = get_global_id(0), y = get_global_id(1);
        __global uchar *p = px + y * row_pitch + x * 4;
        for (int c = 0; c < 3; ++c) p[c] = 255 - p[c];
    }
    """
    program = qcom_ext.build_program(kernel_context, source)
    pair = image_with_buffer(kernel_context, (37, 11), ("RGBA", "UNSIGNED_INT8"))
    program.paint(queue, (37, 11), None, pair.image)
    pair.sync_to_buffer(queue)
    program.invert(queue, (37, 11), None, pair.buffer, np.uint32(pair.row_pitch))
    pair.sync_to_image(queue)
    y, x = np.mgrid[0:11, 0:37]
    expected = np.stack([255 - x, 255 - y, 255 - (x ^ y), np.full_like(x, 255)], -1)
    assert np.array_equal(read_image(queue, pair), expected.astype(np.uint8))


def test_flags_inherited_and_narrowed(images):
    fmt = cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT)
    read_only = cl.create_image(images, mf.READ_ONLY | mf.HOST_NO_ACCESS, fmt, (8, 8))
    inherited = buffer_from_image(read_only)
    assert inherited.buffer.flags & (mf.READ_ONLY | mf.HOST_NO_ACCESS) == (
        mf.READ_ONLY | mf.HOST_NO_ACCESS
    )
    read_write = cl.create_image(images, mf.READ_WRITE, fmt, (8, 8))
    narrowed = buffer_from_image(read_write, mf.READ_ONLY | mf.HOST_READ_ONLY)
    assert narrowed.buffer.flags & mf.READ_ONLY and narrowed.buffer.flags & mf.HOST_READ_ONLY


@pytest.mark.parametrize(
    ("image_flags", "flags", "message"),
    [
        (mf.READ_WRITE, mf.READ_WRITE | mf.USE_HOST_PTR, "CL_MEM_USE_HOST_PTR is not accepted"),
        (mf.READ_WRITE, mf.ALLOC_HOST_PTR, "CL_MEM_ALLOC_HOST_PTR is not accepted"),
        (mf.READ_WRITE, mf.COPY_HOST_PTR, "forbids USE/ALLOC/COPY_HOST_PTR"),
        (mf.READ_ONLY, mf.WRITE_ONLY, "asks for CL_MEM_WRITE_ONLY but the image"),
        (mf.READ_ONLY, mf.READ_WRITE, "the access must be compatible"),
        (mf.WRITE_ONLY, mf.READ_ONLY, "the access must be compatible"),
        (mf.READ_WRITE | mf.HOST_NO_ACCESS, mf.HOST_READ_ONLY, "host access must be compatible"),
        (mf.READ_WRITE, mf.READ_ONLY | mf.WRITE_ONLY, "at most one device-access flag"),
        (mf.READ_WRITE, C.CL_MEM_KERNEL_READ_AND_WRITE, "not accepted; expected"),
        (mf.READ_WRITE, "rw", "must be a cl_mem_flags bitfield"),
    ],
)
def test_forbidden_flags(images, image_flags, flags, message):
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)
    image = cl.create_image(images, image_flags, fmt, (4, 4))
    with pytest.raises(ConfigError) as caught:
        buffer_from_image(image, flags)
    assert message in str(caught.value)


def test_forbidden_parents(images):
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
    host = np.zeros((4, 5, 4), np.uint8)
    hosted = cl.create_image(images, mf.READ_WRITE | mf.USE_HOST_PTR, fmt, (5, 4), hostbuf=host)
    with pytest.raises(ConfigError, match="created with CL_MEM_USE_HOST_PTR"):
        buffer_from_image(hosted)
    store = cl.Buffer(images, mf.READ_WRITE, 64 * 4)
    desc = cl.ImageDescriptor()
    desc.image_type, desc.shape, desc.pitches = cl.mem_object_type.IMAGE1D_BUFFER, (64,), (0, 0)
    desc.buffer = store
    try:
        one_d_buffer = cl.Image(images, mf.READ_WRITE, fmt, desc=desc)
    except cl.Error as exc:
        pytest.skip(f"the device makes no 1D buffer image: {exc}")
    with pytest.raises(ConfigError, match="IMAGE1D_BUFFER image cannot be the parent"):
        buffer_from_image(one_d_buffer)
    with pytest.raises(ConfigError, match=r"expected a pyopencl\.Image, got Buffer"):
        buffer_from_image(store)


def test_bad_pair_requests(images, cl_queue):
    with pytest.raises(ConfigError, match="makes 2d, 2d_array or 3d images, not 1d"):
        image_with_buffer(images, (16,), ("R", "FLOAT"), image_type="1d")
    with pytest.raises(ConfigError, match="shape must be"):
        image_with_buffer(images, (16,), ("R", "FLOAT"))
    with pytest.raises(ConfigError, match="COPY_HOST_PTR is not accepted"):
        image_with_buffer(images, (4, 4), ("R", "FLOAT"), flags=mf.COPY_HOST_PTR)
    with pytest.raises(ConfigError, match=r"expected a pyopencl\.Context"):
        image_with_buffer(cl_queue, (4, 4), ("R", "FLOAT"))
    pair = image_with_buffer(images, (4, 4), ("R", "FLOAT"))
    with pytest.raises(ConfigError, match=r"pixels must be float32 of shape \(4, 4\)"):
        pair.write_buffer(cl_queue, np.zeros((4, 4), np.float64))
    other = cl.CommandQueue(cl.Context(images.devices))
    with pytest.raises(ConfigError, match="another context"):
        pair.sync_to_buffer(other)


@pytest.mark.parametrize("disabled", [EXTENSION, "cl_khr_image2d_from_buffer", "all"])
def test_forced_fallback(device_caps, images, cl_queue, monkeypatch, disabled):
    monkeypatch.setenv("QCOM_EXT_DISABLE", disabled)
    caps = qcom_ext.probe(device_caps.device())
    pair = image_with_buffer(images, (6, 5), ("RGBA", "FLOAT"))
    assert pair.path == expected_path(caps, "2d")
    if disabled != "cl_khr_image2d_from_buffer":
        assert pair.path == "fallback" and not pair.zero_copy
    pixels = np.random.default_rng(2).uniform(0, 1, (5, 6, 4)).astype(np.float32)
    pair.write_buffer(cl_queue, pixels)
    event = pair.sync_to_image(cl_queue)
    assert event is not None or pair.zero_copy
    assert np.array_equal(read_image(cl_queue, pair), pixels)
