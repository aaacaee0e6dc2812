"""Oracles of tests/test_fuzz_*.py: which inputs are valid, and what they must give.

Each is written from the documented rule or the specification, not from qcom_ext's code:
the OpenCL 3.0 image-format table, the weight-image rules of
docs/accelerated_image_ops.md, the update rules of docs/recording.md, IEEE rounding done
exactly with fractions for bfloat16.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from typing import Any

import numpy as np

SIZE_MAX = 2**64 - 1


def is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# ---- image formats: OpenCL 3.0 section 5.3.1.1 (and cl_khr_depth_images) ----------------

UNPACKED = {
    "SNORM_INT8": 1,
    "SNORM_INT16": 2,
    "UNORM_INT8": 1,
    "UNORM_INT16": 2,
    "SIGNED_INT8": 1,
    "SIGNED_INT16": 2,
    "SIGNED_INT32": 4,
    "UNSIGNED_INT8": 1,
    "UNSIGNED_INT16": 2,
    "UNSIGNED_INT32": 4,
    "HALF_FLOAT": 2,
    "FLOAT": 4,
}
PACKED = {
    "UNORM_SHORT_565": 2,
    "UNORM_SHORT_555": 2,
    "UNORM_INT_101010": 4,
    "UNORM_INT_101010_2": 4,
    "UNORM_INT24": 4,
}
_NORM_OR_FLOAT = ("UNORM_INT8", "UNORM_INT16", "SNORM_INT8", "SNORM_INT16", "HALF_FLOAT", "FLOAT")
_BYTES = ("UNORM_INT8", "SNORM_INT8", "SIGNED_INT8", "UNSIGNED_INT8")
_PACKED_RGB = ("UNORM_SHORT_565", "UNORM_SHORT_555", "UNORM_INT_101010")
#: order -> (channels per element, legal data types). Rx, RGx and DEPTH_STENCIL exist too,
#: and qcom_ext refuses them (their element size differs between implementations).
SPEC_TABLE: dict[str, tuple[int, tuple[str, ...]]] = {
    **{o: (n, tuple(UNPACKED)) for o, n in (("R", 1), ("A", 1), ("RG", 2), ("RA", 2))},
    "RGBA": (4, (*UNPACKED, "UNORM_INT_101010_2")),
    "RGB": (1, _PACKED_RGB),
    "RGBx": (1, _PACKED_RGB),
    "INTENSITY": (1, _NORM_OR_FLOAT),
    "LUMINANCE": (1, _NORM_OR_FLOAT),
    **{o: (4, _BYTES) for o in ("BGRA", "ARGB", "ABGR")},
    "sRGB": (3, ("UNORM_INT8",)),
    **{o: (4, ("UNORM_INT8",)) for o in ("sRGBx", "sRGBA", "sBGRA")},
    "DEPTH": (1, ("UNORM_INT16", "FLOAT", "UNORM_INT24")),
}
ORDERS = [*SPEC_TABLE, "Rx", "RGx", "DEPTH_STENCIL"]
TYPES = [*UNPACKED, *PACKED]


def format_layout(order: str, data_type: str) -> tuple[int, int] | None:
    """(channels, element size) of a legal pair, None for an illegal one."""
    if order not in SPEC_TABLE or data_type not in SPEC_TABLE[order][1]:
        return None
    if data_type in PACKED:
        return 1, PACKED[data_type]
    channels = SPEC_TABLE[order][0]
    return channels, channels * UNPACKED[data_type]


# ---- weight images: docs/accelerated_image_ops.md, the portable limits -------------------

FALLBACK_MAX_FILTER, FALLBACK_MAX_PHASES = (16, 16), 64


def weight_oracle(weights, separable, filter_size, center, storage):
    """((phases, rows, cols) float64 weights, (fx, fy)), or None where WeightImage must
    refuse the input."""
    if not isinstance(separable, bool) or storage not in (np.float16, np.float32):
        return None
    array = np.asarray(weights)
    if array.dtype.kind not in "iuf":
        return None
    array = array.astype(np.float64)
    array = array[None] if array.ndim == 2 else array
    if array.ndim != 3 or 0 in array.shape:
        return None
    phases, rows, cols = array.shape
    if separable:
        if rows != 2 or phases & (phases - 1):
            return None
        if filter_size is None:
            fx = fy = cols
        elif (
            isinstance(filter_size, tuple)
            and len(filter_size) == 2
            and all(is_int(v) and v >= 1 for v in filter_size)
        ):
            fx, fy = filter_size
            if max(fx, fy) != cols or np.any(array[:, 0, fx:]) or np.any(array[:, 1, fy:]):
                return None
        else:
            return None
    else:
        fy, fx = rows, cols
        if filter_size is not None and filter_size != (fx, fy):
            return None
        if filter_size is not None and not all(is_int(v) for v in filter_size):
            return None
        root = math.isqrt(phases)
        if root * root != phases or root & (root - 1):
            return None
    if not (isinstance(center, tuple) and len(center) == 2 and all(is_int(v) for v in center)):
        return None
    if not (0 <= center[0] < fx and 0 <= center[1] < fy):
        return None
    if fx > FALLBACK_MAX_FILTER[0] or fy > FALLBACK_MAX_FILTER[1] or phases > FALLBACK_MAX_PHASES:
        return None
    if not np.all(np.isfinite(array)) or np.any(np.abs(array) > np.finfo(storage).max):
        return None
    return array, (fx, fy)


def float32_of(value: Any) -> float | None:
    """``value`` as a float32 number, None for what is not a real number (bools too)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        return None
    try:
        as_float = float(value)
    except OverflowError:
        return math.inf
    with np.errstate(over="ignore"):
        return float(np.float32(as_float))


# ---- recording updates: docs/recording.md ------------------------------------------------


def dims_oracle(value: Any, minimum: int) -> tuple[int, ...] | None:
    """1 to 3 ints >= ``minimum`` that fit a size_t, from an int or a tuple/list."""
    if is_int(value):
        items: tuple[Any, ...] = (value,)
    elif isinstance(value, (tuple, list)):
        items = tuple(value)
    else:
        return None
    if not 1 <= len(items) <= 3 or not all(is_int(v) and minimum <= v <= SIZE_MAX for v in items):
        return None
    return tuple(int(v) for v in items)


def scalar_oracle(value: Any, dtype: np.dtype) -> bytes | None:
    """The bytes an update of a recorded ``dtype`` scalar sets, None where refused: Python
    numbers are converted exactly (no float into an int, nothing out of range), numpy
    scalars must have the dtype, bytes the size."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return dtype.type(value).tobytes() if info.min <= value <= info.max else None
        as_float = float32_of(value)
        return None if as_float is None or math.isinf(as_float) else dtype.type(value).tobytes()
    if isinstance(value, float):
        if dtype.kind != "f":
            return None
        with np.errstate(over="ignore"):
            converted = dtype.type(value)
        return None if math.isfinite(value) and not np.isfinite(converted) else converted.tobytes()
    if isinstance(value, np.generic):
        return value.tobytes() if value.dtype == dtype else None
    if isinstance(value, bytes):
        return value if len(value) == dtype.itemsize else None
    return None


# ---- bfloat16: exact rounding with fractions ---------------------------------------------


def bf16_value(bits: int) -> Fraction | float:
    """The value of a bf16 pattern: a Fraction, or a float for inf and NaN."""
    as_float = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    return as_float if not math.isfinite(as_float) else Fraction(as_float)


def round_to_float32(value: Fraction) -> float:
    """Correctly rounded to float32 (ties to even), overflowing to inf: no double rounding."""
    if value == 0:
        return 0.0
    if abs(value) >= Fraction(2) ** 128 - Fraction(2) ** 103:  # past FLT_MAX + half an ulp
        return math.copysign(math.inf, value)
    with np.errstate(over="ignore"):  # FLT_MAX's neighbour is inf
        guess = np.float32(float(value))  # within one float32 ulp of the answer
        neighbours = (
            np.nextafter(guess, np.float32(-np.inf)),
            guess,
            np.nextafter(guess, np.float32(np.inf)),
        )
    best: tuple[tuple[Fraction, bool], float] | None = None
    for candidate in neighbours:
        if np.isfinite(candidate):
            odd = bool(int(np.array(candidate).view(np.uint32)) & 1)
            key = (abs(Fraction(float(candidate)) - value), odd)
            if best is None or key < best[0]:
                best = (key, float(candidate))
    assert best is not None
    return best[1]


def to_bf16_reference(f: np.float32) -> int:
    """float32 -> bf16 bits, to nearest with ties to even; NaN stays a quiet NaN."""
    bits = int(np.array(f, np.float32).view(np.uint32))
    low = bits >> 16
    if math.isnan(float(f)):
        return low | 0x40
    if math.isinf(float(f)) or not bits & 0xFFFF:
        return low
    high = low + 1
    exact = Fraction(float(f))
    below = Fraction(struct.unpack("<f", struct.pack("<I", low << 16))[0])
    above = bf16_value(high)
    if not isinstance(above, Fraction):  # rounding up reaches inf: 2**128 for the distance
        above = Fraction(2) ** 128 * (1 if float(f) > 0 else -1)
    d_low, d_high = abs(exact - below), abs(above - exact)
    if d_low != d_high:
        return low if d_low < d_high else high
    return low if not low & 1 else high


def mad32_bf16_reference(a: int, b: int, acc: float) -> float:
    """``a * b + acc`` rounded once to float32 (IEEE rules for infinities and NaN)."""
    pa, pb, pc = bf16_value(a), bf16_value(b), float(np.float32(acc))
    if isinstance(pa, float) or isinstance(pb, float) or not math.isfinite(pc):
        with np.errstate(all="ignore"):
            return float(np.float32(float(pa) * float(pb) + pc))
    return round_to_float32(pa * pb + Fraction(pc))
