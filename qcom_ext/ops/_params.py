"""Argument checks the convolution ops share: sizes, activations, weights, bias."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError

__all__ = [
    "ACTIVATIONS",
    "Geometry",
    "activation_code",
    "bias_vector",
    "choice",
    "is_int",
    "pair",
    "slope_value",
]

#: Fused activations: name -> the kernels' ACTIVATION code.
ACTIVATIONS = {None: 0, "relu": 1, "relu6": 2, "leaky_relu": 3}


def is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def pair(value: Any, what: str, minimum: int) -> tuple[int, int]:
    """(height, width) from an int or a pair of ints, each at least ``minimum``."""
    if is_int(value):
        values: tuple[Any, ...] = (value, value)
    elif isinstance(value, (tuple, list, np.ndarray)):
        values = tuple(value)
    else:
        values = ()
    if len(values) != 2 or not all(is_int(v) for v in values):
        raise ConfigError(f"{what} must be an int or a pair of ints, not {value!r}")
    if min(values) < minimum:
        raise ConfigError(f"{what} must be at least {minimum}, not {value!r}")
    return int(values[0]), int(values[1])


def choice(value: Any, allowed: Sequence[int], what: str) -> int:
    """``value`` if it is an int (not a bool or a float that equals one) in ``allowed``."""
    if not is_int(value) or int(value) not in allowed:
        raise ConfigError(f"{what} must be one of {tuple(allowed)}, not {value!r}")
    return int(value)


def slope_value(slope: Any) -> np.float32:
    """``negative_slope`` as the float32 the kernels take: a finite real number."""
    if isinstance(slope, (bool, np.bool_)) or not isinstance(
        slope, (int, float, np.integer, np.floating)
    ):
        raise ConfigError(f"negative_slope must be a finite number, not {slope!r}")
    with np.errstate(over="ignore"):
        value = np.float32(slope)
    if not np.isfinite(value):
        raise ConfigError(f"negative_slope must be finite (as float32), not {slope!r}")
    return value


def activation_code(activation: str | None, slope: Any) -> int:
    if not (activation is None or isinstance(activation, str)) or activation not in ACTIVATIONS:
        names = ", ".join(repr(a) for a in ACTIVATIONS)
        raise ConfigError(f"activation {activation!r} is not one of {names}")
    slope_value(slope)
    return ACTIVATIONS[activation]


@dataclass(frozen=True)
class Geometry:
    """Kernel size, stride, padding and dilation of a 2D convolution, as (h, w) pairs."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]

    @classmethod
    def of(cls, kernel: tuple[int, int], stride: Any, padding: Any, dilation: Any) -> Geometry:
        return cls(
            kernel,
            pair(stride, "stride", 1),
            pair(padding, "padding", 0),
            pair(dilation, "dilation", 1),
        )

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """(OH, OW) for an input of (height, width); a clear error when it is empty."""
        sizes = []
        for size, k, s, p, d in zip(
            (height, width), self.kernel, self.stride, self.padding, self.dilation, strict=True
        ):
            sizes.append((size + 2 * p - d * (k - 1) - 1) // s + 1)
        if min(sizes) < 1:
            raise ConfigError(
                f"a {height} x {width} input is smaller than the {self.kernel} kernel "
                f"(dilation {self.dilation}, padding {self.padding}): the output is empty"
            )
        return sizes[0], sizes[1]

    def defines(self) -> dict[str, int]:
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.stride, self.dilation
        return {"KH": kh, "KW": kw, "SH": sh, "SW": sw, "DH": dh, "DW": dw}


def weight_array(weight: Any, what: str, dims: Sequence[int]) -> np.ndarray:
    try:
        array = np.asarray(weight)
    except (TypeError, ValueError) as exc:  # ragged nesting and the like
        raise ConfigError(f"{what} must be a float array: {exc}") from None
    if array.ndim not in dims:
        raise ConfigError(
            f"{what} must have {' or '.join(map(str, dims))} dimensions, got shape {array.shape}"
        )
    if not np.issubdtype(array.dtype, np.floating) or 0 in array.shape:
        raise ConfigError(
            f"{what} must be a non-empty float array, got {array.dtype} {array.shape}"
        )
    return array.astype(np.float64)


def bias_vector(bias: Any, channels: int) -> np.ndarray:
    """The bias as float32 of ``channels`` values (zeros for None)."""
    if bias is None:
        return np.zeros(channels, np.float32)
    try:
        array = np.asarray(bias)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bias must be a numeric array: {exc}") from None
    if array.shape != (channels,):
        raise ConfigError(f"bias must have shape ({channels},), got {array.shape}")
    if array.dtype.kind not in "iuf":
        raise ConfigError(f"bias must be numeric, got {array.dtype}")
    return array.astype(np.float32)
