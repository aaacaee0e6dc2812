"""Native compressed and planar images on a fake Adreno driver (tests/fakes/memory.py).

cffi callbacks stand in for clGetSupportedImageFormats and clCreateImage and record the
flags, the cl_image_format and the cl_image_desc bytes (image_desc.mem_object of the
plane children included) and the cl_mem_*_host_ptr struct, checked against
qcom-extensions.md sections 12 and 13 and the vendor samples' calls. A memfd stands
in for the dma-buf.
"""

from __future__ import annotations

import gc
import os
import struct
import sys

import pytest
from fakes.driver import FakeCLObject
from fakes.memory import FakeContext, FakeMemDriver, ext_host_ptr, use_ext_flags

import qcom_ext
from qcom_ext import CLError, ConfigError, ExtensionUnavailable
from qcom_ext.binding.lib import C, ffi
from qcom_ext.ext.images import planar
from qcom_ext.ext.memory import memobj
from qcom_ext.ext.memory.flags import access_flags

pytestmark = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little" or not hasattr(os, "memfd_create"),
    reason="LP64 little-endian layouts; memfds stand in for dma-bufs (Linux)",
)
OTHER, COMPRESSED, COMPRESSED_YUV = 1 << 37, 1 << 38, 1 << 39
UNORM8, UNORM10 = 0x10D2, 0x415D
RO, WO, RW = C.CL_MEM_READ_ONLY, C.CL_MEM_WRITE_ONLY, C.CL_MEM_READ_WRITE


@pytest.fixture(autouse=True)
def fake_wrapping(fake_cl_objects):
    fake_cl_objects(memobj, "wrap")


@pytest.fixture
def dmabuf():
    fd = os.memfd_create("qcom-ext-fake-planar")
    os.ftruncate(fd, 1 << 16)
    yield qcom_ext.ExternalMemory.dmabuf(fd, cache_policy="uncached")
    os.close(fd)


def mappings() -> int:
    gc.collect()
    with open("/proc/self/maps") as maps:
        return sum("qcom-ext-fake-planar" in line for line in maps)


# ---- clGetSupportedImageFormats ------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "bits"),
    [
        ({}, 0),
        ({"other": True}, OTHER),
        ({"compressed": True}, COMPRESSED),
        ({"other": True, "compressed": True}, OTHER | COMPRESSED),
    ],
)
@pytest.mark.parametrize("access", ["read_only", "read_write", "write_only"])
def test_format_query_flags(kwargs, bits, access):
    flags = access_flags(access) | bits
    with FakeMemDriver() as fake:
        fake.formats[flags] = [(0x4133, UNORM8), (0x4130, UNORM8), (C.CL_R, UNORM8)]
        listed = qcom_ext.supported_image_formats(FakeContext(), flags=access, **kwargs)
    assert [q[:2] for q in fake.format_queries] == [(flags, C.CL_MEM_OBJECT_IMAGE2D)] * 2
    assert fake.format_queries[0][2] == 0 and fake.format_queries[1][2] == 3
    assert [str(f) for f in listed] == [
        "CL_QCOM_NV12/CL_UNORM_INT8",
        "CL_QCOM_COMPRESSED_RGBA/CL_UNORM_INT8",
        "CL_R/CL_UNORM_INT8",
    ]


def test_compressed_yuv_bit_needs_its_extension():
    with FakeMemDriver() as fake:  # the Adreno 740 string lacks cl_qcom_compressed_yuv_image_read
        assert qcom_ext.supported_image_formats(FakeContext(), compressed_yuv=True) == []
    assert fake.format_queries == []
    with FakeMemDriver(extra="cl_qcom_compressed_yuv_image_read") as fake:
        fake.formats[RO | OTHER | COMPRESSED_YUV] = [(0x4139, UNORM8)]
        listed = qcom_ext.supported_image_formats(
            FakeContext(), other=True, compressed_yuv=True, image_type="image3d"
        )
    assert listed == [(0x4139, UNORM8)]
    assert fake.format_queries[0][:2] == (RO | OTHER | COMPRESSED_YUV, C.CL_MEM_OBJECT_IMAGE3D)


def test_format_query_refuses_unknown_image_type():
    with FakeMemDriver(), pytest.raises(ConfigError, match="unknown image type 'image4d'"):
        qcom_ext.supported_image_formats(FakeContext(), image_type="image4d")


# ---- compressed RGBA -----------------------------------------------------------------


@pytest.mark.parametrize(("order", "compressed_order"), [("RGBA", 0x4130), ("RGBx", 0x4131)])
def test_compressed_image_is_created_over_external_memory(dmabuf, order, compressed_order):
    with FakeMemDriver() as fake:
        fake.formats[RW | COMPRESSED] = [(compressed_order, UNORM8)]
        image = qcom_ext.create_image(
            FakeContext(), (64, 32), f"{order}/UNORM_INT8", compressed=True, memory=dmabuf
        )
    (call,) = fake.images
    # As the vendor sample: no compression flag at creation, the format carries it.
    assert call.flags == use_ext_flags(RW)
    assert call.format == (compressed_order, UNORM8)
    assert (call.desc["image_width"], call.desc["image_height"]) == (64, 32)
    assert (call.desc["image_row_pitch"], call.desc["image_slice_pitch"]) == (0, 0)
    assert ext_host_ptr(call.host_bytes) == (0x411D, 0x40A4)
    assert (
        image.compressed and image.reason == "" and image.format.channel_order == compressed_order
    )
    with pytest.raises(ConfigError, match="no host access"):
        image.read(None)


def test_compressed_format_must_be_listed(dmabuf):
    with FakeMemDriver() as fake:
        fake.formats[RW | COMPRESSED] = [(0x4130, C.CL_FLOAT)]
        expected = (
            r"cannot create CL_QCOM_COMPRESSED_RGBA/CL_UNORM_INT8 .*"
            r"CL_QCOM_COMPRESSED_RGBA/CL_FLOAT"
        )
        with pytest.raises(ConfigError, match=expected):
            qcom_ext.create_image(FakeContext(), (8, 8), compressed=True, memory=dmabuf)
    assert fake.images == []


def test_compressed_without_memory_falls_back_uncompressed(monkeypatch):
    made = []
    monkeypatch.setattr("pyopencl.create_image", lambda *a, **k: made.append((a, k)) or "img")
    with FakeMemDriver() as fake:
        fake.formats[C.CL_MEM_READ_WRITE] = [(C.CL_RGBA, UNORM8)]  # the plain format is listed
        image = qcom_ext.create_image(FakeContext(), (8, 8), compressed=True)
    assert fake.images == [] and len(made) == 1
    assert not image.compressed and "live in external memory" in image.reason
    assert image.format == (C.CL_RGBA, UNORM8)


def test_formats_without_compressed_equivalent_are_refused():
    with FakeMemDriver(), pytest.raises(ConfigError, match="CL_RG/CL_UNORM_INT8 has no compr"):
        qcom_ext.create_image(FakeContext(), (8, 8), "RG/UNORM_INT8", compressed=True)


# ---- planar NV12 / P010 / TP10 -------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "tokens", "data_type"),
    [
        ("nv12", (0x4133, 0x4134, 0x4135), UNORM8),
        ("p010", (0x413C, 0x413D, 0x413E), UNORM10),
        ("tp10", (0x4145, 0x4146, 0x4147), UNORM10),
    ],
)
@pytest.mark.parametrize(("access", "child_flags"), [("read_only", RO), ("write_only", WO)])
def test_native_planar_parent_and_children(dmabuf, layout, tokens, data_type, access, child_flags):
    with FakeMemDriver() as fake:
        frame = qcom_ext.planar_image(
            FakeContext(), (640, 480), layout, memory=dmabuf, flags=access
        )
    parent, y, uv = fake.images
    assert parent.flags == use_ext_flags(RO)  # planar parents are read-only
    assert parent.format == (tokens[0], data_type)
    assert (parent.desc["image_width"], parent.desc["image_height"]) == (640, 480)
    assert (parent.desc["image_row_pitch"], parent.desc["mem_object"]) == (0, 0)
    alloc, policy, fd, hostptr = struct.unpack("<IIi4xQ", parent.host_bytes)
    assert (alloc, policy, fd) == (0x411D, 0x40A4, dmabuf.fd) and hostptr
    parent_handle = frame.native.int_ptr
    for child, token in ((y, tokens[1]), (uv, tokens[2])):
        assert child.flags == child_flags  # no host-pointer or QCOM bits
        assert child.format == (token, data_type)
        assert child.desc["image_type"] == C.CL_MEM_OBJECT_IMAGE2D
        # Both children carry the parent's full dimensions (the UV one too).
        assert (child.desc["image_width"], child.desc["image_height"]) == (640, 480)
        assert (child.desc["image_row_pitch"], child.desc["image_slice_pitch"]) == (0, 0)
        assert child.desc["mem_object"] == parent_handle
        assert child.host_ptr == 0
    assert frame.path == "native" and frame.uv_layout == "native" and not frame.compressed
    assert frame.kernel_args == (frame.y, frame.uv)
    assert getattr(frame.y, memobj.KEEPALIVE) == (frame.native,)
    assert isinstance(frame, qcom_ext.Nv12Image) == (layout == "nv12")
    assert mappings() == 1
    del frame
    assert mappings() == 0


def test_native_compressed_nv12(dmabuf):
    with FakeMemDriver() as fake:
        fake.formats[RO | OTHER | COMPRESSED] = [(0x4139, UNORM8)]
        frame = qcom_ext.nv12_image(FakeContext(), (64, 64), memory=dmabuf, compressed=True)
    assert [call.format[0] for call in fake.images] == [0x4139, 0x413A, 0x413B]
    assert fake.format_queries[0][0] == RO | OTHER | COMPRESSED
    assert frame.compressed
    with pytest.raises(ConfigError, match="no host access"):
        frame.write(None, bytes(64 * 96))


def test_native_compressed_nv12_must_be_listed(dmabuf):
    with (
        FakeMemDriver() as fake,
        pytest.raises(ConfigError, match="read-only compressed planar formats: none"),
    ):
        qcom_ext.nv12_image(FakeContext(), (64, 64), memory=dmabuf, compressed=True)
    assert fake.images == []


def test_ion_backed_nv12_on_an_ion_device():
    with FakeMemDriver(extra="cl_qcom_ion_host_ptr", drop="cl_qcom_dmabuf_host_ptr") as fake:
        memory = qcom_ext.ExternalMemory.ion(7, 0x7F0000000000)
        qcom_ext.nv12_image(FakeContext(), (32, 16), memory=memory)
    assert struct.unpack("<IIi4xQ", fake.images[0].host_bytes) == (
        0x40A8,
        0x40A5,
        7,
        0x7F0000000000,
    )


@pytest.mark.parametrize("failing", [1, 2])  # the Y child, the UV child
def test_child_failure_releases_what_was_made(dmabuf, failing):
    fake = FakeMemDriver()
    fake.status, fake.fail_after = C.CL_IMAGE_FORMAT_NOT_SUPPORTED, failing
    with (
        fake,
        pytest.raises(
            CLError,
            match=r"clCreateImage failed: CL_IMAGE_FORMAT_NOT_SUPPORTED"
            r".*CL_QCOM_NV12_(UV|Y)/CL_UNORM_INT8, 64x32 of ",
        ),
    ):
        qcom_ext.nv12_image(FakeContext(), (64, 32), memory=dmabuf)
    assert fake.released == [0x5010 + 0x10 * i for i in reversed(range(failing))]
    assert mappings() == 0


def test_wrap_failure_releases_the_children_not_yet_wrapped(dmabuf, monkeypatch):
    wrapped = []

    def wrap(handle):
        if wrapped:
            raise RuntimeError("wrap failed")
        wrapped.append(handle)
        return FakeCLObject(handle)

    monkeypatch.setattr(memobj, "wrap", wrap)
    with FakeMemDriver() as fake, pytest.raises(RuntimeError, match="wrap failed"):
        qcom_ext.nv12_image(FakeContext(), (64, 32), memory=dmabuf)
    assert wrapped == [0x5010]  # the parent became a (stand-in) pyopencl object
    assert sorted(fake.released) == [0x5020, 0x5030]  # Y (by adopt) and UV (not yet wrapped)


def test_native_device_without_memory_takes_the_portable_planes(monkeypatch):
    monkeypatch.setattr(planar, "_portable", lambda *args: ("y", "uv", "rg"))
    with FakeMemDriver() as fake:
        frame = qcom_ext.nv12_image(FakeContext(), (64, 32))
    assert fake.images == []
    assert frame.path == "fallback" and "live in external memory" in frame.reason
    assert frame.kernel_args == ("y", "uv") and frame.native is None


def test_missing_plane_extraction_takes_the_portable_planes(dmabuf, monkeypatch):
    monkeypatch.setattr(planar, "_portable", lambda *args: ("y", "uv", "rg"))
    with FakeMemDriver(drop="cl_qcom_extract_image_plane") as fake:
        frame = qcom_ext.nv12_image(FakeContext(), (64, 32), memory=dmabuf)
        with pytest.raises(ExtensionUnavailable, match="NV12 only"):
            qcom_ext.planar_image(FakeContext(), (64, 32), "p010", memory=dmabuf)
    assert fake.images == [] and frame.path == "fallback"
    assert frame.reason == (
        "not advertised; portable fallback: the plane images of the portable planar layout"
    )


@pytest.mark.parametrize(
    ("shape", "match"),
    [
        ((641, 480), "641x480: width and height must be even"),
        ((640, 481), "640x481: width and height must be even"),
        ((0, 2), "must be a positive int"),
        ((2,), r"takes shape \(width, height\)"),
    ],
)
def test_bad_frame_sizes_are_refused_before_any_call(dmabuf, shape, match):
    with FakeMemDriver() as fake, pytest.raises(ConfigError, match=match):
        qcom_ext.nv12_image(FakeContext(), shape, memory=dmabuf)
    assert fake.images == [] and fake.format_queries == []


def test_unknown_layout_is_refused():
    with FakeMemDriver(), pytest.raises(ConfigError, match=r"'yuyv'.*nv12, p010, tp10"):
        qcom_ext.planar_image(FakeContext(), (8, 8), "yuyv")


class _EveryFlags(dict):
    """clGetSupportedImageFormats' answer for any flags: these formats."""

    def __init__(self, formats: list[tuple[int, int]]) -> None:
        super().__init__()
        self.formats = formats

    def get(self, flags, default=None):
        return self.formats


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="a memfd stands in for the ION fd")
def test_only_a_dma_buf_backs_the_portable_planes():
    """On a device that imports ION natively but has no cl_qcom_other_image, an NV12 frame
    over ION memory would take the portable planes: those map the memory, which only a
    dma-buf may be (ION and AHardwareBuffer memory is never mapped into the host)."""
    fd = os.memfd_create("qcom-ext-fake-ion")
    try:
        os.ftruncate(fd, 1 << 16)
        memory = qcom_ext.ExternalMemory.ion(fd, 0x7F0000000000)
        with (
            FakeMemDriver(extra="cl_qcom_ion_host_ptr", drop="cl_qcom_other_image") as fake,
            pytest.raises(ExtensionUnavailable, match="only a dma-buf can back the portable"),
        ):
            fake.formats = _EveryFlags([(C.CL_R, C.CL_UNORM_INT8), (C.CL_RG, C.CL_UNORM_INT8)])
            qcom_ext.nv12_image(FakeContext(), (32, 16), memory=memory)
        assert fake.images == [] and fake.buffers == []  # nothing made, nothing mapped
    finally:
        os.close(fd)
