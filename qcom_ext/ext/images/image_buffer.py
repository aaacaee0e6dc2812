"""A buffer that sees an image's pixels: :func:`buffer_from_image`, :func:`image_with_buffer`.

Kernels that want both views of the same pixels (sampled image reads and plain
pointer arithmetic) get an :class:`ImageBuffer`: ``.image`` and ``.buffer`` are
ordinary pyopencl objects, ``.row_pitch`` / ``.slice_pitch`` give the buffer's layout.

Paths, best first (``.path``):

* ``native``: ``clCreateBufferFromImageQCOM`` (cl_qcom_create_buffer_from_image,
  qcom-extensions.md §5). The buffer aliases the image from its origin pixel; the
  pitches come from ``clGetDeviceImageInfoQCOM``.
* ``khr:cl_khr_image2d_from_buffer``: only for :func:`image_with_buffer` of a 2D image:
  the buffer comes first and the image is created over it with a row pitch aligned to
  ``CL_DEVICE_IMAGE_PITCH_ALIGNMENT`` (portable-interop.md §2.5). An image that already
  exists cannot be put over a buffer, so :func:`buffer_from_image` skips this tier.
* ``fallback``: a separate, tightly packed buffer; :meth:`ImageBuffer.sync_to_buffer` and
  :meth:`ImageBuffer.sync_to_image` copy. On the other paths (``.zero_copy``) they are
  no-ops returning None, so code that calls them where the protocol says runs
  everywhere: ``sync_to_buffer`` after writing through the image and before reading
  through the buffer, ``sync_to_image`` the other way round.

The flags the extension forbids are refused on every path: USE/ALLOC/COPY_HOST_PTR,
access the image does not grant, ``CL_MEM_OBJECT_IMAGE1D_BUFFER`` images and images
created with ``CL_MEM_USE_HOST_PTR``.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> pair = qcom_ext.image_with_buffer(ctx, (5, 3), ("RGBA", "UNSIGNED_INT8"))
>>> pair.row_pitch >= 5 * 4, pair.path in ("native", "khr:cl_khr_image2d_from_buffer", "fallback")
(True, True)
>>> pixels = np.arange(3 * 5 * 4, dtype=np.uint8).reshape(3, 5, 4)
>>> _ = cl.enqueue_copy(queue, pair.image, pixels, origin=(0, 0), region=(5, 3))
>>> _ = pair.sync_to_buffer(queue)            # a copy on the fallback path, else None
>>> bool((pair.read_buffer(queue) == pixels).all())
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from qcom_ext.binding.lib import C, ffi
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import (
    CLError,
    ConfigError,
    EntryPointMissing,
)
from qcom_ext.ext.images.host_arrays import check_pixels
from qcom_ext.ext.images.info import computed_image_info, pitch_alignment, read_scalar
from qcom_ext.ext.memory import memobj as _memobj
from qcom_ext.ext.memory.flags import check_compatible, check_flags, flag_names, inherited
from qcom_ext.ext.memory.formats import (
    ImageExtent,
    ImageFormat,
    image_extent,
    image_type_name,
    parse_image_format,
)

__all__ = ["ImageBuffer", "buffer_from_image", "image_with_buffer"]

EXTENSION = "cl_qcom_create_buffer_from_image"
KHR = "cl_khr_image2d_from_buffer"
PATHS = ("native", f"khr:{KHR}", "fallback")
_TYPES = ("2d", "2d_array", "3d")  # pyopencl copies 1D images no further than this
_REASON = "cl_qcom_create_buffer_from_image forbids USE/ALLOC/COPY_HOST_PTR"
_COPY = "the buffer is a copy kept in sync instead"


@dataclass(eq=False)
class ImageBuffer:
    """An image and a buffer holding the same pixels; see the module docstring.

    The buffer's pixel ``(x, y, z)`` starts at byte
    ``z * slice_pitch + y * row_pitch + x * format.element_size``.
    """

    image: cl.Image
    buffer: cl.Buffer
    row_pitch: int
    slice_pitch: int
    zero_copy: bool
    path: str
    format: ImageFormat
    image_type: str
    extent: ImageExtent
    #: qcom_ext's own references to the image and the buffer (:func:`memobj.hold`): a
    #: caller's ``image.release()`` or ``buffer.release()`` cannot free them under it.
    _held: tuple[Any, ...] = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        self._held = (_memobj.hold(self.image), _memobj.hold(self.buffer))

    @property
    def shape(self) -> tuple[int, ...]:
        """The image shape in pyopencl order (``(width, height[, depth or layers])``)."""
        e = self.extent
        return (e.width, e.height) if self.image_type == "2d" else (e.width, e.height, e.slices)

    @property
    def array_shape(self) -> tuple[int, ...]:
        """The numpy shape of the pixels: ``([slices,] height, width[, channels])``."""
        e = self.extent
        lead = (e.height, e.width) if self.image_type == "2d" else (e.slices, e.height, e.width)
        return (*lead, *self.format.pixel_shape)

    def _check_queue(self, queue: cl.CommandQueue) -> None:
        if not isinstance(queue, cl.CommandQueue):
            raise ConfigError(f"expected a pyopencl CommandQueue, got {queue!r}")
        if queue.context != self.image.context:
            raise ConfigError("the queue belongs to another context than the image")

    def _region(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (0,) * len(self.shape), self.shape

    def sync_to_buffer(
        self, queue: cl.CommandQueue, wait_for: Sequence[cl.Event] | None = None
    ) -> cl.Event | None:
        """Make writes through the image visible through the buffer: a copy on the
        fallback path (its event), nothing when the two alias (None)."""
        return self._sync(queue, self.buffer, self.image, wait_for)

    def sync_to_image(
        self, queue: cl.CommandQueue, wait_for: Sequence[cl.Event] | None = None
    ) -> cl.Event | None:
        """Make writes through the buffer visible through the image (see sync_to_buffer)."""
        return self._sync(queue, self.image, self.buffer, wait_for)

    def _sync(
        self, queue: cl.CommandQueue, dst: Any, src: Any, wait_for: Sequence[cl.Event] | None
    ) -> cl.Event | None:
        self._check_queue(queue)
        if self.zero_copy:
            return None
        origin, region = self._region()
        return cl.enqueue_copy(
            queue, dst, src, offset=0, origin=origin, region=region, wait_for=wait_for
        )

    def _rect(self) -> dict[str, Any]:
        e, size = self.extent, self.format.element_size
        slice_pitch = self.slice_pitch or self.row_pitch * e.height
        return {
            "buffer_origin": (0, 0, 0),
            "host_origin": (0, 0, 0),
            "region": (e.width * size, e.height, e.slices),
            "buffer_pitches": (self.row_pitch, slice_pitch),
            "host_pitches": (e.width * size, e.width * size * e.height),
        }

    def read_buffer(
        self, queue: cl.CommandQueue, wait_for: Sequence[cl.Event] | None = None
    ) -> np.ndarray:
        """The pixels as the buffer holds them (row pitch honoured), as a numpy array of
        :attr:`array_shape` (blocking; sync first where the image was written)."""
        self._check_queue(queue)
        out = np.empty(self.array_shape, self.format.dtype)
        cl.enqueue_copy(
            queue, out, self.buffer, **self._rect(), wait_for=wait_for, is_blocking=True
        )
        return out

    def write_buffer(
        self,
        queue: cl.CommandQueue,
        pixels: np.ndarray,
        wait_for: Sequence[cl.Event] | None = None,
    ) -> cl.Event:
        """Write ``pixels`` (of :attr:`array_shape`) into the buffer at its pitches, leaving
        the row padding alone (blocking; call sync_to_image before reading the image)."""
        self._check_queue(queue)
        lead = self.array_shape[: len(self.array_shape) - len(self.format.pixel_shape)]
        target = f"the buffer of a {self.image_type} {self.format.name} image {self.shape}"
        array = check_pixels(pixels, self.format, lead, "pixels", target)
        return cl.enqueue_copy(
            queue, self.buffer, array, **self._rect(), wait_for=wait_for, is_blocking=True
        )

    def __repr__(self) -> str:
        return (
            f"<ImageBuffer {self.image_type} {self.format.name} {self.shape} "
            f"path={self.path} zero_copy={self.zero_copy} row_pitch={self.row_pitch}>"
        )


def _image_kind(image: Any) -> str:
    kind = image_type_name(int(image.type))
    if kind == "1d_buffer":
        raise ConfigError(
            "a CL_MEM_OBJECT_IMAGE1D_BUFFER image cannot be the parent of a buffer "
            "(cl_qcom_create_buffer_from_image forbids it; its buffer is already there: "
            "image.buffer)"
        )
    if kind not in _TYPES:
        raise ConfigError(
            f"buffer-from-image pairs are 2d, 2d_array or 3d images, got a {kind} image "
            "(pyopencl cannot copy 1D images for the fallback path)"
        )
    return kind


def _image_extent(image: Any, kind: str) -> ImageExtent:
    if kind == "2d":
        return image_extent(kind, (image.width, image.height))
    third = image.depth if kind == "3d" else image.array_size
    return image_extent(kind, (image.width, image.height, third))


def buffer_from_image(image: cl.Image, flags: int | None = None) -> ImageBuffer:
    """A buffer over an existing ``image``'s pixels (natively), or a copy kept in sync.

    ``flags`` default to the image's device- and host-access flags; given flags must be
    compatible with the image's (a READ_ONLY image gives no WRITE_ONLY buffer).

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> image = qcom_ext.create_image(ctx, (8, 4), "RGBA/UNSIGNED_INT8").image  # pyopencl.Image
    >>> pair = qcom_ext.buffer_from_image(image)
    >>> pair.image is image, pair.row_pitch >= 8 * 4, pair.path in ("native", "fallback")
    (True, True, True)
    """
    if not isinstance(image, cl.Image):
        raise ConfigError(f"expected a pyopencl.Image, got {type(image).__name__}")
    kind = _image_kind(image)
    parent = int(image.flags)
    if parent & C.CL_MEM_USE_HOST_PTR:
        raise ConfigError(
            "the image was created with CL_MEM_USE_HOST_PTR; cl_qcom_create_buffer_from_image "
            "forbids such parents (read the host memory directly instead)"
        )
    if flags is None:
        flags = inherited(parent)
    else:
        flags = check_flags(flags, "flags", reason=_REASON)
        check_compatible(flags, parent, "flags", f"the image ({flag_names(parent)})")
    fmt = parse_image_format(image.format)
    extent = _image_extent(image, kind)
    route = _route(image.context)
    if route.native:
        try:
            return _native_pair(image, flags, fmt, kind, extent, route)
        except EntryPointMissing as exc:
            route.downgrade(exc, _COPY)
    return _copy_pair(image, flags, fmt, kind, extent)


def _route(context: Any) -> shared.Route:
    """The route of the extension on ``context``; ExtensionUnavailable where a device has
    no path at all."""
    route = shared.route(context, EXTENSION)
    if route.unavailable():
        route.refuse()
    return route


def _native_pair(
    image: Any,
    flags: int,
    fmt: ImageFormat,
    kind: str,
    extent: ImageExtent,
    route: shared.Route,
) -> ImageBuffer:
    create = route.require("clCreateBufferFromImageQCOM")
    err = ffi.new("cl_int *")
    handle = create(ffi.cast("cl_mem", image.int_ptr), flags, err)
    buffer = _memobj.adopt(
        _memobj.checked_handle(
            handle,
            err,
            "clCreateBufferFromImageQCOM",
            f"flags {flag_names(flags)} on a {kind} {fmt.name} image",
        )
    )
    with _memobj.released_on_error(buffer):
        row_pitch, slice_pitch = _native_pitches(image, fmt, kind, extent, route)
    return ImageBuffer(image, buffer, row_pitch, slice_pitch, True, "native", fmt, kind, extent)


def _native_pitches(
    image: Any, fmt: ImageFormat, kind: str, extent: ImageExtent, route: shared.Route
) -> tuple[int, int]:
    """Pitches from clGetDeviceImageInfoQCOM (clGetImageInfo's where it is missing: the
    route's one warning says so)."""
    try:
        info = route.require("clGetDeviceImageInfoQCOM")
    except EntryPointMissing as exc:
        route.downgrade(exc, "the buffer's pitches are clGetImageInfo's", stacklevel=4)
        row_pitch, slice_pitch = int(image.row_pitch), int(image.slice_pitch)
    else:
        device, cfmt = ffi.cast("cl_device_id", route.caps[0].device_id), fmt.cdata()

        def ask(param: int) -> int:
            return read_scalar(
                "clGetDeviceImageInfoQCOM",
                lambda size, value, ret: info(
                    device, extent.width, extent.height, cfmt, param, size, value, ret
                ),
            )

        row_pitch = ask(C.CL_BUFFER_FROM_IMAGE_ROW_PITCH_QCOM)
        slice_pitch = ask(C.CL_BUFFER_FROM_IMAGE_SLICE_PITCH_QCOM) if kind != "2d" else 0
    row = extent.width * fmt.element_size
    if row_pitch < row or (kind != "2d" and slice_pitch < row_pitch * extent.height):
        raise CLError(
            "clGetDeviceImageInfoQCOM",
            C.CL_INVALID_VALUE,
            f"row pitch {row_pitch} / slice pitch {slice_pitch} cannot hold a {kind} "
            f"{fmt.name} image of {extent.width}x{extent.height} ({row} bytes a row)",
        )
    return row_pitch, (slice_pitch if kind != "2d" else 0)


def _tight(fmt: ImageFormat, kind: str, extent: ImageExtent) -> tuple[int, int, int]:
    """Row pitch, slice pitch and size of the packed layout clEnqueueCopyImageToBuffer uses."""
    row = extent.width * fmt.element_size
    slice_pitch = row * extent.height if kind != "2d" else 0
    return row, slice_pitch, row * extent.height * extent.slices


def _copy_pair(
    image: Any, flags: int, fmt: ImageFormat, kind: str, extent: ImageExtent
) -> ImageBuffer:
    row_pitch, slice_pitch, size = _tight(fmt, kind, extent)
    buffer = cl.Buffer(image.context, flags, size)
    return ImageBuffer(image, buffer, row_pitch, slice_pitch, False, "fallback", fmt, kind, extent)


def image_with_buffer(
    context: cl.Context,
    shape: Sequence[int],
    format: Any,
    *,
    flags: int = C.CL_MEM_READ_WRITE,
    image_type: str | int | None = None,
) -> ImageBuffer:
    """A new image and a buffer over the same pixels (zero-copy where the device allows).

    ``shape`` in pyopencl order: ``(width, height)`` makes a 2D image, ``(width,
    height, depth)`` a 3D one; ``image_type="2d_array"`` makes ``(width, height,
    layers)`` an array. ``format``: a ``pyopencl.ImageFormat`` or ``(order, data_type)``.
    ``flags`` (device/host access) apply to both objects.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> pair = qcom_ext.image_with_buffer(ctx, (16, 8), "RGBA/UNORM_INT8")
    >>> pair.shape, pair.array_shape
    ((16, 8), (8, 16, 4))
    """
    if not isinstance(context, cl.Context):
        raise ConfigError(f"expected a pyopencl.Context, got {type(context).__name__}")
    fmt = parse_image_format(format)
    if image_type is None:
        if not isinstance(shape, (tuple, list)) or len(shape) not in (2, 3):
            raise ConfigError(
                f"shape must be (width, height) or (width, height, depth), got {shape!r}"
            )
        image_type = "2d" if len(shape) == 2 else "3d"
    kind = image_type_name(image_type)
    if kind not in _TYPES:
        raise ConfigError(f"image_with_buffer makes 2d, 2d_array or 3d images, not {kind}")
    extent = image_extent(kind, shape)
    reason = "image_with_buffer allocates both objects itself; no host pointer is taken"
    flags = check_flags(flags, "flags", reason=reason)
    route = _route(context)
    if route.native:
        image = _new_image(context, flags, fmt, kind, extent)
        with _memobj.released_on_error(image):
            try:
                return _native_pair(image, flags, fmt, kind, extent, route)
            except EntryPointMissing as exc:
                route.downgrade(exc, _COPY)  # the image exists already: keep it, copy
                return _copy_pair(image, flags, fmt, kind, extent)
    if route.path == f"khr:{KHR}" and kind == "2d":
        return _khr_pair(context, flags, fmt, extent, route.caps)
    return _copy_pair(_new_image(context, flags, fmt, kind, extent), flags, fmt, kind, extent)


def _new_image(
    context: cl.Context, flags: int, fmt: ImageFormat, kind: str, extent: ImageExtent
) -> cl.Image:
    desc = cl.ImageDescriptor()
    desc.image_type = {
        "2d": cl.mem_object_type.IMAGE2D,
        "3d": cl.mem_object_type.IMAGE3D,
        "2d_array": cl.mem_object_type.IMAGE2D_ARRAY,
    }[kind]
    desc.shape = (
        (extent.width, extent.height)
        if kind == "2d"
        else (extent.width, extent.height, extent.slices)
    )
    desc.pitches = (0, 0)
    return cl.Image(context, flags, fmt.to_pyopencl(), desc=desc)


def _khr_pair(
    context: cl.Context,
    flags: int,
    fmt: ImageFormat,
    extent: ImageExtent,
    found: Sequence[DeviceCaps],
) -> ImageBuffer:
    """The buffer first, then a 2D image over it at the pitch every device accepts."""
    strictest = max(found, key=pitch_alignment)
    layout = computed_image_info(strictest, fmt, "2d", extent)
    buffer = _memobj.adopt(_memobj.create_buffer(context, flags, layout.size, ffi.NULL))
    detail = (
        f"{KHR}: a {extent.width}x{extent.height} {fmt.name} image at row pitch "
        f"{layout.row_pitch} over a {layout.size}-byte buffer"
    )
    with _memobj.released_on_error(buffer):
        image = _memobj.adopt(
            _memobj.create_image(
                context,
                flags,
                fmt,
                extent.width,
                extent.height,
                layout.row_pitch,
                parent=buffer.int_ptr,
                detail=detail,
            )
        )
    return ImageBuffer(image, buffer, layout.row_pitch, 0, True, f"khr:{KHR}", fmt, "2d", extent)
