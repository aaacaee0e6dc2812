"""An image's layout (pitches, size, alignments) before it exists: :func:`query_image_info`.

Natively this is ``clQueryImageInfoQCOM`` (cl_qcom_extended_query_image_info,
qcom-extensions.md §7). Where only the Khronos tier ``cl_ext_image_requirements_info``
is there (Adreno 740/750 drivers advertise both), ``clGetImageRequirementsInfoEXT``
answers the row pitch alignment, size, base address alignment and maximum dimensions in
a short-lived context of the device, and the pitches follow from the alignments. Elsewhere
the layout is computed from the core rules: a row is ``width x element size`` rounded up
to ``CL_DEVICE_IMAGE_PITCH_ALIGNMENT`` pixels, a slice is ``row pitch x height``. That
is the layout qcom_ext itself gives an image created over a buffer
(:func:`qcom_ext.image_with_buffer`).

>>> import qcom_ext
>>> info = qcom_ext.query_image_info(qcom_ext.probe().device(), ("RGBA", "UNORM_INT8"),
...                                  (640, 480))
>>> info.element_size, info.row_pitch >= 640 * 4, info.size >= info.row_pitch * 480
(4, True, True)
>>> info.path in ("native", "khr:cl_ext_image_requirements_info", "fallback")
True
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import C, check_handle, driver, ffi
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.probe import probe
from qcom_ext.errors import (
    CLError,
    ConfigError,
    EntryPointMissing,
)
from qcom_ext.ext.memory.flags import ACCESS, HOST_ACCESS, check_flags
from qcom_ext.ext.memory.formats import (
    IMAGE_TYPES,
    ImageExtent,
    ImageFormat,
    image_desc,
    image_extent,
    parse_image_format,
)
from qcom_ext.ext.memory.formats import image_type_name as _image_type_name

__all__ = ["ImageInfo", "query_image_info"]

EXTENSION = "cl_qcom_extended_query_image_info"
ENTRY_KHR = "clGetImageRequirementsInfoEXT"
TIER = "cl_ext_image_requirements_info"  # its Khronos tier
FROM_BUFFER = "cl_ext_image_from_buffer"  # adds the slice pitch alignment query
_SLICED = ("1d_array", "2d_array", "3d")
_QUERY_FLAGS = ACCESS | HOST_ACCESS | C.CL_MEM_KERNEL_READ_AND_WRITE


class ImageInfo(NamedTuple):
    """The layout of an image, in bytes.

    ``slice_pitch`` and ``slice_alignment`` are 0 for images without slices (1D, 2D), as
    ``clGetImageInfo`` reports them; ``size`` counts whole rows and slices at their
    pitch. ``path`` is ``native`` (the driver's answer), ``khr:cl_ext_image_requirements_info``
    (the driver's alignments and size, the pitches they imply) or ``fallback`` (computed).
    """

    row_pitch: int
    slice_pitch: int
    size: int
    element_size: int
    row_alignment: int
    slice_alignment: int
    base_address_alignment: int
    path: str = "fallback"


def query_image_info(
    device: Any,
    image_format: Any,
    shape: Any,
    flags: int = C.CL_MEM_READ_ONLY,
    image_type: str | int = "2d",
) -> ImageInfo:
    """The layout ``device`` gives an image of this format, shape and type.

    ``image_format``: ``"ORDER/TYPE"``, a ``pyopencl.ImageFormat`` or ``(order,
    data_type)`` (tokens or names; Qualcomm formats natively only, see
    :mod:`qcom_ext.ext.memory.formats`); ``shape`` in pyopencl order (``(width,
    height)`` for 2D, see
    :func:`qcom_ext.ext.memory.formats.image_extent`); ``flags``: device/host access bits;
    ``image_type``: ``"1d"``, ``"1d_buffer"``, ``"1d_array"``, ``"2d"``, ``"2d_array"``,
    ``"3d"`` or a ``CL_MEM_OBJECT_IMAGE*`` token. Nothing is allocated.

    >>> import qcom_ext
    >>> device = qcom_ext.probe().device()
    >>> info = qcom_ext.query_image_info(device, "R/UNSIGNED_INT8", (100, 10))
    >>> info.element_size, info.row_pitch >= 100, info.slice_pitch
    (1, True, 0)
    """
    handle = shared.device_handle(device)
    fmt = parse_image_format(image_format)
    kind = _image_type_name(image_type)
    extent = image_extent(kind, shape)
    reason = "query_image_info describes an image without host memory"
    flags = check_flags(flags, "flags", allowed=_QUERY_FLAGS, reason=reason)
    route = shared.route(probe(handle), EXTENSION)
    if route.path == "unavailable":
        route.refuse()
    answered = _driver_answer(route, flags, fmt, kind, extent)
    return answered or computed_image_info(route.caps[0], fmt, kind, extent)


def _driver_answer(
    route: shared.Route, flags: int, fmt: ImageFormat, kind: str, extent: ImageExtent
) -> ImageInfo | None:
    """The driver's layout on the native path or the Khronos tier; None where the path is
    the fallback, or its entry point turns out missing (the route's one warning)."""
    entry_point = {"native": "clQueryImageInfoQCOM", f"khr:{TIER}": ENTRY_KHR}.get(route.path)
    if entry_point is None:
        return None
    try:
        query = route.require(entry_point)
    except EntryPointMissing as exc:
        route.downgrade(exc, "the layout is computed from the core rules", stacklevel=3)
        return None
    caps = route.caps[0]
    if route.native:
        return _native(query, caps.device_id, flags, fmt, kind, extent)
    return _requirements(query, caps, flags, fmt, kind, extent)


def read_scalar(routine: str, call: Any) -> int:
    """Run ``call(size, value, size_ret)`` into an 8-byte buffer and decode the scalar
    by the size the driver reports (the reference leaves cl_uint vs size_t open)."""
    value = ffi.new("unsigned char[8]")
    size_ret = ffi.new("size_t *")
    status = call(8, value, size_ret)
    if status != 0:
        raise CLError(routine, status)
    width = size_ret[0] or 8
    if width not in (1, 2, 4, 8):
        raise CLError(
            routine, C.CL_INVALID_VALUE, f"answered a {width}-byte value, expected a scalar"
        )
    return _info.decode_uint(ffi.buffer(value, width)[:])


def _native(
    query: Any, device: int, flags: int, fmt: ImageFormat, kind: str, extent: ImageExtent
) -> ImageInfo:
    dev = ffi.cast("cl_device_id", device)
    ask = _asker(
        "clQueryImageInfoQCOM",
        lambda cfmt, desc, *rest: query(dev, flags, cfmt, desc, *rest),
        fmt,
        kind,
        extent,
    )

    sliced = kind in _SLICED
    return ImageInfo(
        row_pitch=ask("CL_IMAGE_ROW_PITCH"),
        slice_pitch=ask("CL_IMAGE_SLICE_PITCH") if sliced else 0,
        size=ask("CL_IMAGE_SIZE_QCOM"),
        element_size=ask("CL_IMAGE_ELEMENT_SIZE"),
        row_alignment=ask("CL_IMAGE_ROW_ALIGNMENT_QCOM"),
        slice_alignment=ask("CL_IMAGE_SLICE_ALIGNMENT_QCOM") if sliced else 0,
        base_address_alignment=ask("CL_IMAGE_BASE_ADDRESS_ALIGNMENT_QCOM"),
        path="native",
    )


#: The maximum-dimension query of each axis (the spec allows each only for the image
#: types that have that axis, which are exactly the axes of IMAGE_TYPES).
_MAX_QUERIES = {
    "width": "CL_IMAGE_REQUIREMENTS_MAX_WIDTH_EXT",
    "height": "CL_IMAGE_REQUIREMENTS_MAX_HEIGHT_EXT",
    "depth": "CL_IMAGE_REQUIREMENTS_MAX_DEPTH_EXT",
    "array_size": "CL_IMAGE_REQUIREMENTS_MAX_ARRAY_SIZE_EXT",
}


def _requirements(
    query: Any, caps: DeviceCaps, flags: int, fmt: ImageFormat, kind: str, extent: ImageExtent
) -> ImageInfo:
    """The layout from ``clGetImageRequirementsInfoEXT`` (cl_ext_image_requirements_info),
    asked in a context of the device made for the queries and released afterwards: the
    query takes a context, and ``query_image_info`` is given a device."""
    element = fmt.element_size  # a Qualcomm format has none here: refused before any call
    context = _query_context(caps.device_id)
    try:
        ctx = ffi.cast("cl_context", context)
        ask = _asker(
            "clGetImageRequirementsInfoEXT",
            lambda cfmt, desc, *rest: query(ctx, ffi.NULL, flags, cfmt, desc, *rest),
            fmt,
            kind,
            extent,
        )
        for axis in IMAGE_TYPES[kind][1]:
            limit, value = ask(_MAX_QUERIES[axis]), getattr(extent, axis)
            if limit and value > limit:  # 0: the driver names no limit
                raise ConfigError(
                    f"a {kind} {fmt.name} image {axis} of {value} exceeds "
                    f"{_MAX_QUERIES[axis]} = {limit} of {caps.label}"
                )
        row_alignment = element if kind == "1d_buffer" else ask(_ROW_ALIGNMENT)
        row_pitch = _round_up(extent.width * element, row_alignment)
        slice_pitch = slice_alignment = 0
        if kind in _SLICED:
            slice_alignment = row_pitch  # the core rule, unless the driver says more
            if FROM_BUFFER in caps.extensions:
                slice_alignment = ask("CL_IMAGE_REQUIREMENTS_SLICE_PITCH_ALIGNMENT_EXT")
            slice_pitch = _round_up(row_pitch * extent.height, slice_alignment)
        return ImageInfo(
            row_pitch=row_pitch,
            slice_pitch=slice_pitch,
            size=ask("CL_IMAGE_REQUIREMENTS_SIZE_EXT"),
            element_size=element,
            row_alignment=row_alignment,
            slice_alignment=slice_alignment,
            base_address_alignment=ask("CL_IMAGE_REQUIREMENTS_BASE_ADDRESS_ALIGNMENT_EXT"),
            path=f"khr:{TIER}",
        )
    finally:
        driver.clReleaseContext(ffi.cast("cl_context", context))


_ROW_ALIGNMENT = "CL_IMAGE_REQUIREMENTS_ROW_PITCH_ALIGNMENT_EXT"


def _round_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment if alignment > 1 else value


def _query_context(device: int) -> int:
    """A fresh context holding ``device`` alone, as a raw handle (the caller releases it)."""
    err = ffi.new("cl_int *")
    devices = ffi.new("cl_device_id[1]", [ffi.cast("cl_device_id", device)])
    handle = driver.clCreateContext(ffi.NULL, 1, devices, ffi.NULL, ffi.NULL, err)
    detail = "the context clGetImageRequirementsInfoEXT asks in"
    return check_handle(handle, err, "clCreateContext", detail, driver.clReleaseContext)


def _asker(routine: str, call: Any, fmt: ImageFormat, kind: str, extent: ImageExtent) -> Any:
    """``ask(token name)``: one scalar answer of ``routine`` about this image, through
    ``call(cl_image_format*, cl_image_desc*, param, size, value, size_ret)``; a CLError
    naming the query and the image where the driver refuses. The one query loop of
    both ways of asking (clQueryImageInfoQCOM, clGetImageRequirementsInfoEXT)."""
    cfmt, desc = fmt.cdata(), image_desc(kind, extent)

    def ask(name: str) -> int:
        param = getattr(C, name)
        try:
            return read_scalar(
                routine, lambda size, value, ret: call(cfmt, desc, param, size, value, ret)
            )
        except CLError as exc:
            raise CLError(
                exc.routine,
                exc.code,
                f"{name} of a {kind} {fmt.name} image {_shape_text(kind, extent)}"
                + (f" ({exc.detail})" if exc.detail else ""),
            ) from None

    return ask


def _shape_text(kind: str, extent: ImageExtent) -> str:
    axes = IMAGE_TYPES[kind][1]
    return "(" + ", ".join(f"{axis}={getattr(extent, axis)}" for axis in axes) + ")"


def pitch_alignment(caps: DeviceCaps) -> int:
    """``CL_DEVICE_IMAGE_PITCH_ALIGNMENT`` in pixels, 1 where the device reports none."""
    return max(caps.limits.image_pitch_alignment or 0, 1)


def computed_image_info(
    caps: DeviceCaps, fmt: ImageFormat, kind: Any, extent: ImageExtent
) -> ImageInfo:
    """The fallback layout (module docstring), after checking the device's size limits."""
    kind = _image_type_name(kind)
    _check_limits(caps, kind, extent)
    element = fmt.element_size
    align = 1 if kind == "1d_buffer" else pitch_alignment(caps)
    row_pitch = -(-extent.width // align) * align * element
    sliced = kind in _SLICED
    slice_pitch = row_pitch * extent.height if sliced else 0
    base = caps.limits.image_base_address_alignment or 0
    return ImageInfo(
        row_pitch=row_pitch,
        slice_pitch=slice_pitch,
        size=row_pitch * extent.height * extent.slices,
        element_size=element,
        row_alignment=align * element,
        slice_alignment=row_pitch if sliced else 0,
        base_address_alignment=base * element if base else _base_addr_align(caps.device_id),
    )


@cache
def _base_addr_align(device: int) -> int:
    """``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (bits) in bytes: every buffer's alignment."""
    return _info.device_uint(device, C.CL_DEVICE_MEM_BASE_ADDR_ALIGN) // 8


@cache
def _device_limits(device: int) -> dict[str, int]:
    names = {
        "2d_width": "IMAGE2D_MAX_WIDTH",
        "2d_height": "IMAGE2D_MAX_HEIGHT",
        "3d_width": "IMAGE3D_MAX_WIDTH",
        "3d_height": "IMAGE3D_MAX_HEIGHT",
        "3d_depth": "IMAGE3D_MAX_DEPTH",
        "array": "IMAGE_MAX_ARRAY_SIZE",
        "buffer": "IMAGE_MAX_BUFFER_SIZE",
    }
    return {
        key: _info.device_uint(device, getattr(C, f"CL_DEVICE_{token}"))
        for key, token in names.items()
    }


def _check_limits(caps: DeviceCaps, kind: str, extent: ImageExtent) -> None:
    if not caps.device_id:
        return  # a report built from strings: no device to ask
    extended = (caps.limits.extended_image2d_max_size, caps.limits.extended_image3d_max_size)
    for axis, limit, token in _limit_table(caps.device_id, kind, extended):
        value = getattr(extent, axis)
        if value > limit:
            raise ConfigError(
                f"a {kind} image {axis} of {value} exceeds {token} = {limit} of {caps.label}"
            )


@cache
def _limit_table(device: int, kind: str, extended: tuple[Any, Any]) -> tuple[tuple, ...]:
    """(axis, limit, token) for each axis of ``kind``; Qualcomm's extended image sizes
    (cl_qcom_extended_images) raise the core limits where the device has them."""
    limits = _device_limits(device)
    extended2d, extended3d = extended[0] or (0, 0), extended[1] or (0, 0, 0)
    width = ("width", max(limits["2d_width"], extended2d[0]), "CL_DEVICE_IMAGE2D_MAX_WIDTH")
    height = ("height", max(limits["2d_height"], extended2d[1]), "CL_DEVICE_IMAGE2D_MAX_HEIGHT")
    layers = ("array_size", limits["array"], "CL_DEVICE_IMAGE_MAX_ARRAY_SIZE")
    table = {
        "1d": (width,),
        "1d_buffer": (("width", limits["buffer"], "CL_DEVICE_IMAGE_MAX_BUFFER_SIZE"),),
        "1d_array": (width, layers),
        "2d": (width, height),
        "2d_array": (width, height, layers),
        "3d": (
            ("width", max(limits["3d_width"], extended3d[0]), "CL_DEVICE_IMAGE3D_MAX_WIDTH"),
            ("height", max(limits["3d_height"], extended3d[1]), "CL_DEVICE_IMAGE3D_MAX_HEIGHT"),
            ("depth", max(limits["3d_depth"], extended3d[2]), "CL_DEVICE_IMAGE3D_MAX_DEPTH"),
        ),
    }
    return table[kind]
