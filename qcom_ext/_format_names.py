"""Image formats by name: channel order/type tokens, element sizes and numpy dtypes.

Generic helpers for every module that makes images. Tokens and names come from the
constants of ``cdefs/`` (standard ``CL_*`` values of ``cl_core.h`` and the Qualcomm
orders and types of ``cl_qcom_other_image.h`` / ``cl_qcom_compressed_image.h``).

>>> fmt = parse_format("RGBA/UNORM_INT8")
>>> str(fmt), element_size(fmt), numpy_dtype(fmt.data_type)
('CL_RGBA/CL_UNORM_INT8', 4, dtype('uint8'))
>>> str(parse_format((0x4133, "CL_UNORM_INT8")))
'CL_QCOM_NV12/CL_UNORM_INT8'
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

import numpy as np

from ._lib import C, constant_names
from .errors import ConfigError

__all__ = [
    "ImageFormat",
    "channel_count",
    "element_size",
    "numpy_dtype",
    "order_name",
    "parse_format",
    "type_name",
]

# Value ranges of the two enums: the Khronos ones (cl.h) and the Qualcomm ones
# (qcom-extensions.md sections 12 and 13: orders 0x4130-0x4158, types 0x4159-0x415F).
_ORDER_RANGES = ((0x10B0, 0x10C3), (0x4130, 0x4158))
_TYPE_RANGES = ((0x10D0, 0x10E0), (0x4159, 0x415F))

_CHANNELS = {"CL_R": 1, "CL_A": 1, "CL_INTENSITY": 1, "CL_LUMINANCE": 1, "CL_DEPTH": 1,
             "CL_Rx": 1, "CL_RG": 2, "CL_RA": 2, "CL_RGx": 2, "CL_RGB": 3, "CL_RGBx": 3,
             "CL_sRGB": 3, "CL_sRGBx": 3, "CL_RGBA": 4, "CL_BGRA": 4, "CL_ARGB": 4,
             "CL_ABGR": 4, "CL_sRGBA": 4, "CL_sBGRA": 4}  # fmt: skip
# Bytes per channel; the packed types give the whole element instead (see element_size).
_CHANNEL_BYTES = {"CL_SNORM_INT8": 1, "CL_UNORM_INT8": 1, "CL_SIGNED_INT8": 1,
                  "CL_UNSIGNED_INT8": 1, "CL_SNORM_INT16": 2, "CL_UNORM_INT16": 2,
                  "CL_SIGNED_INT16": 2, "CL_UNSIGNED_INT16": 2, "CL_HALF_FLOAT": 2,
                  "CL_SIGNED_INT32": 4, "CL_UNSIGNED_INT32": 4, "CL_FLOAT": 4}  # fmt: skip
_PACKED_BYTES = {"CL_UNORM_SHORT_565": 2, "CL_UNORM_SHORT_555": 2, "CL_UNORM_INT_101010": 4,
                 "CL_UNORM_INT_101010_2": 4, "CL_UNORM_INT24": 4}  # fmt: skip
_DTYPES = {"CL_SNORM_INT8": np.int8, "CL_SIGNED_INT8": np.int8, "CL_UNORM_INT8": np.uint8,
           "CL_UNSIGNED_INT8": np.uint8, "CL_SNORM_INT16": np.int16,
           "CL_SIGNED_INT16": np.int16, "CL_UNORM_INT16": np.uint16,
           "CL_UNSIGNED_INT16": np.uint16, "CL_HALF_FLOAT": np.float16,
           "CL_SIGNED_INT32": np.int32, "CL_UNSIGNED_INT32": np.uint32,
           "CL_FLOAT": np.float32}  # fmt: skip


def _in(value: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(low <= value <= high for low, high in ranges)


@cache
def _tables() -> tuple[dict[int, str], dict[int, str], dict[str, int], dict[str, int]]:
    """(order value -> name, type value -> name, name -> order, name -> type)."""
    orders: dict[int, str] = {}
    types: dict[int, str] = {}
    for name in constant_names():
        value = getattr(C, name)
        # Only the CL_<ORDER> / CL_QCOM_<ORDER> spellings: skip enums sharing the range.
        if not isinstance(value, int) or name.startswith(("CL_DEVICE", "CL_MEM", "CL_IMAGE")):
            continue
        if _in(value, _ORDER_RANGES):
            orders.setdefault(value, name)
        elif _in(value, _TYPE_RANGES):
            types.setdefault(value, name)
    return orders, types, {n: v for v, n in orders.items()}, {n: v for v, n in types.items()}


def order_name(value: int) -> str:
    """``"CL_QCOM_NV12"`` for 0x4133; ``"0x...."`` for a value no cdef names."""
    return _tables()[0].get(value, f"{value:#06x}")


def type_name(value: int) -> str:
    """``"CL_UNORM_INT8"`` for 0x10D2; ``"0x...."`` for a value no cdef names."""
    return _tables()[1].get(value, f"{value:#06x}")


class ImageFormat(NamedTuple):
    """A ``cl_image_format``: channel order and channel data type tokens."""

    order: int
    data_type: int

    @property
    def order_name(self) -> str:
        return order_name(self.order)

    @property
    def type_name(self) -> str:
        return type_name(self.data_type)

    def __str__(self) -> str:
        return f"{self.order_name}/{self.type_name}"

    def __repr__(self) -> str:
        return f"ImageFormat({self.order_name}, {self.type_name})"

    def to_pyopencl(self) -> Any:
        """The same format as a ``pyopencl.ImageFormat``."""
        import pyopencl

        return pyopencl.ImageFormat(self.order, self.data_type)


def _token(part: Any, by_name: dict[str, int], what: str, spec: Any) -> int:
    if isinstance(part, (int, np.integer)) and not isinstance(part, bool):
        return int(part)
    if isinstance(part, str):
        text = part.strip()
        for candidate in (text, f"CL_{text}", f"CL_{text.upper()}", text.upper()):
            if candidate in by_name:
                return by_name[candidate]
    raise ConfigError(
        f"image format {spec!r}: {part!r} is not a channel {what}; expected a token or a "
        f"name such as {'CL_RGBA' if what == 'order' else 'CL_UNORM_INT8'}"
    )


def parse_format(spec: Any) -> ImageFormat:
    """An :class:`ImageFormat` from ``"ORDER/TYPE"``, an ``(order, type)`` pair of tokens
    or names, a ``pyopencl.ImageFormat`` or an ``ImageFormat``.

    >>> parse_format("CL_R/CL_UNORM_INT8") == parse_format(("R", "UNORM_INT8"))
    True
    """
    if isinstance(spec, ImageFormat):
        return spec
    if hasattr(spec, "channel_order") and hasattr(spec, "channel_data_type"):
        return ImageFormat(int(spec.channel_order), int(spec.channel_data_type))
    parts: Any = spec.split("/") if isinstance(spec, str) else spec
    try:
        order, data_type = parts
    except (TypeError, ValueError):
        raise ConfigError(
            f"image format {spec!r}: expected 'ORDER/TYPE' (e.g. 'RGBA/UNORM_INT8'), an "
            "(order, type) pair or a pyopencl.ImageFormat"
        ) from None
    _, _, orders, types = _tables()
    return ImageFormat(
        _token(order, orders, "order", spec), _token(data_type, types, "type", spec)
    )


def channel_count(order: int) -> int:
    """Channels of a standard order (``CL_RG`` -> 2); ConfigError for vendor orders."""
    name = order_name(order)
    if name not in _CHANNELS:
        raise ConfigError(f"channel order {name} has no standard channel count")
    return _CHANNELS[name]


def element_size(fmt: ImageFormat) -> int:
    """Bytes per pixel of a standard format (``CL_RGBA/CL_FLOAT`` -> 16).

    >>> element_size(parse_format("RG/UNORM_INT8"))
    2
    """
    type_ = type_name(fmt.data_type)
    if type_ in _PACKED_BYTES:
        return _PACKED_BYTES[type_]
    if type_ not in _CHANNEL_BYTES:
        raise ConfigError(f"channel type {type_} has no standard size (format {fmt})")
    return channel_count(fmt.order) * _CHANNEL_BYTES[type_]


def numpy_dtype(data_type: int) -> np.dtype:
    """The numpy dtype of one channel (``CL_HALF_FLOAT`` -> float16)."""
    name = type_name(data_type)
    if name not in _DTYPES:
        raise ConfigError(f"channel type {name} has no numpy equivalent")
    return np.dtype(_DTYPES[name])
