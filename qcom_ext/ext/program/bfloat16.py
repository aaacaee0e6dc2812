"""bfloat16 on the host: the bit patterns ``qcom_mad32_bf16`` takes, and its reference.

numpy has no bfloat16 type; kernels receive bf16 values as ``ushort`` bit patterns (the
upper 16 bits of a float32). :func:`to_bfloat16` rounds float32 to those bits (to
nearest, ties to even), :func:`from_bfloat16` widens them back (exactly), and
:func:`mad32_bf16` is what ``qcom_mad32_bf16(a, b, acc)`` returns
(cl_qcom_bfloat16_product, qcom-extensions.md section 18): ``a * b + acc`` rounded once
to float32.

>>> import numpy as np
>>> bits = to_bfloat16([1.0, 2.0, 3.14159, -0.0, np.inf])
>>> [hex(b) for b in bits]
['0x3f80', '0x4000', '0x4049', '0x8000', '0x7f80']
>>> from_bfloat16(bits).tolist()
[1.0, 2.0, 3.140625, -0.0, inf]
>>> mad32_bf16(0x3F80, 0x4000, 3.0)  # the example observed on an Adreno device
np.float32(5.0)

Anything else is a :class:`~qcom_ext.ConfigError` (a ValueError) naming it: complex or
non-numeric values, and bit patterns that are not integers in 0..0xFFFF (numpy would
wrap or truncate them into another value without a word).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from qcom_ext.errors import ConfigError

__all__ = ["from_bfloat16", "mad32_bf16", "to_bfloat16"]


def to_bfloat16(values: ArrayLike) -> np.ndarray:
    """``uint16`` bfloat16 bit patterns of ``values`` (as float32), rounded to nearest even;
    a NaN stays a (quiet) NaN of the same sign, a value beyond bf16 range becomes inf.

    >>> hex(to_bfloat16(1.0 + 2.0**-8)[()])  # halfway between 1 and 1 + 2**-7: to even
    '0x3f80'
    """
    floats = _real(values, "to_bfloat16 values").astype(np.float32)
    bits = floats.view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(
        16
    )
    nan = np.isnan(floats)
    quiet = (bits >> np.uint32(16)) | np.uint32(0x0040)
    return np.where(nan, quiet, rounded).astype(np.uint16)


def from_bfloat16(bits: ArrayLike) -> np.ndarray:
    """float32 values of ``uint16`` bfloat16 bit patterns (exact).

    >>> from_bfloat16(0x7FC0)[()]
    np.float32(nan)
    """
    wide = _bit_patterns(bits, "from_bfloat16 bits").astype(np.uint32) << np.uint32(16)
    return wide.view(np.float32)


def _array(values: ArrayLike, what: str) -> np.ndarray:
    try:
        return np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged nesting and the like
        raise ConfigError(f"{what}: not an array of numbers ({exc}): {values!r}") from None


def _real(values: ArrayLike, what: str) -> np.ndarray:
    """``values`` as a real (bool, integer or float) array; ConfigError otherwise."""
    array = _array(values, what)
    if array.dtype.kind not in "biuf":
        raise ConfigError(f"{what} must be real numbers, got dtype {array.dtype}: {values!r}")
    if array.dtype.kind == "f" and array.dtype.itemsize > 4:
        with np.errstate(over="ignore"):  # beyond float32: inf, as documented
            return array.astype(np.float32)
    return array


def _bit_patterns(bits: ArrayLike, what: str) -> np.ndarray:
    """``bits`` as integers in 0..0xFFFF; ConfigError for floats, negatives, wider values."""
    array = _array(bits, what)
    if array.dtype.kind not in "iu":
        raise ConfigError(
            f"{what} must be integer bfloat16 bit patterns (uint16), got dtype {array.dtype}: "
            f"{bits!r}"
        )
    if array.size and (int(array.min()) < 0 or int(array.max()) > 0xFFFF):
        bad = array[(array < 0) | (array > 0xFFFF)].ravel()[0]
        raise ConfigError(f"{what}: {int(bad)} is not a 16-bit pattern (0..0xFFFF)")
    return array


def mad32_bf16(a: ArrayLike, b: ArrayLike, acc: ArrayLike) -> np.ndarray | np.float32:
    """``qcom_mad32_bf16(a, b, acc)``: bf16 bits ``a`` times bf16 bits ``b`` plus float32
    ``acc``, rounded once to float32 (a fused multiply-add).

    The product of two bf16 values has at most 16 significant bits and is exact in
    float64; so is the sum unless the terms are more than 29 binary orders apart, where
    the smaller one is below half a float32 ulp of the larger either way. Rounding the
    float64 result to float32 is therefore the correctly rounded fused result.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # inf * 0, inf - inf: NaN as in C
        product = from_bfloat16(a).astype(np.float64) * from_bfloat16(b).astype(np.float64)
        accumulator = _real(acc, "mad32_bf16 acc").astype(np.float32).astype(np.float64)
        result = (product + accumulator).astype(np.float32)
    return result[()] if result.ndim == 0 else result
