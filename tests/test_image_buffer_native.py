"""The native and Khronos paths of buffer_from_image / image_with_buffer, byte for byte.

A real device claims the extensions (tests/fakes/claiming.py). cffi callbacks stand in for
clCreateBufferFromImageQCOM and clGetDeviceImageInfoQCOM (native), or clCreateBuffer
and clCreateImage (cl_khr_image2d_from_buffer): they record exactly what reaches them
and hand back real objects made by the real driver, so everything after the call
(wrapping, pitches, reads at the pitch) runs for real. The forbidden flags are refused
on these paths too, before any driver call.
"""

from __future__ import annotations

import struct
import sys
import warnings

import numpy as np
import pyopencl as cl
import pytest
from conftest import DEVICES
from fakes.claiming import claiming, real
from fakes.driver import addr, u32

import qcom_ext
from qcom_ext import CLError, ConfigError, QcomExtWarning, buffer_from_image, image_with_buffer
from qcom_ext.binding.lib import C, ffi
from qcom_ext.ext.memory.flags import HOST_POINTER

pytestmark = [
    pytest.mark.skipif(
        ffi.sizeof("void *") != 8 or sys.byteorder != "little",
        reason="the byte layouts below are the LP64 little-endian ones",
    ),
    pytest.mark.skipif(
        not any(c.image_support for c in DEVICES), reason="needs a device with images"
    ),
]
EXTENSION = "cl_qcom_create_buffer_from_image"
KHR = "cl_khr_image2d_from_buffer"
DESC = struct.Struct("<I4x6Q2IQ")  # cl_image_desc, LP64: 72 bytes
mf = cl.mem_flags


@pytest.fixture
def device(monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    return next(c for c in DEVICES if c.image_support)


@pytest.fixture
def context(device):
    return cl.Context([device.device()])


def pitch_for(width: int, element: int) -> int:
    return -(-width * element // 64) * 64


class NativeDriver:
    """clCreateBufferFromImageQCOM + clGetDeviceImageInfoQCOM that record their arguments.

    The buffer handed back is a real one, large enough for the 64-byte-aligned rows the
    pitch query reports (as cl_uint for the row pitch and cl_int for the slice pitch,
    the types the extension's spec table prints).
    """

    def __init__(self, context, status: int = 0):
        self.context, self.status = context, status
        self.created, self.pitch_queries = [], []
        self._create_buffer = real("clCreateBuffer")
        self.images = {}

    def register(self, image, element: int) -> None:
        slices = max(image.depth, image.array_size, 1)
        rows = pitch_for(image.width, element) * image.height
        self.images[image.int_ptr] = rows * slices

    def create(self, image, flags, errcode):
        self.created.append((addr(image), int(flags), errcode != ffi.NULL))
        if self.status:
            errcode[0] = self.status
            return ffi.NULL
        ctx = ffi.cast("cl_context", self.context.int_ptr)
        return self._create_buffer(ctx, flags, self.images[addr(image)], ffi.NULL, errcode)

    def pitches(self, device, width, height, fmt, param, size, value, size_ret):
        raw = ffi.buffer(ffi.cast("char *", fmt), 8)[:]
        self.pitch_queries.append((addr(device), int(width), int(height), raw, int(param), size))
        order, data_type = struct.unpack("<II", raw)
        element = {C.CL_RGBA: 4, C.CL_R: 1}[order] * {C.CL_UNSIGNED_INT8: 1, C.CL_FLOAT: 4}[
            data_type
        ]
        row = pitch_for(width, element)
        data = u32(row) if param == 0x40C0 else struct.pack("<i", row * height)
        ffi.memmove(value, data, 4)
        size_ret[0] = 4
        return 0

    def substitutes(self):
        return {
            "clCreateBufferFromImageQCOM": self.create,
            "clGetDeviceImageInfoQCOM": self.pitches,
        }


def test_native_buffer_from_image(device, context):
    queue = cl.CommandQueue(context)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
    guarded = cl.create_image(context, mf.READ_ONLY | mf.HOST_READ_ONLY, fmt, (21, 9))
    image = cl.create_image(context, mf.READ_WRITE, fmt, (21, 9))
    fake = NativeDriver(context)
    fake.register(guarded, 4)
    fake.register(image, 4)
    with claiming(device.device_id, extensions=[EXTENSION], **fake.substitutes()):
        inherited = buffer_from_image(guarded)
        pair = buffer_from_image(image)
    assert fake.created == [
        (guarded.int_ptr, mf.READ_ONLY | mf.HOST_READ_ONLY, True),  # the image's flags
        (image.int_ptr, mf.READ_WRITE, True),
    ]
    assert inherited.buffer.flags & (mf.READ_ONLY | mf.HOST_READ_ONLY) == 0x104
    assert [q[4] for q in fake.pitch_queries] == [0x40C0, 0x40C0]  # 2D images: no slice pitch
    dev, width, height, raw, _, size = fake.pitch_queries[1]
    assert (dev, width, height, size) == (device.device_id, 21, 9, 8)
    assert raw == struct.pack("<II", 0x10B5, 0x10DA)  # CL_RGBA, CL_UNSIGNED_INT8
    assert (pair.path, pair.zero_copy, pair.row_pitch, pair.slice_pitch) == (
        "native",
        True,
        128,
        0,
    )
    assert isinstance(pair.buffer, cl.Buffer) and pair.image is image
    assert pair.sync_to_buffer(queue) is None and pair.sync_to_image(queue) is None
    pixels = np.random.default_rng(3).integers(0, 256, (9, 21, 4), dtype=np.uint8)
    pair.write_buffer(queue, pixels)  # rows land at the driver's 128-byte pitch
    raw_rows = np.empty(128 * 9, np.uint8)
    cl.enqueue_copy(queue, raw_rows, pair.buffer).wait()
    assert np.array_equal(raw_rows.reshape(9, 128)[:, : 21 * 4].reshape(9, 21, 4), pixels)
    assert np.array_equal(pair.read_buffer(queue), pixels)


def test_native_3d_asks_both_pitches(device, context):
    fmt = cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT)
    image = cl.create_image(context, mf.READ_WRITE, fmt, (5, 4, 3))
    fake = NativeDriver(context)
    fake.register(image, 4)
    with claiming(device.device_id, extensions=[EXTENSION], **fake.substitutes()):
        pair = buffer_from_image(image, mf.WRITE_ONLY)
    assert fake.created[0][1] == mf.WRITE_ONLY
    assert [q[4] for q in fake.pitch_queries] == [0x40C0, 0x40C1]
    assert (pair.row_pitch, pair.slice_pitch) == (64, 64 * 4)


def test_native_image_with_buffer(device, context):
    fake = NativeDriver(context)
    real_create = fake.create

    def create(image, flags, errcode):  # the image is made by qcom_ext: size it on arrival
        wrapped = cl.MemoryObject.from_int_ptr(addr(image), retain=True)
        fake.register(wrapped, 4)
        return real_create(image, flags, errcode)

    with claiming(
        device.device_id,
        extensions=[EXTENSION],
        clCreateBufferFromImageQCOM=create,
        clGetDeviceImageInfoQCOM=fake.pitches,
    ):
        pair = image_with_buffer(
            context,
            (30, 2, 4),
            ("RGBA", "UNSIGNED_INT8"),
            image_type="2d_array",
            flags=mf.READ_WRITE,
        )
    assert pair.path == "native" and pair.image.type == cl.mem_object_type.IMAGE2D_ARRAY
    assert fake.created[0][:2] == (pair.image.int_ptr, mf.READ_WRITE)
    assert (pair.row_pitch, pair.slice_pitch) == (128, 256)


def test_native_error_status(device, context):
    image = cl.create_image(
        context, mf.READ_WRITE, cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT), (4, 4)
    )
    fake = NativeDriver(context, status=C.CL_INVALID_VALUE)
    with (
        claiming(device.device_id, extensions=[EXTENSION], **fake.substitutes()),
        pytest.raises(CLError) as caught,
    ):
        buffer_from_image(image)
    assert caught.value.routine == "clCreateBufferFromImageQCOM" and caught.value.code == -30
    assert "flags CL_MEM_READ_WRITE on a 2d CL_R/CL_FLOAT image" in str(caught.value)


def test_native_implausible_pitch(device, context):
    image = cl.create_image(
        context, mf.READ_WRITE, cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT), (40, 4)
    )
    fake = NativeDriver(context)
    fake.register(image, 4)

    def small(device_, width, height, fmt, param, size, value, size_ret):
        ffi.memmove(value, u32(16), 4)
        size_ret[0] = 4
        return 0

    with (
        claiming(
            device.device_id,
            extensions=[EXTENSION],
            clCreateBufferFromImageQCOM=fake.create,
            clGetDeviceImageInfoQCOM=small,
        ),
        pytest.raises(CLError, match="row pitch 16 / slice pitch 0 cannot hold"),
    ):
        buffer_from_image(image)


def test_missing_entry_point_copies_with_one_warning(device, context):
    image = cl.create_image(
        context, mf.READ_WRITE, cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT), (4, 4)
    )
    with (
        claiming(device.device_id, extensions=[EXTENSION]),
        warnings.catch_warnings(record=True) as seen,
    ):
        warnings.simplefilter("always")
        pair = buffer_from_image(image)
    assert (pair.path, pair.zero_copy) == ("fallback", False)
    messages = [str(w.message) for w in seen if issubclass(w.category, QcomExtWarning)]
    assert len(messages) == 1 and "lacks clCreateBufferFromImageQCOM" in messages[0]


def test_missing_pitch_query_warns_once_and_takes_the_images_pitches(device, context):
    """The native buffer is made; only clGetDeviceImageInfoQCOM is missing: the route's
    one warning names it, and the pitches are clGetImageInfo's."""
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
    image = cl.create_image(context, mf.READ_WRITE, fmt, (21, 9))
    fake = NativeDriver(context)
    fake.register(image, 4)
    with (
        claiming(
            device.device_id, extensions=[EXTENSION], clCreateBufferFromImageQCOM=fake.create
        ),
        warnings.catch_warnings(record=True) as seen,
    ):
        warnings.simplefilter("always")
        pair = buffer_from_image(image)
    assert (pair.path, pair.zero_copy) == ("native", True) and fake.pitch_queries == []
    assert pair.row_pitch == image.row_pitch
    messages = [(str(w.message), w.filename) for w in seen if w.category is QcomExtWarning]
    assert len(messages) == 1 and "lacks clGetDeviceImageInfoQCOM" in messages[0][0]
    assert messages[0][1] == __file__  # attributed to the caller of buffer_from_image


def test_disabled_native_never_calls_the_driver(device, context, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", EXTENSION)
    image = cl.create_image(
        context, mf.READ_WRITE, cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT), (4, 4)
    )
    fake = NativeDriver(context)
    with claiming(device.device_id, extensions=[EXTENSION], **fake.substitutes()):
        pair = buffer_from_image(image)
    assert pair.path == "fallback" and fake.created == [] and fake.pitch_queries == []


class KhrDriver:
    """clCreateBuffer / clCreateImage that record their arguments and make real objects
    (the real device has no image2d_from_buffer: the image is made without the buffer)."""

    def __init__(self):
        self.buffers, self.images = [], []
        self._buffer, self._image = real("clCreateBuffer"), real("clCreateImage")

    def create_buffer(self, ctx, flags, size, host_ptr, errcode):
        self.buffers.append((addr(ctx), int(flags), int(size), host_ptr == ffi.NULL))
        handle = self._buffer(ctx, flags, size, host_ptr, errcode)
        self.buffers[-1] += (addr(handle),)
        return handle

    def create_image(self, ctx, flags, fmt, desc, host_ptr, errcode):
        raw_desc = DESC.unpack(ffi.buffer(ffi.cast("char *", desc), DESC.size)[:])
        raw_fmt = ffi.buffer(ffi.cast("char *", fmt), 8)[:]
        self.images.append((addr(ctx), int(flags), raw_fmt, raw_desc, host_ptr == ffi.NULL))
        plain = ffi.new("cl_image_desc *")
        plain.image_type, plain.image_width, plain.image_height = raw_desc[0:3]
        return self._image(ctx, flags, fmt, plain, ffi.NULL, errcode)

    def substitutes(self):
        return {"clCreateBuffer": self.create_buffer, "clCreateImage": self.create_image}


KHR_INFO = {C.CL_DEVICE_IMAGE_PITCH_ALIGNMENT: u32(16)}


def test_khr_image_over_buffer(device, context):
    fake = KhrDriver()
    with claiming(device.device_id, extensions=[KHR], info=KHR_INFO, **fake.substitutes()):
        pair = image_with_buffer(
            context, (33, 7), ("RGBA", "FLOAT"), flags=mf.READ_WRITE | mf.HOST_NO_ACCESS
        )
    row_pitch = 48 * 16  # 33 pixels rounded up to 16 (the pitch alignment), 16 bytes each
    assert (pair.path, pair.zero_copy, pair.row_pitch, pair.slice_pitch) == (
        "khr:cl_khr_image2d_from_buffer",
        True,
        row_pitch,
        0,
    )
    assert fake.buffers == [(context.int_ptr, 0x201, row_pitch * 7, True, pair.buffer.int_ptr)]
    ctx, flags, raw_fmt, raw_desc, no_host = fake.images[0]
    assert (ctx, flags, no_host) == (context.int_ptr, 0x201, True)
    assert raw_fmt == struct.pack("<II", 0x10B5, 0x10DE)  # CL_RGBA, CL_FLOAT
    assert raw_desc == (0x10F1, 33, 7, 0, 0, row_pitch, 0, 0, 0, pair.buffer.int_ptr)
    queue = cl.CommandQueue(context)
    assert pair.sync_to_buffer(queue) is None


def test_khr_is_only_for_new_2d_images(device, context):
    fake = KhrDriver()
    image = cl.create_image(
        context, mf.READ_WRITE, cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT), (4, 4)
    )
    with claiming(device.device_id, extensions=[KHR], info=KHR_INFO, **fake.substitutes()):
        existing = buffer_from_image(image)
        volume = image_with_buffer(context, (4, 4, 2), ("R", "FLOAT"))
    assert existing.path == volume.path == "fallback"
    assert fake.images == []  # neither was made through the Khronos tier


def test_khr_disabled_by_name(device, context, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", KHR)
    fake = KhrDriver()
    with claiming(device.device_id, extensions=[KHR], info=KHR_INFO, **fake.substitutes()):
        pair = image_with_buffer(context, (4, 4), ("R", "FLOAT"))
    assert pair.path == "fallback" and fake.images == []


def test_khr_driver_refusal(device, context):
    def refuse(ctx, flags, fmt, desc, host_ptr, errcode):
        errcode[0] = C.CL_INVALID_IMAGE_FORMAT_DESCRIPTOR
        return ffi.NULL

    fake = KhrDriver()
    with (
        claiming(
            device.device_id,
            extensions=[KHR],
            info=KHR_INFO,
            clCreateBuffer=fake.create_buffer,
            clCreateImage=refuse,
        ),
        pytest.raises(CLError, match="at row pitch 64 over a 256-byte buffer"),
    ):
        image_with_buffer(context, (16, 4), ("R", "FLOAT"))


@pytest.mark.parametrize("tier", ["native", "khr"])
@pytest.mark.parametrize(
    ("image_flags", "flags", "message"),
    [
        (mf.READ_WRITE, mf.USE_HOST_PTR, "CL_MEM_USE_HOST_PTR is not accepted"),
        (mf.READ_WRITE, mf.ALLOC_HOST_PTR, "CL_MEM_ALLOC_HOST_PTR is not accepted"),
        (mf.READ_WRITE, mf.COPY_HOST_PTR, "CL_MEM_COPY_HOST_PTR is not accepted"),
        (mf.READ_ONLY, mf.READ_WRITE, "the access must be compatible"),
        (mf.READ_WRITE | mf.USE_HOST_PTR, None, "created with CL_MEM_USE_HOST_PTR"),
    ],
)
def test_forbidden_flags_refused_before_the_driver(
    device, context, tier, image_flags, flags, message
):
    native, khr = NativeDriver(context), KhrDriver()
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
    host = np.zeros((4, 4, 4), np.uint8) if image_flags & mf.USE_HOST_PTR else None
    image = cl.create_image(context, image_flags, fmt, (4, 4), hostbuf=host)
    claims = {
        "native": {"extensions": [EXTENSION]},
        "khr": {"extensions": [KHR], "info": KHR_INFO},
    }[tier]
    with claiming(device.device_id, **claims, **native.substitutes(), **khr.substitutes()):
        path = qcom_ext.probe(device.device_id).path(EXTENSION)
        assert path == {"native": "native", "khr": f"khr:{KHR}"}[tier]
        with pytest.raises(ConfigError) as caught:
            buffer_from_image(image, flags)
        assert message in str(caught.value)
        if flags is not None and flags & HOST_POINTER:
            with pytest.raises(ConfigError, match=message):
                image_with_buffer(context, (4, 4), fmt, flags=flags | mf.READ_WRITE)
    assert native.created == [] and khr.buffers == [] and khr.images == []
