"""The device layout of matmul weights (docs/ops.md, "Matmul"), the one place the read
path (image views or buffers) is chosen, and the weights on the device.

Every format cuts K into ``nb`` blocks of 32 weights (the float formats pad K with zeros
to a multiple of 32); each block of a row is ``WPB`` words of 16 bytes, stored as word
``(n * WPB + j) * nb + b`` (word ``j`` of block ``b`` of row ``n``), so that work-items
taking consecutive blocks read consecutive words. q8_0 and q4_0 keep their scales in a
second buffer, one float16 per block at ``n * nb + b`` (struct of arrays).

>>> import numpy as np
>>> packed = pack(np.arange(64, dtype=np.float32).reshape(1, 64), "f32")
>>> packed.nb, packed.words.shape, packed.words.view(np.float32)[:2].tolist()
(2, (16, 16), [[0.0, 1.0, 2.0, 3.0], [32.0, 33.0, 34.0, 35.0]])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops.quant import BLOCK, QuantizedWeights

__all__ = ["FORMATS", "PATHS", "DeviceWeights", "Packed", "choose_path", "pack"]

#: Weight format -> (WFMT define, words per block of 32).
FORMATS = {"f32": (0, 8), "f16": (1, 4), "q8_0": (2, 2), "q4_0": (3, 1)}
#: The ways the kernels read the weights.
PATHS = ("image", "buffer")


@dataclass(frozen=True)
class Packed:
    """Weights in the device layout: ``words`` uint8 ``(words, 16)``, ``scales`` float16
    (``N * nb`` padded to a multiple of 4) or None, ``nb`` blocks a row."""

    format: str
    shape: tuple[int, int]
    nb: int
    words: np.ndarray
    scales: np.ndarray | None

    @property
    def nbytes(self) -> int:
        """Bytes a matrix-vector product reads (words and scales)."""
        return int(self.words.nbytes + (0 if self.scales is None else self.scales.nbytes))


def _planes(blocks: np.ndarray, wpb: int) -> np.ndarray:
    """``(N, nb, 16 * wpb bytes)`` blocks -> words ``(N * wpb * nb, 16)`` in the layout."""
    n, nb, _ = blocks.shape
    return np.ascontiguousarray(blocks.reshape(n, nb, wpb, 16).transpose(0, 2, 1, 3)).reshape(
        -1, 16
    )


def pack(weight: np.ndarray | QuantizedWeights, fmt: str) -> Packed:
    """``weight`` (a float ``(N, K)`` array already in ``fmt``'s dtype, or
    QuantizedWeights of that format) in the device layout."""
    _, wpb = FORMATS[fmt]
    if isinstance(weight, QuantizedWeights):
        n, k = weight.shape
        nb = k // BLOCK
        blocks = weight.quants.view(np.uint8).reshape(n, nb, 16 * wpb)
        scales = weight.scales.reshape(-1)
        padded = np.zeros(-(-scales.size // 4) * 4, np.float16)
        padded[: scales.size] = scales
        return Packed(fmt, (n, k), nb, _planes(blocks, wpb), padded)
    n, k = weight.shape
    nb = -(-k // BLOCK)
    full = np.zeros((n, nb * BLOCK), weight.dtype)
    full[:, :k] = weight
    return Packed(fmt, (n, k), nb, _planes(full.view(np.uint8).reshape(n, nb, -1), wpb), None)


def _image_formats(fmt: str) -> tuple[Any, Any]:
    """(the words' texel format and texels a word, the scales' texel format)."""
    import pyopencl as cl

    order, kind = cl.channel_order.RGBA, cl.channel_type
    words = {
        "f32": (cl.ImageFormat(order, kind.FLOAT), 1),
        "f16": (cl.ImageFormat(order, kind.HALF_FLOAT), 2),
    }.get(fmt, (cl.ImageFormat(order, kind.UNSIGNED_INT32), 1))
    return words, cl.ImageFormat(order, kind.HALF_FLOAT)


def _supported(context: Any, image_format: Any) -> bool:
    import pyopencl as cl

    found = cl.get_supported_image_formats(
        context, cl.mem_flags.READ_ONLY, cl.mem_object_type.IMAGE1D_BUFFER
    )
    want = (image_format.channel_order, image_format.channel_data_type)
    return want in {(f.channel_order, f.channel_data_type) for f in found}


def choose_path(
    context: Any, device: Any, packed: Packed, requested: str | None
) -> tuple[str, str]:
    """``("image" | "buffer", why)``: image1d_buffer views on Adreno (the texture path
    its programming guide recommends for weights) where the device has images (the
    probe's ``image_support``), lists the texel formats for CL_MEM_OBJECT_IMAGE1D_BUFFER
    and ``CL_DEVICE_IMAGE_MAX_BUFFER_SIZE`` holds the views; buffers otherwise (on the
    NVIDIA H200 buffer reads ran up to 1.5x faster: docs/BENCHMARKS.md, "Matmul").
    ``requested``: None (that rule), ``"buffer"`` (forced) or ``"image"`` (a ConfigError
    where the device cannot: no images, formats or room)."""
    from qcom_ext.device.probe import probe

    if requested not in (None, *PATHS):
        raise ConfigError(
            f"path {requested!r}: expected None (chosen by the probe) or one of {PATHS}"
        )
    if requested == "buffer":
        return "buffer", "buffer reads requested"
    (words_format, per_word), scales_format = _image_formats(packed.format)
    texels = packed.words.shape[0] * per_word
    limit = int(device.image_max_buffer_size) if probe(device).image_support else 0
    if limit == 0:
        why = "the device has no image support"
    elif max(texels, 0 if packed.scales is None else packed.scales.size // 4) > limit:
        why = (
            f"the weights need {texels} texels, more than CL_DEVICE_IMAGE_MAX_BUFFER_SIZE {limit}"
        )
    elif not all(_supported(context, f) for f in (words_format, scales_format)):
        why = "the device lists no image1d_buffer of the texel formats"
    elif requested == "image" or probe(device).is_adreno:
        return "image", f"image1d_buffer views ({texels} texels of at most {limit})"
    else:
        return "buffer", "buffer reads: image1d_buffer views are the default on Adreno only"
    if requested == "image":
        raise ConfigError(f"path 'image' requested, but {why}")
    return "buffer", why


class DeviceWeights:
    """``packed`` on the device of ``context``: the words and scales buffers (a 16-byte
    stand-in for the scales of a float format), and on the image path their
    image1d_buffer views. :meth:`args` are the kernels' two weight arguments."""

    def __init__(self, context: Any, packed: Packed, path: str) -> None:
        from qcom_ext.ops._tensor import upload

        self.packed, self.path = packed, path
        self.words = upload(context, packed.words, "the matmul weights")
        scales = packed.scales if packed.scales is not None else np.zeros(8, np.float16)
        self.scales = upload(context, scales, "the matmul scales")
        self.views: tuple[Any, Any] | None = None
        if path == "image":
            (words_format, per_word), scales_format = _image_formats(packed.format)
            self.views = (
                _view(context, self.words, words_format, packed.words.shape[0] * per_word),
                _view(context, self.scales, scales_format, scales.size // 4),
            )

    def args(self) -> tuple[Any, Any]:
        return self.views if self.views is not None else (self.words, self.scales)


def _view(context: Any, buffer: Any, image_format: Any, width: int) -> Any:
    """A read-only image1d_buffer of ``width`` texels over ``buffer``."""
    import pyopencl as cl

    return cl.create_image(
        context, cl.mem_flags.READ_ONLY, image_format, shape=(width,), buffer=buffer
    )
