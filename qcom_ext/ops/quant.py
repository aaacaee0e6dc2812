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
rounds halves away from zero (numpy's ``round`` would round them to even).

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
    def from_ggml(cls, data: np.ndarray, fmt: str, shape: tuple[int, int]) -> QuantizedWeights:
        """The matrix whose ggml blocks are ``data`` (bytes of a GGUF tensor, any shape)."""
        fmt = _checked_format(fmt)
        n, k = _checked_shape(shape)
        per_block = 2 + _QUANT_BYTES[fmt]
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        if raw.size != n * (k // BLOCK) * per_block:
            raise ConfigError(
                f"{fmt} data of {raw.size} bytes for a {shape} matrix: expected "
                f"{n * (k // BLOCK) * per_block} ({per_block} bytes per block of {BLOCK})"
            )
        blocks = raw.reshape(n, k // BLOCK, per_block)
        scales = blocks[..., :2].copy().view("<f2").reshape(n, k // BLOCK).astype(np.float16)
        quants = blocks[..., 2:].reshape(n, -1).copy()
        return cls(fmt, (n, k), scales, quants.view(np.int8) if fmt == "q8_0" else quants)


def _checked_format(fmt: object) -> Format:
    if fmt not in _QUANT_BYTES:
        raise ConfigError(f"format {fmt!r}: expected one of {FORMATS}")
    return fmt  # type: ignore[return-value]


def _checked_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
        raise ConfigError(f"weight shape {tuple(shape)}: expected (N, K) with N, K >= 1")
    n, k = int(shape[0]), int(shape[1])
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
    blocks = array.astype(np.float32).reshape(shape[0], shape[1] // BLOCK, BLOCK)
    if not np.isfinite(blocks).all():
        raise ConfigError("weights contain inf or NaN: they have no quantized form")
    return blocks, shape


def _inverse(d: np.ndarray) -> np.ndarray:
    """``1 / d`` in float32, 0 where ``d`` is 0 (ggml: ``id = d ? 1.0f/d : 0.0f``)."""
    safe = np.where(d == 0, np.float32(1), d)
    return np.where(d == 0, np.float32(0), np.float32(1) / safe).astype(np.float32)


def _roundf(x: np.ndarray) -> np.ndarray:
    """C's ``roundf``: halves away from zero."""
    return np.trunc(x + np.copysign(np.float32(0.5), x)).astype(np.float32)


def quantize_q8_0(w: np.ndarray) -> QuantizedWeights:
    """q8_0 of an ``(N, K)`` matrix, K a multiple of 32 (ggml's reference rounding)."""
    blocks, shape = _blocks_of(w)
    d = (np.abs(blocks).max(axis=2) / np.float32(127)).astype(np.float32)
    q = _roundf(blocks * _inverse(d)[..., None]).astype(np.int8)
    return QuantizedWeights("q8_0", shape, d.astype(np.float16), q.reshape(shape))


def quantize_q4_0(w: np.ndarray) -> QuantizedWeights:
    """q4_0 of an ``(N, K)`` matrix, K a multiple of 32 (ggml's reference rounding)."""
    blocks, shape = _blocks_of(w)
    at = np.abs(blocks).argmax(axis=2)[..., None]  # the first of equal magnitudes
    d = (np.take_along_axis(blocks, at, axis=2)[..., 0] / np.float32(-8)).astype(np.float32)
    x = blocks * _inverse(d)[..., None] + np.float32(8.5)
    nibbles = np.minimum(np.trunc(x), 15).astype(np.uint8)  # x >= 0.5: trunc is the C cast
    packed = nibbles[..., :16] | (nibbles[..., 16:] << np.uint8(4))
    return QuantizedWeights("q4_0", shape, d.astype(np.float16), packed.reshape(shape[0], -1))


def quantize(w: np.ndarray, fmt: str) -> QuantizedWeights:
    """``quantize_q8_0(w)`` or ``quantize_q4_0(w)`` by name."""
    return {"q8_0": quantize_q8_0, "q4_0": quantize_q4_0}[_checked_format(fmt)](w)


def dequantize(weights: QuantizedWeights) -> np.ndarray:
    """The float32 ``(N, K)`` matrix ``weights`` stands for (ggml's dequantize_row_*)."""
    n, k = weights.shape
    d = weights.scales.astype(np.float32)[..., None]
    if weights.format == "q8_0":
        q = weights.quants.reshape(n, k // BLOCK, BLOCK).astype(np.float32)
    else:
        packed = weights.quants.reshape(n, k // BLOCK, 16)
        low, high = packed & np.uint8(0xF), packed >> np.uint8(4)
        q = np.concatenate([low, high], axis=2).astype(np.float32) - np.float32(8)
    return (q * d).astype(np.float32).reshape(n, k)
