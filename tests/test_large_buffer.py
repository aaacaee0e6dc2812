"""cl_qcom_large_buffer: create_large_buffer, allocate_chunked, large_buffer_limit and the
build option, on every local device (the fallback) and through substitutes (native).

Natively a real device claims the extension (tests/fakes/claiming.py) with limits of the
test's choosing; a substitute for clCreateBufferWithProperties records the property
words, flags, size and host pointer and makes a real buffer without the property, so
the result is a working pyopencl.Buffer.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pyopencl as cl
import pytest
from conftest import DEVICES, building_device
from fakes.claiming import claiming, real
from fakes.driver import addr, mem_properties, u32, u64
from fakes.ledger import Ledger
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import (
    BufferTooLargeError,
    CLError,
    ConfigError,
    QcomExtWarning,
    allocate_chunked,
    create_large_buffer,
    large_buffer_limit,
)
from qcom_ext._resources import kernels_dir
from qcom_ext.binding.lib import C, driver, ffi
from qcom_ext.errors import EntryPointMissing
from qcom_ext.ext.memory import memobj
from qcom_ext.ext.program.build import LARGE_BUFFER_OPTION, program_options
from qcom_ext.tools.selftest.checks_memory import large_buffer_pattern

EXTENSION = "cl_qcom_large_buffer"
MIB = 1 << 20
mf = cl.mem_flags
lp64 = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little",
    reason="the byte layouts below are the LP64 little-endian ones",
)
needs_device = pytest.mark.skipif(not DEVICES, reason="needs an OpenCL device")


def source() -> str:
    return (kernels_dir() / "large_buffer.cl").read_text()


def filled(context, queue, buffer, n, base=0):
    program = qcom_ext.build_program(context, source(), large_buffer=True)
    program.fill_pattern(queue, (n,), None, buffer, np.uint64(base))
    out = np.empty(n, np.uint32)
    cl.enqueue_copy(queue, out, buffer)
    return out


# ---- the fallback, on every device ---------------------------------------------------------


def test_buffer_roundtrip_through_a_large_buffer_build(device_caps, kernel_context):
    queue = cl.CommandQueue(kernel_context)
    buffer = create_large_buffer(kernel_context, mf.READ_WRITE, 4096 * 4)
    native = device_caps.path(EXTENSION) == "native"
    assert isinstance(buffer, cl.Buffer) and buffer.size == 4096 * 4
    assert (buffer.large, buffer.path) == (native, "native" if native else "fallback")
    assert np.array_equal(
        filled(kernel_context, queue, buffer, 4096), large_buffer_pattern(0, 4096)
    )


def test_build_option_only_on_the_native_path(device_caps, kernel_context):
    program = qcom_ext.build_program(kernel_context, source(), large_buffer=True)
    device = kernel_context.devices[0]
    options = program.get_build_info(device, cl.program_build_info.OPTIONS)
    assert (LARGE_BUFFER_OPTION in options) == (device_caps.path(EXTENSION) == "native")
    plain = program_options([device], ["-DX"])
    assert LARGE_BUFFER_OPTION not in plain  # only when asked


def test_over_the_limit_is_refused_naming_size_limit_and_device(device_caps, cl_context):
    limit = large_buffer_limit(cl_context)
    native = device_caps.path(EXTENSION) == "native"
    expected = (
        device_caps.limits.max_large_buffer_size
        if native
        else cl_context.devices[0].max_mem_alloc_size
    )
    assert limit == expected
    with pytest.raises(BufferTooLargeError) as caught:
        create_large_buffer(cl_context, mf.READ_WRITE, limit + 1)
    error = caught.value
    assert (error.size, error.limit, error.device) == (limit + 1, limit, device_caps.label)
    name = "CL_DEVICE_GLOBAL_MEM_SIZE" if native else "CL_DEVICE_MAX_MEM_ALLOC_SIZE"
    assert error.limit_name == name
    for part in (str(limit + 1), str(limit), name, device_caps.label):
        assert part in str(error)
    if not native:
        assert "allocate_chunked" in str(error)
    assert isinstance(error, ConfigError)


def test_host_data(device_caps, cl_context, cl_queue):
    values = np.arange(1000, dtype=np.uint32) * 7
    copied = create_large_buffer(cl_context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=values)
    part = create_large_buffer(cl_context, mf.READ_ONLY | mf.COPY_HOST_PTR, 400, hostbuf=values)
    for buffer, n in ((copied, 1000), (part, 100)):
        out = np.empty(n, np.uint32)
        cl.enqueue_copy(cl_queue, out, buffer)
        assert buffer.size == n * 4 and np.array_equal(out, values[:n])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 0}, "size must be an int >= 1 (bytes), got 0"),
        ({"size": 10.0}, "size must be an int >= 1 (bytes), got 10.0"),
        ({"size": True}, "size must be an int >= 1 (bytes), got True"),
        ({"flags": mf.READ_WRITE | mf.COPY_HOST_PTR}, "name a host pointer but no hostbuf"),
        ({"hostbuf": np.zeros(4, np.uint8)}, "add CL_MEM_COPY_HOST_PTR"),
        (
            {"flags": mf.COPY_HOST_PTR, "size": 5, "hostbuf": np.zeros(4, np.uint8)},
            "size 5 bytes exceeds hostbuf's 4 bytes",
        ),
        (
            {"flags": mf.COPY_HOST_PTR, "hostbuf": np.zeros((4, 4), np.uint8)[:, ::2]},
            "hostbuf must be C-contiguous",
        ),
        ({"flags": mf.READ_ONLY | mf.WRITE_ONLY}, "at most one device-access flag"),
    ],
)
def test_bad_arguments(cl_context, kwargs, message):
    arguments = {"flags": mf.READ_WRITE, "size": 256, **kwargs}
    with pytest.raises(ConfigError) as caught:
        create_large_buffer(cl_context, **arguments)
    assert message in str(caught.value)


def test_not_a_context(cl_queue):
    for call in (
        lambda: create_large_buffer(cl_queue, mf.READ_WRITE, 64),
        lambda: allocate_chunked(cl_queue, 64),
        lambda: large_buffer_limit(cl_queue),
    ):
        with pytest.raises(ConfigError, match=r"expected a pyopencl\.Context, got CommandQueue"):
            call()


# ---- allocate_chunked ---------------------------------------------------------------------


def test_chunks_hold_what_one_buffer_holds(device_caps, kernel_context):
    queue = cl.CommandQueue(kernel_context)
    n = 10_000
    parts = allocate_chunked(kernel_context, n * 4, chunk=4096)
    assert [(p.chunk_offset, p.size) for p in parts] == [
        (i * 4096, min(4096, n * 4 - i * 4096)) for i in range(10)
    ]
    got = np.concatenate(
        [filled(kernel_context, queue, p, p.size // 4, p.chunk_offset // 4) for p in parts]
    )
    assert np.array_equal(got, large_buffer_pattern(0, n))


def test_chunk_rules(device_caps, cl_context):
    align = cl_context.devices[0].mem_base_addr_align // 8
    limit = cl_context.devices[0].max_mem_alloc_size
    assert [p.size for p in allocate_chunked(cl_context, 1000)] == [1000]  # fits: one buffer
    with pytest.raises(ConfigError, match=f"not a multiple of {align} bytes, the base-address"):
        allocate_chunked(cl_context, 4 * align, chunk=align + 4)
    with pytest.raises(BufferTooLargeError) as caught:
        allocate_chunked(cl_context, 4 * limit, chunk=limit + align)
    assert caught.value.limit == limit and caught.value.size == limit + align
    with pytest.raises(ConfigError, match="chunks take no host pointer"):
        allocate_chunked(cl_context, 64, flags=mf.READ_WRITE | mf.USE_HOST_PTR)
    with pytest.raises(ConfigError, match="chunk must be an int >= 1"):
        allocate_chunked(cl_context, 64, chunk=0)


def claim_alloc(device, max_alloc: int, align_bits: int = 1024, **substitutes):
    """The device reports ``max_alloc`` as CL_DEVICE_MAX_MEM_ALLOC_SIZE (and no
    cl_qcom_large_buffer): a small limit the default chunking must respect."""
    info = {
        C.CL_DEVICE_MAX_MEM_ALLOC_SIZE: u64(max_alloc),
        C.CL_DEVICE_MEM_BASE_ADDR_ALIGN: u32(align_bits),
    }
    return claiming(device.device_id, info=info, **substitutes)


@needs_device
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.integers(min_value=256, max_value=64 << 10),
    size=st.integers(min_value=1, max_value=256 << 10),
    align_bits=st.sampled_from([64, 1024, 4096]),
)
def test_default_chunks_against_a_reference(limit, size, align_bits):
    device = DEVICES[0]
    context = cl.Context([device.device()])
    align = align_bits // 8
    assume(limit >= align)  # else no aligned chunk fits (no real device is like that)
    with claim_alloc(device, limit, align_bits):
        parts = allocate_chunked(context, size)
    step = size if size <= limit else limit // align * align
    want = [(o, min(step, size - o)) for o in range(0, size, step)]
    assert [(p.chunk_offset, p.size) for p in parts] == want
    assert all(p.size <= limit for p in parts)
    assert all(p.chunk_offset % align == 0 for p in parts)


@needs_device
def test_a_failed_chunk_releases_the_ones_made(monkeypatch):
    device = DEVICES[0]
    context = cl.Context([device.device()])
    ledger, create, calls = Ledger(), real("clCreateBuffer"), []

    def third_fails(ctx, flags, size, host_ptr, errcode):
        calls.append(int(size))
        if len(calls) == 3:
            errcode[0] = C.CL_MEM_OBJECT_ALLOCATION_FAILURE
            return ffi.NULL
        return ledger.real("mem", create(ctx, flags, size, host_ptr, errcode), "clCreateBuffer")

    try:
        with driver.substitute(clCreateBuffer=third_fails), pytest.raises(CLError) as caught:
            allocate_chunked(context, 5 * 4096, chunk=4096)
        assert calls == [4096] * 3 and caught.value.code == C.CL_MEM_OBJECT_ALLOCATION_FAILURE
        assert ledger.problems() == []  # the two made were released, exactly once
    finally:
        ledger.close()


# ---- the native path, through a substitute ----------------------------------------------


class FakeCreate:
    """clCreateBufferWithProperties: records its arguments; makes a real buffer (with
    the same flags and host pointer, without the property), or fails with ``status``
    (``leak_handle``: returning a real handle along with the error)."""

    def __init__(self, status: int = 0, ledger: Ledger | None = None, leak_handle=False):
        self.status, self.ledger, self.leak_handle, self.calls = status, ledger, leak_handle, []
        self._create = real("clCreateBuffer")

    def __call__(self, ctx, props, flags, size, host_ptr, errcode):
        self.calls.append(
            (addr(ctx), mem_properties(props), int(flags), int(size), addr(host_ptr))
        )
        if self.status and not self.leak_handle:
            errcode[0] = self.status
            return ffi.NULL
        handle = self._create(ctx, flags, size, host_ptr, errcode)
        if self.ledger is not None:
            self.ledger.real("mem", handle, "clCreateBufferWithProperties")
        if self.status:
            errcode[0] = self.status
        return handle


GLOBAL = 64 * MIB  # what the claiming device reports as CL_DEVICE_GLOBAL_MEM_SIZE


def claims(max_alloc: int = MIB) -> dict:
    return {
        "extensions": [EXTENSION],
        "info": {
            C.CL_DEVICE_GLOBAL_MEM_SIZE: u64(GLOBAL),
            C.CL_DEVICE_MAX_MEM_ALLOC_SIZE: u64(max_alloc),
        },
    }


@pytest.fixture
def device(monkeypatch):
    if not DEVICES:
        pytest.skip("needs an OpenCL device")
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    return building_device()


@pytest.fixture
def context(device):
    return cl.Context([device.device()])


@lp64
def test_property_list_and_a_buffer_beyond_the_alloc_limit(device, context):
    fake = FakeCreate()
    with claiming(device.device_id, **claims(), clCreateBufferWithProperties=fake):
        assert large_buffer_limit(context) == GLOBAL
        caps = qcom_ext.probe(device.device())
        assert (caps.limits.max_large_buffer_size, caps.limits.max_mem_alloc_size) == (GLOBAL, MIB)
        buffer = create_large_buffer(context, mf.READ_WRITE | mf.HOST_NO_ACCESS, 4 * MIB)
        options = program_options([device.device()], large_buffer=True)
    ctx, words, flags, size, host_ptr = fake.calls[0]
    assert ctx == context.int_ptr
    assert words == (0x41A6, 1, 0)  # CL_LARGE_BUFFER_QCOM = 1
    assert (flags, size, host_ptr) == (0x201, 4 * MIB, 0)
    assert isinstance(buffer, cl.Buffer) and buffer.size == 4 * MIB  # 4x the claimed limit
    assert (buffer.large, buffer.path) == (True, "native")
    assert LARGE_BUFFER_OPTION in options


@lp64
def test_host_pointer_reaches_the_driver_and_stays_alive(device, context):
    fake = FakeCreate()
    values = np.arange(256, dtype=np.uint32)
    with claiming(device.device_id, **claims(), clCreateBufferWithProperties=fake):
        copied = create_large_buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=values)
        used = create_large_buffer(context, mf.READ_WRITE | mf.USE_HOST_PTR, 512, values)
    assert [call[4] for call in fake.calls] == [values.ctypes.data] * 2
    assert [call[3] for call in fake.calls] == [1024, 512]
    assert getattr(used, memobj.KEEPALIVE) == (values,)  # the driver may read it later
    assert not hasattr(copied, memobj.KEEPALIVE)
    out = np.empty(256, np.uint32)
    cl.enqueue_copy(cl.CommandQueue(context), out, copied)
    assert np.array_equal(out, values)


@lp64
def test_native_limit_is_the_global_memory(device, context):
    fake = FakeCreate()
    with (
        claiming(device.device_id, **claims(), clCreateBufferWithProperties=fake),
        pytest.raises(BufferTooLargeError) as caught,
    ):
        create_large_buffer(context, mf.READ_WRITE, GLOBAL + 1)
    assert fake.calls == []  # refused before the driver
    assert caught.value.limit_name == "CL_DEVICE_GLOBAL_MEM_SIZE" and caught.value.limit == GLOBAL
    assert "the driver may refuse less" in str(caught.value)


@lp64
def test_disabled_falls_back_to_the_alloc_limit(device, context, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", EXTENSION)
    fake = FakeCreate()
    with claiming(device.device_id, **claims(), clCreateBufferWithProperties=fake):
        small = create_large_buffer(context, mf.READ_WRITE, MIB)
        with pytest.raises(BufferTooLargeError) as caught:
            create_large_buffer(context, mf.READ_WRITE, MIB + 1)
        options = program_options([device.device()], large_buffer=True)
    assert fake.calls == [] and (small.large, small.path) == (False, "fallback")
    assert caught.value.limit == MIB and "is advertised but its path here is not" in str(
        caught.value
    )
    assert LARGE_BUFFER_OPTION not in options


@lp64
@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (C.CL_INVALID_BUFFER_SIZE, True),
        (C.CL_MEM_OBJECT_ALLOCATION_FAILURE, True),
        (C.CL_INVALID_PROPERTY, False),
    ],
)
def test_driver_refusal_is_a_clerror_naming_the_request(device, context, status, hint):
    fake = FakeCreate(status=status)
    with (
        claiming(device.device_id, **claims(), clCreateBufferWithProperties=fake),
        pytest.raises(CLError) as caught,
    ):
        create_large_buffer(context, mf.READ_WRITE, 8 * MIB)
    assert caught.value.routine == "clCreateBufferWithProperties" and caught.value.code == status
    assert f"CL_LARGE_BUFFER_QCOM=1; flags CL_MEM_READ_WRITE; size {8 * MIB}" in str(caught.value)
    assert ("allocate_chunked" in str(caught.value)) == hint


@lp64
def test_nothing_leaks_when_the_driver_or_the_wrap_fails(device, context, monkeypatch):
    ledger = Ledger()
    try:
        # a handle returned along with an error is released
        fake = FakeCreate(status=C.CL_OUT_OF_RESOURCES, ledger=ledger, leak_handle=True)
        with (
            claiming(device.device_id, **claims(), clCreateBufferWithProperties=fake),
            pytest.raises(CLError),
        ):
            create_large_buffer(context, mf.READ_WRITE, MIB)
        # a buffer made but not wrapped is released
        fake = FakeCreate(ledger=ledger)

        def broken(handle):
            raise RuntimeError("pyopencl refused the handle")

        monkeypatch.setattr(memobj, "wrap", broken)
        with (
            claiming(device.device_id, **claims(), clCreateBufferWithProperties=fake),
            pytest.raises(RuntimeError),
        ):
            create_large_buffer(context, mf.READ_WRITE, MIB)
        assert len(ledger.entries) == 2 and ledger.problems() == []
    finally:
        ledger.close()


@lp64
def test_missing_entry_point_warns_and_falls_back(device, context, monkeypatch):
    lookup = driver.function

    def without(name):
        if name == "clCreateBufferWithProperties":
            raise EntryPointMissing(f"libOpenCL does not export {name}")
        return lookup(name)

    with claiming(device.device_id, **claims()), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        monkeypatch.setattr(driver, "function", without)
        buffer = create_large_buffer(context, mf.READ_WRITE, 4096)
        with pytest.raises(BufferTooLargeError):  # the fallback's limit applies now
            create_large_buffer(context, mf.READ_WRITE, 2 * MIB)
        monkeypatch.setattr(driver, "function", lookup)
    assert (buffer.large, buffer.path) == (False, "fallback")
    messages = [str(w.message) for w in seen if issubclass(w.category, QcomExtWarning)]
    assert len(messages) == 2 and "does not export clCreateBufferWithProperties" in messages[0]


@pytest.mark.skipif(len(DEVICES) < 2, reason="needs two devices")
def test_one_build_for_native_and_fallback_devices_is_refused():
    native, other = DEVICES[0], DEVICES[1]
    with claiming(native.device_id, extensions=[EXTENSION]):
        devices = [native.device(), other.device()]
        if len({tuple(qcom_ext.probe(d).compiler_options()) for d in devices}) != 1:
            pytest.skip("the two devices already take different kernel-side paths")
        assert LARGE_BUFFER_OPTION not in program_options(devices)
        with pytest.raises(ConfigError, match="some devices of this build take"):
            program_options(devices, large_buffer=True)


def test_the_native_build_passes_the_option_to_the_compiler(device, context):
    """pocl does not know Qualcomm's option: that it refuses the build shows the option
    reached the compiler on the (claimed) native path, and only there."""
    with (
        claiming(device.device_id, **claims()),
        pytest.raises(qcom_ext.BuildError, match="-qcom-enable-large-buffer"),
    ):
        qcom_ext.build_program(context, source(), large_buffer=True)
    assert qcom_ext.build_program(context, source(), large_buffer=True) is not None
