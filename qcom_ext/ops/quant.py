"""ggml's q8_0 and q4_0 weight formats, in numpy, bit-exact with ggml's reference code.

Both formats cut each row of a weight matrix ``W`` (N rows of K) into blocks of 32
weights with one float16 scale ``d`` per block:

* **q8_0**: 32 int8 ``q``; weight ``q * d``; ``d = amax / 127``, ``q = roundf(w / d)``.
* **q4_0**: 16 bytes; element ``j`` in the low nibble of byte ``j``, element ``j + 16``
  in its high nibble; weight ``(nibble - 8) * d``; ``d = w_m / -8`` where ``w_m`` is the
  block's weight of largest magnitude (the first one on ties), nibble
  ``min(15, trunc(w / d + 8.5))``.

The arithmetic is float32 as in ggml's ``quantize_row_q8_0_ref`` / ``quantize_row_q4_0_ref``
(``ggml-quants.c``): ``1 / d`` is taken before ``d`` is rounded to float16, and ``roundf``
rounds halves away from zero (numpy's ``round`` would round them to even). Where ``1 / d``
overflows float32 (a block whose largest magnitude is below about 3.7e-37 for q8_0, 2.4e-38
for q4_0) ggml's float-to-integer cast is undefined; the quants are 0 there, as ggml on x86
and gguf-py write them, and the block's float16 scale is 0, so it stands for zeros anyway.

:class:`QuantizedWeights` keeps scales and quants in separate arrays (struct of arrays);
:meth:`QuantizedWeights.to_ggml` / :meth:`QuantizedWeights.from_ggml` convert to and from
ggml's interleaved blocks (``d`` then the quants, 34 or 18 bytes a block), the bytes of a
GGUF tensor.

>>> import numpy as np
>>> w = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64)
>>> q = quantize(w, "q8_0")
>>> q.scales.shape, q.quants.dtype, float(abs(dequantize(q) - w).max()) < 0.004
((1, 2), dtype('int8'), True)
>>> q4 = quantize(w, "q4_0")
>>> q4.quants.shape, int(q4.quants[0, 0] & 0xF), int(q4.quants[0, 0] >> 4)
((1, 32), 0, 4)
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from qcom_ext.errors import ConfigError

__all__ = [
    "BLOCK",
    "FORMATS",
    "QuantizedWeights",
    "dequantize",
    "quantize",
    "quantize_q4_0",
    "quantize_q8_0",
]

#: Weights per block in both formats.
BLOCK = 32
#: Bytes of quants per block.
_QUANT_BYTES = {"q8_0": 32, "q4_0": 16}
#: The quantized formats.
FORMATS = tuple(_QUANT_BYTES)

Format = Literal["q8_0", "q4_0"]


@dataclass(frozen=True, eq=False)
class QuantizedWeights:
    """A quantized ``(N, K)`` weight matrix, struct of arrays.

    ``scales``: float16 ``(N, K / 32)``, one per block. ``quants``: for q8_0 int8
    ``(N, K)``; for q4_0 uint8 ``(N, K / 2)``, each block's 16 bytes as ggml packs them.
    """

    format: Format
    shape: tuple[int, int]
    scales: np.ndarray
    quants: np.ndarray

    def __post_init__(self) -> None:
        fmt = _checked_format(self.format)
        n, k = _checked_shape(self.shape)
        for name in ("scales", "quants"):
            if not isinstance(getattr(self, name), np.ndarray):
                raise ConfigError(
                    f"{name}: a numpy array expected, got {type(getattr(self, name)).__name__}"
                )
        want_q = (n, k // BLOCK * _QUANT_BYTES[fmt])
        q_dtype = np.int8 if fmt == "q8_0" else np.uint8
        if self.scales.dtype != np.float16 or self.scales.shape != (n, k // BLOCK):
            raise ConfigError(
                f"scales: float16 {(n, k // BLOCK)} expected for a {fmt} {self.shape} "
                f"matrix, got {self.scales.dtype} {self.scales.shape}"
            )
        if self.quants.dtype != q_dtype or self.quants.shape != want_q:
            raise ConfigError(
                f"quants: {np.dtype(q_dtype)} {want_q} expected for a {fmt} {self.shape} "
                f"matrix, got {self.quants.dtype} {self.quants.shape}"
            )

    @property
    def nbytes(self) -> int:
        """Bytes of scales and quants (what a matrix-vector product reads)."""
        return int(self.scales.nbytes + self.quants.nbytes)

    def to_ggml(self) -> np.ndarray:
        """ggml's interleaved blocks: uint8 ``(N, K / 32 * (2 + quant bytes))``."""
        n, k = self.shape
        blocks = k // BLOCK
        d = self.scales.astype("<f2").view(np.uint8).reshape(n, blocks, 2)
        q = self.quants.view(np.uint8).reshape(n, blocks, _QUANT_BYTES[self.format])
        return np.concatenate([d, q], axis=2).reshape(n, -1)

    @classmethod
    def from_ggml(
        cls, data: np.ndarray | bytes, fmt: str, shape: tuple[int, int]
    ) -> QuantizedWeights:
        """The matrix whose ggml blocks are ``data`` (bytes of a GGUF tensor, any shape)."""
        fmt = _checked_format(fmt)
        n, k = _checked_shape(shape)
        per_block = 2 + _QUANT_BYTES[fmt]
        raw = _raw_bytes(data)
        if raw.size != n * (k // BLOCK) * per_block:
            raise ConfigError(
                f"{fmt} data of {raw.size} bytes for a {shape} matrix: expected "
                f"{n * (k // BLOCK) * per_block} ({per_block} bytes per block of {BLOCK})"
            )
        blocks = raw.reshape(n, k // BLOCK, per_block)
        scales = blocks[..., :2].copy().view("<f2").reshape(n, k // BLOCK).astype(np.float16)
        quants = blocks[..., 2:].reshape(n, -1).copy()
        return cls(fmt, (n, k), scales, quants.view(np.int8) if fmt == "q8_0" else quants)


def _raw_bytes(data: object) -> np.ndarray:
    """The bytes of ``data`` (a numpy array of numbers, or a bytes-like object), flat."""
    if isinstance(data, np.ndarray):
        if data.dtype.hasobject:
            raise ConfigError(f"ggml data of dtype {data.dtype}: expected bytes or numbers")
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    try:
        return np.frombuffer(data, np.uint8)  # type: ignore[call-overload]
    except TypeError:
        raise ConfigError(
            f"ggml data of type {type(data).__name__}: expected a numpy array or bytes"
        ) from None


def _checked_format(fmt: object) -> Format:
    if not isinstance(fmt, str) or fmt not in _QUANT_BYTES:
        raise ConfigError(f"format {fmt!r}: expected one of {FORMATS}")
    return fmt  # type: ignore[return-value]


def _checked_shape(shape: object) -> tuple[int, int]:
    try:
        dims = tuple(operator.index(size) for size in shape)  # type: ignore[attr-defined]
    except TypeError:
        raise ConfigError(f"weight shape {shape!r}: expected (N, K), two integers") from None
    if len(dims) != 2 or dims[0] < 1 or dims[1] < 1:
        raise ConfigError(f"weight shape {dims}: expected (N, K) with N, K >= 1")
    n, k = dims
    if k % BLOCK:
        raise ConfigError(
            f"K = {k}: q8_0 and q4_0 need K to be a multiple of {BLOCK} (their block size)"
        )
    return n, k


def _blocks_of(w: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
    """``w`` as float32 blocks ``(N, K / 32, 32)``, checked."""
    array = np.asarray(w)
    if array.ndim != 2:
        raise ConfigError(f"weights of shape {array.shape}: expected a 2-D (N, K) matrix")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ConfigError(f"weights of dtype {array.dtype}: expected a real number type")
    shape = _checked_shape(array.shape)
    with np.errstate(over="ignore"):
        as_float32 = array.astype(np.float32)
    _refuse_non_finite(as_float32, array)
    return as_float32.reshape(shape[0], shape[1] // BLOCK, BLOCK), shape


def _refuse_non_finite(as_float32: np.ndarray, given: np.ndarray) -> None:
    bad = np.argwhere(~np.isfinite(as_float32))
    if bad.size:
        at = tuple(int(i) for i in bad[0])
        value = float(given[at])
        beyond = " (beyond float32's +-3.4e38)" if np.isfinite(value) else ""
        raise ConfigError(
            f"weights{list(at)} = {value!r}{beyond}: inf and NaN have no quantized form "
            f"({len(bad)} such weight(s))"
        )


def _inverse(d: np.ndarray) -> np.ndarray:
    """``1 / d`` in float32, 0 where ``d`` is 0 (ggml: ``id = d ? 1.0f/d : 0.0f``); inf
    where it overflows (``d`` below 2**-128)."""
    safe = np.where(d == 0, np.float32(1), d)
    with np.errstate(over="ignore"):
        return np.where(d == 0, np.float32(0), np.float32(1) / safe).astype(np.float32)


def _scaled(blocks: np.ndarray, d: np.ndarray, plus: float = 0.0) -> np.ndarray:
    """``w * (1 / d) + plus`` per block in float32; 0 where it is not finite (``1 / d``
    overflowed: ggml's cast is undefined there, ggml on x86 and gguf-py give quants of 0)."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = blocks * _inverse(d)[..., None] + np.float32(plus)
    return np.where(np.isfinite(x), x, np.float32(0)).astype(np.float32)


def _roundf(x: np.ndarray) -> np.ndarray:
    """C's ``roundf``: halves away from zero, exactly (``trunc(x + 0.5)`` is not: in float32
    0.49999997 + 0.5 rounds up to 1)."""
    whole = np.trunc(x)
    away = np.where(np.abs(x - whole) >= np.float32(0.5), np.sign(x), np.float32(0))
    return (whole + away).astype(np.float32)


def _half(d: np.ndarray) -> np.ndarray:
    """The float16 scales ggml stores: round to nearest even; beyond 65504 they are inf, as
    in ggml (weights over about 8.3e6 in a q8_0 block, 5.2e5 in a q4_0 block)."""
    with np.errstate(over="ignore"):
        return d.astype(np.float16)


def quantize_q8_0(w: np.ndarray) -> QuantizedWeights:
    """q8_0 of an ``(N, K)`` matrix, K a multiple of 32 (ggml's reference rounding)."""
    blocks, shape = _blocks_of(w)
    d = (np.abs(blocks).max(axis=2) / np.float32(127)).astype(np.float32)
    q = _roundf(_scaled(blocks, d)).astype(np.int8)
    return QuantizedWeights("q8_0", shape, _half(d), q.reshape(shape))


def quantize_q4_0(w: np.ndarray) -> QuantizedWeights:
    """q4_0 of an ``(N, K)`` matrix, K a multiple of 32 (ggml's reference rounding)."""
    blocks, shape = _blocks_of(w)
    at = np.abs(blocks).argmax(axis=2)[..., None]  # the first of equal magnitudes
    d = (np.take_along_axis(blocks, at, axis=2)[..., 0] / np.float32(-8)).astype(np.float32)
    x = _scaled(blocks, d, plus=8.5)
    nibbles = np.minimum(np.trunc(x), 15).astype(np.uint8)  # x >= 0: trunc is the C cast
    packed = nibbles[..., :16] | (nibbles[..., 16:] << np.uint8(4))
    return QuantizedWeights("q4_0", shape, _half(d), packed.reshape(shape[0], -1))


def quantize(w: np.ndarray, fmt: str) -> QuantizedWeights:
    """``quantize_q8_0(w)`` or ``quantize_q4_0(w)`` by name."""
    return {"q8_0": quantize_q8_0, "q4_0": quantize_q4_0}[_checked_format(fmt)](w)


def dequantize(weights: QuantizedWeights) -> np.ndarray:
    """The float32 ``(N, K)`` matrix ``weights`` stands for (ggml's dequantize_row_*)."""
    if not isinstance(weights, QuantizedWeights):
        raise ConfigError(
            f"dequantize takes QuantizedWeights (from quantize), got {type(weights).__name__}"
        )
    n, k = weights.shape
    d = weights.scales.astype(np.float32)[..., None]
    if weights.format == "q8_0":
        q = weights.quants.reshape(n, k // BLOCK, BLOCK).astype(np.float32)
    else:
        packed = weights.quants.reshape(n, k // BLOCK, 16)
        low, high = packed & np.uint8(0xF), packed >> np.uint8(4)
        q = np.concatenate([low, high], axis=2).astype(np.float32) - np.float32(8)
    with np.errstate(invalid="ignore"):  # an inf scale (float16 overflow): 0 * inf is NaN
        return (q * d).astype(np.float32).reshape(n, k)
