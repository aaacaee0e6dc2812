"""Buffers beyond ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``: :func:`create_large_buffer`,
:func:`allocate_chunked` and :func:`large_buffer_limit`.

Natively (cl_qcom_large_buffer, qcom-extensions.md section 19) the buffer is made by
``clCreateBufferWithProperties`` with ``{CL_LARGE_BUFFER_QCOM (0x41A6), 1, 0}``, the
property llama.cpp passes on Adreno (``ggml-opencl.cpp``, PR ggml-org/llama.cpp#20997);
programs that touch such a buffer are built with ``-qcom-enable-large-buffer``, which
``build_program(..., large_buffer=True)`` adds on the native path only. No public
specification bounds the size: qcom_ext refuses more than ``CL_DEVICE_GLOBAL_MEM_SIZE``
(``caps.limits.max_large_buffer_size``) before any driver call, and the driver may
refuse less (the PR: it "does not guarantee to allocate buffer as large as the entire
DRAM"; llama.cpp itself keeps reporting ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` as its buffer
type's maximum and tries the property only when a plain ``clCreateBuffer`` failed).

Elsewhere a buffer within ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` is an ordinary one and a
larger request is a :class:`~qcom_ext.errors.BufferTooLargeError` naming the size, the
limit and the device; :func:`allocate_chunked` splits such data into buffers the device
can make. Results are ``pyopencl.Buffer`` objects with a ``path`` attribute (and
``large``: whether ``CL_LARGE_BUFFER_QCOM`` reached the driver).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> buf = qcom_ext.create_large_buffer(ctx, cl.mem_flags.READ_WRITE, 1 << 20)
>>> isinstance(buf, cl.Buffer), buf.size, buf.large == (buf.path == "native")
(True, 1048576, True)
>>> [b.size for b in qcom_ext.allocate_chunked(ctx, 10 << 20, chunk=4 << 20)]
[4194304, 4194304, 2097152]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from qcom_ext.binding.lib import C, check_handle, driver, ffi
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import BufferTooLargeError, ConfigError, EntryPointMissing
from qcom_ext.ext.memory.flags import ACCESS, HOST_ACCESS, check_flags, flag_names
from qcom_ext.ext.memory.memobj import adopt, create_buffer

__all__ = [
    "EXTENSION",
    "MAX_CHUNKS",
    "allocate_chunked",
    "create_large_buffer",
    "large_buffer_limit",
]

EXTENSION = "cl_qcom_large_buffer"
_GLOBAL = "CL_DEVICE_GLOBAL_MEM_SIZE"
_ALLOC = "CL_DEVICE_MAX_MEM_ALLOC_SIZE"
_HOST_DATA = C.CL_MEM_USE_HOST_PTR | C.CL_MEM_COPY_HOST_PTR
#: The most buffers :func:`allocate_chunked` makes for one request: each is a driver
#: object and a Python one, and the default chunk (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``, at
#: least a quarter of the global memory) needs a handful.
MAX_CHUNKS = 4096
_CHUNK_HINT = "qcom_ext.allocate_chunked splits it into buffers the device can make"


def _size(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{what} must be an int >= 1 (bytes), got {value!r}")
    return int(value)


def _route(context: Any) -> shared.Route:
    if not isinstance(context, cl.Context):
        raise ConfigError(f"expected a pyopencl.Context, got {type(context).__name__}")
    return shared.route(context, EXTENSION)


def _limit(found: Sequence[DeviceCaps], native: bool) -> tuple[int, str, str] | None:
    """``(bytes, query, device label)`` of the smallest bound of one buffer, None when no
    device reported it (then the driver decides)."""
    field, name = ("max_large_buffer_size", _GLOBAL) if native else ("max_mem_alloc_size", _ALLOC)
    known = [(getattr(c.limits, field), c.label) for c in found]
    known = [(limit, label) for limit, label in known if limit is not None]
    if not known:
        return None
    limit, label = min(known)
    return limit, name, label


def large_buffer_limit(context: cl.Context) -> int | None:
    """The largest buffer :func:`create_large_buffer` makes on ``context`` without a
    :class:`~qcom_ext.errors.BufferTooLargeError`: natively ``CL_DEVICE_GLOBAL_MEM_SIZE``
    (the driver may still refuse less), else ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``; the
    smallest over the context's devices, None where no device reported it.

    >>> import pyopencl as cl, qcom_ext
    >>> device = qcom_ext.probe().device()
    >>> qcom_ext.large_buffer_limit(cl.Context([device])) >= device.max_mem_alloc_size
    True
    """
    route = _route(context)
    limit = _limit(route.caps, route.native)
    return None if limit is None else limit[0]


def _host_data(flags: int, size: int, hostbuf: Any) -> tuple[int, Any]:
    """The size and the contiguous host buffer a request with ``hostbuf`` uses."""
    if hostbuf is None:
        if flags & _HOST_DATA:
            raise ConfigError(f"flags={flag_names(flags)} name a host pointer but no hostbuf")
        return _size(size, "size"), None
    if not flags & _HOST_DATA:
        raise ConfigError(
            f"hostbuf given with flags={flag_names(flags)}: add CL_MEM_COPY_HOST_PTR (copy "
            "it) or CL_MEM_USE_HOST_PTR (use it in place)"
        )
    view = memoryview(hostbuf)
    if not view.c_contiguous:
        raise ConfigError("hostbuf must be C-contiguous")
    size = view.nbytes if size in (0, None) else _size(size, "size")
    if size > view.nbytes:
        raise ConfigError(f"size {size} bytes exceeds hostbuf's {view.nbytes} bytes")
    return size, hostbuf


def create_large_buffer(
    context: cl.Context, flags: int = C.CL_MEM_READ_WRITE, size: int = 0, hostbuf: Any = None
) -> cl.Buffer:
    """A ``size``-byte ``pyopencl.Buffer`` that may exceed ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``
    where the devices take cl_qcom_large_buffer's native path (module docstring).

    ``flags``/``size``/``hostbuf`` as ``pyopencl.Buffer``: access bits, plus
    ``COPY_HOST_PTR`` or ``USE_HOST_PTR`` with ``hostbuf`` (``size`` 0: its size). A size
    over :func:`large_buffer_limit` raises
    :class:`~qcom_ext.errors.BufferTooLargeError` before any allocation.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> limit = qcom_ext.large_buffer_limit(ctx)
    >>> qcom_ext.create_large_buffer(ctx, cl.mem_flags.READ_WRITE, limit + 1)
    Traceback (most recent call last):
    ...
    qcom_ext.errors.BufferTooLargeError: size ... bytes exceeds ...
    """
    route = _route(context)
    allowed = ACCESS | HOST_ACCESS | _HOST_DATA | C.CL_MEM_ALLOC_HOST_PTR
    flags = check_flags(flags, "flags", allowed=allowed)
    size, hostbuf = _host_data(flags, size, hostbuf)
    if route.native:
        _check(route, size)
        try:
            return _tag(_create_native(context, flags, size, hostbuf), True, "native")
        except EntryPointMissing as exc:
            route = route.downgrade(exc, f"an ordinary buffer (at most {_ALLOC})")
    _check(route, size)
    return _tag(cl.Buffer(context, flags, size, hostbuf), False, "fallback")


def _check(route: shared.Route, size: int) -> None:
    limit = _limit(route.caps, route.native)
    if limit is not None and size > limit[0]:
        hint = "the driver may refuse less" if route.native else _CHUNK_HINT
        if not route.native and any(EXTENSION in caps.extensions for caps in route.caps):
            hint += f" ({EXTENSION} is advertised but its path here is not native)"
        raise BufferTooLargeError(size, *limit, hint=hint)


def _create_native(context: cl.Context, flags: int, size: int, hostbuf: Any) -> cl.Buffer:
    create = driver.function("clCreateBufferWithProperties")
    properties = ffi.new("cl_mem_properties[]", [C.CL_LARGE_BUFFER_QCOM, 1, 0])
    host = ffi.NULL if hostbuf is None else ffi.from_buffer(hostbuf)
    err = ffi.new("cl_int *")
    handle = create(ffi.cast("cl_context", context.int_ptr), properties, flags, size, host, err)
    detail = f"properties: CL_LARGE_BUFFER_QCOM=1; flags {flag_names(flags)}; size {size}"
    if int(err[0]) in (C.CL_INVALID_BUFFER_SIZE, C.CL_MEM_OBJECT_ALLOCATION_FAILURE):
        detail += f" (the driver refused this size; {_CHUNK_HINT})"
    value = check_handle(
        handle, err, "clCreateBufferWithProperties", detail, driver.clReleaseMemObject
    )
    keep = (hostbuf,) if flags & C.CL_MEM_USE_HOST_PTR else ()  # the driver reads it later
    return adopt(value, keep)


def _tag(buffer: cl.Buffer, large: bool, path: str) -> cl.Buffer:
    buffer.large = large
    buffer.path = path
    return buffer


def _chunk_size(found: Sequence[DeviceCaps], size: int, chunk: Any) -> int:
    """The chunk size: ``chunk`` checked, or the largest multiple of the base-address
    alignment within ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` (all of ``size`` when it fits)."""
    align = max(
        (caps.limits.mem_base_addr_align or caps.device().mem_base_addr_align) // 8
        for caps in found
    )
    limit = _limit(found, native=False)
    if chunk is None:
        if limit is None or size <= limit[0]:
            return size
        return limit[0] // align * align
    chunk = _size(chunk, "chunk")
    if chunk % align:
        raise ConfigError(
            f"chunk {chunk} bytes is not a multiple of {align} bytes, the base-address "
            "alignment (CL_DEVICE_MEM_BASE_ADDR_ALIGN) of the context's devices"
        )
    if limit is not None and chunk > limit[0]:
        raise BufferTooLargeError(chunk, *limit, hint="choose a smaller chunk")
    return chunk


def _bound(found: Sequence[DeviceCaps], size: int, step: int) -> None:
    """Refuse ``size`` bytes in chunks of ``step`` before anything is made: more than
    the global memory of a device of the context, or more than :data:`MAX_CHUNKS`."""
    memory, label = min((caps.device().global_mem_size, caps.label) for caps in found)
    if size > memory:
        raise BufferTooLargeError(
            size, memory, _GLOBAL, label, hint="allocate_chunked cannot hold more than that"
        )
    count = -(-size // step)
    if count > MAX_CHUNKS:
        raise ConfigError(
            f"size {size} bytes in chunks of {step} bytes is {count} buffers: "
            f"allocate_chunked makes at most {MAX_CHUNKS} (MAX_CHUNKS); choose a chunk "
            f"of at least {-(-size // MAX_CHUNKS)} bytes (or leave chunk=None)"
        )


def allocate_chunked(
    context: cl.Context, size: int, chunk: int | None = None, flags: int = C.CL_MEM_READ_WRITE
) -> list[cl.Buffer]:
    """``size`` bytes as ordinary buffers of ``chunk`` bytes each (the last one holds
    the rest), on any device. ``chunk`` must be a multiple of the devices'
    ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (in bytes; so every chunk boundary falls on an
    element boundary for any element type up to that size) and within
    ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``; the default is the largest such size. ``size``
    over the smallest ``CL_DEVICE_GLOBAL_MEM_SIZE`` of the context's devices is a
    :class:`~qcom_ext.errors.BufferTooLargeError`, more than :data:`MAX_CHUNKS` chunks a
    :class:`~qcom_ext.errors.ConfigError`, both before anything is allocated. Each buffer
    has ``chunk_offset``, its first byte's place in the whole. If one allocation fails,
    the buffers made before it are released and the error is raised.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> parts = qcom_ext.allocate_chunked(ctx, 3 << 20, chunk=1 << 20)
    >>> [(p.chunk_offset, p.size) for p in parts]
    [(0, 1048576), (1048576, 1048576), (2097152, 1048576)]
    """
    found = _route(context).caps
    flags = check_flags(flags, "flags", reason="chunks take no host pointer")
    size = _size(size, "size")
    step = _chunk_size(found, size, chunk)
    _bound(found, size, step)
    made: list[cl.Buffer] = []
    try:
        for offset in range(0, size, step):
            part = min(step, size - offset)
            buffer = adopt(create_buffer(context, flags, part, ffi.NULL))
            buffer.chunk_offset = offset
            made.append(buffer)
    except BaseException:
        for buffer in made:
            buffer.release()
        raise
    return made
