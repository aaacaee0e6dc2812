"""onchip_buffer's native path: the cl_mem_properties list that reaches the driver.

A real device claims cl_qcom_onchip_global_memory with an on-chip size
(tests/fakes/claiming.py); a cffi callback stands in for clCreateBufferWithProperties,
records the property words, flags, size and host pointer, and returns a real buffer
made without the properties, so the result is a working pyopencl.Buffer.
"""

from __future__ import annotations

import sys
import warnings

import pyopencl as cl
import pytest
from conftest import DEVICES
from fakes.claiming import claiming, real
from fakes.driver import addr, mem_properties, u32, u64

from qcom_ext import CLError, ConfigError, QcomExtWarning, onchip_buffer, scrub_onchip
from qcom_ext.binding.lib import C, driver, ffi
from qcom_ext.errors import EntryPointMissing

pytestmark = [
    pytest.mark.skipif(
        ffi.sizeof("void *") != 8 or sys.byteorder != "little",
        reason="the byte layouts below are the LP64 little-endian ones",
    ),
    pytest.mark.skipif(not DEVICES, reason="needs an OpenCL device"),
]
EXTENSION = "cl_qcom_onchip_global_memory"
ONCHIP = 1 << 20
mf = cl.mem_flags


@pytest.fixture
def device(monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    return DEVICES[0]


@pytest.fixture
def context(device):
    return cl.Context([device.device()])


class FakeCreate:
    def __init__(self, status: int = 0):
        self.status, self.calls = status, []
        self._create = real("clCreateBuffer")

    def __call__(self, ctx, props, flags, size, host_ptr, errcode):
        self.calls.append((addr(ctx), mem_properties(props), int(flags), int(size), host_ptr))
        if self.status:
            errcode[0] = self.status
            return ffi.NULL
        return self._create(ctx, flags, size, ffi.NULL, errcode)


def claims(device, size_bytes: bytes = u64(ONCHIP)) -> dict:
    return {
        "extensions": [EXTENSION],
        "info": {C.CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM: size_bytes},
    }


def test_properties_list(device, context):
    fake = FakeCreate()
    with claiming(device.device_id, **claims(device), clCreateBufferWithProperties=fake):
        buffer = onchip_buffer(
            context, 65536, offset=8192, flags=mf.READ_WRITE | mf.HOST_NO_ACCESS
        )
    ctx, words, flags, size, host_ptr = fake.calls[0]
    assert ctx == context.int_ptr
    assert words == (0x41A2, 1, 0x41A3, 8192, 0)  # ONCHIP_GLOBAL=1, ONCHIP_GLOBAL_OFFSET=8192
    assert (flags, size, host_ptr) == (0x201, 65536, ffi.NULL)
    assert isinstance(buffer, cl.Buffer) and buffer.size == 65536
    assert (buffer.onchip, buffer.onchip_offset, buffer.path) == (True, 8192, "native")
    queue = cl.CommandQueue(context)
    assert scrub_onchip(queue, buffer) is None  # nothing to scrub: the hardware forgets


@pytest.mark.parametrize("width", ["size_t", "cl_uint"])
def test_fits_exactly_and_not_a_byte_more(device, context, width):
    fake = FakeCreate()
    size_bytes = u64(ONCHIP) if width == "size_t" else u32(ONCHIP)
    with claiming(
        device.device_id, **claims(device, size_bytes), clCreateBufferWithProperties=fake
    ):
        onchip_buffer(context, ONCHIP - 4096, offset=4096)
        with pytest.raises(ConfigError) as caught:
            onchip_buffer(context, ONCHIP - 4096, offset=4097)
        with pytest.raises(ConfigError):
            onchip_buffer(context, ONCHIP + 1)
    assert len(fake.calls) == 1  # the refused requests never reached the driver
    assert "exceeds the on-chip global memory" in str(caught.value)
    assert f"CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM = {ONCHIP}" in str(caught.value)


def test_driver_refusal(device, context):
    fake = FakeCreate(status=C.CL_INVALID_PROPERTY)
    with (
        claiming(device.device_id, **claims(device), clCreateBufferWithProperties=fake),
        pytest.raises(CLError) as caught,
    ):
        onchip_buffer(context, 4096, offset=64)
    assert caught.value.routine == "clCreateBufferWithProperties" and caught.value.code == -64
    assert "CL_MEM_ONCHIP_GLOBAL_OFFSET_QCOM=64" in str(caught.value)


def test_disabled_is_global_memory(device, context, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", EXTENSION)
    fake = FakeCreate()
    with claiming(device.device_id, **claims(device), clCreateBufferWithProperties=fake):
        buffer = onchip_buffer(context, 2 * ONCHIP)  # no on-chip limit on the fallback
    assert fake.calls == [] and (buffer.onchip, buffer.path) == (False, "fallback")


def test_missing_entry_point_warns_once(device, context, monkeypatch):
    lookup = driver.function

    def without(name):
        if name == "clCreateBufferWithProperties":
            raise EntryPointMissing(f"libOpenCL does not export {name}")
        return lookup(name)

    with (
        claiming(device.device_id, **claims(device)),
        warnings.catch_warnings(record=True) as seen,
    ):
        warnings.simplefilter("always")
        monkeypatch.setattr(driver, "function", without)
        buffer = onchip_buffer(context, 4096)
        monkeypatch.setattr(driver, "function", lookup)
    assert (buffer.onchip, buffer.path) == (False, "fallback")
    messages = [str(w.message) for w in seen if issubclass(w.category, QcomExtWarning)]
    assert len(messages) == 1 and "does not export clCreateBufferWithProperties" in messages[0]
