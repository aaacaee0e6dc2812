"""Argument checks the convolution ops share: sizes, activations, weights, bias."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError

__all__ = ["ACTIVATIONS", "Geometry", "activation_code", "bias_vector", "pair"]

#: Fused activations: name -> the kernels' ACTIVATION code.
ACTIVATIONS = {None: 0, "relu": 1, "relu6": 2, "leaky_relu": 3}


def pair(value: Any, what: str, minimum: int) -> tuple[int, int]:
    """(height, width) from an int or a pair of ints, each at least ``minimum``."""
    values = (value, value) if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != 2 or not all(isinstance(v, (int, np.integer)) for v in values):
        raise ConfigError(f"{what} must be an int or a pair of ints, not {value!r}")
    if min(values) < minimum:
        raise ConfigError(f"{what} must be at least {minimum}, not {value!r}")
    return int(values[0]), int(values[1])


def activation_code(activation: str | None, slope: float) -> int:
    if activation not in ACTIVATIONS:
        names = ", ".join(repr(a) for a in ACTIVATIONS)
        raise ConfigError(f"activation {activation!r} is not one of {names}")
    if not np.isfinite(slope):
        raise ConfigError(f"negative_slope must be finite, not {slope}")
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
    array = np.asarray(weight)
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
    array = np.asarray(bias)
    if array.shape != (channels,):
        raise ConfigError(f"bias must have shape ({channels},), got {array.shape}")
    if not np.issubdtype(array.dtype, np.floating) and not np.issubdtype(array.dtype, np.integer):
        raise ConfigError(f"bias must be numeric, got {array.dtype}")
    return array.astype(np.float32)
