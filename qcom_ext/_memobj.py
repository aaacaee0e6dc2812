"""Memory objects made through cffi and handed to pyopencl (shared by host_ptr and images).

pyopencl cannot pass a ``cl_mem_*_host_ptr`` struct as ``host_ptr``, a Qualcomm
channel order, or ``image_desc.mem_object`` for a plane child, so those objects are
made here with ``clCreateBuffer`` / ``clCreateImage`` through cffi and wrapped with
``from_int_ptr(..., retain=False)``. Whatever the driver may still read (the struct,
a host mapping) rides on the pyopencl object as an attribute and dies with it. Every
error path releases the handles made so far.

>>> flag_names(access_flags("read_only") | C.CL_MEM_USE_HOST_PTR | C.CL_MEM_EXT_HOST_PTR_QCOM)
'CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR | CL_MEM_EXT_HOST_PTR_QCOM'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._format_names import ImageFormat
from ._lib import C, driver, ffi, handle_int
from .caps import DeviceCaps
from .errors import CLError, ConfigError

KEEPALIVE = "_qcom_ext_keepalive"

_ACCESS = {"read_write": "CL_MEM_READ_WRITE", "read_only": "CL_MEM_READ_ONLY",
           "write_only": "CL_MEM_WRITE_ONLY"}  # fmt: skip
_FLAG_NAMES = ("CL_MEM_READ_WRITE", "CL_MEM_WRITE_ONLY", "CL_MEM_READ_ONLY",
               "CL_MEM_USE_HOST_PTR", "CL_MEM_ALLOC_HOST_PTR", "CL_MEM_COPY_HOST_PTR",
               "CL_MEM_HOST_WRITE_ONLY", "CL_MEM_HOST_READ_ONLY", "CL_MEM_HOST_NO_ACCESS",
               "CL_MEM_KERNEL_READ_AND_WRITE", "CL_MEM_EXT_HOST_PTR_QCOM",
               "CL_MEM_OTHER_IMAGE_QCOM", "CL_MEM_COMPRESSED_IMAGE_QCOM",
               "CL_MEM_COMPRESSED_YUV_IMAGE_QCOM")  # fmt: skip
_HOST_PTR_BITS = ("CL_MEM_USE_HOST_PTR", "CL_MEM_ALLOC_HOST_PTR", "CL_MEM_COPY_HOST_PTR")
_ALLOWED_BITS = (*_ACCESS.values(), "CL_MEM_HOST_WRITE_ONLY", "CL_MEM_HOST_READ_ONLY",
                 "CL_MEM_HOST_NO_ACCESS")  # fmt: skip


def flag_names(flags: int) -> str:
    """``cl_mem_flags`` spelled out, for error messages."""
    names = [name for name in _FLAG_NAMES if flags & getattr(C, name)]
    rest = flags & ~sum(getattr(C, name) for name in _FLAG_NAMES)
    if rest:
        names.append(hex(rest))
    return " | ".join(names) or "0"


def access_flags(access: str | int) -> int:
    """``"read_write" | "read_only" | "write_only"`` (or those ``cl_mem_flags``, with
    optional ``CL_MEM_HOST_*`` bits) as flags; host-pointer bits are refused because
    qcom_ext sets them itself.

    >>> access_flags("read-only") == C.CL_MEM_READ_ONLY
    True
    """
    if isinstance(access, str):
        key = access.strip().lower().replace("-", "_")
        if key not in _ACCESS:
            raise ConfigError(f"flags {access!r}: expected one of {', '.join(_ACCESS)}")
        return getattr(C, _ACCESS[key])
    if not isinstance(access, int) or isinstance(access, bool):
        raise ConfigError(f"flags must be a name or cl_mem_flags, got {access!r}")
    host_ptr = access & sum(getattr(C, name) for name in _HOST_PTR_BITS)
    if host_ptr:
        raise ConfigError(
            f"flags {flag_names(access)}: {flag_names(host_ptr)} is set by qcom_ext itself "
            "(external memory and host buffers use CL_MEM_USE_HOST_PTR); pass only the "
            "access (read_write, read_only, write_only) and CL_MEM_HOST_* bits"
        )
    extra = access & ~sum(getattr(C, name) for name in _ALLOWED_BITS)
    if extra:
        raise ConfigError(f"flags {flag_names(access)}: {flag_names(extra)} is not accepted "
                          "here; pass only access and CL_MEM_HOST_* bits")  # fmt: skip
    kernel = [name for name in _ACCESS.values() if access & getattr(C, name)]
    if len(kernel) > 1:
        raise ConfigError(f"flags {flag_names(access)}: pick one of {', '.join(kernel)}")
    return access if kernel else access | C.CL_MEM_READ_WRITE


def context_caps(context: Any) -> tuple[DeviceCaps, ...]:
    """The capability report of every device of ``context``."""
    from .probe import probe

    devices = getattr(context, "devices", None)
    if devices is None or not hasattr(context, "int_ptr"):
        raise ConfigError(f"expected a pyopencl.Context, got {type(context).__name__}")
    return tuple(probe(device) for device in devices)


def labels(caps: Sequence[DeviceCaps]) -> str:
    return ", ".join(f"{c.label} ({c.device_name.strip()})" for c in caps)


def all_native(caps: Sequence[DeviceCaps], *extensions: str) -> bool:
    """Whether every device takes the native path of every extension."""
    return all(c.path(ext) == "native" for c in caps for ext in extensions)


def why_not_native(caps: Sequence[DeviceCaps], *extensions: str) -> tuple[str, str]:
    """(extension, reason) of the first extension some device lacks (the reason names
    that device when the context has several)."""
    for ext in extensions:
        for c in caps:
            if c.path(ext) != "native":
                reason = c.status(ext).reason
                return ext, reason if len(caps) == 1 else f"{c.label}: {reason}"
    raise ValueError("every extension is native")


def _out_handle(handle: Any, err: Any, routine: str, detail: str) -> int:
    if err[0] != 0 or handle == ffi.NULL:
        raise CLError(routine, err[0] or C.CL_INVALID_VALUE, detail)
    return int(ffi.cast("intptr_t", handle))


def create_buffer(context: Any, flags: int, size: int, host_ptr: Any) -> int:
    """``clCreateBuffer`` through cffi; a raw handle, or CLError naming the flags."""
    err = ffi.new("cl_int *")
    handle = driver.clCreateBuffer(
        ffi.cast("cl_context", handle_int(context)), flags, size, host_ptr, err
    )
    return _out_handle(handle, err, "clCreateBuffer", f"flags {flag_names(flags)}, size {size}")


def create_image(context: Any, flags: int, fmt: ImageFormat, width: int, height: int,
                 row_pitch: int = 0, host_ptr: Any = None,
                 parent: int | None = None) -> int:  # fmt: skip
    """``clCreateImage`` of a 2-D image through cffi (``parent``: ``image_desc.mem_object``)."""
    image_format = ffi.new("cl_image_format *", (fmt.order, fmt.data_type))
    desc = ffi.new("cl_image_desc *")
    desc.image_type = C.CL_MEM_OBJECT_IMAGE2D
    desc.image_width = width
    desc.image_height = height
    desc.image_row_pitch = row_pitch
    if parent is not None:
        desc.mem_object = ffi.cast("cl_mem", parent)
    err = ffi.new("cl_int *")
    handle = driver.clCreateImage(
        ffi.cast("cl_context", handle_int(context)), flags, image_format, desc,
        ffi.NULL if host_ptr is None else host_ptr, err,
    )  # fmt: skip
    of = f" of {parent:#x}" if parent is not None else ""
    detail = f"flags {flag_names(flags)}, format {fmt}, {width}x{height}{of}"
    return _out_handle(handle, err, "clCreateImage", detail)


def release(handle: int) -> None:
    driver.clReleaseMemObject(ffi.cast("cl_mem", handle))


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
