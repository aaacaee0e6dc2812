"""Memory objects made through cffi and handed to pyopencl (shared by the image and
external-memory modules).

pyopencl cannot pass a ``cl_mem_*_host_ptr`` struct as ``host_ptr``, a Qualcomm
channel order, ``image_desc.mem_object`` for a plane child or an image over a buffer,
nor call extension entry points such as ``clCreateBufferFromImageQCOM``, so those
objects are made here through cffi and wrapped with ``from_int_ptr(..., retain=False)``.
Whatever the driver may still read (the struct, a host mapping) rides on the pyopencl
object as an attribute and dies with it. Every error path releases the handles made so
far. The ``cl_mem_flags`` checks are :mod:`qcom_ext.ext.memory.flags`.

>>> err = ffi.new("cl_int *", C.CL_INVALID_BUFFER_SIZE)
>>> checked_handle(ffi.NULL, err, "clCreateBuffer", "flags CL_MEM_READ_WRITE, size 0")
Traceback (most recent call last):
...
qcom_ext.errors.CLError: clCreateBuffer failed: CL_INVALID_BUFFER_SIZE (-61): flags \
CL_MEM_READ_WRITE, size 0
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from qcom_ext.binding.lib import C, check_handle, driver, ffi, handle_int  # noqa: F401  (C: the doctest)
from qcom_ext.ext.memory.flags import flag_names
from qcom_ext.ext.memory.formats import ImageExtent, ImageFormat, image_desc

KEEPALIVE = "_qcom_ext_keepalive"


def checked_handle(handle: Any, err: Any, routine: str, detail: str) -> int:
    """The raw handle a ``clCreate*`` call returned, or CLError (a handle returned along
    with an error is released; a NULL with CL_SUCCESS is an error)."""
    return check_handle(handle, err, routine, detail, driver.clReleaseMemObject)


def create_buffer(context: Any, flags: int, size: int, host_ptr: Any) -> int:
    """``clCreateBuffer`` through cffi; a raw handle, or CLError naming the flags."""
    err = ffi.new("cl_int *")
    handle = driver.clCreateBuffer(
        ffi.cast("cl_context", handle_int(context)), flags, size, host_ptr, err
    )
    return checked_handle(handle, err, "clCreateBuffer", f"flags {flag_names(flags)}, size {size}")


def create_image(
    context: Any,
    flags: int,
    fmt: ImageFormat,
    width: int,
    height: int,
    row_pitch: int = 0,
    host_ptr: Any = None,
    parent: int | None = None,
    detail: str | None = None,
) -> int:
    """``clCreateImage`` of a 2-D image through cffi (``parent``: ``image_desc.mem_object``,
    the parent image of a plane or the buffer under an image); ``detail`` describes the
    image in the CLError (default: flags, format, size and parent)."""
    desc = image_desc("2d", ImageExtent(width, height), row_pitch=row_pitch, mem_object=parent)
    err = ffi.new("cl_int *")
    handle = driver.clCreateImage(
        ffi.cast("cl_context", handle_int(context)),
        flags,
        fmt.cdata(),
        desc,
        ffi.NULL if host_ptr is None else host_ptr,
        err,
    )
    if detail is None:
        of = f" of {parent:#x}" if parent is not None else ""
        detail = f"flags {flag_names(flags)}, format {fmt}, {width}x{height}{of}"
    return checked_handle(handle, err, "clCreateImage", detail)


@contextmanager
def released_on_error(*objects: Any) -> Iterator[None]:
    """Release ``objects`` (pyopencl memory objects) when the block raises, then re-raise:
    what a failing call made before the failure is freed at once, not when the garbage
    collector gets to it (the exception's traceback keeps the frames holding it alive)."""
    try:
        yield
    except BaseException:
        for obj in objects:
            obj.release()
        raise


def release(handle: int) -> None:
    driver.clReleaseMemObject(ffi.cast("cl_mem", handle))


def hold(memory: Any) -> Any:
    """A reference of qcom_ext's own to the ``cl_mem`` of the pyopencl memory object
    ``memory`` (``clRetainMemObject``, given back when it is collected), of the same
    pyopencl type: a caller's ``memory.release()`` cannot free what qcom_ext keeps (a
    recording's arguments, an :class:`~qcom_ext.ext.images.image_buffer.ImageBuffer`'s
    image and buffer, a wrapped ``BufferMatrix``), and the caller's object stays usable
    through it. An object released *before* it is handed over cannot be told from a
    live one (pyopencl keeps its ``int_ptr``): that one is the caller's to avoid."""
    return type(memory).from_int_ptr(memory.int_ptr, retain=True)


def wrap(handle: int) -> Any:
    """The pyopencl object owning ``handle`` (our reference is handed over)."""
    import pyopencl

    return pyopencl.MemoryObject.from_int_ptr(handle, retain=False)


def adopt(handle: int, keepalive: tuple[Any, ...] = ()) -> Any:
    """Wrap a fresh handle; on failure release it. ``keepalive`` lives as long as the
    pyopencl object (the struct and host mapping the driver may read)."""
    try:
        obj = wrap(handle)
    except BaseException:
        release(handle)
        raise
    if keepalive:
        setattr(obj, KEEPALIVE, keepalive)
    return obj
