"""Image formats and image shapes, without a device: names, element sizes, numpy dtypes.

Formats follow the core table of legal channel order / data type pairs (OpenCL 3.0
§5.3.1.1); element sizes are what clGetImageInfo(CL_IMAGE_ELEMENT_SIZE) reports.

>>> fmt = image_format(("RGBA", "UNORM_INT8"))
>>> fmt.name, fmt.element_size, fmt.dtype, fmt.pixel_shape
('CL_RGBA/CL_UNORM_INT8', 4, dtype('uint8'), (4,))
>>> image_format((C.CL_RGB, C.CL_UNORM_SHORT_565)).element_size
2
>>> image_format(("RGB", "FLOAT"))
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: image format CL_RGB/CL_FLOAT is not a legal pair: CL_RGB takes \
CL_UNORM_SHORT_565, CL_UNORM_SHORT_555, CL_UNORM_INT_101010

Shapes use pyopencl's order, width first: ``(width,)``, ``(width, array_size)``,
``(width, height)``, ``(width, height, array_size)``, ``(width, height, depth)``.

>>> image_type("2d_array"), image_extent("2d_array", (640, 480, 3))
(4339, ImageExtent(width=640, height=480, depth=1, array_size=3))
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from ._lib import C, ffi
from .errors import ConfigError

__all__ = [
    "IMAGE_TYPES",
    "ImageExtent",
    "ImageFormat",
    "image_extent",
    "image_format",
    "image_type",
    "image_type_name",
]

_ORDERS = ("R", "A", "RG", "RA", "RGB", "RGBA", "BGRA", "ARGB", "INTENSITY", "LUMINANCE",
           "Rx", "RGx", "RGBx", "DEPTH", "DEPTH_STENCIL", "sRGB", "sRGBx", "sRGBA", "sBGRA",
           "ABGR")  # fmt: skip
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
_PACKED = {"UNORM_SHORT_565": (2, "uint16"), "UNORM_SHORT_555": (2, "uint16"),
           "UNORM_INT_101010": (4, "uint32"), "UNORM_INT_101010_2": (4, "uint32"),
           "UNORM_INT24": (4, "uint32")}  # fmt: skip
_UNPACKED = tuple(name for name, spec in _TYPES.items() if spec is not None)
_NORMALIZED_OR_FLOAT = ("UNORM_INT8", "UNORM_INT16", "SNORM_INT8", "SNORM_INT16",
                        "HALF_FLOAT", "FLOAT")  # fmt: skip
_BYTE_TYPES = ("UNORM_INT8", "SNORM_INT8", "SIGNED_INT8", "UNSIGNED_INT8")
# channel order -> (channels in memory, the data types it takes)
_LEGAL: dict[str, tuple[int, tuple[str, ...]]] = {
    **{order: (n, _UNPACKED) for order, n in (("R", 1), ("A", 1), ("RG", 2), ("RA", 2),
                                              ("RGBA", 4))},
    "RGB": (1, ("UNORM_SHORT_565", "UNORM_SHORT_555", "UNORM_INT_101010")),
    "RGBx": (1, ("UNORM_SHORT_565", "UNORM_SHORT_555", "UNORM_INT_101010")),
    "INTENSITY": (1, _NORMALIZED_OR_FLOAT),
    "LUMINANCE": (1, _NORMALIZED_OR_FLOAT),
    **{order: (4, _BYTE_TYPES) for order in ("BGRA", "ARGB", "ABGR")},
    "sRGB": (3, ("UNORM_INT8",)),
    **{order: (4, ("UNORM_INT8",)) for order in ("sRGBx", "sRGBA", "sBGRA")},
    "DEPTH": (1, ("UNORM_INT16", "FLOAT", "UNORM_INT24")),
}  # fmt: skip
_REFUSED = {
    "Rx": "implementations disagree on its element size (1 or 2 channels)",
    "RGx": "implementations disagree on its element size (2 or 3 channels)",
    "DEPTH_STENCIL": "such images come only from OpenGL sharing",
}
# RGBA is the only order CL_UNORM_INT_101010_2 takes
_LEGAL_EXTRA = {("RGBA", "UNORM_INT_101010_2")}


def _token(kind: str, name: str) -> int:
    return int(getattr(C, f"CL_{name}"))


_ORDER_BY_VALUE = {_token("order", n): n for n in _ORDERS}
_TYPE_BY_VALUE = {_token("type", n): n for n in _TYPES}


def _lookup(value: Any, by_value: dict[int, str], what: str) -> str:
    if isinstance(value, str):
        wanted = value.upper().removeprefix("CL_")
        for name in by_value.values():
            if name.upper() == wanted:
                return name
        raise ConfigError(
            f"unknown image {what} {value!r}; expected one of {', '.join(by_value.values())}"
        )
    if isinstance(value, int) and not isinstance(value, bool) and int(value) in by_value:
        return by_value[int(value)]
    raise ConfigError(
        f"unknown image {what} {value!r}; expected a CL_* token or one of "
        f"{', '.join(by_value.values())}"
    )


@dataclass(frozen=True)
class ImageFormat:
    """A legal ``cl_image_format``: build with :func:`image_format`."""

    channel_order: int
    channel_data_type: int

    @property
    def order_name(self) -> str:
        return f"CL_{_ORDER_BY_VALUE[self.channel_order]}"

    @property
    def type_name(self) -> str:
        return f"CL_{_TYPE_BY_VALUE[self.channel_data_type]}"

    @property
    def name(self) -> str:
        return f"{self.order_name}/{self.type_name}"

    @property
    def packed(self) -> bool:
        """Whether one element is a packed word (565, 555, 101010, 24-bit depth)."""
        return _TYPE_BY_VALUE[self.channel_data_type] in _PACKED

    @property
    def channels(self) -> int:
        """Channels stored per element (1 for packed types: one word holds them all)."""
        return _LEGAL[_ORDER_BY_VALUE[self.channel_order]][0] if not self.packed else 1

    @cached_property
    def element_size(self) -> int:
        """Bytes per pixel (``CL_IMAGE_ELEMENT_SIZE``)."""
        type_name = _TYPE_BY_VALUE[self.channel_data_type]
        if type_name in _PACKED:
            return _PACKED[type_name][0]
        return self.channels * _TYPES[type_name][0]  # type: ignore[index]

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of one channel (of the whole word for packed types)."""
        type_name = _TYPE_BY_VALUE[self.channel_data_type]
        spec = _PACKED.get(type_name) or _TYPES[type_name]
        return np.dtype(spec[1])  # type: ignore[index]

    @property
    def pixel_shape(self) -> tuple[int, ...]:
        """The trailing numpy dimensions of one pixel: ``()`` or ``(channels,)``."""
        return () if self.channels == 1 else (self.channels,)

    def to_pyopencl(self) -> Any:
        import pyopencl

        return pyopencl.ImageFormat(self.channel_order, self.channel_data_type)

    def cdata(self) -> Any:
        """A fresh ``cl_image_format *`` (keep it alive while the driver reads it)."""
        return ffi.new("cl_image_format *", (self.channel_order, self.channel_data_type))

    def __str__(self) -> str:
        return self.name


def image_format(value: Any) -> ImageFormat:
    """An :class:`ImageFormat` from an ImageFormat, a ``pyopencl.ImageFormat`` or a pair
    ``(order, data_type)`` of CL tokens or names (``"RGBA"``, ``"CL_UNORM_INT8"``)."""
    if isinstance(value, ImageFormat):
        return value
    if hasattr(value, "channel_order") and hasattr(value, "channel_data_type"):
        order, data_type = value.channel_order, value.channel_data_type
        known = _PARSED.get((order, data_type))
        if known is not None:
            return known
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        order, data_type = value
    else:
        raise ConfigError(
            f"expected an image format: a pyopencl.ImageFormat or a pair "
            f"(channel_order, channel_data_type), got {value!r}"
        )
    order_name = _lookup(order, _ORDER_BY_VALUE, "channel order")
    type_name = _lookup(data_type, _TYPE_BY_VALUE, "channel data type")
    shown = f"CL_{order_name}/CL_{type_name}"
    if order_name in _REFUSED:
        raise ConfigError(f"image format {shown} is not supported: {_REFUSED[order_name]}")
    takes = _LEGAL[order_name][1]
    if type_name not in takes and (order_name, type_name) not in _LEGAL_EXTRA:
        extra = [t for o, t in sorted(_LEGAL_EXTRA) if o == order_name]
        names = ", ".join(f"CL_{t}" for t in (*takes, *extra))
        raise ConfigError(
            f"image format {shown} is not a legal pair: CL_{order_name} takes {names}"
        )
    result = ImageFormat(_token("order", order_name), _token("type", type_name))
    _PARSED[(result.channel_order, result.channel_data_type)] = result
    return result


_PARSED: dict[tuple[int, int], ImageFormat] = {}  # legal token pairs seen before


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
    """``"2d"`` ... for a name (any case) or a ``CL_MEM_OBJECT_IMAGE*`` token."""
    if isinstance(value, str) and value.lower() in IMAGE_TYPES:
        return value.lower()
    if isinstance(value, int) and not isinstance(value, bool) and value in _TYPE_NAMES:
        return _TYPE_NAMES[value]
    raise ConfigError(
        f"unknown image type {value!r}; expected one of {', '.join(IMAGE_TYPES)} "
        "or a CL_MEM_OBJECT_IMAGE* token"
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
    return ImageExtent(**values)
