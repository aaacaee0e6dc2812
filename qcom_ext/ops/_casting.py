"""The one dtype rule of the float convolution ops (docs/ops.md, "Dtypes").

Every float op stores float32 or float16 (its *compute dtype*: the layer's ``dtype``, or
for a function the input's, float64 counting as float32) and computes in float. Every
array it is given is cast to the dtype it is kept in (input and weights: the compute
dtype; bias: float32) the way numpy's ``same_kind`` casting casts a float array, with
two refusals, each a :class:`~qcom_ext.ConfigError` naming the argument:

* arrays that are not float (integer, bool, complex, object, strings): integer data
  in a float op is most often a quantised tensor (see ``conv2d_int8``);
* finite values the cast would turn into infinity (above 65,504 for float16).

>>> import numpy as np
>>> cast_array(np.ones(3), "bias", np.float32).dtype
dtype('float32')
>>> cast_array(np.ones(3, np.int64), "bias", np.float32)
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: bias has dtype int64; expected a non-empty float array (float16, float32 or float64, cast to float32; integer, bool, complex, object and string arrays are refused)
>>> cast_array([1.0, -7e4], "weight", np.float16)
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: weight holds a value of magnitude 70000, beyond float16's largest finite value 65504: the cast would make it infinite
"""  # noqa: E501

from __future__ import annotations

from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError

__all__ = ["FLOAT_DTYPES", "cast_array", "compute_dtype", "float_array", "storage_dtype"]

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))


def storage_dtype(dtype: Any, what: str) -> np.dtype:
    """A requested storage: float32 or float16; float64 means float32; anything else is
    refused."""
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        raise ConfigError(f"{what}: {dtype!r} is not a numpy dtype") from None
    if dtype == np.float64:
        return np.dtype(np.float32)
    if dtype not in FLOAT_DTYPES:
        raise ConfigError(
            f"{what} has dtype {dtype}; expected float32 or float16 "
            "(float64 is converted to float32)"
        )
    return dtype


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The compute dtype of a float array's ``dtype``: float16 stays, others float32."""
    return np.dtype(np.float16) if dtype == np.float16 else np.dtype(np.float32)


def float_array(value: Any, what: str, target: Any = np.float32) -> np.ndarray:
    """``value`` as a numpy float array (not yet cast), or a clear error naming ``what``
    (``target``: the dtype it is going to, for the message)."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nesting and the like
        raise ConfigError(f"{what} must be a float array: {exc}") from None
    if array.dtype.kind != "f":
        raise ConfigError(
            f"{what} has dtype {array.dtype}; expected a non-empty float array (float16, "
            f"float32 or float64, cast to {np.dtype(target).name}; integer, bool, complex, "
            "object and string arrays are refused)"
        )
    return array


def cast_array(value: Any, what: str, dtype: Any) -> np.ndarray:
    """``value`` (a float array) cast to ``dtype``; refused when it is not float or when
    a finite value would overflow (see the module)."""
    dtype = np.dtype(dtype)
    array = float_array(value, what, dtype)
    if array.dtype == dtype:
        return array
    with np.errstate(over="ignore"):  # reported below, with the value and the limit
        cast = array.astype(dtype)
    if cast.dtype.itemsize < array.dtype.itemsize:
        finite = np.isfinite(array)
        if np.any(np.isinf(cast) & finite):
            biggest = float(np.max(np.abs(array[finite])))
            raise ConfigError(
                f"{what} holds a value of magnitude {biggest:g}, beyond {dtype.name}'s "
                f"largest finite value {float(np.finfo(dtype).max):g}: the cast would make "
                "it infinite"
            )
    return cast
