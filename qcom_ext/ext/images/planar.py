"""Planar YUV frames (NV12, P010, TP10) as plane images, natively or portably.

Natively (``cl_qcom_other_image`` + ``cl_qcom_extract_image_plane``, qcom-extensions.md
section 13) a frame is one read-only planar image (``CL_QCOM_NV12`` ...) over external
memory, and its planes are single-plane children made with ``clCreateImage`` whose
``image_desc.mem_object`` is the parent: same type and dimensions as the parent (the UV
child too), pitches 0, no host pointer, format ``CL_QCOM_NV12_Y`` / ``CL_QCOM_NV12_UV``.
With ``compressed=True`` (``cl_qcom_compressed_image``) the parent and children are the
``CL_QCOM_COMPRESSED_*`` formats.

Portably an NV12 frame is two ordinary images with the NV12 memory layout: luma
``CL_R/UNORM_INT8`` (W x H) and chroma ``CL_RG/UNORM_INT8`` (W/2 x H/2), or where the
device has no ``CL_RG`` images, ``CL_R/UNORM_INT8`` (W x H/2) of interleaved U,V bytes.
Over a dma-buf the planes are ``CL_MEM_USE_HOST_PTR`` images on its mapping (zero-copy).

Kernels take the two planes on every path and read pixels with ``qcom_ext_read_nv12f``
(``kernels/compat/cl_qcom_other_image.h``): pass :attr:`Nv12Image.kernel_args`.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> frame = qcom_ext.nv12_image(ctx, (64, 32))
>>> frame.path, frame.y.shape
('fallback', (64, 32))
>>> data = np.arange(48 * 64, dtype=np.uint8).reshape(48, 64)
>>> frame.write(queue, data)
>>> bool((frame.read(queue) == data).all())
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qcom_ext.binding.lib import C
from qcom_ext.device import shared
from qcom_ext.errors import ConfigError, PartialEnqueueError
from qcom_ext.ext.images.host_arrays import check_pixels
from qcom_ext.ext.images.image import (
    COMPRESSED,
    check_image_size,
    listed_formats,
    require_listed,
)
from qcom_ext.ext.images.yuv import check_nv12_shape, nv12_frame, nv12_planes
from qcom_ext.ext.memory import memobj as _memobj
from qcom_ext.ext.memory.external import (
    ExternalMemory,
    check_fits,
    image_spec,
    import_route,
    map_fd,
    native_handle,
)
from qcom_ext.ext.memory.flags import access_flags, flag_names
from qcom_ext.ext.memory.formats import ImageFormat, image_extent, parse_image_format
from qcom_ext.ext.program.launch import copy

__all__ = [
    "LAYOUTS",
    "Nv12Image",
    "PlanarImage",
    "nv12_image",
    "planar_image",
    "portable_reason",
]

OTHER, PLANES = "cl_qcom_other_image", "cl_qcom_extract_image_plane"


@dataclass(frozen=True)
class PlanarLayout:
    """The Qualcomm tokens of one planar format (parent, Y child, UV child; section 13)."""

    name: str
    parent: str
    y: str
    uv: str
    compressed_parent: str
    compressed_y: str
    compressed_uv: str
    data_type: str

    def formats(self, compressed: bool) -> tuple[ImageFormat, ImageFormat, ImageFormat]:
        names = (
            (self.compressed_parent, self.compressed_y, self.compressed_uv)
            if compressed
            else (self.parent, self.y, self.uv)
        )
        return tuple(parse_image_format((n, self.data_type)) for n in names)  # type: ignore[return-value]


LAYOUTS = {
    "nv12": PlanarLayout(
        "nv12",
        "CL_QCOM_NV12",
        "CL_QCOM_NV12_Y",
        "CL_QCOM_NV12_UV",
        "CL_QCOM_COMPRESSED_NV12",
        "CL_QCOM_COMPRESSED_NV12_Y",
        "CL_QCOM_COMPRESSED_NV12_UV",
        "CL_UNORM_INT8",
    ),
    "p010": PlanarLayout(
        "p010",
        "CL_QCOM_P010",
        "CL_QCOM_P010_Y",
        "CL_QCOM_P010_UV",
        "CL_QCOM_COMPRESSED_P010",
        "CL_QCOM_COMPRESSED_P010_Y",
        "CL_QCOM_COMPRESSED_P010_UV",
        "CL_QCOM_UNORM_INT10",
    ),
    "tp10": PlanarLayout(
        "tp10",
        "CL_QCOM_TP10",
        "CL_QCOM_TP10_Y",
        "CL_QCOM_TP10_UV",
        "CL_QCOM_COMPRESSED_TP10",
        "CL_QCOM_COMPRESSED_TP10_Y",
        "CL_QCOM_COMPRESSED_TP10_UV",
        "CL_QCOM_UNORM_INT10",
    ),
}

R8 = ImageFormat(C.CL_R, C.CL_UNORM_INT8)
RG8 = ImageFormat(C.CL_RG, C.CL_UNORM_INT8)


@dataclass(eq=False)
class PlanarImage:
    """A planar YUV frame: ``.y`` and ``.uv`` plane images (pyopencl) for kernels.

    ``native`` is the planar parent image (None on the portable path), ``path``
    ``"native"`` or ``"fallback"`` with ``reason``; ``uv_layout`` is ``"native"``,
    ``"rg"`` (W/2 x H/2 CL_RG) or ``"interleaved"`` (W x H/2 CL_R).
    """

    layout: str
    width: int
    height: int
    y: Any
    uv: Any
    native: Any
    compressed: bool
    path: str
    reason: str
    uv_layout: str

    @property
    def shape(self) -> tuple[int, int]:
        """``(width, height)``, as pyopencl gives image shapes."""
        return self.width, self.height

    @property
    def kernel_args(self) -> tuple[Any, Any]:
        """``(y, uv)``: the two image arguments ``qcom_ext_read_nv12f`` takes."""
        return self.y, self.uv


@dataclass(eq=False)
class Nv12Image(PlanarImage):
    """An NV12 frame; :meth:`write` and :meth:`read` move ``(H*3/2, W)`` uint8 frames."""

    def _uv_region(self) -> tuple[int, int]:
        if self.uv_layout == "interleaved":
            return self.width, self.height // 2
        return self.width // 2, self.height // 2  # RG plane; native children map W/2 x H/2

    def _check_host_access(self) -> None:
        if self.compressed:
            raise ConfigError(
                "a compressed NV12 frame has no host access: write its planes "
                "with a kernel (qcom_write_imagefv_* on Adreno)"
            )

    def write(self, queue: Any, frame: np.ndarray | tuple[np.ndarray, np.ndarray]) -> None:
        """Copy a frame (one ``(H*3/2, W)`` array or ``(y, uv)`` planes) into the planes.

        A driver failure on a plane raises :class:`~qcom_ext.errors.PartialEnqueueError`
        naming the planes already written (``enqueued``) and the one that failed.
        """
        import pyopencl

        self._check_host_access()
        y, uv = self._host_planes(frame)
        planes = (
            ("y", self.y, y, (self.width, self.height)),
            ("uv", self.uv, uv, self._uv_region()),
        )
        written: list[str] = []
        for name, image, host, region in planes:
            try:
                copy(queue, image, np.ascontiguousarray(host), origin=(0, 0), region=region)
            except pyopencl.Error as exc:  # say which planes hold the new frame already
                raise PartialEnqueueError(
                    getattr(exc, "routine", "clEnqueueWriteImage"),
                    getattr(exc, "code", -1),
                    "plane",
                    written,
                    name,
                ) from exc
            written.append(name)

    def _host_planes(self, frame: Any) -> tuple[np.ndarray, np.ndarray]:
        """The contiguous ``(y, uv)`` planes of a frame, checked before anything is copied:
        numpy uint8 arrays only (:mod:`~qcom_ext.ext.images.host_arrays`; nothing is
        converted), of this image's size."""
        parts = frame if isinstance(frame, tuple) else (frame,)
        for part in parts:
            if not isinstance(part, np.ndarray) or part.dtype != np.uint8:
                described = getattr(part, "dtype", type(part).__name__)
                raise ConfigError(
                    "an NV12 frame is a 2-D uint8 array (height * 3 // 2, width) or a "
                    f"tuple of uint8 (y, uv) planes; got {described} of shape {np.shape(part)}"
                )
        if isinstance(frame, tuple):
            frame = nv12_frame(*frame)
        y, uv = nv12_planes(np.ascontiguousarray(frame))
        if y.shape != (self.height, self.width):
            raise ConfigError(
                f"frame of {y.shape[1]}x{y.shape[0]} pixels written to a "
                f"{self.width}x{self.height} NV12 image"
            )
        luma = f"the {self.width}x{self.height} luma plane"
        chroma = f"the {self.width // 2}x{self.height // 2} chroma plane"
        half = (self.height // 2, self.width // 2)
        return (
            check_pixels(y, R8, (self.height, self.width), "luma", luma),
            check_pixels(uv, RG8, half, "chroma", chroma),
        )

    def read(self, queue: Any) -> np.ndarray:
        """The frame as one ``(H*3/2, W)`` uint8 array (blocking)."""

        self._check_host_access()
        frame = np.empty((self.height * 3 // 2, self.width), np.uint8)
        y, uv = nv12_planes(frame)
        copy(queue, y, self.y, origin=(0, 0), region=(self.width, self.height))
        chroma = np.empty_like(uv)
        copy(queue, chroma, self.uv, origin=(0, 0), region=self._uv_region())
        uv[...] = chroma
        return frame


def _validate(layout: str, shape: Any) -> tuple[PlanarLayout, int, int]:
    if layout not in LAYOUTS:
        raise ConfigError(f"planar layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    width, height, _, _ = image_extent("2d", shape)
    check_nv12_shape(width, height)  # every layout here is 4:2:0
    return LAYOUTS[layout], width, height


def _adopt_all(handles: list[tuple[int, tuple[Any, ...]]]) -> list[Any]:
    """Wrap handles in order; when one fails, release the ones not yet wrapped."""
    objects: list[Any] = []
    for index, (handle, keep) in enumerate(handles):
        try:
            objects.append(_memobj.adopt(handle, keep))
        except BaseException:
            for later, _ in handles[index + 1 :]:
                _memobj.release(later)
            raise
    return objects


def _native(
    context: Any,
    caps: Any,
    spec: PlanarLayout,
    width: int,
    height: int,
    memory: ExternalMemory,
    compressed: bool,
    flags: int,
    cls: type,
) -> PlanarImage:
    parent_fmt, y_fmt, uv_fmt = spec.formats(compressed)
    if compressed:
        what = "read-only compressed planar formats"
        require_listed(context, caps, parent_fmt, what, "read_only", other=True, compressed=True)
    # The planar parent is read-only (section 13); planes are written through children.
    parent, keep = native_handle(
        context, caps, memory, None, C.CL_MEM_READ_ONLY, image_spec(parent_fmt, (width, height), 0)
    )
    made = [(parent, keep)]
    try:
        for fmt in (y_fmt, uv_fmt):  # children: the parent's dimensions, no host pointer
            child = _memobj.create_image(context, flags, fmt, width, height, 0, None, parent)
            made.append((child, ()))
    except BaseException:
        for handle, _ in reversed(made):
            _memobj.release(handle)
        raise
    native, y, uv = _adopt_all(made)
    for child in (y, uv):  # a child alone keeps its parent (and the memory) alive
        setattr(child, _memobj.KEEPALIVE, (native,))
    return cls(
        spec.name,
        width,
        height,
        y,
        uv,
        native,
        compressed,
        "native",
        f"{OTHER} and {PLANES} are native",
        "native",
    )


def _uv_format(listed: Sequence[ImageFormat], flags: int) -> tuple[ImageFormat, str]:
    if RG8 in listed:
        return RG8, "rg"
    if R8 in listed:
        return R8, "interleaved"
    raise ConfigError(
        "the device supports neither CL_RG nor CL_R UNORM_INT8 images for "
        f"access {flag_names(flags)}: no portable NV12 layout"
    )


def _portable(
    context: Any,
    listed: Sequence[ImageFormat],
    width: int,
    height: int,
    memory: ExternalMemory | None,
    flags: int,
    row_pitch: int | None,
    uv_offset: int | None,
) -> tuple[Any, Any, str]:
    import pyopencl

    uv_fmt, uv_layout = _uv_format(listed, flags)
    uv_shape = (width // 2, height // 2) if uv_layout == "rg" else (width, height // 2)
    if memory is None:
        if row_pitch is not None or uv_offset is not None:
            raise ConfigError("row_pitch and uv_offset describe external memory: pass memory=")
        y = pyopencl.create_image(context, flags, R8.to_pyopencl(), shape=(width, height))
        uv = pyopencl.create_image(context, flags, uv_fmt.to_pyopencl(), shape=uv_shape)
        return y, uv, uv_layout
    pitch = width if row_pitch is None else row_pitch
    if not isinstance(pitch, int) or pitch < width:
        raise ConfigError(f"row_pitch {row_pitch!r}: expected an int of at least {width}")
    offset = pitch * height if uv_offset is None else uv_offset
    if not isinstance(offset, int) or offset < pitch * height:
        raise ConfigError(
            f"uv_offset {uv_offset!r}: the chroma plane starts after the "
            f"{pitch * height} bytes of luma"
        )
    need = offset + pitch * (height // 2)
    check_fits(memory, need, 0)
    view = memoryview(map_fd(memory.fd, need, flags, "dma-buf"))
    flags |= C.CL_MEM_USE_HOST_PTR
    y = pyopencl.create_image(
        context,
        flags,
        R8.to_pyopencl(),
        shape=(width, height),
        pitches=(pitch,),
        hostbuf=view[: pitch * height],
    )
    uv = pyopencl.create_image(
        context,
        flags,
        uv_fmt.to_pyopencl(),
        shape=uv_shape,
        pitches=(pitch,),
        hostbuf=view[offset:need],
    )
    return y, uv, uv_layout


def planar_image(
    context: Any,
    shape: tuple[int, int],
    layout: str = "nv12",
    *,
    memory: ExternalMemory | None = None,
    compressed: bool = False,
    flags: str | int = "read_only",
    row_pitch: int | None = None,
    uv_offset: int | None = None,
) -> PlanarImage:
    """A planar frame of ``shape=(width, height)`` (even) and ``layout`` nv12/p010/tp10.

    Native when every device has ``cl_qcom_other_image``, ``cl_qcom_extract_image_plane``
    (and ``cl_qcom_compressed_image`` for ``compressed``) and ``memory`` is importable
    natively: the planar parent lives in external memory. Otherwise NV12 takes the
    portable two-image layout (over ``memory`` when it is a dma-buf, described by
    ``row_pitch`` and ``uv_offset``, default ``width`` and ``row_pitch * height``),
    uncompressed; P010 and TP10 have no portable layout (ExtensionUnavailable).
    ``flags`` applies to the plane images the kernels see.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> frame = qcom_ext.planar_image(ctx, (16, 8), "nv12")  # no external memory: portable
    >>> frame.path, frame.y.shape, frame.shape
    ('fallback', (16, 8), (16, 8))
    """
    spec, width, height = _validate(layout, shape)
    flags = access_flags(flags)
    if not isinstance(compressed, bool):
        raise ConfigError(f"compressed must be True or False, got {compressed!r}")
    if memory is not None and not isinstance(memory, ExternalMemory):
        raise ConfigError(f"memory must be an ExternalMemory, got {type(memory).__name__}")
    route = shared.route(context, OTHER, PLANES, *((COMPRESSED,) if compressed else ()))
    reason = portable_reason(route, spec.name, memory)
    check_image_size(route.caps, width, height)  # as create_image: the planes have these sizes
    cls = Nv12Image if spec.name == "nv12" else PlanarImage
    if reason is None:
        assert memory is not None  # portable_reason: native needs external memory
        return _native(context, route.caps, spec, width, height, memory, compressed, flags, cls)
    listed = listed_formats(context, route.caps, flags)
    y, uv, uv_layout = _portable(
        context, listed, width, height, memory, flags, row_pitch, uv_offset
    )
    return cls(spec.name, width, height, y, uv, None, False, "fallback", reason, uv_layout)


def portable_reason(route: shared.Route, layout: str, memory: ExternalMemory | None) -> str | None:
    """The one decision of a planar frame: None where it is native (every device takes
    ``route``'s extensions natively and imports ``memory`` natively), else why it takes
    the portable two-image layout; ExtensionUnavailable (through ``route.refuse``) where
    that layout cannot stand in: not NV12, no portable path, or memory that is not a
    dma-buf (only a dma-buf can be mapped to back the portable planes).
    """
    if memory is None:
        reason = route.reason
        if route.native:
            reason = "native planar images live in external memory (no memory= given)"
    else:
        imported, _, why = import_route(route.caps, memory)  # raises for memory no path takes
        if route.native and imported == "native":
            return None
        reason = f"{memory.extension}: {why}" if route.native else route.reason
    if layout != "nv12":
        detail = f"the portable planar layout covers NV12 only ({layout.upper()} needs "
        route.refuse(detail + "10-bit planar formats)", reason=reason)
    if route.unavailable(OTHER):
        route.refuse(reason=reason)
    if memory is not None and memory.kind != "dmabuf":
        route.refuse("only a dma-buf can back the portable planes (it is mapped)", reason=reason)
    return reason


def nv12_image(
    context: Any,
    shape: tuple[int, int],
    *,
    memory: ExternalMemory | None = None,
    compressed: bool = False,
    flags: str | int = "read_only",
    row_pitch: int | None = None,
    uv_offset: int | None = None,
) -> Nv12Image:
    """An NV12 frame: :func:`planar_image` with ``layout="nv12"``.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> qcom_ext.nv12_image(ctx, (641, 480))
    Traceback (most recent call last):
    ...
    qcom_ext.errors.ConfigError: NV12 frame 641x480: width and height must be even ...
    """
    image = planar_image(
        context,
        shape,
        "nv12",
        memory=memory,
        compressed=compressed,
        flags=flags,
        row_pitch=row_pitch,
        uv_offset=uv_offset,
    )
    assert isinstance(image, Nv12Image)
    return image
