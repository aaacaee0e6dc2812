"""External memory as the ``cl_qcom_ext_host_ptr`` family describes it: which allocation
(:class:`ExternalMemory`: dma-buf, ION, AHardwareBuffer, ANativeWindowBuffer), the
``cl_mem_*_host_ptr`` struct that hands it to the driver, the checks on its size and
alignment, and the host mapping of a dma-buf. :mod:`qcom_ext.ext.memory.host_ptr` turns
these into pyopencl buffers and images.

>>> ExternalMemory.dmabuf(7, cache_policy="uncached")
ExternalMemory(kind='dmabuf', fd=7, pointer=None, cache_policy='uncached', protected=False)
>>> off_adreno = [DeviceCaps.from_info(extensions="", disabled=())]
>>> import_route(off_adreno, ExternalMemory.dmabuf(7))[0]  # a dma-buf can be mapped
'mapped'
>>> import_route(off_adreno, ExternalMemory.ion(3))  # an ION buffer cannot
Traceback (most recent call last):
...
qcom_ext.errors.ExtensionUnavailable: cl_qcom_ion_host_ptr is not available on ...
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qcom_ext.binding.lib import C, ffi, handle_int
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import ConfigError
from qcom_ext.ext.memory import memobj as _memobj
from qcom_ext.ext.memory.formats import ImageFormat, image_extent, parse_image_format

__all__ = [
    "BASE",
    "CACHE_POLICIES",
    "IOCOHERENT",
    "ExternalMemory",
    "ImageSpec",
    "check_fits",
    "default_size",
    "ext_mem_padding",
    "image_spec",
    "import_route",
    "map_fd",
    "native_handle",
    "page_size",
    "vendor_format_extension",
]

BASE = "cl_qcom_ext_host_ptr"


IOCOHERENT = "cl_qcom_ext_host_ptr_iocoherent"


CACHE_POLICIES = {
    "uncached": "CL_MEM_HOST_UNCACHED_QCOM",
    "writeback": "CL_MEM_HOST_WRITEBACK_QCOM",
    "writethrough": "CL_MEM_HOST_WRITETHROUGH_QCOM",
    "write_combining": "CL_MEM_HOST_WRITE_COMBINING_QCOM",
    "iocoherent": "CL_MEM_HOST_IOCOHERENT_QCOM",
}


@dataclass(frozen=True)
class _Kind:
    extension: str
    allocation_type: str  # CL_MEM_*_HOST_PTR_QCOM
    struct: str  # the cdef struct type
    what: str  # for messages
    khronos: str = ""  # the Khronos tier that imports it (khr_external.TIERS)


_KINDS = {
    "dmabuf": _Kind(
        "cl_qcom_dmabuf_host_ptr",
        "CL_MEM_DMABUF_HOST_PTR_QCOM",
        "cl_mem_dmabuf_host_ptr",
        "dma-buf",
        "cl_khr_external_memory_dma_buf",
    ),
    "ion": _Kind(
        "cl_qcom_ion_host_ptr", "CL_MEM_ION_HOST_PTR_QCOM", "cl_mem_ion_host_ptr", "ION buffer"
    ),
    "ahardwarebuffer": _Kind(
        "cl_qcom_android_ahardwarebuffer_host_ptr",
        "CL_MEM_ANDROID_AHARDWAREBUFFER_HOST_PTR_QCOM",
        "cl_mem_ahardwarebuffer_host_ptr",
        "AHardwareBuffer",
        "cl_khr_external_memory_android_hardware_buffer",
    ),
    "android_native_buffer": _Kind(
        "cl_qcom_android_native_buffer_host_ptr",
        "CL_MEM_ANDROID_NATIVE_BUFFER_HOST_PTR_QCOM",
        "cl_mem_android_native_buffer_host_ptr",
        "ANativeWindowBuffer",
    ),
}


def _policy_name(policy: str) -> str:
    key = str(policy).strip().lower().replace("-", "_")
    key = {"write_back": "writeback", "write_through": "writethrough"}.get(key, key)
    for name, token in CACHE_POLICIES.items():
        if key in (name, token.lower()):
            return name
    raise ConfigError(
        f"cache_policy {policy!r}: expected one of {', '.join(CACHE_POLICIES)} "
        f"(or the token names {', '.join(CACHE_POLICIES.values())})"
    )


def _fd(fd: Any, what: str) -> int:
    if not isinstance(fd, int) or isinstance(fd, bool) or fd < 0:
        raise ConfigError(f"{what} file descriptor must be a non-negative int, got {fd!r}")
    return fd


def _pointer(pointer: Any, what: str) -> int:
    value = handle_int(pointer) if pointer is not None else 0
    if not value:
        raise ConfigError(f"{what} pointer must be a non-NULL address (int or cffi pointer)")
    return value


@dataclass(frozen=True)
class ExternalMemory:
    """One allocation made outside OpenCL, as the ``cl_mem_*_host_ptr`` structs describe it.

    Build with the class methods; ``kind`` is ``dmabuf``, ``ion``, ``ahardwarebuffer`` or
    ``android_native_buffer``. ``pointer`` is the ION host mapping (may be None: no host
    access) or the ``AHardwareBuffer*`` / ``ANativeWindowBuffer*``.

    >>> ExternalMemory.dmabuf(5, cache_policy="uncached").extension
    'cl_qcom_dmabuf_host_ptr'
    """

    kind: str
    fd: int | None = None
    pointer: int | None = None
    cache_policy: str = "writeback"
    protected: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ConfigError(f"memory kind {self.kind!r}: expected one of {', '.join(_KINDS)}")
        object.__setattr__(self, "cache_policy", _policy_name(self.cache_policy))
        if self.protected and self.kind != "dmabuf":
            raise ConfigError(
                "protected=True exists for dma-bufs only (CL_MEM_DMABUF_HOST_PTR_PROTECTED_QCOM)"
            )

    @classmethod
    def dmabuf(
        cls, fd: int, *, cache_policy: str = "writeback", protected: bool = False
    ) -> ExternalMemory:
        """A dma-buf file descriptor (``protected``: for protected contexts, never mapped)."""
        return cls(
            "dmabuf", fd=_fd(fd, "dma-buf"), cache_policy=cache_policy, protected=bool(protected)
        )

    @classmethod
    def ion(
        cls, fd: int, host_ptr: Any = None, *, cache_policy: str = "writeback"
    ) -> ExternalMemory:
        """An ION buffer: its fd and, if mapped, its page-aligned host address."""
        pointer = None if host_ptr is None else _pointer(host_ptr, "ION host")
        return cls("ion", fd=_fd(fd, "ION"), pointer=pointer, cache_policy=cache_policy)

    @classmethod
    def ahardwarebuffer(cls, ahb_ptr: Any, *, cache_policy: str = "writeback") -> ExternalMemory:
        """An ``AHardwareBuffer*``."""
        return cls(
            "ahardwarebuffer",
            pointer=_pointer(ahb_ptr, "AHardwareBuffer"),
            cache_policy=cache_policy,
        )

    @classmethod
    def android_native_buffer(
        cls, anb_ptr: Any, *, cache_policy: str = "writeback"
    ) -> ExternalMemory:
        """An ``ANativeWindowBuffer*`` (``GraphicBuffer::getNativeBuffer()``)."""
        return cls(
            "android_native_buffer",
            pointer=_pointer(anb_ptr, "ANativeWindowBuffer"),
            cache_policy=cache_policy,
        )

    @property
    def extension(self) -> str:
        """The extension that imports this kind natively."""
        return _KINDS[self.kind].extension

    @property
    def what(self) -> str:
        """What this kind is called in messages (``dma-buf``, ``ION buffer``, ...)."""
        return _KINDS[self.kind].what


def page_size(caps: Sequence[DeviceCaps]) -> int:
    """The alignment host memory needs: the host page, or CL_DEVICE_PAGE_SIZE_QCOM if larger."""
    return max([mmap.PAGESIZE, *(c.limits.page_size or 0 for c in caps)])


def ext_mem_padding(caps: Sequence[DeviceCaps]) -> int:
    """CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM (0 where the query does not exist)."""
    return max([0, *(c.limits.ext_mem_padding or 0 for c in caps)])


def _policy_token(name: str, caps: Sequence[DeviceCaps]) -> int:
    route = shared.Route.of(caps, IOCOHERENT) if name == "iocoherent" else None
    if route is not None and not route.native:
        route.refuse("use cache_policy='writeback' and map/unmap around host access")
    return getattr(C, CACHE_POLICIES[name])


def vendor_format_extension(fmt: ImageFormat) -> str:
    """The extension that defines a Qualcomm channel order (sections 12 and 13)."""
    return "cl_qcom_compressed_image" if "COMPRESSED" in fmt.order_name else "cl_qcom_other_image"


@dataclass(frozen=True)
class ImageSpec:
    fmt: ImageFormat
    width: int
    height: int
    row_pitch: int  # 0 for the driver's own layout (Qualcomm formats)

    @property
    def vendor(self) -> bool:
        return self.fmt.vendor  # Qualcomm orders (sections 12, 13): the driver's layout

    def nbytes(self) -> int | None:
        if self.vendor:
            return None  # the driver's layout (clQueryImageInfoQCOM CL_IMAGE_SIZE_QCOM)
        return self.row_pitch * self.height


def image_spec(image_format: Any, shape: Any, row_pitch: int) -> ImageSpec:
    fmt = parse_image_format(image_format)
    width, height, _, _ = image_extent("2d", shape)
    if not isinstance(row_pitch, int) or row_pitch < 0:
        raise ConfigError(f"row_pitch must be a non-negative int, got {row_pitch!r}")
    spec = ImageSpec(fmt, width, height, row_pitch)
    if spec.vendor:
        if row_pitch:
            raise ConfigError(
                f"format {fmt}: Qualcomm planar and compressed images take "
                "row_pitch 0 (the driver's layout)"
            )
        return spec
    element = fmt.element_size
    pitch = row_pitch or width * element
    if pitch < width * element or pitch % element:
        raise ConfigError(
            f"row_pitch {row_pitch} for {width} pixels of {fmt}: expected a "
            f"multiple of {element} of at least {width * element}"
        )
    return ImageSpec(fmt, width, height, pitch)


def _allocation_size(fd: int) -> int | None:
    """Bytes behind ``fd``: st_size for files and memfds, SEEK_END for dma-bufs."""
    try:
        size = os.fstat(fd).st_size
    except OSError as exc:
        raise ConfigError(f"file descriptor {fd} is not open: {exc}") from None
    if size:
        return size
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        os.lseek(fd, 0, os.SEEK_SET)  # dma-bufs accept only offset 0 with SEEK_SET/END
    except OSError:
        return None
    return end or None


def _writable(fd: int) -> bool:
    import fcntl  # POSIX only, like the dma-buf fallback that needs it

    return (fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE) in (os.O_WRONLY, os.O_RDWR)


def map_fd(fd: int, length: int, flags: int, what: str) -> mmap.mmap:
    writable = _writable(fd)
    if not writable and not flags & C.CL_MEM_READ_ONLY:
        raise ConfigError(
            f"{what} fd {fd} is open read-only; pass flags='read_only' or open it for writing"
        )
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    return mmap.mmap(fd, length, mmap.MAP_SHARED, prot)


def check_fits(memory: ExternalMemory, need: int | None, padding: int) -> int | None:
    """The fd's allocation size, after checking ``need`` + padding fits in it."""
    if memory.fd is None:
        return None
    what = _KINDS[memory.kind].what
    have = _allocation_size(memory.fd)
    if have is not None and need is not None and need + padding > have:
        pad = f" + {padding} bytes of padding (CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM)"
        raise ConfigError(
            f"{what} fd {memory.fd} holds {have} bytes; {need} bytes"
            f"{pad if padding else ''} do not fit (allocate {need + padding})"
        )
    return have


def default_size(memory: ExternalMemory, size: int | None, padding: int) -> int:
    if size is not None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ConfigError(f"size must be a non-negative int, got {size!r}")
        if size == 0 and memory.kind != "ahardwarebuffer":
            raise ConfigError(
                "size 0 is accepted for AHardwareBuffers only (the driver "
                "infers it); give the buffer size"
            )
        return size
    if memory.kind == "ahardwarebuffer":
        return 0  # "Driver can calculate buffer size, if '0' is passed" (section 14.5)
    have = _allocation_size(memory.fd) if memory.fd is not None else None
    if not have or have <= padding:
        raise ConfigError(f"the size of this {_KINDS[memory.kind].what} is unknown: give size")
    return have - padding


def import_route(
    caps: Sequence[DeviceCaps], memory: ExternalMemory, *, protected_context: bool = False
) -> tuple[str, str, str]:
    """``("native", "", "")``; ``("khr", extension, reason)`` where every device takes the
    kind's Khronos tier (``cl_khr_external_memory_dma_buf`` /
    ``..._android_hardware_buffer``); ``("mapped", extension, reason)`` for a dma-buf
    that can be mapped instead; ExtensionUnavailable for everything else. Protected
    memory, or any memory of a protected context, is imported natively or not at all.

    >>> dma_buf_tier = DeviceCaps.from_info(extensions="cl_khr_external_memory "
    ...     "cl_khr_external_memory_dma_buf", disabled=())
    >>> import_route([dma_buf_tier], ExternalMemory.dmabuf(7))[0]
    'khr'
    >>> import_route([dma_buf_tier], ExternalMemory.dmabuf(7), protected_context=True)
    Traceback (most recent call last):
    ...
    qcom_ext.errors.ExtensionUnavailable: cl_qcom_dmabuf_host_ptr is not available on ...
    """
    kind = _KINDS[memory.kind]
    route = shared.Route.of(caps, kind.extension, BASE)
    if route.native:
        return "native", "", ""
    ext = route.lacking
    if memory.protected or protected_context:
        what = "protected dma-buf" if memory.protected else f"{kind.what} of a protected context"
        route.refuse(
            f"a {what} is never mapped into host memory nor imported through a Khronos tier "
            "(natively or not at all)",
            extension=ext,
        )
    if kind.khronos and all(c.path(kind.extension) == f"khr:{kind.khronos}" for c in caps):
        return "khr", ext, route.reason
    if memory.kind != "dmabuf" or route.unavailable():  # only a dma-buf can be mapped
        route.refuse(extension=ext)
    return "mapped", ext, route.reason


def native_handle(
    context: Any,
    caps: Sequence[DeviceCaps],
    memory: ExternalMemory,
    size: int | None,
    flags: int,
    image: ImageSpec | None,
) -> tuple[int, tuple[Any, ...]]:
    """A raw handle of ``memory`` imported natively, and what must live as long as it."""
    policy = _policy_token(memory.cache_policy, caps)
    padding = ext_mem_padding(caps)
    page = page_size(caps)
    if image is None:
        size = default_size(memory, size, padding)
        have = check_fits(memory, size or None, padding)
    else:
        have = check_fits(memory, image.nbytes(), padding)
    length = have or ((size or 0) + padding if image is None else 0)  # bytes a dma-buf maps
    keep: list[Any] = []  # the struct, and for a dma-buf its host mapping and cffi view
    try:
        struct, flags = _host_struct(memory, flags, keep, policy, page, length)
        if image is None:
            handle = _memobj.create_buffer(context, flags, size or 0, struct)
        else:
            pitch = 0 if image.vendor else image.row_pitch
            handle = _memobj.create_image(
                context, flags, image.fmt, image.width, image.height, pitch, struct
            )
    except BaseException:  # a failed import keeps no host mapping
        _unmap(keep)
        raise
    return handle, tuple(keep)


def _host_struct(
    memory: ExternalMemory, flags: int, keep: list[Any], policy: int, page: int, length: int
) -> tuple[Any, int]:
    """The ``cl_mem_*_host_ptr`` struct of ``memory`` and the flags that pass it; what
    must outlive the call goes to ``keep`` (``length``: the bytes a dma-buf maps)."""
    kind = _KINDS[memory.kind]
    struct = ffi.new(f"{kind.struct} *")
    keep.append(struct)
    struct.ext_host_ptr.allocation_type = getattr(C, kind.allocation_type)
    struct.ext_host_ptr.host_cache_policy = policy
    if memory.kind == "dmabuf":
        struct.dmabuf_filedesc = memory.fd
        if memory.protected:
            struct.ext_host_ptr.allocation_type = C.CL_MEM_DMABUF_HOST_PTR_PROTECTED_QCOM
            flags |= C.CL_MEM_HOST_NO_ACCESS  # protected memory has no host access
        else:
            if not length:
                raise ConfigError(f"the size of dma-buf fd {memory.fd} is unknown: give size")
            mapping = map_fd(memory.fd, length, flags, kind.what)
            keep.append(mapping)
            pointer = ffi.from_buffer("char[]", mapping)
            keep.append(pointer)
            address = int(ffi.cast("uintptr_t", pointer))
            if address % page:  # mmap aligns to the host page, the device may want more
                raise ConfigError(
                    f"the mapping of dma-buf fd {memory.fd} at {address:#x} is not "
                    f"aligned to the device's {page}-byte page "
                    "(CL_DEVICE_PAGE_SIZE_QCOM)"
                )
            struct.dmabuf_hostptr = pointer
    elif memory.kind == "ion":
        struct.ion_filedesc = memory.fd
        if memory.pointer is not None and memory.pointer % page:
            raise ConfigError(
                f"ION host pointer {memory.pointer:#x} is not aligned to the "
                f"{page}-byte page (CL_DEVICE_PAGE_SIZE_QCOM)"
            )
        struct.ion_hostptr = ffi.cast("void *", memory.pointer or 0)
    elif memory.kind == "ahardwarebuffer":
        struct.ahb_ptr = ffi.cast("void *", memory.pointer)
    else:
        struct.anb_ptr = ffi.cast("void *", memory.pointer)
    return struct, flags | C.CL_MEM_USE_HOST_PTR | C.CL_MEM_EXT_HOST_PTR_QCOM


def _unmap(keep: list[Any]) -> None:
    """Free what a failed native import made, newest first (a mapping cannot close while
    a cffi view of it lives), instead of leaving it to the traceback."""
    for item in reversed(keep):
        if isinstance(item, mmap.mmap):
            item.close()
        else:
            ffi.release(item)
