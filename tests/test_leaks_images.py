"""Leak cycles (see tests/test_leaks.py) of the image objects qcom_ext makes: weight
images and image-buffer pairs, each on the device's own path and on the native one
through cffi stand-ins that hand back real objects of the real driver."""

from __future__ import annotations

import os

import numpy as np
import pyopencl as cl
import pytest
from _leakcheck import CYCLES, measure, reference_total
from fakes.claiming import claiming, real
from fakes.driver import addr, u32
from test_leaks import check, one_device, own_path, quiet  # noqa: F401  (autouse fixtures)

import qcom_ext
from qcom_ext import WeightImage
from qcom_ext.binding.lib import C, ffi

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc/self/statm (Linux)"
)
mf = cl.mem_flags


# ---- weight images ----

WEIGHTS = (  # (weights, center, separable)
    (np.arange(9.0).reshape(3, 3), (1, 1), False),
    (np.ones((4, 3, 5)), (2, 1), False),
    (np.array([[1.0, 2, 1, 0, 0], [1, 0, -1, 0, 0]]), (1, 1), True),
)


class WeightImageDriver:
    """Native weight images made real: clCreateImage of CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM
    becomes a real 2D image of the same bytes (rows of every phase stacked)."""

    def __init__(self):
        self._formats = real("clGetSupportedImageFormats")
        self._create = real("clCreateImage")
        self.created = 0

    def formats(self, ctx, flags, image_type, num_entries, formats, num_formats):
        if image_type != C.CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM:
            return self._formats(ctx, flags, image_type, num_entries, formats, num_formats)
        answer = [(C.CL_R, C.CL_HALF_FLOAT), (C.CL_R, C.CL_FLOAT)]
        if num_formats != ffi.NULL:
            num_formats[0] = len(answer)
        for i, (order, data_type) in enumerate(answer[:num_entries]):
            formats[i].image_channel_order, formats[i].image_channel_data_type = order, data_type
        return 0

    def create(self, ctx, flags, fmt, desc, host, errcode):
        if desc.image_type != C.CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM:
            return self._create(ctx, flags, fmt, desc, host, errcode)
        weight = ffi.cast("cl_weight_image_desc_qcom *", desc)
        fx, fy, phases = desc.image_width, desc.image_height, desc.image_array_size
        separable = weight.weight_desc.flags & C.CL_WEIGHT_IMAGE_SEPARABLE_QCOM
        rows, cols = (2, max(fx, fy)) if separable else (fy, fx)
        plain = ffi.new("cl_image_desc *")
        plain.image_type = C.CL_MEM_OBJECT_IMAGE2D
        plain.image_width, plain.image_height = cols, rows * phases
        self.created += 1
        return self._create(ctx, flags, fmt, plain, host, errcode)

    def substitutes(self):
        return {"clGetSupportedImageFormats": self.formats, "clCreateImage": self.create}


HOF_LIMITS = {0x4111: u32(16), 0x4112: u32(16), 0x4113: u32(16), 0x4114: u32(32), 0x4115: u32(32)}


@pytest.mark.parametrize("path", ["probed", "native"])
def test_weight_images(cl_context, device_caps, path):
    """WeightImage of 2-D, multi-phase and separable filters, read back, released."""
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    queue = cl.CommandQueue(cl_context)
    expected: dict[int, bytes] = {}
    paths = set()

    def cycle(i: int) -> None:
        weights, center, separable = WEIGHTS[i % len(WEIGHTS)]
        w = WeightImage(cl_context, weights, center=center, separable=separable)
        image = w.image
        host = np.empty(image.width * image.height * image.element_size, np.uint8)
        cl.enqueue_copy(queue, host, image, origin=(0, 0), region=(image.width, image.height))
        assert expected.setdefault(i % len(WEIGHTS), host.tobytes()) == host.tobytes()
        paths.add(w.path)
        w.release()

    live = lambda: reference_total(cl_context)  # noqa: E731
    if path == "native":
        fake = WeightImageDriver()
        with claiming(
            device_caps.device_id,
            extensions=["cl_qcom_accelerated_image_ops"],
            info=HOF_LIMITS,
            **fake.substitutes(),
        ):
            measurement = measure("weight images", cycle, live=live, drain=queue.finish)
        assert fake.created == CYCLES
    else:
        measurement = measure("weight images", cycle, live=live, drain=queue.finish)
    measurement.kind = f"weight images ({'/'.join(sorted(paths))})"
    check(measurement)
    assert paths == (
        {"native"}
        if path == "native"
        else {device_caps.path("cl_qcom_accelerated_image_ops").split(":")[0]}
    )


# ---- image-buffer pairs ----


class PairDriver:
    """clCreateBufferFromImageQCOM made real: a real buffer as large as the image at the
    64-byte-aligned row pitch that clGetDeviceImageInfoQCOM reports."""

    def __init__(self, context):
        self.context = context
        self._create_buffer = real("clCreateBuffer")
        self.created = 0

    @staticmethod
    def pitch(width: int, element: int) -> int:
        return -(-width * element // 64) * 64

    def create(self, image, flags, errcode):
        wrapped = cl.Image.from_int_ptr(addr(image), retain=True)
        size = self.pitch(wrapped.width, wrapped.element_size) * wrapped.height
        self.created += 1
        ctx = ffi.cast("cl_context", self.context.int_ptr)
        return self._create_buffer(ctx, flags, size, ffi.NULL, errcode)

    def pitches(self, device, width, height, fmt, param, size, value, size_ret):
        assert fmt.image_channel_order == C.CL_RGBA and param == 0x40C0  # 2D, 8-bit RGBA
        ffi.memmove(value, u32(self.pitch(width, 4)), 4)
        if size_ret != ffi.NULL:
            size_ret[0] = 4
        return 0

    def substitutes(self):
        return {
            "clCreateBufferFromImageQCOM": self.create,
            "clGetDeviceImageInfoQCOM": self.pitches,
        }


@pytest.mark.parametrize("path", ["probed", "native"])
def test_image_buffer_pairs(cl_context, device_caps, path):
    """image_with_buffer written through the buffer, buffer_from_image of a long-lived
    image synced, both released."""
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    queue = cl.CommandQueue(cl_context)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
    parent = cl.create_image(cl_context, mf.READ_WRITE, fmt, (21, 9))
    pixels = np.random.default_rng(0).integers(0, 256, (4, 8, 4), dtype=np.uint8)
    paths = set()

    def cycle(i: int) -> None:
        pair = qcom_ext.image_with_buffer(cl_context, (8, 4), "RGBA/UNSIGNED_INT8")
        pair.write_buffer(queue, pixels)
        pair.sync_to_image(queue)
        view = qcom_ext.buffer_from_image(parent)
        view.sync_to_buffer(queue)
        paths.update((pair.path, view.path))
        if i % 97 == 0:
            assert (pair.read_buffer(queue) == pixels).all()
        pair.buffer.release()
        pair.image.release()
        view.buffer.release()

    live = lambda: reference_total(cl_context, parent)  # noqa: E731
    if path == "native":
        fake = PairDriver(cl_context)
        with claiming(
            device_caps.device_id,
            extensions=["cl_qcom_create_buffer_from_image"],
            **fake.substitutes(),
        ):
            measurement = measure("image-buffer pairs", cycle, live=live, drain=queue.finish)
        assert fake.created == 2 * CYCLES
    else:
        measurement = measure("image-buffer pairs", cycle, live=live, drain=queue.finish)
    measurement.kind = f"image-buffer pairs ({'/'.join(sorted(paths))})"
    check(measurement)
    assert path != "native" or paths == {"native"}
