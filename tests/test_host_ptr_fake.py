"""The native import paths (cl_qcom_*_host_ptr) on a fake Adreno driver.

cffi callbacks stand in for clCreateBuffer / clCreateImage (tests/fakes/memory.py) and
check what reaches the driver: the flags, the size, and the bytes of every
cl_mem_*_host_ptr struct against the LP64 layouts of qcom-extensions.md section 14.
A memfd stands in for the dma-buf / ION fd, so the host mapping the struct points at is
real and can be checked for being the fd's memory.
"""

from __future__ import annotations

import os
import struct
import sys

import pytest
from fakes import memfd as memfds
from fakes.memfd import mappings
from fakes.memory import STRUCT_SIZES, FakeContext, FakeMemDriver, ext_host_ptr, use_ext_flags

import qcom_ext
from qcom_ext import CLError, ConfigError, ExtensionUnavailable
from qcom_ext.binding.lib import C, ffi
from qcom_ext.ext.memory import memobj
from qcom_ext.ext.memory.flags import access_flags

pytestmark = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little" or not hasattr(os, "memfd_create"),
    reason="LP64 little-endian layouts; memfds stand in for dma-bufs (Linux)",
)
POLICIES = {
    "uncached": 0x40A4,
    "writeback": 0x40A5,
    "writethrough": 0x40A6,
    "write_combining": 0x40A7,
    "iocoherent": 0x40A9,
}
ION, AHB, ANB = (
    "cl_qcom_ion_host_ptr",
    "cl_qcom_android_ahardwarebuffer_host_ptr",
    "cl_qcom_android_native_buffer_host_ptr",
)


@pytest.fixture(autouse=True)
def fake_wrapping(fake_cl_objects):
    fake_cl_objects(memobj, "wrap")


@pytest.fixture
def memfd():
    with memfds.memfd(8192, bytes(range(256)) * 32) as fd:
        yield fd


def test_struct_sizes_are_the_reference_lp64_sizes():
    for name, size in STRUCT_SIZES.items():
        assert ffi.sizeof(name) == size, name
    assert ffi.offsetof("cl_mem_dmabuf_host_ptr", "dmabuf_hostptr") == 16
    assert ffi.offsetof("cl_mem_ion_host_ptr", "ion_hostptr") == 16
    assert ffi.offsetof("cl_mem_ahardwarebuffer_host_ptr", "ahb_ptr") == 8
    assert ffi.offsetof("cl_mem_android_native_buffer_host_ptr", "anb_ptr") == 8


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("flags", ["read_write", "read_only", "write_only"])
def test_dmabuf_struct_flags_and_mapping(memfd, policy, flags):
    with FakeMemDriver() as fake:
        buf = qcom_ext.import_dmabuf(FakeContext(), memfd, 4096, cache_policy=policy, flags=flags)
    (call,) = fake.buffers
    assert call.flags == use_ext_flags(access_flags(flags))
    assert call.size == 4096
    alloc, cache, fd, hostptr = struct.unpack("<IIi4xQ", call.host_bytes)
    assert (alloc, cache, fd) == (0x411D, POLICIES[policy], memfd)
    kept = getattr(buf, memobj.KEEPALIVE)[0]  # the struct the driver read is kept alive
    assert call.host_ptr == int(ffi.cast("uintptr_t", kept))
    # The host pointer is a shared mapping of the whole fd (8192 bytes).
    assert ffi.buffer(ffi.cast("char *", hostptr), 8192)[:] == bytes(range(256)) * 32
    if flags != "read_only" or os.access(f"/proc/self/fd/{memfd}", os.W_OK):
        ffi.cast("unsigned char *", hostptr)[5] = 0xEE
        assert os.pread(memfd, 1, 5) == b"\xee"
    assert mappings() == 1
    del buf
    assert mappings() == 0


def test_dmabuf_default_size_honours_padding_and_page(memfd):
    fake = FakeMemDriver()
    fake.device_info[0x40A0] = struct.pack("<Q", 64)  # CL_DEVICE_EXT_MEM_PADDING_IN_BYTES
    with fake:
        qcom_ext.import_dmabuf(FakeContext(), memfd)
        assert fake.buffers[0].size == 8192 - 64
        with pytest.raises(
            ConfigError,
            match=r"8192 bytes.*8192 bytes \+ 64 bytes of padding"
            r".*allocate 8256",
        ):
            qcom_ext.import_dmabuf(FakeContext(), memfd, 8192)
    assert mappings() == 0


def test_protected_dmabuf_is_never_mapped(memfd):
    with FakeMemDriver() as fake:
        buf = qcom_ext.import_dmabuf(
            FakeContext(), memfd, 4096, protected=True, cache_policy="uncached"
        )
    (call,) = fake.buffers
    assert struct.unpack("<IIi4xQ", call.host_bytes) == (0x411E, 0x40A4, memfd, 0)
    assert call.flags == use_ext_flags(C.CL_MEM_READ_WRITE | C.CL_MEM_HOST_NO_ACCESS)
    assert mappings() == 0
    del buf


def test_ion_struct(memfd):
    host = qcom_ext.aligned_empty(8192, "uint8")
    with FakeMemDriver(extra=ION) as fake:
        qcom_ext.import_ion(FakeContext(), memfd, host.ctypes.data, 4096, cache_policy="uncached")
        qcom_ext.import_ion(FakeContext(), memfd, None, 4096)
    with_ptr, without = fake.buffers
    assert struct.unpack("<IIi4xQ", with_ptr.host_bytes) == (
        0x40A8,
        0x40A4,
        memfd,
        host.ctypes.data,
    )
    assert struct.unpack("<IIi4xQ", without.host_bytes) == (0x40A8, 0x40A5, memfd, 0)
    assert with_ptr.flags == use_ext_flags(C.CL_MEM_READ_WRITE) and with_ptr.size == 4096


def test_ion_host_pointer_must_be_device_page_aligned(memfd):
    fake = FakeMemDriver(extra=ION)
    fake.device_info[0x40A1] = struct.pack("<Q", 65536)  # CL_DEVICE_PAGE_SIZE_QCOM
    host = qcom_ext.aligned_empty(1 << 17, "uint8", alignment=65536)
    with fake, pytest.raises(ConfigError, match="not aligned to the 65536-byte page"):
        qcom_ext.import_ion(FakeContext(), memfd, host.ctypes.data + 4096, 4096)
    assert fake.buffers == []


@pytest.mark.parametrize(
    ("extension", "importer", "alloc"),
    [
        (AHB, qcom_ext.import_ahardwarebuffer, 0x4119),
        (ANB, qcom_ext.import_android_native_buffer, 0x40C6),
    ],
)
def test_android_structs(extension, importer, alloc):
    with FakeMemDriver(extra=extension, host_bytes=16) as fake:
        importer(FakeContext(), 0x7F00ABC000, 65536, cache_policy="writethrough")
    (call,) = fake.buffers
    assert struct.unpack("<IIQ", call.host_bytes) == (alloc, 0x40A6, 0x7F00ABC000)
    assert ext_host_ptr(call.host_bytes) == (alloc, 0x40A6)
    assert call.flags == use_ext_flags(C.CL_MEM_READ_WRITE) and call.size == 65536


def test_ahardwarebuffer_size_defaults_to_zero_and_anb_needs_one():
    with FakeMemDriver(extra=f"{AHB} {ANB}", host_bytes=16) as fake:
        qcom_ext.import_ahardwarebuffer(FakeContext(), 0x1000)
        with pytest.raises(ConfigError, match="is unknown: give size"):
            qcom_ext.import_android_native_buffer(FakeContext(), 0x1000)
    assert [c.size for c in fake.buffers] == [0]


def test_iocoherent_needs_its_extension(memfd):
    with FakeMemDriver(drop="cl_qcom_ext_host_ptr_iocoherent") as fake:
        with pytest.raises(ExtensionUnavailable, match="cl_qcom_ext_host_ptr_iocoherent"):
            qcom_ext.import_dmabuf(FakeContext(), memfd, 4096, cache_policy="iocoherent")
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096, cache_policy="writeback")
    assert len(fake.buffers) == 1
    assert mappings() == 0


def test_unknown_cache_policy_names_the_choices(memfd):
    with pytest.raises(ConfigError, match=r"'cached'.*uncached, writeback, writethrough"):
        qcom_ext.import_dmabuf(FakeContext(), memfd, cache_policy="cached")
    assert (
        qcom_ext.ExternalMemory.dmabuf(3, cache_policy="CL_MEM_HOST_UNCACHED_QCOM").cache_policy
        == "uncached"
    )


def test_driver_refusal_names_flags_and_releases_mapping(memfd):
    fake = FakeMemDriver()
    fake.status = C.CL_INVALID_HOST_PTR
    expected = (
        r"clCreateBuffer failed: CL_INVALID_HOST_PTR \(-37\): flags CL_MEM_READ_WRITE"
        r" \| CL_MEM_USE_HOST_PTR \| CL_MEM_EXT_HOST_PTR_QCOM, size 4096"
    )
    with fake, pytest.raises(CLError, match=expected):
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096)
    assert mappings() == 0 and fake.released == []


def test_wrap_failure_releases_the_handle(memfd, monkeypatch):
    def refuse(handle):
        raise RuntimeError("wrap failed")

    monkeypatch.setattr(memobj, "wrap", refuse)
    with FakeMemDriver() as fake, pytest.raises(RuntimeError, match="wrap failed"):
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096)
    assert fake.released == [0x5010]
    assert mappings() == 0


def test_image_import_passes_format_desc_and_struct(memfd):
    with FakeMemDriver() as fake:
        qcom_ext.import_dmabuf(
            FakeContext(),
            memfd,
            image_format="RGBA/UNORM_INT8",
            shape=(16, 8),
            row_pitch=128,
            flags="read_only",
        )
        qcom_ext.import_dmabuf(
            FakeContext(),
            memfd,
            image_format=(C.CL_QCOM_NV12, "UNORM_INT8"),
            shape=(64, 32),
            flags="read_only",
        )
    rgba, nv12 = fake.images
    assert rgba.format == (C.CL_RGBA, C.CL_UNORM_INT8)
    assert rgba.desc["image_type"] == C.CL_MEM_OBJECT_IMAGE2D
    assert (rgba.desc["image_width"], rgba.desc["image_height"]) == (16, 8)
    assert (rgba.desc["image_row_pitch"], rgba.desc["mem_object"]) == (128, 0)
    assert rgba.flags == use_ext_flags(C.CL_MEM_READ_ONLY)
    assert ext_host_ptr(rgba.host_bytes) == (0x411D, 0x40A5)
    assert nv12.format == (0x4133, C.CL_UNORM_INT8) and nv12.desc["image_row_pitch"] == 0
    assert mappings() == 0


def test_image_import_checks_fit_and_pitch(memfd):
    with FakeMemDriver() as fake:
        with pytest.raises(ConfigError, match="holds 8192 bytes; 16384 bytes do not fit"):
            qcom_ext.import_dmabuf(
                FakeContext(), memfd, image_format="RGBA/UNORM_INT8", shape=(64, 64)
            )
        with pytest.raises(ConfigError, match=r"row_pitch 30 .* multiple of 4 of at least 64"):
            qcom_ext.import_dmabuf(
                FakeContext(), memfd, image_format="RGBA/UNORM_INT8", shape=(16, 8), row_pitch=30
            )
        with pytest.raises(ConfigError, match="take row_pitch 0"):
            qcom_ext.import_dmabuf(
                FakeContext(),
                memfd,
                image_format=(0x4133, "UNORM_INT8"),
                shape=(16, 8),
                row_pitch=64,
            )
    assert fake.images == []


def test_dmabuf_mapping_must_meet_the_device_page(memfd):
    fake = FakeMemDriver()
    fake.device_info[0x40A1] = struct.pack("<Q", 1 << 40)  # no mapping lands on such a page
    with fake, pytest.raises(ConfigError, match=r"not aligned to the device's 1099511627776-byte"):
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096)
    assert fake.buffers == [] and mappings() == 0


@pytest.mark.parametrize(
    ("extension", "memory", "unpack", "expected"),
    [
        ("cl_qcom_dmabuf_host_ptr", "dmabuf", "<IIi4xQ", (0x411D, 0x40A5)),
        (ION, "ion", "<IIi4xQ", (0x40A8, 0x40A5, -1, 0x40000)),
        (AHB, "ahardwarebuffer", "<IIQ", (0x4119, 0x40A5, 0xA000)),
        (ANB, "android_native_buffer", "<IIQ", (0x40C6, 0x40A5, 0xB000)),
    ],
)
def test_every_struct_reaches_clcreateimage(memfd, extension, memory, unpack, expected):
    descriptor = {
        "dmabuf": qcom_ext.ExternalMemory.dmabuf(memfd),
        "ion": qcom_ext.ExternalMemory.ion(memfd, 0x40000),
        "ahardwarebuffer": qcom_ext.ExternalMemory.ahardwarebuffer(0xA000),
        "android_native_buffer": qcom_ext.ExternalMemory.android_native_buffer(0xB000),
    }[memory]
    with FakeMemDriver(extra=extension, host_bytes=struct.calcsize(unpack)) as fake:
        qcom_ext.import_memory(
            FakeContext(),
            descriptor,
            image_format="BGRA/UNORM_INT8",
            shape=(30, 20),
            row_pitch=128,
            flags="write_only",
        )
    (call,) = fake.images
    fields = struct.unpack(unpack, call.host_bytes)
    if memory == "dmabuf":
        assert fields[:3] == (*expected, memfd) and fields[3]  # fd and its mapping
    elif memory == "ion":
        assert fields == (*expected[:2], memfd, expected[3])
    else:
        assert fields == expected
    assert call.flags == use_ext_flags(C.CL_MEM_WRITE_ONLY)
    assert call.format == (C.CL_BGRA, C.CL_UNORM_INT8)
    assert (call.desc["image_width"], call.desc["image_height"]) == (30, 20)
    assert call.desc["image_row_pitch"] == 128 and call.desc["mem_object"] == 0
    assert mappings() == 0


VENDOR_FORMATS = [(0x4133, "cl_qcom_other_image"), (0x4130, "cl_qcom_compressed_image")]


@pytest.mark.parametrize(("order", "extension"), VENDOR_FORMATS)
def test_vendor_formats_need_their_extension(memfd, order, extension):
    with FakeMemDriver(drop=extension) as fake, pytest.raises(ExtensionUnavailable) as info:
        qcom_ext.import_dmabuf(
            FakeContext(), memfd, image_format=(order, "UNORM_INT8"), shape=(16, 16)
        )
    assert info.value.extension == extension and "exists only there" in str(info.value)
    assert fake.images == [] and mappings() == 0
