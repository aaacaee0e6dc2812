"""The checks a weight image's filter goes through before anything is allocated.

:func:`validate_filter` turns the user's weights, centre and options into a
:class:`FilterSpec` (weights as ``(phases, rows, cols)`` in the storage dtype, and the
geometry) or raises ConfigError naming the bad value and what was expected. The shapes and
phase rules are those of :mod:`qcom_ext.ext.accelerated.weights`.

>>> from qcom_ext.ext.accelerated.support import FALLBACK_LIMITS
>>> spec = validate_filter([[1, 2, 1]] * 2, (1, 1), True, np.float16, None, FALLBACK_LIMITS)
>>> spec.filter_size, spec.num_phases, spec.weights.shape, spec.weights.dtype
((3, 3), 1, (1, 2, 3), dtype('float16'))
>>> validate_filter(np.ones((17, 3)), (1, 1), False, np.float16, None, FALLBACK_LIMITS)
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: filter size 3x17 is larger than 16x16, ...
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ext.accelerated.support import AcceleratedLimits

__all__ = ["DTYPES", "FilterSpec", "is_int", "validate_filter"]

#: storage dtype -> the weight image's channel data type
DTYPES = {np.dtype(np.float16): "CL_HALF_FLOAT", np.dtype(np.float32): "CL_FLOAT"}


@dataclass(frozen=True)
class FilterSpec:
    """Validated weights: (phases, rows, cols) in the storage dtype, and the geometry."""

    weights: np.ndarray
    filter_size: tuple[int, int]
    center: tuple[int, int]
    separable: bool
    num_phases: int
    phases_per_axis: int


def is_int(value: Any) -> bool:
    """An integer that is not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _pair(name: str, value: Any, allow_zero: bool = False) -> tuple[int, int]:
    try:
        a, b = value
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a pair of integers (x, y), got {value!r}") from None
    low = 0 if allow_zero else 1
    if not (is_int(a) and is_int(b)) or a < low or b < low:
        raise ConfigError(f"{name} must be a pair of integers >= {low} (x, y), got {value!r}")
    return int(a), int(b)


def _storage(dtype: Any) -> np.dtype:
    try:
        storage = np.dtype(dtype)
    except TypeError:
        storage = None
    if storage not in DTYPES:
        raise ConfigError(f"dtype must be numpy.float16 or numpy.float32, got {dtype!r}")
    return storage


def _array(weights: Any) -> np.ndarray:
    try:
        array = np.asarray(weights)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"weights must be a numeric array: {exc}") from None
    if array.dtype.kind not in "biuf" or array.dtype == np.bool_:
        raise ConfigError(f"weights must be real numbers, got an array of dtype {array.dtype}")
    array = array.astype(np.float64)
    return array[None] if array.ndim == 2 else array


def _rounded(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if not np.all(np.isfinite(array)):
        raise ConfigError("weights must be finite (found NaN or infinity)")
    with np.errstate(over="ignore"):  # reported below, with the value
        stored = array.astype(dtype)
    if not np.all(np.isfinite(stored)):
        biggest = float(np.max(np.abs(array)))
        raise ConfigError(
            f"weight {biggest:g} does not fit in {dtype.name} "
            f"(largest {float(np.finfo(dtype).max):g})"
        )
    return stored


def _separable_geometry(array: np.ndarray, weights: Any, filter_size: Any) -> tuple[int, ...]:
    """(fx, fy, phases, phases per axis) of separable weights (phases, 2, n)."""
    if array.ndim != 3 or array.shape[1] != 2 or array.shape[2] < 1:
        raise ConfigError(
            f"separable weights must have shape (2, n) or (phases, 2, n) "
            f"(row 0 horizontal, row 1 vertical), got {np.shape(weights)}"
        )
    n = array.shape[2]
    fx, fy = (n, n) if filter_size is None else _pair("filter_size", filter_size)
    if max(fx, fy) != n:
        raise ConfigError(
            f"separable filter_size {fx}x{fy} needs rows of "
            f"max(fx, fy) = {max(fx, fy)} taps, got {n}"
        )
    if np.any(array[:, 0, fx:]) or np.any(array[:, 1, fy:]):
        raise ConfigError(
            f"separable weights beyond the filter size {fx}x{fy} must be 0 "
            "(row 0 uses fx taps, row 1 fy taps)"
        )
    phases = array.shape[0]
    if not _power_of_two(phases):
        raise ConfigError(f"separable weights have {phases} phases; expected a power of two")
    return fx, fy, phases, phases


def _grid_geometry(array: np.ndarray, weights: Any, filter_size: Any) -> tuple[int, ...]:
    """(fx, fy, phases, phases per axis) of 2-D weights (phases, fy, fx)."""
    if array.ndim != 3 or 0 in array.shape:
        raise ConfigError(
            f"2-D weights must have shape (fy, fx) or (phases, fy, fx), got {np.shape(weights)}"
        )
    phases, fy, fx = array.shape
    if filter_size is not None and _pair("filter_size", filter_size) != (fx, fy):
        raise ConfigError(
            f"filter_size {filter_size} does not match weights of shape "
            f"{np.shape(weights)} (fx = columns, fy = rows)"
        )
    per_axis = math.isqrt(phases)
    if per_axis * per_axis != phases or not _power_of_two(per_axis):
        raise ConfigError(
            f"2-D weights have {phases} phases; expected P*P slices with P "
            "a power of two (1, 4, 16, 64, ...): num_phase_x = num_phase_y"
        )
    return fx, fy, phases, per_axis


def _check_limits(fx: int, fy: int, phases: int, limits: AcceleratedLimits) -> None:
    which = limits.where()
    if limits.max_filter_size is not None:
        max_x, max_y = limits.max_filter_size
        if fx > max_x or fy > max_y:
            raise ConfigError(
                f"filter size {fx}x{fy} is larger than {max_x}x{max_y}, {which} "
                "CL_DEVICE_HOF_MAX_FILTER_SIZE_X/Y_QCOM"
            )
    if limits.max_num_phases is not None and phases > limits.max_num_phases:
        raise ConfigError(
            f"{phases} phases is more than {limits.max_num_phases}, {which} "
            "CL_DEVICE_HOF_MAX_NUM_PHASES_QCOM"
        )


def validate_filter(
    weights: Any,
    center: Any,
    separable: bool,
    dtype: Any,
    filter_size: Any,
    limits: AcceleratedLimits,
) -> FilterSpec:
    """The :class:`FilterSpec` of a weight image's arguments (see the module docstring)."""
    if not isinstance(separable, bool):
        raise ConfigError(f"separable must be True or False, got {separable!r}")
    storage = _storage(dtype)
    array = _array(weights)
    geometry = _separable_geometry if separable else _grid_geometry
    fx, fy, phases, per_axis = geometry(array, weights, filter_size)
    cx, cy = _pair("center", center, allow_zero=True)
    if not (0 <= cx < fx and 0 <= cy < fy):
        raise ConfigError(
            f"center ({cx}, {cy}) is outside the {fx}x{fy} filter: "
            f"expected 0 <= cx < {fx} and 0 <= cy < {fy}"
        )
    _check_limits(fx, fy, phases, limits)
    stored = _rounded(array, storage)
    return FilterSpec(stored, (fx, fy), (cx, cy), separable, phases, per_axis)
