"""Image format queries, compressed images and NV12 frames on the real devices.

Off Adreno: format queries with Qualcomm bits list nothing, compressed images fall back
to uncompressed ones, NV12 frames are the portable plane pair (on device memory or on a
memfd standing in for a dma-buf), and kernels/nv12_to_rgba.cl reads them through
qcom_ext_read_nv12f, checked against the numpy BT.601 reference (qcom_ext.ext.images.yuv). Native
paths: tests/test_images_fake.py.
"""

from __future__ import annotations

import gc
import os
import warnings

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import ConfigError, ExtensionUnavailable, QcomExtWarning
from qcom_ext._resources import kernels_dir
from qcom_ext.device.shared import Route
from qcom_ext.ext.images import planar, yuv
from qcom_ext.ext.memory.external import import_route

FAST = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
needs_memfd = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs memfd (Linux)")
even = st.integers(1, 24).map(lambda n: 2 * n)


@pytest.fixture
def images(device_caps):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    for extension in ("cl_qcom_other_image", "cl_qcom_compressed_image"):
        if device_caps.path(extension) == "native":
            pytest.skip(f"{device_caps.label}: {extension} is native (test_images_fake.py)")
    return device_caps


@pytest.fixture
def queue(images, cl_context):
    return cl.CommandQueue(cl_context)


_PROGRAMS: dict[int, cl.Kernel] = {}


@pytest.fixture
def converter(images, kernel_context):
    """The nv12_to_rgba kernel, built once per context."""
    key = kernel_context.int_ptr
    if key not in _PROGRAMS:
        source = (kernels_dir() / "nv12_to_rgba.cl").read_text()
        _PROGRAMS.clear()
        _PROGRAMS[key] = cl.Kernel(qcom_ext.build_program(kernel_context, source), "nv12_to_rgba")
    return kernel_context, cl.CommandQueue(kernel_context), _PROGRAMS[key]


def convert(converter, frame_image, full_range: bool) -> np.ndarray:
    context, queue, kernel = converter
    width, height = frame_image.shape
    out = np.empty((height, width, 4), np.uint8)
    dst = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
    kernel(
        queue,
        (width, height),
        None,
        *frame_image.kernel_args,
        dst,
        np.int32(width),
        np.int32(height),
        np.int32(full_range),
    )
    cl.enqueue_copy(queue, out, dst)
    return out


def close_to_reference(rgba: np.ndarray, frame: np.ndarray, full_range: bool) -> None:
    expected = yuv.nv12_to_rgb(frame, full_range=full_range)
    difference = np.abs(rgba[..., :3].astype(np.int16) - expected)
    # float32 in the kernel vs float64 in numpy: a rounding tie may go either way.
    assert difference.max() <= 1, f"max difference {difference.max()}"
    assert (difference > 0).mean() < 0.02
    assert (rgba[..., 3] == 255).all()


def memfd_frame(frame: np.ndarray, size: int | None = None) -> int:
    fd = os.memfd_create("qcom-ext-test-nv12")
    os.ftruncate(fd, size or frame.nbytes)
    os.pwrite(fd, frame.tobytes(), 0)
    return fd


def mappings() -> int:
    gc.collect()
    with open("/proc/self/maps") as maps:
        return sum("qcom-ext-test-nv12" in line for line in maps)


# ---- format queries ------------------------------------------------------------------


@pytest.mark.parametrize("access", ["read_only", "write_only", "read_write"])
def test_format_query_matches_pyopencl(images, cl_context, access):
    flags = {
        "read_only": cl.mem_flags.READ_ONLY,
        "write_only": cl.mem_flags.WRITE_ONLY,
        "read_write": cl.mem_flags.READ_WRITE,
    }[access]
    ours = qcom_ext.supported_image_formats(cl_context, flags=flags)
    theirs = cl.get_supported_image_formats(cl_context, flags, cl.mem_object_type.IMAGE2D)
    assert [(f.channel_order, f.channel_data_type) for f in ours] == [
        (f.channel_order, f.channel_data_type) for f in theirs
    ]
    assert qcom_ext.parse_image_format("R/UNORM_INT8") in ours


def test_qcom_format_queries_list_nothing_off_adreno(images, cl_context):
    for kwargs in ({"other": True}, {"compressed": True}, {"compressed_yuv": True}):
        assert qcom_ext.supported_image_formats(cl_context, **kwargs) == []


# ---- compressed images ---------------------------------------------------------------


def test_compressed_falls_back_to_an_uncompressed_image(images, cl_context, queue):
    image = qcom_ext.create_image(cl_context, (5, 3), "RGBA/UNORM_INT8", compressed=True)
    assert not image.compressed
    assert image.reason == images.status("cl_qcom_compressed_image").reason
    assert image.format == qcom_ext.parse_image_format("RGBA/UNORM_INT8")
    pixels = np.arange(60, dtype=np.uint8).reshape(3, 5, 4)
    image.write(queue, pixels)
    assert np.array_equal(image.read(queue), pixels)


@needs_memfd
def test_compressed_over_memory_falls_back_to_an_imported_image(images, cl_context, queue):
    pixels = np.arange(8 * 4 * 4, dtype=np.uint8).reshape(4, 8, 4)
    fd = memfd_frame(pixels.reshape(4, 32))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            image = qcom_ext.create_image(
                cl_context,
                (8, 4),
                compressed=True,
                flags="read_only",
                memory=qcom_ext.ExternalMemory.dmabuf(fd),
            )
        assert [w.category for w in caught] == [QcomExtWarning]
        assert not image.compressed and image.image.flags & cl.mem_flags.USE_HOST_PTR
        assert np.array_equal(image.read(queue), pixels)
        del image
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("fmt", "kwargs", "match"),
    [
        ("RG/UNORM_INT8", {"compressed": True}, "has no compressed equivalent"),
        ((0x4130, "UNORM_INT8"), {"compressed": True}, "pass the uncompressed format"),
        ((0x4133, "UNORM_INT8"), {}, "made by qcom_ext.planar_image"),
        ("RGBA/UNORM_INT8", {"compressed": 1}, "True or False"),
        ("RGBZ/UNORM_INT8", {}, "unknown image channel order 'RGBZ'"),
        ("RGBx/UNORM_INT8", {"compressed": True}, "falls back to this uncompressed format here"),
        ("RGBx/UNORM_INT8", {}, "CL_RGBx/CL_UNORM_INT8 is not a legal pair"),
    ],
)
def test_create_image_refusals(images, cl_context, fmt, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        qcom_ext.create_image(cl_context, (4, 4), fmt, **kwargs)


def test_qcom_image_host_access_checks_shapes(images, cl_context, queue):
    image = qcom_ext.create_image(cl_context, (4, 4), "R/FLOAT")
    with pytest.raises(ConfigError, match=r"do not fill a 4x4 CL_R/CL_FLOAT image"):
        image.write(queue, np.zeros((4, 3), np.float32))
    values = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4)
    image.write(queue, values)
    assert np.array_equal(image.read(queue)[..., 0], values)


# ---- NV12 frames ---------------------------------------------------------------------


@FAST
@given(width=even, height=even, seed=st.integers(0, 2**32 - 1))
def test_nv12_write_read_round_trip(queue, cl_context, width, height, seed):
    frame = np.random.default_rng(seed).integers(0, 256, (height * 3 // 2, width), np.uint8)
    image = qcom_ext.nv12_image(cl_context, (width, height))
    assert image.path == "fallback" and image.native is None and not image.compressed
    image.write(queue, frame)
    assert np.array_equal(image.read(queue), frame)
    image.write(queue, yuv.nv12_planes(frame))  # (y, uv) planes work too
    assert np.array_equal(image.read(queue), frame)


def test_nv12_portable_plane_formats(images, cl_context):
    image = qcom_ext.nv12_image(cl_context, (64, 32))
    assert image.y.format.channel_order == cl.channel_order.R and image.y.shape == (64, 32)
    rg = qcom_ext.parse_image_format("RG/UNORM_INT8")
    if rg in qcom_ext.supported_image_formats(cl_context):
        assert image.uv_layout == "rg" and image.uv.shape == (32, 16)
        assert image.uv.format.channel_order == cl.channel_order.RG
    else:  # pocl: no CL_RG images; the interleaved bytes as CL_R
        assert image.uv_layout == "interleaved" and image.uv.shape == (64, 16)
        assert image.uv.format.channel_order == cl.channel_order.R
    assert image.reason == images.status("cl_qcom_other_image").reason


@pytest.mark.parametrize(
    ("shape", "match"),
    [
        ((641, 480), "641x480: width and height must be even"),
        ((2, 3), "must be even"),
        ((0, 2), "must be a positive int"),
        ("640x480", r"takes shape \(width, height\)"),
    ],
)
def test_nv12_refuses_bad_sizes(images, cl_context, shape, match):
    with pytest.raises(ConfigError, match=match):
        qcom_ext.nv12_image(cl_context, shape)


def test_nv12_refuses_mismatched_frames(queue, cl_context):
    image = qcom_ext.nv12_image(cl_context, (8, 4))
    with pytest.raises(ConfigError, match="frame of 8x2 pixels written to a 8x4"):
        image.write(queue, np.zeros((3, 8), np.uint8))
    with pytest.raises(ConfigError, match="rows must be height"):
        image.write(queue, np.zeros((5, 8), np.uint8))
    with pytest.raises(ConfigError, match="2-D uint8"):
        image.write(queue, np.zeros((6, 8), np.float32))


def test_p010_and_tp10_have_no_portable_layout(images, cl_context):
    for layout in ("p010", "tp10"):
        with pytest.raises(ExtensionUnavailable, match="covers NV12 only"):
            qcom_ext.planar_image(cl_context, (16, 16), layout)


def test_vendor_memory_cannot_back_portable_planes(images, cl_context):
    memory = qcom_ext.ExternalMemory.ahardwarebuffer(0x1000)
    with pytest.raises(ExtensionUnavailable, match="cl_qcom_android_ahardwarebuffer_host_ptr"):
        qcom_ext.nv12_image(cl_context, (16, 16), memory=memory)


@pytest.mark.parametrize(
    "extensions, memory",
    [  # memory some path imports, on devices without native planar images
        (
            "cl_khr_external_memory cl_khr_external_memory_android_hardware_buffer",
            qcom_ext.ExternalMemory.ahardwarebuffer(0x1000),
        ),
        ("cl_qcom_ext_host_ptr cl_qcom_ion_host_ptr", qcom_ext.ExternalMemory.ion(3)),
    ],
    ids=["ahb-khr-tier", "ion-native"],
)
def test_only_a_dmabuf_backs_portable_planes(extensions, memory):
    """The rule itself, not an earlier refusal: the memory imports (natively or through
    its Khronos tier), the planar extensions are absent, and the portable planes would
    have to map it. A dma-buf on the same device is portable, so only the rule refuses."""
    caps = qcom_ext.DeviceCaps.from_info(extensions=extensions, disabled=())
    route = Route.of([caps], planar.OTHER, planar.PLANES)
    assert import_route(route.caps, memory)[0] in ("native", "khr")  # no earlier refusal
    with pytest.raises(ExtensionUnavailable, match="only a dma-buf can back the portable"):
        planar.portable_reason(route, "nv12", memory)
    reason = planar.portable_reason(route, "nv12", qcom_ext.ExternalMemory.dmabuf(5))
    assert route.path == "fallback" and reason == route.reason


@needs_memfd
def test_nv12_over_a_dmabuf_is_zero_copy(images, cl_context, queue):
    width, height = 6, 4
    pitch, uv_offset = 16, 16 * 4 + 32  # a padded stride and a gap before the chroma
    buffer = np.zeros(uv_offset + pitch * height // 2, np.uint8)
    frame = np.random.default_rng(1).integers(0, 256, (height * 3 // 2, width), np.uint8)
    luma, chroma = frame[:height], frame[height:]
    buffer[: pitch * height].reshape(height, pitch)[:, :width] = luma
    buffer[uv_offset:].reshape(height // 2, pitch)[:, :width] = chroma
    fd = memfd_frame(buffer)
    try:
        memory = qcom_ext.ExternalMemory.dmabuf(fd)
        image = qcom_ext.nv12_image(
            cl_context, (width, height), memory=memory, row_pitch=pitch, uv_offset=uv_offset
        )
        assert image.path == "fallback" and image.y.flags & cl.mem_flags.USE_HOST_PTR
        assert np.array_equal(image.read(queue), frame)
        if images.device_type == "cpu":  # the planes are the dma-buf's pages
            os.pwrite(fd, bytes([7]), 1)
            assert image.read(queue)[0, 1] == 7
        assert mappings() == 1
        del image
        assert mappings() == 0
        with pytest.raises(ConfigError, match="do not fit"):
            qcom_ext.nv12_image(cl_context, (width, height + 2), memory=memory, row_pitch=pitch)
        with pytest.raises(ConfigError, match="chroma plane starts after"):
            qcom_ext.nv12_image(cl_context, (width, height), memory=memory, uv_offset=3)
        with pytest.raises(ConfigError, match="at least 6"):
            qcom_ext.nv12_image(cl_context, (width, height), memory=memory, row_pitch=4)
    finally:
        os.close(fd)
    with pytest.raises(ConfigError, match="describe external memory"):
        qcom_ext.nv12_image(cl_context, (width, height), row_pitch=pitch)


# ---- the kernel: qcom_ext_read_nv12f + BT.601 ----------------------------------------


@FAST
@given(
    width=even,
    height=even,
    seed=st.integers(0, 2**32 - 1),
    full_range=st.booleans(),
    interleaved=st.booleans(),
)
def test_nv12_to_rgba_matches_numpy(
    converter, monkeypatch, width, height, seed, full_range, interleaved
):
    context, queue, _ = converter
    frame = np.random.default_rng(seed).integers(0, 256, (height * 3 // 2, width), np.uint8)
    with monkeypatch.context() as patch:
        if interleaved:  # the CL_R chroma layout, also on devices that have CL_RG
            patch.setattr(planar, "_uv_format", lambda *args: (planar.R8, "interleaved"))
        image = qcom_ext.nv12_image(context, (width, height))
    image.write(queue, frame)
    close_to_reference(convert(converter, image, full_range), frame, full_range)


@needs_memfd
@pytest.mark.parametrize("full_range", [False, True])
def test_nv12_to_rgba_on_a_dmabuf_test_card(converter, full_range):
    width, height = 96, 64
    rgb = yuv.test_pattern(width, height)
    frame = yuv.rgb_to_nv12(rgb, full_range=full_range)
    fd = memfd_frame(frame)
    try:
        memory = qcom_ext.ExternalMemory.dmabuf(fd)
        image = qcom_ext.nv12_image(converter[0], (width, height), memory=memory)
        rgba = convert(converter, image, full_range)
    finally:
        os.close(fd)
    close_to_reference(rgba, frame, full_range)
    # The round trip RGB -> NV12 -> RGB stays near the card (chroma is subsampled 2x2).
    assert np.abs(rgba[..., :3].astype(int) - rgb).mean() < 8


# ---- numpy helpers ---------------------------------------------------------------------


@given(width=even, height=even, seed=st.integers(0, 2**32 - 1), full_range=st.booleans())
def test_rgb_nv12_round_trip_on_2x2_blocks(width, height, seed, full_range):
    blocks = np.random.default_rng(seed).integers(0, 256, (height // 2, width // 2, 3), np.uint8)
    rgb = np.repeat(np.repeat(blocks, 2, axis=0), 2, axis=1)
    frame = yuv.rgb_to_nv12(rgb, full_range=full_range)
    assert frame.shape == (height * 3 // 2, width)
    back = yuv.nv12_to_rgb(frame, full_range=full_range)
    # 8-bit YUV cannot hold every RGB triple: out-of-gamut rounding costs a few codes.
    assert np.abs(back.astype(int) - rgb).max() <= 3


def test_video_range_codes():
    white = yuv.rgb_to_nv12(np.full((2, 2, 3), 255, np.uint8))
    black = yuv.rgb_to_nv12(np.zeros((2, 2, 3), np.uint8))
    assert white[:2].tolist() == [[235, 235]] * 2 and white[2].tolist() == [128, 128]
    assert black[:2].tolist() == [[16, 16]] * 2
    full = yuv.rgb_to_nv12(np.full((2, 2, 3), 255, np.uint8), full_range=True)
    assert full[:2].tolist() == [[255, 255]] * 2
