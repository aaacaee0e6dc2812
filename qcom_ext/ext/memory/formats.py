"""Image formats and image shapes, without a device: names, element sizes, numpy dtypes.

One parser, :func:`parse_image_format`, takes ``"ORDER/TYPE"`` strings, ``(order, type)``
pairs of CL tokens or names (``"RGBA"``, ``"CL_UNORM_INT8"``), ``pyopencl.ImageFormat``
objects and :class:`ImageFormat` itself.

Standard formats follow the core table of legal channel order / data type pairs (OpenCL
3.0 §5.3.1.1); element sizes are what clGetImageInfo(CL_IMAGE_ELEMENT_SIZE) reports.

>>> fmt = parse_image_format("RGBA/UNORM_INT8")
>>> fmt.name, fmt.element_size, fmt.dtype, fmt.pixel_shape
('CL_RGBA/CL_UNORM_INT8', 4, dtype('uint8'), (4,))
>>> parse_image_format((C.CL_RGB, C.CL_UNORM_SHORT_565)).element_size
2
>>> parse_image_format(("RGB", "FLOAT"))
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: image format CL_RGB/CL_FLOAT is not a legal pair: CL_RGB takes \
CL_UNORM_SHORT_565, CL_UNORM_SHORT_555, CL_UNORM_INT_101010

Qualcomm formats (qcom-extensions.md §12 and §13: channel orders 0x4130-0x4158, channel
data types 0x4159-0x415F, named by ``cdefs/cl_qcom_other_image.h``,
``cl_qcom_compressed_image.h`` and ``cl_qcom_compressed_yuv_image_read.h``) have rules
of their own: the token must be one the cdefs name; a Qualcomm order takes any channel
data type, because which pairs exist is the driver's answer
(``supported_image_formats(other=True / compressed=True)``, which the image makers check);
a Qualcomm data type goes with Qualcomm orders only (standard orders keep the core
table). Their memory layout is the driver's, so they have no element size here
(``clQueryImageInfoQCOM`` answers it).

>>> nv12 = parse_image_format((0x4133, "CL_UNORM_INT8"))
>>> str(nv12), nv12.vendor, nv12.dtype
('CL_QCOM_NV12/CL_UNORM_INT8', True, dtype('uint8'))
>>> nv12.element_size
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: format CL_QCOM_NV12/CL_UNORM_INT8 has no element size here: \
Qualcomm formats take the driver's layout (clQueryImageInfoQCOM answers CL_IMAGE_ELEMENT_SIZE)

Shapes use pyopencl's order, width first: ``(width,)``, ``(width, array_size)``,
``(width, height)``, ``(width, height, array_size)``, ``(width, height, depth)``.

>>> image_type("2d_array"), image_extent("2d_array", (640, 480, 3))
(4339, ImageExtent(width=640, height=480, depth=1, array_size=3))
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

import numpy as np

from qcom_ext.binding.lib import C, constant_names, ffi, handle_int
from qcom_ext.errors import ConfigError

__all__ = [
    "IMAGE_TYPES",
    "ImageExtent",
    "ImageFormat",
    "check_image_format",
    "image_desc",
    "image_extent",
    "image_format_tokens",
    "image_type",
    "image_type_name",
    "parse_image_format",
]

_ORDERS = (
    "R",
    "A",
    "RG",
    "RA",
    "RGB",
    "RGBA",
    "BGRA",
    "ARGB",
    "INTENSITY",
    "LUMINANCE",
    "Rx",
    "RGx",
    "RGBx",
    "DEPTH",
    "DEPTH_STENCIL",
    "sRGB",
    "sRGBx",
    "sRGBA",
    "sBGRA",
    "ABGR",
)
# channel data type -> (bytes per channel, numpy dtype); None: a packed type
_TYPES: dict[str, tuple[int, str] | None] = {
    "SNORM_INT8": (1, "int8"),
    "SNORM_INT16": (2, "int16"),
    "UNORM_INT8": (1, "uint8"),
    "UNORM_INT16": (2, "uint16"),
    "SIGNED_INT8": (1, "int8"),
    "SIGNED_INT16": (2, "int16"),
    "SIGNED_INT32": (4, "int32"),
    "UNSIGNED_INT8": (1, "uint8"),
    "UNSIGNED_INT16": (2, "uint16"),
    "UNSIGNED_INT32": (4, "uint32"),
    "HALF_FLOAT": (2, "float16"),
    "FLOAT": (4, "float32"),
    "UNORM_SHORT_565": None,
    "UNORM_SHORT_555": None,
    "UNORM_INT_101010": None,
    "UNORM_INT_101010_2": None,
    "UNORM_INT24": None,
}
# packed type -> (element size, numpy dtype of one element)
_PACKED = {
    "UNORM_SHORT_565": (2, "uint16"),
    "UNORM_SHORT_555": (2, "uint16"),
    "UNORM_INT_101010": (4, "uint32"),
    "UNORM_INT_101010_2": (4, "uint32"),
    "UNORM_INT24": (4, "uint32"),
}
_UNPACKED = tuple(name for name, spec in _TYPES.items() if spec is not None)
_NORMALIZED_OR_FLOAT = (
    "UNORM_INT8",
    "UNORM_INT16",
    "SNORM_INT8",
    "SNORM_INT16",
    "HALF_FLOAT",
    "FLOAT",
)
_BYTE_TYPES = ("UNORM_INT8", "SNORM_INT8", "SIGNED_INT8", "UNSIGNED_INT8")
# channel order -> (channels in memory, the data types it takes)
_LEGAL: dict[str, tuple[int, tuple[str, ...]]] = {
    **{
        order: (n, _UNPACKED)
        for order, n in (("R", 1), ("A", 1), ("RG", 2), ("RA", 2), ("RGBA", 4))
    },
    "RGB": (1, ("UNORM_SHORT_565", "UNORM_SHORT_555", "UNORM_INT_101010")),
    "RGBx": (1, ("UNORM_SHORT_565", "UNORM_SHORT_555", "UNORM_INT_101010")),
    "INTENSITY": (1, _NORMALIZED_OR_FLOAT),
    "LUMINANCE": (1, _NORMALIZED_OR_FLOAT),
    **{order: (4, _BYTE_TYPES) for order in ("BGRA", "ARGB", "ABGR")},
    "sRGB": (3, ("UNORM_INT8",)),
    **{order: (4, ("UNORM_INT8",)) for order in ("sRGBx", "sRGBA", "sBGRA")},
    "DEPTH": (1, ("UNORM_INT16", "FLOAT", "UNORM_INT24")),
}
_REFUSED = {
    "Rx": "implementations disagree on its element size (1 or 2 channels)",
    "RGx": "implementations disagree on its element size (2 or 3 channels)",
    "DEPTH_STENCIL": "such images come only from OpenGL sharing",
}
# RGBA is the only order CL_UNORM_INT_101010_2 takes
_LEGAL_EXTRA = {("RGBA", "UNORM_INT_101010_2")}

# The Qualcomm value ranges (qcom-extensions.md §12, §13; reserved in cl.xml as 0x4130-0x415F).
_QCOM_ORDERS = (0x4130, 0x4158)
_QCOM_TYPES = (0x4159, 0x415F)
_VENDOR_LAYOUT = (
    "Qualcomm formats take the driver's layout (clQueryImageInfoQCOM answers "
    "CL_IMAGE_ELEMENT_SIZE)"
)


def _qcom_names(low: int, high: int) -> dict[int, str]:
    """value -> name (without ``CL_``) of the ``CL_QCOM_*`` constants in ``[low, high]``."""
    found: dict[int, str] = {}
    for name in constant_names():
        value = getattr(C, name)
        if name.startswith("CL_QCOM_") and isinstance(value, int) and low <= value <= high:
            found.setdefault(value, name.removeprefix("CL_"))
    return found


_ORDER_BY_VALUE = {int(getattr(C, f"CL_{n}")): n for n in _ORDERS} | _qcom_names(*_QCOM_ORDERS)
_TYPE_BY_VALUE = {int(getattr(C, f"CL_{n}")): n for n in _TYPES} | _qcom_names(*_QCOM_TYPES)
# upper-cased name -> name, for case-insensitive lookups (no two names differ by case only)
_ORDER_KEYS = {name.upper(): name for name in _ORDER_BY_VALUE.values()}
_TYPE_KEYS = {name.upper(): name for name in _TYPE_BY_VALUE.values()}
assert len(_ORDER_KEYS) == len(_ORDER_BY_VALUE) and len(_TYPE_KEYS) == len(_TYPE_BY_VALUE)


def _is_qcom(value: int, span: tuple[int, int]) -> bool:
    return span[0] <= value <= span[1]


def _token_name(value: int, by_value: dict[int, str]) -> str:
    name = by_value.get(value)
    return f"CL_{name}" if name is not None else f"{value:#06x}"


def _legal_pair_error(order: str, data_type: str) -> str | None:
    """Why the standard order ``order`` (a name without ``CL_``) does not take
    ``data_type`` (any known type name), or None when it does."""
    shown = f"CL_{order}/CL_{data_type}"
    if order in _REFUSED:
        return f"image format {shown} is not supported: {_REFUSED[order]}"
    takes = _LEGAL[order][1]
    if data_type in takes or (order, data_type) in _LEGAL_EXTRA:
        return None
    extra = [t for o, t in sorted(_LEGAL_EXTRA) if o == order]
    names = ", ".join(f"CL_{t}" for t in (*takes, *extra))
    return f"image format {shown} is not a legal pair: CL_{order} takes {names}"


@cache
def _layout(order: int, data_type: int) -> tuple[int, int]:
    """(channels stored per element, element size) of a standard format, or ConfigError."""
    shown = f"{_token_name(order, _ORDER_BY_VALUE)}/{_token_name(data_type, _TYPE_BY_VALUE)}"
    if _is_qcom(order, _QCOM_ORDERS):
        raise ConfigError(f"format {shown} has no element size here: {_VENDOR_LAYOUT}")
    order_name, type_name = _ORDER_BY_VALUE.get(order), _TYPE_BY_VALUE.get(data_type)
    if order_name is None or type_name is None:
        raise ConfigError(
            f"format {shown} has no element size here: qcom_ext does not know "
            "that channel order or data type"
        )
    error = _legal_pair_error(order_name, type_name)
    if error is not None:
        raise ConfigError(f"{error}; it has no element size here")
    if type_name in _PACKED:
        return 1, _PACKED[type_name][0]
    channels = _LEGAL[order_name][0]
    return channels, channels * _TYPES[type_name][0]  # type: ignore[index]


class ImageFormat(NamedTuple):
    """A ``cl_image_format``: build it with :func:`parse_image_format`.

    It compares equal to the pair of tokens, ``(channel_order, channel_data_type)``;
    ``element_size``, ``channels`` and ``pixel_shape`` exist for legal standard
    formats, ``dtype`` for standard channel data types (ConfigError otherwise).
    """

    channel_order: int
    channel_data_type: int

    @property
    def order_name(self) -> str:
        """``"CL_RGBA"``, ``"CL_QCOM_NV12"``; ``"0x...."`` for a value no cdef names."""
        return _token_name(self.channel_order, _ORDER_BY_VALUE)

    @property
    def type_name(self) -> str:
        """``"CL_UNORM_INT8"``; ``"0x...."`` for a value no cdef names."""
        return _token_name(self.channel_data_type, _TYPE_BY_VALUE)

    @property
    def name(self) -> str:
        return f"{self.order_name}/{self.type_name}"

    @property
    def vendor(self) -> bool:
        """Whether the channel order is a Qualcomm one (planar, compressed: §12, §13)."""
        return _is_qcom(self.channel_order, _QCOM_ORDERS)

    @property
    def packed(self) -> bool:
        """Whether one element is a packed word (565, 555, 101010, 24-bit depth)."""
        return _TYPE_BY_VALUE.get(self.channel_data_type) in _PACKED

    @property
    def channels(self) -> int:
        """Channels stored per element (1 for packed types: one word holds them all)."""
        return _layout(self.channel_order, self.channel_data_type)[0]

    @property
    def element_size(self) -> int:
        """Bytes per pixel (``CL_IMAGE_ELEMENT_SIZE``)."""
        return _layout(self.channel_order, self.channel_data_type)[1]

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of one channel (of the whole word for packed types)."""
        type_name = _TYPE_BY_VALUE.get(self.channel_data_type)
        spec = _PACKED.get(type_name) or _TYPES.get(type_name)  # type: ignore[arg-type]
        if spec is None:
            raise ConfigError(
                f"channel data type {self.type_name} has no numpy equivalent (format {self.name})"
            )
        return np.dtype(spec[1])

    @property
    def pixel_shape(self) -> tuple[int, ...]:
        """The trailing numpy dimensions of one pixel: ``()`` or ``(channels,)``."""
        return () if self.channels == 1 else (self.channels,)

    def to_pyopencl(self) -> Any:
        """The same format as a ``pyopencl.ImageFormat``."""
        import pyopencl

        return pyopencl.ImageFormat(self.channel_order, self.channel_data_type)

    def cdata(self) -> Any:
        """A fresh ``cl_image_format *`` (keep it alive while the driver reads it)."""
        return ffi.new("cl_image_format *", (self.channel_order, self.channel_data_type))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"ImageFormat({self.order_name}, {self.type_name})"


def _lookup(
    value: Any, by_value: dict[int, str], keys: dict[str, str], what: str, qcom: tuple[int, int]
) -> str:
    """The name (without ``CL_``) of a channel order or data type given as token or name."""
    if isinstance(value, str):
        name = keys.get(value.strip().upper().removeprefix("CL_"))
        if name is not None:
            return name
        shown = repr(value)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if int(value) in by_value:
            return by_value[int(value)]
        shown = f"{int(value):#06x}"
    else:
        shown = repr(value)
    standard = ", ".join(n for n in by_value.values() if not n.startswith("QCOM_"))
    raise ConfigError(
        f"unknown image {what} {shown}; expected a CL_* token or one of {standard}, or a "
        f"CL_QCOM_* {what} of the cdefs ({qcom[0]:#06x}-{qcom[1]:#06x})"
    )


def _pair(value: Any) -> tuple[Any, Any]:
    if hasattr(value, "channel_order") and hasattr(value, "channel_data_type"):
        return value.channel_order, value.channel_data_type
    parts = value.split("/") if isinstance(value, str) else value
    if isinstance(parts, (tuple, list)) and len(parts) == 2:
        return parts[0], parts[1]
    raise ConfigError(
        f"expected an image format: 'ORDER/TYPE' (e.g. 'RGBA/UNORM_INT8'), a pair "
        f"(channel_order, channel_data_type) of tokens or names, or a pyopencl.ImageFormat; "
        f"got {value!r}"
    )


def image_format_tokens(value: Any) -> ImageFormat:
    """The tokens of an image format given as :func:`parse_image_format` takes it, without
    checking the pair (for formats that are only the starting point of another one, such
    as the uncompressed spelling of a Qualcomm compressed format)."""
    if isinstance(value, ImageFormat):
        return value
    order, data_type = _pair(value)
    order_name = _lookup(order, _ORDER_BY_VALUE, _ORDER_KEYS, "channel order", _QCOM_ORDERS)
    type_name = _lookup(data_type, _TYPE_BY_VALUE, _TYPE_KEYS, "channel data type", _QCOM_TYPES)
    return ImageFormat(int(getattr(C, f"CL_{order_name}")), int(getattr(C, f"CL_{type_name}")))


def check_image_format(fmt: ImageFormat) -> ImageFormat:
    """``fmt`` if its pair is legal (module docstring), else ConfigError."""
    if fmt in _PARSED or fmt.vendor:  # Qualcomm orders: the driver's list decides
        return fmt
    order = _ORDER_BY_VALUE.get(fmt.channel_order)
    data_type = _TYPE_BY_VALUE.get(fmt.channel_data_type)
    if order is None or data_type is None:
        raise ConfigError(
            f"image format {fmt}: qcom_ext does not know that channel order or data type"
        )
    error = _legal_pair_error(order, data_type)
    if error is not None:
        raise ConfigError(error)
    _PARSED[fmt] = fmt
    return fmt


def parse_image_format(value: Any) -> ImageFormat:
    """An :class:`ImageFormat` from ``"ORDER/TYPE"``, an ``(order, type)`` pair of tokens
    or names, a ``pyopencl.ImageFormat`` or an :class:`ImageFormat`; standard pairs are
    checked against the core table, Qualcomm ones as the module docstring says.

    >>> parse_image_format("CL_R/CL_UNORM_INT8") == parse_image_format(("R", "UNORM_INT8"))
    True
    >>> parse_image_format("QCOM_P010/QCOM_UNORM_INT10")
    ImageFormat(CL_QCOM_P010, CL_QCOM_UNORM_INT10)
    """
    order = getattr(value, "channel_order", None)
    if type(order) is int:  # pyopencl formats and ImageFormat: legal ones seen before
        known = _PARSED.get((order, value.channel_data_type))
        if known is not None:
            return known
    return check_image_format(image_format_tokens(value))


_PARSED: dict[tuple[int, int], ImageFormat] = {}  # legal standard pairs seen before


# image type name -> (CL token name, shape dimension names)
IMAGE_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "1d": ("CL_MEM_OBJECT_IMAGE1D", ("width",)),
    "1d_buffer": ("CL_MEM_OBJECT_IMAGE1D_BUFFER", ("width",)),
    "1d_array": ("CL_MEM_OBJECT_IMAGE1D_ARRAY", ("width", "array_size")),
    "2d": ("CL_MEM_OBJECT_IMAGE2D", ("width", "height")),
    "2d_array": ("CL_MEM_OBJECT_IMAGE2D_ARRAY", ("width", "height", "array_size")),
    "3d": ("CL_MEM_OBJECT_IMAGE3D", ("width", "height", "depth")),
}
_TYPE_NAMES = {int(getattr(C, token)): name for name, (token, _) in IMAGE_TYPES.items()}


def image_type_name(value: Any) -> str:
    """``"2d"`` ... for a name (any case; ``"image2d"``, ``"2d-array"`` and the token
    names too) or a ``CL_MEM_OBJECT_IMAGE*`` token.

    >>> image_type_name("image2d_array"), image_type_name("CL_MEM_OBJECT_IMAGE3D")
    ('2d_array', '3d')
    """
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "_").removeprefix("cl_mem_object_")
        key = key.removeprefix("image")
        if key in IMAGE_TYPES:
            return key
    elif isinstance(value, int) and not isinstance(value, bool) and value in _TYPE_NAMES:
        return _TYPE_NAMES[value]
    raise ConfigError(
        f"unknown image type {value!r}; expected one of {', '.join(IMAGE_TYPES)} "
        "(also spelt image2d, ...) or a CL_MEM_OBJECT_IMAGE* token"
    )


def image_type(value: Any) -> int:
    """The ``CL_MEM_OBJECT_IMAGE*`` token for a name or token."""
    return int(getattr(C, IMAGE_TYPES[image_type_name(value)][0]))


class ImageExtent(NamedTuple):
    """The four sizes of a ``cl_image_desc`` (1 where the image type has no such axis)."""

    width: int
    height: int = 1
    depth: int = 1
    array_size: int = 1

    @property
    def rows(self) -> int:
        """Rows per slice (height; 1 for 1D types)."""
        return self.height

    @property
    def slices(self) -> int:
        """Slices (depth, or the array size of array types)."""
        return self.depth * self.array_size


#: The largest image size a ``cl_image_desc`` field (size_t) holds.
SIZE_MAX = (1 << (8 * ffi.sizeof("size_t"))) - 1


def image_extent(kind: Any, shape: Any) -> ImageExtent:
    """The :class:`ImageExtent` of ``shape`` (pyopencl order) for image type ``kind``."""
    name = image_type_name(kind)
    axes = IMAGE_TYPES[name][1]
    if isinstance(shape, (int, np.integer)) and len(axes) == 1:
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or len(shape) != len(axes):
        raise ConfigError(f"a {name} image takes shape ({', '.join(axes)}), got {shape!r}")
    values = {}
    for axis, size in zip(axes, shape, strict=True):
        if type(size) is int and size >= 1:  # the common case, checked cheaply
            values[axis] = size
            continue
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ConfigError(f"image {axis} must be a positive int, got {size!r} in {shape!r}")
        values[axis] = int(size)
    for axis, size in values.items():
        if size > SIZE_MAX:  # before any cl_image_desc or driver call sees it
            raise ConfigError(f"image {axis} {size} does not fit in a size_t, in {shape!r}")
    return ImageExtent(**values)


def image_desc(
    kind: Any, extent: ImageExtent, *, row_pitch: int = 0, mem_object: Any = None
) -> Any:
    """A fresh ``cl_image_desc *`` (unused sizes 0, as the core API expects);
    ``mem_object``: the buffer of an image over a buffer, or the parent of a plane image
    (one union in ``cl_image_desc``)."""
    kind = image_type_name(kind)
    axes = IMAGE_TYPES[kind][1]
    desc = ffi.new("cl_image_desc *")
    desc.image_type = image_type(kind)
    desc.image_width = extent.width
    desc.image_height = extent.height if "height" in axes else 0
    desc.image_depth = extent.depth if "depth" in axes else 0
    desc.image_array_size = extent.array_size if "array_size" in axes else 0
    desc.image_row_pitch = row_pitch
    desc.image_slice_pitch = 0
    desc.num_mip_levels = 0
    desc.num_samples = 0
    if mem_object is not None:
        desc.mem_object = ffi.cast("cl_mem", handle_int(mem_object))
    return desc
