"""Checks of the convolution weights and bias the layers are given (the dtype rule of
:mod:`qcom_ext.ops._casting`: weights go to the layer's storage, bias to float32)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._casting import cast_array, float_array

__all__ = ["bias_vector", "weight_array"]


def weight_array(weight: Any, what: str, dims: Sequence[int], dtype: Any) -> np.ndarray:
    """``weight`` as a ``dtype`` array of one of ``dims`` dimensions, or a clear error."""
    array = float_array(weight, what, dtype)
    if array.ndim not in dims:
        raise ConfigError(
            f"{what} must have {' or '.join(map(str, dims))} dimensions, got shape {array.shape}"
        )
    if 0 in array.shape:
        raise ConfigError(
            f"{what} must be a non-empty float array, got {array.dtype} {array.shape}"
        )
    return cast_array(array, what, dtype)


def bias_vector(bias: Any, channels: int, length: int | None = None) -> np.ndarray:
    """The bias as float32 of ``channels`` values (zeros for None), zero-padded to
    ``length`` values (the kernels' channel blocks) when given."""
    padded = np.zeros(channels if length is None else length, np.float32)
    if bias is None:
        return padded
    array = float_array(bias, "bias")
    if array.shape != (channels,):
        raise ConfigError(f"bias must have shape ({channels},), got {array.shape}")
    padded[:channels] = cast_array(array, "bias", np.float32)
    return padded
