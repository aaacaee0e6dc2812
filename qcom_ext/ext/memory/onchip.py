"""Buffers in on-chip global memory (GMEM): :func:`onchip_buffer`, :func:`scrub_onchip`.

Natively (cl_qcom_onchip_global_memory, qcom-extensions.md §6) the buffer is made by
``clCreateBufferWithProperties`` with ``{CL_MEM_ONCHIP_GLOBAL_QCOM, 1,
CL_MEM_ONCHIP_GLOBAL_OFFSET_QCOM, offset, 0}``; elsewhere it is an ordinary global
buffer. Either way the result is a ``pyopencl.Buffer`` (pass it to kernels as usual)
with three attributes: ``onchip`` (True natively), ``onchip_offset`` (the byte offset
into on-chip memory, None on the fallback) and ``path``.

The lifetime rule (guide-semantics-and-kernel-designs.md §6): on-chip contents do not
survive a kernel, except from one kernel to the next inside one replay of a
:class:`~qcom_ext.Recording`; they do not survive from one replay to the next, and the
first kernel of a replay must treat them as uninitialised. Global memory keeps its
contents, so a fallback device would hide code that breaks the rule;
:func:`scrub_onchip` between replays overwrites a fallback buffer so that such code
fails everywhere, not only on Adreno.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> scratch = qcom_ext.onchip_buffer(ctx, 4096)
>>> isinstance(scratch, cl.Buffer), scratch.size, scratch.path in ("native", "fallback")
(True, 4096, True)
>>> event = qcom_ext.scrub_onchip(queue, scratch)  # a fill of 0xFF; None natively
>>> (event is None) == scratch.onchip
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from qcom_ext.binding.lib import C, check_handle, driver, ffi
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import ConfigError, EntryPointMissing
from qcom_ext.ext.memory.flags import check_flags, flag_names

__all__ = ["SCRUB_BYTE", "onchip_buffer", "scrub_onchip"]

EXTENSION = "cl_qcom_onchip_global_memory"
SCRUB_BYTE = 0xFF
"""What :func:`scrub_onchip` writes: every byte 0xFF (float NaN, integer -1 / max)."""


def _positive_int(value: Any, what: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{what} must be an int >= {minimum}, got {value!r}")
    return int(value)


def onchip_buffer(
    context: cl.Context, size: int, offset: int = 0, flags: int = C.CL_MEM_READ_WRITE
) -> cl.Buffer:
    """A ``size``-byte buffer at byte ``offset`` of on-chip memory (module docstring).

    Natively, ``offset + size`` beyond ``CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM``
    (``caps.limits.onchip_global_mem_size``) is a ConfigError, never a silent move to
    global memory. ``flags``: device- and host-access bits (no host pointer).

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> buf = qcom_ext.onchip_buffer(ctx, 1024)
    >>> buf.size, buf.onchip == (buf.path == "native")
    (1024, True)
    """
    if not isinstance(context, cl.Context):
        raise ConfigError(f"expected a pyopencl.Context, got {type(context).__name__}")
    size = _positive_int(size, "size", minimum=1)
    offset = _positive_int(offset, "offset", minimum=0)
    flags = check_flags(flags, "flags", reason="on-chip buffers take no host pointer")
    route = shared.route(context, EXTENSION)
    if route.native:
        _check_fits(route.caps, size, offset)
    _check_alloc(route.caps, size)
    if route.native:
        try:
            return _native(context, size, offset, flags)
        except EntryPointMissing as exc:
            route.downgrade(exc, "the buffer is in global memory")
    return _tag(cl.Buffer(context, flags, size), False, None, "fallback")


def _check_fits(found: Sequence[DeviceCaps], size: int, offset: int) -> None:
    sizes = [(caps.limits.onchip_global_mem_size, caps) for caps in found]
    known = [(limit, caps) for limit, caps in sizes if limit is not None]
    if not known:
        return  # the driver did not say (see caps.problems): it decides
    limit, caps = min(known, key=lambda item: item[0])
    if offset + size > limit:
        raise ConfigError(
            f"offset {offset} + size {size} = {offset + size} bytes exceeds the on-chip "
            f"global memory of {caps.label} (CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM = {limit}); "
            "use a smaller buffer or an ordinary pyopencl.Buffer"
        )


def _check_alloc(found: Sequence[DeviceCaps], size: int) -> None:
    """ConfigError naming the size before a buffer over ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``
    of a device reaches the driver (it answered CL_INVALID_BUFFER_SIZE)."""
    for caps in found:
        limit = caps.limits.max_mem_alloc_size  # None: the probe could not read it
        if limit is not None and size > limit:
            raise ConfigError(
                f"size {size} bytes exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE = {limit} of "
                f"{caps.label}; an on-chip buffer (or its global-memory fallback) is one "
                "allocation"
            )


def _native(context: cl.Context, size: int, offset: int, flags: int) -> cl.Buffer:
    create = driver.function("clCreateBufferWithProperties")
    words = [C.CL_MEM_ONCHIP_GLOBAL_QCOM, 1, C.CL_MEM_ONCHIP_GLOBAL_OFFSET_QCOM, offset, 0]
    properties = ffi.new("cl_mem_properties[]", words)
    err = ffi.new("cl_int *")
    handle = create(
        ffi.cast("cl_context", context.int_ptr), properties, flags, size, ffi.NULL, err
    )
    detail = (
        f"properties: CL_MEM_ONCHIP_GLOBAL_QCOM=1, CL_MEM_ONCHIP_GLOBAL_OFFSET_QCOM="
        f"{offset}; flags {flag_names(flags)}; size {size}"
    )
    value = check_handle(
        handle, err, "clCreateBufferWithProperties", detail, driver.clReleaseMemObject
    )
    try:
        buffer = cl.MemoryObject.from_int_ptr(value, retain=False)
    except BaseException:
        driver.clReleaseMemObject(handle)
        raise
    return _tag(buffer, True, offset, "native")


def _tag(buffer: cl.Buffer, onchip: bool, offset: int | None, path: str) -> cl.Buffer:
    buffer.onchip = onchip
    buffer.onchip_offset = offset
    buffer.path = path
    return buffer


def scrub_onchip(
    queue: cl.CommandQueue, buffer: cl.Buffer, wait_for: Sequence[cl.Event] | None = None
) -> cl.Event | None:
    """Overwrite a fallback on-chip buffer with :data:`SCRUB_BYTE`; returns the fill's
    event. Natively a no-op returning None: the hardware keeps nothing between replays.

    Call it between replays (or after a lone kernel) in tests: code that reads on-chip
    contents it did not write in the same replay then fails on every device.

    >>> import numpy as np, pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> queue = cl.CommandQueue(ctx)
    >>> buf = qcom_ext.onchip_buffer(ctx, 16)
    >>> event = qcom_ext.scrub_onchip(queue, buf)  # None natively
    >>> out = np.zeros(16, np.uint8)
    >>> _ = cl.enqueue_copy(queue, out, buf, wait_for=[event] if event else None)
    >>> buf.onchip or bool((out == 0xFF).all())
    True
    """
    onchip = getattr(buffer, "onchip", None)
    if not isinstance(buffer, cl.Buffer) or onchip is None:
        raise ConfigError(
            f"scrub_onchip takes a buffer made by qcom_ext.onchip_buffer, got {buffer!r}"
        )
    if onchip:
        return None
    return cl.enqueue_fill_buffer(
        queue, buffer, np.uint8(SCRUB_BYTE), 0, buffer.size, wait_for=wait_for
    )
