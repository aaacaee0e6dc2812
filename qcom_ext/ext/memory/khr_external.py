"""External memory through the Khronos tiers: ``cl_khr_external_memory_dma_buf`` (for
``cl_qcom_dmabuf_host_ptr``) and ``cl_khr_external_memory_android_hardware_buffer`` (for
``cl_qcom_android_ahardwarebuffer_host_ptr``), both on top of ``cl_khr_external_memory``.

The handle goes to ``clCreateBufferWithProperties`` / ``clCreateImageWithProperties``
as one property pair, ``{CL_EXTERNAL_MEMORY_HANDLE_*_KHR, handle, 0}``, with no
``host_ptr`` and none of the host-pointer flags. No ``CL_MEM_DEVICE_HANDLE_LIST_KHR`` is
passed: without it the memory belongs to every device of the context, and qcom_ext takes
this path only where every device of the context takes it.

* **dma-buf**: a successful import owns the file descriptor it is given (OpenCL-Docs,
  "Descriptions of External Memory Handle Types"), so the driver gets a ``dup`` of the
  caller's fd: the caller's fd stays the caller's, and a failed import closes the dup.
  Nothing is mapped or copied.
* **AHardwareBuffer**: the driver infers a buffer's size (``size`` 0) and an image's
  format and dimensions (``image_format`` and ``image_desc`` NULL); what it inferred is
  checked against what the caller asked for, and a mismatch releases the object.

Commands may use such memory only between an acquire and a release
(``clEnqueueAcquireExternalMemObjectsKHR`` / ``...Release...``): the import acquires it
once, on a short-lived queue of the context's first device, so that the result works
like the native import's; :func:`release_external` hands it back to its other user and
:func:`acquire_external` takes it again.

>>> props = handle_properties("CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR", 9)
>>> [hex(props[i]) for i in range(3)]
['0x2067', '0x9', '0x0']
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from qcom_ext.binding.lib import C, check, check_handle, driver, ffi, handle_int
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import ConfigError
from qcom_ext.ext.memory import memobj as _memobj
from qcom_ext.ext.memory.flags import flag_names
from qcom_ext.ext.memory.formats import ImageExtent, image_desc

__all__ = [
    "BASE",
    "TIERS",
    "acquire_external",
    "handle_properties",
    "import_handle",
    "release_external",
]

BASE = "cl_khr_external_memory"
#: memory kind -> (its Khronos tier, the handle type token)
TIERS = {
    "dmabuf": ("cl_khr_external_memory_dma_buf", "CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR"),
    "ahardwarebuffer": (
        "cl_khr_external_memory_android_hardware_buffer",
        "CL_EXTERNAL_MEMORY_HANDLE_ANDROID_HARDWARE_BUFFER_KHR",
    ),
}
#: Set on the pyopencl object of a Khronos import (acquire/release apply to it).
MARK = "_qcom_ext_khr_external"


def handle_properties(handle_type: str, value: int) -> Any:
    """The ``cl_mem_properties[]`` of one external handle: type, value, 0."""
    return ffi.new("cl_mem_properties[]", [getattr(C, handle_type), value, 0])


def import_handle(
    context: Any,
    caps: Sequence[DeviceCaps],
    kind: str,
    value: int,
    size: int,
    flags: int,
    image: Any = None,
) -> Any:
    """A pyopencl object over the external ``value`` (a dma-buf fd or an
    ``AHardwareBuffer*``) imported through its Khronos tier and acquired for OpenCL.

    ``size``: the buffer's bytes (an AHardwareBuffer's size is inferred by the driver
    and checked against a nonzero ``size`` afterwards);
    ``image``: an ``ImageSpec`` (None for a buffer). A dma-buf fd is duplicated first
    (the import owns what it is given); every failure releases what was made.
    """
    tier, handle_type = TIERS[kind]
    acquire = shared.require(caps[0], BASE, "clEnqueueAcquireExternalMemObjectsKHR")
    owned = os.dup(value) if kind == "dmabuf" else None
    try:
        props = handle_properties(handle_type, value if owned is None else owned)
        ahb = kind == "ahardwarebuffer"  # the driver infers the size: 0, or CL_INVALID_BUFFER_SIZE
        handle = _create(context, props, 0 if ahb else size, flags, kind, image)
    except BaseException:
        if owned is not None:
            os.close(owned)  # not imported: still ours
        raise
    try:
        if kind == "ahardwarebuffer":
            _check_inferred(handle, size, image)
        _enqueue(acquire, "clEnqueueAcquireExternalMemObjectsKHR", context, caps[0], handle)
    except BaseException:
        _memobj.release(handle)
        raise
    obj = _memobj.adopt(handle)
    setattr(obj, MARK, tier)
    return obj


def _create(context: Any, props: Any, size: int, flags: int, kind: str, image: Any) -> int:
    ctx, err = ffi.cast("cl_context", handle_int(context)), ffi.new("cl_int *")
    what = f"flags {flag_names(flags)}, {TIERS[kind][1]}"
    if image is None:
        handle = driver.clCreateBufferWithProperties(ctx, props, flags, size, ffi.NULL, err)
        routine, detail = "clCreateBufferWithProperties", f"{what}, size {size}"
    elif kind == "ahardwarebuffer":  # the driver infers format and dimensions
        handle = driver.clCreateImageWithProperties(
            ctx, props, flags, ffi.NULL, ffi.NULL, ffi.NULL, err
        )
        routine, detail = "clCreateImageWithProperties", what
    else:
        pitch = 0 if image.vendor else image.row_pitch
        desc = image_desc("2d", ImageExtent(image.width, image.height), row_pitch=pitch)
        handle = driver.clCreateImageWithProperties(
            ctx, props, flags, image.fmt.cdata(), desc, ffi.NULL, err
        )
        routine = "clCreateImageWithProperties"
        detail = f"{what}, format {image.fmt}, {image.width}x{image.height}"
    return _memobj.checked_handle(handle, err, routine, detail)


def _info_uint(getter: str, handle: int, param: int) -> int:
    value, size = ffi.new("unsigned char[8]"), ffi.new("size_t *")
    check(getattr(driver, getter)(ffi.cast("cl_mem", handle), param, 8, value, size), getter)
    return int.from_bytes(ffi.buffer(value, min(size[0], 8))[:], "little")


def _check_inferred(handle: int, size: int, image: Any) -> None:
    """What the driver inferred from an AHardwareBuffer against what the caller asked."""
    if image is None:
        have = _info_uint("clGetMemObjectInfo", handle, C.CL_MEM_SIZE)
        if size and have != size:
            raise ConfigError(
                f"the AHardwareBuffer holds {have} bytes; "
                "cl_khr_external_memory_android_hardware_buffer imports it whole "
                f"(pass size=0 or {have})"
            )
        return
    fmt = ffi.new("cl_image_format *")
    get = driver.clGetImageInfo
    check(get(ffi.cast("cl_mem", handle), C.CL_IMAGE_FORMAT, 8, fmt, ffi.NULL), "clGetImageInfo")
    width = _info_uint("clGetImageInfo", handle, C.CL_IMAGE_WIDTH)
    height = _info_uint("clGetImageInfo", handle, C.CL_IMAGE_HEIGHT)
    got = (fmt.image_channel_order, fmt.image_channel_data_type, width, height)
    wanted = (image.fmt.channel_order, image.fmt.channel_data_type, image.width, image.height)
    if got != wanted:
        raise ConfigError(
            f"the AHardwareBuffer is a {width}x{height} image of format "
            f"{got[0]:#x}/{got[1]:#x}, not the {image.width}x{image.height} {image.fmt} "
            "asked for (the Khronos import takes the buffer's own format and size)"
        )


def _enqueue(entry: Any, routine: str, context: Any, caps: DeviceCaps, handle: int) -> None:
    """``entry`` (acquire or release) of one memory object, on a short-lived in-order
    queue of ``caps``'s device, waited for."""
    err = ffi.new("cl_int *")
    queue = driver.clCreateCommandQueueWithProperties(
        ffi.cast("cl_context", handle_int(context)),
        ffi.cast("cl_device_id", caps.device_id),
        ffi.NULL,
        err,
    )
    check_handle(queue, err, "clCreateCommandQueueWithProperties", None)
    try:
        _enqueue_on(entry, routine, queue, handle)
        check(driver.clFinish(queue), "clFinish")
    finally:
        driver.clReleaseCommandQueue(queue)


def _enqueue_on(entry: Any, routine: str, queue: Any, handle: int) -> None:
    mems = ffi.new("cl_mem[1]", [ffi.cast("cl_mem", handle)])
    check(entry(queue, 1, mems, 0, ffi.NULL, ffi.NULL), routine)


def _handoff(queue: Any, memory: Any, name: str) -> None:
    import pyopencl

    if not isinstance(queue, pyopencl.CommandQueue):
        raise ConfigError(f"expected a pyopencl.CommandQueue, got {type(queue).__name__}")
    if getattr(memory, MARK, None) is None:
        queue.finish()  # a native or mapped import: nothing to hand over, commands done
        return
    routine = f"clEnqueue{name}ExternalMemObjectsKHR"
    entry = shared.require(shared.caps_of(queue)[0], BASE, routine)
    _enqueue_on(entry, routine, ffi.cast("cl_command_queue", queue.int_ptr), memory.int_ptr)
    queue.finish()


def release_external(queue: Any, memory: Any) -> None:
    """Hand imported ``memory`` back to its other user (the camera, the decoder, the
    GPU's graphics side): for a Khronos import, ``clEnqueueReleaseExternalMemObjectsKHR``
    on ``queue``; for every import, the queue is finished first.

    >>> import pyopencl as cl, qcom_ext
    >>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
    >>> buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 64)
    >>> release_external(queue, buf)  # not a Khronos import: the queue is finished
    """
    _handoff(queue, memory, "Release")


def acquire_external(queue: Any, memory: Any) -> None:
    """Take imported ``memory`` back for OpenCL after :func:`release_external`
    (``clEnqueueAcquireExternalMemObjectsKHR`` for a Khronos import).

    >>> import pyopencl as cl, qcom_ext
    >>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
    >>> acquire_external(queue, cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 64))
    """
    _handoff(queue, memory, "Acquire")
