"""Zero-copy memory: external allocations (dma-buf, ION, AHardwareBuffer, ANativeWindowBuffer)
and page-aligned numpy arrays as OpenCL buffers and images.

Natively (``cl_qcom_ext_host_ptr`` family, qcom-extensions.md section 14) the allocation
is described by its ``cl_mem_*_host_ptr`` struct, passed as ``host_ptr`` with
``CL_MEM_USE_HOST_PTR | CL_MEM_EXT_HOST_PTR_QCOM``; the struct and any host mapping
live as long as the returned pyopencl object. Where the Qualcomm extension is absent
and its Khronos tier is there (``cl_khr_external_memory_dma_buf``,
``cl_khr_external_memory_android_hardware_buffer``), the handle goes to
``clCreate{Buffer,Image}WithProperties`` instead, still zero-copy
(:mod:`qcom_ext.ext.memory.khr_external`). Elsewhere a dma-buf is mapped (``mmap``)
and wrapped with ``CL_MEM_USE_HOST_PTR`` (one :class:`~qcom_ext.QcomExtWarning` says
so); ION, AHardwareBuffer and ANativeWindowBuffer objects exist only for Android
drivers, so importing them elsewhere raises :class:`~qcom_ext.ExtensionUnavailable`.
Protected memory, and any import into a protected context, is native or refused.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> frame = qcom_ext.aligned_empty((4, 256), np.float32, context=ctx)
>>> frame[:] = 1.5
>>> buf = qcom_ext.host_buffer(ctx, frame)           # zero-copy on every device
>>> buf.size, buf.hostbuf is frame
(4096, True)
>>> qcom_ext.ExternalMemory.dmabuf(7, cache_policy="uncached")  # for import_memory
ExternalMemory(kind='dmabuf', fd=7, pointer=None, cache_policy='uncached', protected=False)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from qcom_ext.binding.lib import C
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import ConfigError, QcomExtWarning
from qcom_ext.ext.context import context_info
from qcom_ext.ext.memory import external
from qcom_ext.ext.memory import khr_external as _khr
from qcom_ext.ext.memory import memobj as _memobj
from qcom_ext.ext.memory.external import (  # ExternalMemory, CACHE_POLICIES: public here
    CACHE_POLICIES,
    ExternalMemory,
    ImageSpec,
    check_fits,
    default_size,
    ext_mem_padding,
    image_spec,
    import_route,
    native_handle,
    page_size,
    vendor_format_extension,
)
from qcom_ext.ext.memory.flags import access_flags

__all__ = [
    "CACHE_POLICIES",
    "ExternalMemory",
    "aligned_empty",
    "host_buffer",
    "import_ahardwarebuffer",
    "import_android_native_buffer",
    "import_dmabuf",
    "import_ion",
    "import_memory",
]


def aligned_empty(
    shape: int | Sequence[int],
    dtype: Any = np.uint8,
    *,
    context: Any = None,
    alignment: int | None = None,
    padding: int | None = None,
) -> np.ndarray:
    """An uninitialised C-contiguous array starting on a page boundary.

    ``alignment`` defaults to the page size (the larger of the host's and, with
    ``context``, ``CL_DEVICE_PAGE_SIZE_QCOM``); ``padding`` bytes follow the data (default
    ``CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM`` of ``context``'s devices, else 0), and
    the allocation is rounded up to whole pages.

    >>> a = aligned_empty((3, 5), np.float32)
    >>> a.ctypes.data % 4096, a.shape, a.flags.c_contiguous
    (0, (3, 5), True)
    """
    caps = shared.context_caps(context) if context is not None else ()
    alignment = page_size(caps) if alignment is None else alignment
    padding = ext_mem_padding(caps) if padding is None else padding
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise ConfigError(f"alignment must be a positive power of two, got {alignment!r}")
    if not isinstance(padding, int) or padding < 0:
        raise ConfigError(f"padding must be a non-negative int, got {padding!r}")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(d, (int, np.integer)) or d < 0 for d in dims):
        raise ConfigError(f"shape must hold non-negative ints, got {shape!r}")
    dtype = plain_dtype(dtype, "aligned_empty")
    nbytes = prod(dims) * dtype.itemsize
    total = -(-(nbytes + padding) // alignment) * alignment
    raw = np.empty(total + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start : start + nbytes].view(dtype).reshape(dims)


_PLAIN_KINDS = "biufc"  # bool, signed, unsigned, floating, complex


def plain_dtype(dtype: Any, what: str) -> np.dtype:
    """``numpy.dtype(dtype)`` when it is a plain numeric one (bool, int, uint, float,
    complex, no fields), else ConfigError naming it: memory the device sees holds
    numbers, never PyObject pointers, strings or records.

    >>> plain_dtype("float32", "aligned_empty")
    dtype('float32')
    >>> plain_dtype(object, "aligned_empty")
    Traceback (most recent call last):
    ...
    qcom_ext.errors.ConfigError: aligned_empty: dtype object is not a plain numeric dtype \
(bool, integer, float or complex; no object, string, datetime or structured dtypes)
    """
    try:
        resolved = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what}: {dtype!r} is not a numpy dtype ({exc})") from None
    if resolved.kind not in _PLAIN_KINDS or resolved.fields or resolved.subdtype:
        raise ConfigError(
            f"{what}: dtype {resolved} is not a plain numeric dtype (bool, integer, float "
            "or complex; no object, string, datetime or structured dtypes)"
        )
    return resolved


def _bytes_after(array: np.ndarray) -> int:
    """Bytes from the array's first byte to the end of the allocation it views."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root.ctypes.data + root.nbytes - array.ctypes.data


def host_buffer(context: Any, array: np.ndarray, *, flags: str | int = "read_write") -> Any:
    """A ``pyopencl.Buffer`` over ``array`` itself (``CL_MEM_USE_HOST_PTR``), on every device.

    ``array`` must be C-contiguous, start on a page boundary (use :func:`aligned_empty`)
    and, on Adreno, be followed by ``CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM`` bytes; it
    stays alive as long as the buffer. Map the buffer (or finish the queue) before
    reading results on the host.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> import numpy as np
    >>> frame = qcom_ext.aligned_empty(1024, np.uint8, context=ctx)
    >>> qcom_ext.host_buffer(ctx, frame).hostbuf is frame  # the buffer is the array
    True
    """
    import pyopencl

    flags = access_flags(flags)
    if not isinstance(array, np.ndarray):
        raise ConfigError(f"host_buffer wraps a numpy array, got {type(array).__name__}")
    plain_dtype(array.dtype, "host_buffer")
    if not array.flags.c_contiguous or array.nbytes == 0:
        raise ConfigError(
            f"host_buffer needs a non-empty C-contiguous array, got shape "
            f"{array.shape} with strides {array.strides}"
        )
    if not flags & C.CL_MEM_READ_ONLY and not array.flags.writeable:
        raise ConfigError("the array is read-only: pass flags='read_only' or a writeable array")
    caps = shared.context_caps(context)
    page, padding = page_size(caps), ext_mem_padding(caps)
    if array.ctypes.data % page:
        raise ConfigError(
            f"array at {array.ctypes.data:#x} is not aligned to the {page}-byte page; "
            f"allocate it with qcom_ext.aligned_empty({array.shape}, {array.dtype.name!r}, "
            "context=ctx)"
        )
    if padding and _bytes_after(array) < array.nbytes + padding:
        raise ConfigError(
            f"{shared.labels(caps)} needs {padding} bytes of padding after host memory "
            "(CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM); allocate it with "
            f"qcom_ext.aligned_empty({array.shape}, {array.dtype.name!r}, context=ctx)"
        )
    return pyopencl.Buffer(context, flags | C.CL_MEM_USE_HOST_PTR, hostbuf=array)


def import_memory(
    context: Any,
    memory: ExternalMemory,
    size: int | None = None,
    *,
    flags: str | int = "read_write",
    image_format: Any = None,
    shape: tuple[int, int] | None = None,
    row_pitch: int = 0,
) -> Any:
    """A ``pyopencl.Buffer`` (or, with ``image_format`` and ``shape=(width, height)``, a
    2-D ``pyopencl.Image``) whose store is ``memory``, zero-copy.

    ``size`` defaults to the allocation minus the device's external-memory padding
    (AHardwareBuffer: 0, the driver infers it). Natively the ``cl_mem_*_host_ptr``
    struct goes to ``clCreateBuffer``/``clCreateImage`` with ``CL_MEM_USE_HOST_PTR |
    CL_MEM_EXT_HOST_PTR_QCOM``; on a Khronos tier the handle goes to
    ``clCreate{Buffer,Image}WithProperties`` (a dma-buf as a dup of its fd) and the
    object is acquired for OpenCL (hand it back with
    :func:`~qcom_ext.ext.memory.khr_external.release_external`); a dma-buf elsewhere is
    mapped and wrapped with ``CL_MEM_USE_HOST_PTR`` (one QcomExtWarning); other kinds
    raise ExtensionUnavailable. A protected context never takes a Khronos tier or a
    mapping.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> import os, warnings
    >>> fd = os.memfd_create("frame"); os.ftruncate(fd, 8192)
    >>> memory = qcom_ext.ExternalMemory.dmabuf(fd)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
    ...     buf = qcom_ext.import_memory(ctx, memory, 4096)
    >>> buf.size
    4096
    >>> os.close(fd)
    """
    if not isinstance(memory, ExternalMemory):
        raise ConfigError(f"memory must be an ExternalMemory, got {type(memory).__name__}")
    flags = access_flags(flags)
    image = None if image_format is None else image_spec(image_format, shape, row_pitch)
    if image is None and shape is not None:
        raise ConfigError("shape is given without image_format: pass both for an image")
    caps = shared.context_caps(context)
    if image is not None and image.vendor:
        _check_vendor_format(caps, image)
    protected = context_info(context).protected  # never a Khronos tier or a mapping
    route, ext, reason = import_route(caps, memory, protected_context=protected)
    if route == "native":
        return _import_native(context, caps, memory, size, flags, image)
    if route == "khr":
        return _import_khr(context, caps, memory, size, flags, image)
    note = (
        f"import of a {memory.what} on {shared.labels(caps)}: {ext} {reason}; "
        f"cache_policy={memory.cache_policy!r} has no effect on a host mapping"
    )
    result = _import_mapped(context, memory, size, flags, image)
    warnings.warn(note, QcomExtWarning, stacklevel=3)
    return result


def _check_vendor_format(caps: Sequence[DeviceCaps], image: ImageSpec) -> None:
    """ExtensionUnavailable unless every device has the Qualcomm format of ``image``."""
    route = shared.Route.of(caps, vendor_format_extension(image.fmt))
    if not route.native:
        route.refuse(
            f"format {image.fmt} exists only there (qcom_ext.nv12_image makes a portable "
            "NV12 frame)"
        )


def _import_khr(
    context: Any,
    caps: Sequence[DeviceCaps],
    memory: ExternalMemory,
    size: int | None,
    flags: int,
    image: ImageSpec | None,
) -> Any:
    """``memory`` through its Khronos tier (:mod:`qcom_ext.ext.memory.khr_external`):
    zero-copy, no host mapping, no padding; the driver picks the caching."""
    if memory.cache_policy != "writeback":  # the default says nothing: no warning for it
        warnings.warn(
            f"cache_policy={memory.cache_policy!r} has no effect on an import through "
            f"{_khr.TIERS[memory.kind][0]} (the driver picks the caching)",
            QcomExtWarning,
            stacklevel=4,
        )
    size = default_size(memory, size, 0) if image is None else 0
    check_fits(memory, size or (image.nbytes() if image else None), 0)
    value = memory.fd if memory.kind == "dmabuf" else memory.pointer
    assert value is not None  # ExternalMemory's constructors make sure of it
    return _khr.import_handle(context, caps, memory.kind, value, size, flags, image)


def _import_native(
    context: Any,
    caps: Sequence[DeviceCaps],
    memory: ExternalMemory,
    size: int | None,
    flags: int,
    image: ImageSpec | None,
) -> Any:
    return _memobj.adopt(*native_handle(context, caps, memory, size, flags, image))


def _import_mapped(
    context: Any, memory: ExternalMemory, size: int | None, flags: int, image: ImageSpec | None
) -> Any:
    import pyopencl

    need = default_size(memory, size, 0) if image is None else image.nbytes()
    check_fits(memory, need, 0)
    mapping = external.map_fd(memory.fd, need, flags, memory.what)
    flags |= C.CL_MEM_USE_HOST_PTR
    if image is None:
        return pyopencl.Buffer(context, flags, size=need, hostbuf=mapping)
    return pyopencl.create_image(
        context,
        flags,
        image.fmt.to_pyopencl(),
        shape=(image.width, image.height),
        pitches=(image.row_pitch,),
        hostbuf=mapping,
    )


def import_dmabuf(
    context: Any,
    fd: int,
    size: int | None = None,
    *,
    cache_policy: str = "writeback",
    flags: str | int = "read_write",
    protected: bool = False,
    image_format: Any = None,
    shape: tuple[int, int] | None = None,
    row_pitch: int = 0,
) -> Any:
    """Import a dma-buf (``cl_qcom_dmabuf_host_ptr``, or its Khronos tier
    ``cl_khr_external_memory_dma_buf``); elsewhere on Linux, mmap + USE_HOST_PTR.

    The fd stays the caller's (a mapping keeps its own reference; the Khronos import owns
    a dup of it). ``protected=True`` (for protected contexts) is native only: it never
    falls back to a host mapping nor takes the Khronos tier.
    See :func:`import_memory` for ``size``, ``flags`` and the image arguments.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> import os, warnings
    >>> fd = os.memfd_create("frame"); os.ftruncate(fd, 4096)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
    ...     buf = qcom_ext.import_dmabuf(ctx, fd)  # off Adreno: the fd mapped, USE_HOST_PTR
    >>> buf.size
    4096
    >>> os.close(fd)  # the mapping keeps its own reference
    """
    memory = ExternalMemory.dmabuf(fd, cache_policy=cache_policy, protected=protected)
    return import_memory(
        context,
        memory,
        size,
        flags=flags,
        image_format=image_format,
        shape=shape,
        row_pitch=row_pitch,
    )


def import_ion(
    context: Any,
    fd: int,
    host_ptr: Any,
    size: int | None = None,
    *,
    cache_policy: str = "writeback",
    flags: str | int = "read_write",
    image_format: Any = None,
    shape: tuple[int, int] | None = None,
    row_pitch: int = 0,
) -> Any:
    """Import an ION buffer (``cl_qcom_ion_host_ptr``; native only: ION is Adreno's).

    ``host_ptr`` is its page-aligned host mapping, or None for no host access.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> try:  # off Adreno nothing can stand in for an ION buffer
    ...     qcom_ext.import_ion(ctx, 3, 0x10000, 4096)
    ... except qcom_ext.ExtensionUnavailable as exc:
    ...     print(exc.extension)
    cl_qcom_ion_host_ptr
    """
    memory = ExternalMemory.ion(fd, host_ptr, cache_policy=cache_policy)
    return import_memory(
        context,
        memory,
        size,
        flags=flags,
        image_format=image_format,
        shape=shape,
        row_pitch=row_pitch,
    )


def import_ahardwarebuffer(
    context: Any,
    ahb_ptr: Any,
    size: int = 0,
    *,
    cache_policy: str = "writeback",
    flags: str | int = "read_write",
    image_format: Any = None,
    shape: tuple[int, int] | None = None,
    row_pitch: int = 0,
) -> Any:
    """Import an ``AHardwareBuffer*`` (``cl_qcom_android_ahardwarebuffer_host_ptr``, or its
    Khronos tier ``cl_khr_external_memory_android_hardware_buffer``; Android drivers only).
    ``size`` 0 lets the driver infer it; for images ``row_pitch`` is the AHB stride times
    the bytes per pixel (0 for planar YUV). The Khronos tier imports the whole buffer
    with its own format and size: a ``size``, ``image_format`` or ``shape`` it does not
    match is a ConfigError (the object made is released).

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> try:  # off Adreno nothing can stand in for an AHardwareBuffer
    ...     qcom_ext.import_ahardwarebuffer(ctx, 0x10000)
    ... except qcom_ext.ExtensionUnavailable as exc:
    ...     print(exc.extension)
    cl_qcom_android_ahardwarebuffer_host_ptr
    """
    memory = ExternalMemory.ahardwarebuffer(ahb_ptr, cache_policy=cache_policy)
    return import_memory(
        context,
        memory,
        size,
        flags=flags,
        image_format=image_format,
        shape=shape,
        row_pitch=row_pitch,
    )


def import_android_native_buffer(
    context: Any,
    anb_ptr: Any,
    size: int | None = None,
    *,
    cache_policy: str = "writeback",
    flags: str | int = "read_write",
    image_format: Any = None,
    shape: tuple[int, int] | None = None,
    row_pitch: int = 0,
) -> Any:
    """Import an ``ANativeWindowBuffer*`` (``cl_qcom_android_native_buffer_host_ptr``;
    native only; buffers and 2-D images).

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> try:  # off Adreno nothing can stand in for an ANativeWindowBuffer
    ...     qcom_ext.import_android_native_buffer(ctx, 0x10000, 4096)
    ... except qcom_ext.ExtensionUnavailable as exc:
    ...     print(exc.extension)
    cl_qcom_android_native_buffer_host_ptr
    """
    memory = ExternalMemory.android_native_buffer(anb_ptr, cache_policy=cache_policy)
    return import_memory(
        context,
        memory,
        size,
        flags=flags,
        image_format=image_format,
        shape=shape,
        row_pitch=row_pitch,
    )
