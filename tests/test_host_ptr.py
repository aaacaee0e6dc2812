"""Zero-copy host memory and external-memory imports on the real devices.

Off Adreno, host_buffer and the dma-buf import (a memfd stands in for the dma-buf) take
the portable CL_MEM_USE_HOST_PTR path; ION / AHardwareBuffer / ANativeWindowBuffer
imports are refused with the reason. The native paths: tests/test_host_ptr_fake.py.
"""

from __future__ import annotations

import gc
import os
import warnings

import numpy as np
import pyopencl as cl
import pytest
from fakes import memfd as memfds
from fakes.memfd import needs_memfd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import ConfigError, ExtensionUnavailable, QcomExtWarning
from qcom_ext.ext.memory.host_ptr import _bytes_after

DMABUF = "cl_qcom_dmabuf_host_ptr"
FILL = "__kernel void fill(__global uchar *a, uchar v) { a[get_global_id(0)] += v; }"


def portable(caps, extension: str = DMABUF):
    if caps.path(extension) == "native":
        pytest.skip(f"{caps.label} imports natively (tests/test_host_ptr_fake.py covers it)")


MEMFD = "qcom-ext-test-dmabuf"  # this file's memfds: the portable path really maps them


@pytest.fixture
def memfd():
    with memfds.memfd(name=MEMFD) as fd:
        yield fd


def mappings() -> int:
    return memfds.mappings(MEMFD)


def quiet_import(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = qcom_ext.import_dmabuf(*args, **kwargs)
    return result, [str(w.message) for w in caught if issubclass(w.category, QcomExtWarning)]


# ---- aligned_empty -------------------------------------------------------------------


@given(
    shape=st.lists(st.integers(0, 9), min_size=1, max_size=3),
    dtype=st.sampled_from(["uint8", "int16", "float32", "float64", "complex64"]),
    log_alignment=st.integers(4, 16),
    padding=st.integers(0, 5000),
)
def test_aligned_empty_alignment_shape_and_padding(shape, dtype, log_alignment, padding):
    alignment = 1 << log_alignment
    array = qcom_ext.aligned_empty(shape, dtype, alignment=alignment, padding=padding)
    assert array.shape == tuple(shape) and array.dtype == np.dtype(dtype)
    assert array.flags.c_contiguous and array.flags.writeable
    if array.nbytes == 0:
        return  # numpy gives empty arrays a placeholder address
    assert array.ctypes.data % alignment == 0
    available = _bytes_after(array)
    whole_pages = -(-(array.nbytes + padding) // alignment) * alignment
    assert available >= whole_pages


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alignment": 3}, "power of two"),
        ({"alignment": 0}, "power of two"),
        ({"padding": -1}, "non-negative"),
        ({"shape": (2, -1)}, "non-negative ints"),
    ],
)
def test_aligned_empty_refuses_bad_arguments(kwargs, match):
    shape = kwargs.pop("shape", (4,))
    with pytest.raises(ConfigError, match=match):
        qcom_ext.aligned_empty(shape, **kwargs)


def test_aligned_empty_takes_the_context_page_size(device_caps, cl_context):
    array = qcom_ext.aligned_empty((3, 7), np.int32, context=cl_context)
    page = max(4096, device_caps.limits.page_size or 0)
    assert array.ctypes.data % page == 0
    assert _bytes_after(array) >= array.nbytes + (device_caps.limits.ext_mem_padding or 0)


# ---- host_buffer ---------------------------------------------------------------------


def test_host_buffer_is_the_array(device_caps, kernel_context):
    queue = cl.CommandQueue(kernel_context)
    array = qcom_ext.aligned_empty(4096, np.uint8, context=kernel_context)
    array[:] = np.arange(4096) % 251
    expected = (array.astype(np.int32) + 3) % 256
    buf = qcom_ext.host_buffer(kernel_context, array)
    assert buf.size == 4096 and buf.flags & cl.mem_flags.USE_HOST_PTR
    del array  # the buffer keeps it alive
    gc.collect()
    cl.Program(kernel_context, FILL).build().fill(queue, (4096,), None, buf, np.uint8(3))
    mapped, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ, 0, (4096,), np.uint8)
    assert np.array_equal(mapped, expected)
    if device_caps.device_type == "cpu":  # a CPU device maps the host memory itself
        assert mapped.ctypes.data == buf.hostbuf.ctypes.data
    del mapped


@pytest.mark.parametrize(
    ("make", "kwargs", "match"),
    [
        (lambda a: a[1:], {}, "not aligned to the"),
        (lambda a: a.reshape(64, 64)[:, ::2], {}, "C-contiguous"),
        (lambda a: a[:0], {}, "non-empty"),
        (lambda a: a.tolist(), {}, "numpy array, got list"),
        (lambda a: np.frombuffer(bytes(4096), np.uint8), {}, "read-only"),
        (lambda a: a, {"flags": "read_most"}, "expected one of read_write"),
        (lambda a: a, {"flags": cl.mem_flags.COPY_HOST_PTR}, "set by qcom_ext itself"),
        (
            lambda a: a,
            {"flags": cl.mem_flags.READ_ONLY | cl.mem_flags.WRITE_ONLY},
            "at most one device-access flag",
        ),
    ],
)
def test_host_buffer_refusals(cl_context, make, kwargs, match):
    array = qcom_ext.aligned_empty(4096, np.uint8)
    with pytest.raises(ConfigError, match=match):
        qcom_ext.host_buffer(cl_context, make(array), **kwargs)


def test_host_buffer_takes_read_only_arrays_for_reading(cl_context):
    array = qcom_ext.aligned_empty(4096, np.uint8)
    array.flags.writeable = False
    buf = qcom_ext.host_buffer(cl_context, array, flags="read_only")
    assert buf.flags & cl.mem_flags.READ_ONLY


# ---- import_dmabuf fallback (a memfd) -----------------------------------------------


@needs_memfd
def test_dmabuf_fallback_maps_the_fd_zero_copy(device_caps, kernel_context, memfd):
    portable(device_caps)
    os.ftruncate(memfd, 8192)
    os.pwrite(memfd, bytes(range(256)) * 32, 0)
    buf, messages = quiet_import(kernel_context, memfd, cache_policy="uncached")
    assert buf.size == 8192
    assert buf.flags & cl.mem_flags.USE_HOST_PTR and buf.flags & cl.mem_flags.READ_WRITE
    assert len(messages) == 1 and DMABUF in messages[0]
    assert "'uncached' has no effect" in messages[0]
    assert mappings() == 1
    queue = cl.CommandQueue(kernel_context)
    cl.Program(kernel_context, FILL).build().fill(queue, (8192,), None, buf, np.uint8(1))
    mapped, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ, 0, (8192,), np.uint8)
    expected = (np.tile(np.arange(256), 32) + 1) % 256
    assert np.array_equal(mapped, expected)
    del mapped
    queue.finish()
    if device_caps.device_type == "cpu":  # the kernel wrote into the dma-buf's pages
        assert os.pread(memfd, 4, 0) == bytes([1, 2, 3, 4])
    del buf
    assert mappings() == 0  # the mapping goes with the buffer


@needs_memfd
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(min_size=1, max_size=20000), extra=st.integers(0, 3000))
def test_dmabuf_fallback_round_trip(device_caps, cl_context, data, extra):
    portable(device_caps)
    fd = os.memfd_create("qcom-ext-test-dmabuf")
    try:
        os.ftruncate(fd, len(data) + extra)
        os.pwrite(fd, data, 0)
        buf, _ = quiet_import(cl_context, fd, len(data), flags="read_only")
        out = np.empty(len(data), np.uint8)
        cl.enqueue_copy(cl.CommandQueue(cl_context), out, buf)
        assert out.tobytes() == data
        del buf
    finally:
        os.close(fd)
    assert mappings() == 0


@needs_memfd
def test_dmabuf_fallback_image_honours_row_pitch(device_caps, cl_context, memfd):
    portable(device_caps)
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    width, height, pitch = 5, 3, 32
    os.ftruncate(memfd, pitch * height)
    pixels = np.arange(pitch * height, dtype=np.uint8).reshape(height, pitch)
    os.pwrite(memfd, pixels.tobytes(), 0)
    image, _ = quiet_import(
        cl_context,
        memfd,
        image_format="RGBA/UNORM_INT8",
        flags="read_only",
        shape=(width, height),
        row_pitch=pitch,
    )
    assert image.shape == (width, height)
    out = np.empty((height, width, 4), np.uint8)
    cl.enqueue_copy(cl.CommandQueue(cl_context), out, image, origin=(0, 0), region=(width, height))
    assert np.array_equal(out.reshape(height, width * 4), pixels[:, : width * 4])
    del image
    assert mappings() == 0


@needs_memfd
def test_dmabuf_fallback_refusals(device_caps, cl_context, memfd):
    portable(device_caps)
    os.ftruncate(memfd, 4096)
    with pytest.raises(ConfigError, match="holds 4096 bytes; 8192 bytes do not fit"):
        qcom_ext.import_dmabuf(cl_context, memfd, 8192)
    with pytest.raises(ConfigError, match="not open"):
        qcom_ext.import_dmabuf(cl_context, 999999, 4096)
    with pytest.raises(ConfigError, match="non-negative int"):
        qcom_ext.import_dmabuf(cl_context, -1, 4096)
    with pytest.raises(ConfigError, match="size 0 is accepted for AHardwareBuffers only"):
        qcom_ext.import_dmabuf(cl_context, memfd, 0)
    with pytest.raises(ExtensionUnavailable, match="protected dma-buf is never mapped"):
        qcom_ext.import_dmabuf(cl_context, memfd, 4096, protected=True)
    with pytest.raises(ExtensionUnavailable, match=r"cl_qcom_other_image.*nv12_image"):
        qcom_ext.import_dmabuf(
            cl_context, memfd, image_format=(0x4133, "UNORM_INT8"), shape=(16, 16)
        )
    assert mappings() == 0


@needs_memfd
def test_dmabuf_fallback_read_only_fd(device_caps, cl_context, memfd):
    portable(device_caps)
    os.ftruncate(memfd, 4096)
    read_only = os.open(f"/proc/self/fd/{memfd}", os.O_RDONLY)
    try:
        with pytest.raises(ConfigError, match="open read-only"):
            qcom_ext.import_dmabuf(cl_context, read_only, 4096)
        buf, _ = quiet_import(cl_context, read_only, 4096, flags="read_only")
        assert buf.size == 4096
        del buf
    finally:
        os.close(read_only)
    assert mappings() == 0


@needs_memfd
def test_iocoherent_is_accepted_by_the_fallback(device_caps, cl_context, memfd):
    portable(device_caps)
    os.ftruncate(memfd, 4096)
    buf, messages = quiet_import(cl_context, memfd, cache_policy="IOCOHERENT")
    assert "'iocoherent' has no effect" in messages[0]
    del buf


@pytest.mark.parametrize(
    ("importer", "extension", "args"),
    [
        (qcom_ext.import_ion, "cl_qcom_ion_host_ptr", (3, None, 4096)),
        (qcom_ext.import_ahardwarebuffer, "cl_qcom_android_ahardwarebuffer_host_ptr", (0x1000,)),
        (
            qcom_ext.import_android_native_buffer,
            "cl_qcom_android_native_buffer_host_ptr",
            (0x1000, 4096),
        ),
    ],
)
def test_vendor_objects_are_refused_off_adreno(device_caps, cl_context, importer, extension, args):
    portable(device_caps, extension)
    with pytest.raises(ExtensionUnavailable) as info:
        importer(cl_context, *args)
    assert info.value.extension == extension
    assert device_caps.status(extension).reason in str(info.value)
    assert "only the Qualcomm driver can import" in str(info.value)


def test_external_memory_validation():
    with pytest.raises(ConfigError, match="memory kind 'pmem'"):
        qcom_ext.ExternalMemory("pmem")
    with pytest.raises(ConfigError, match="non-NULL"):
        qcom_ext.ExternalMemory.ahardwarebuffer(0)
    with pytest.raises(ConfigError, match="dma-bufs only"):
        qcom_ext.ExternalMemory("ion", fd=3, protected=True)
    memory = qcom_ext.ExternalMemory.ion(3, 0x10000, cache_policy="Write-Back")
    assert memory.cache_policy == "writeback" and memory.pointer == 0x10000
    assert memory.extension == "cl_qcom_ion_host_ptr"
