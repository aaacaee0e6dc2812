"""The bicubic filter of cl_qcom_filter_bicubic in numpy: the reference kernels match.

The formula is the Adreno guide's (9.3.4; guide-semantics-and-kernel-designs.md section
1), Catmull-Rom weights over a 4x4 block of texels, in float64:

>>> catmull_rom_weights(0.5).tolist()  # halfway between two texel centres
[-0.0625, 0.5625, 0.5625, -0.0625]
>>> import numpy as np
>>> image = np.arange(12.0).reshape(3, 4, 1)  # image[y, x, channel]
>>> bicubic(image, [(1.5, 1.5)]).tolist()  # a texel centre: that texel
[[5.0]]
>>> bicubic(image, [(2.0, 1.5)]).tolist()  # between x = 1 and 2, row 1: 4 5 6 7
[[5.5]]
>>> bicubic(image, [(1.0, 1.5)]).tolist()  # texel x = -1 is outside: the border, 0
[[4.6875]]
>>> bicubic(image, [(1.0, 1.5)], addressing="clamp_to_edge").tolist()  # or the edge, 4
[[4.4375]]
"""

from __future__ import annotations

import numpy as np

__all__ = ["bicubic", "catmull_rom_weights", "upscale2x"]


def catmull_rom_weights(a: np.ndarray) -> np.ndarray:
    """``(..., 4)`` weights w0..w3 of the guide for fractions ``a``."""
    a = np.asarray(a, np.float64)
    return np.stack(
        [
            -0.5 * a + a**2 - 0.5 * a**3,
            1.0 - 2.5 * a**2 + 1.5 * a**3,
            0.5 * a + 2.0 * a**2 - 1.5 * a**3,
            -0.5 * a**2 + 0.5 * a**3,
        ],
        axis=-1,
    )


def _address(index: np.ndarray, size: int, addressing: str) -> tuple[np.ndarray, np.ndarray]:
    """(texel index to read, inside mask) of a texel index for an addressing mode."""
    if addressing == "clamp_to_edge":
        return np.clip(index, 0, size - 1), np.ones(index.shape, bool)
    if addressing == "repeat":
        return np.mod(index, size), np.ones(index.shape, bool)
    if addressing == "mirrored_repeat":
        m = np.mod(index, 2 * size)
        return np.where(m >= size, 2 * size - 1 - m, m), np.ones(index.shape, bool)
    inside = (index >= 0) & (index < size)
    return np.clip(index, 0, size - 1), inside  # clamp / none: border colour outside


def bicubic(
    image: np.ndarray,
    coords: np.ndarray,
    *,
    addressing: str = "clamp",
    border: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0),
) -> np.ndarray:
    """``out[n, c]``: the guide's formula at texel-space ``coords[n] = (x, y)`` of
    ``image[y, x, c]`` (float64); texels outside follow ``addressing`` (``clamp``: the
    border colour, as in the guide)."""
    image = np.asarray(image, np.float64)
    h, w = image.shape[:2]
    x, y = np.asarray(coords, np.float64).T
    x0 = np.floor(x - 1.5).astype(np.int64)
    y0 = np.floor(y - 1.5).astype(np.int64)
    wu = catmull_rom_weights((x - 0.5) - np.floor(x - 0.5))
    wv = catmull_rom_weights((y - 0.5) - np.floor(y - 0.5))
    out = np.zeros((len(x), image.shape[2]))
    fill = np.asarray(border, np.float64)[: image.shape[2]]
    for i in range(4):
        xi, x_in = _address(x0 + i, w, addressing)
        column = np.zeros_like(out)
        for j in range(4):
            yj, y_in = _address(y0 + j, h, addressing)
            texels = np.where((x_in & y_in)[:, None], image[yj, xi], fill)
            column += texels * wv[:, j, None]
        out += wu[:, i, None] * column
    return out


def upscale2x(image: np.ndarray) -> np.ndarray:
    """A 2x bicubic upscale: output pixel (X, Y) samples texel-space ((X + 0.5) / 2, ...)."""
    h, w = image.shape[:2]
    ys, xs = np.mgrid[0 : 2 * h, 0 : 2 * w]
    coords = np.stack([(xs.ravel() + 0.5) / 2, (ys.ravel() + 0.5) / 2], axis=1)
    return bicubic(image, coords).reshape(2 * h, 2 * w, image.shape[2])
