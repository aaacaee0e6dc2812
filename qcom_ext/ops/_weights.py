"""Checks of the convolution weights and bias the layers are given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError

__all__ = ["bias_vector", "weight_array"]


def weight_array(weight: Any, what: str, dims: Sequence[int]) -> np.ndarray:
    """``weight`` as a float64 array of one of ``dims`` dimensions, or a clear error."""
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


def bias_vector(bias: Any, channels: int, length: int | None = None) -> np.ndarray:
    """The bias as float32 of ``channels`` values (zeros for None), zero-padded to
    ``length`` values (the kernels' channel blocks) when given."""
    padded = np.zeros(channels if length is None else length, np.float32)
    if bias is None:
        return padded
    try:
        array = np.asarray(bias)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bias must be a numeric array: {exc}") from None
    if array.shape != (channels,):
        raise ConfigError(f"bias must have shape ({channels},), got {array.shape}")
    if array.dtype.kind not in "iuf":
        raise ConfigError(f"bias must be numeric, got {array.dtype}")
    padded[:channels] = array
    return padded
