"""numpy (float64) references of the accelerated image ops, for tests, samples and selftest.

One pixel convention for the three builtins: pixel i spans [i - 0.5, i + 0.5) (integer
coordinates are pixel centres, as in the spec's examples). They follow the conventions of
``kernels/compat/cl_qcom_accelerated_image_ops.h`` (and docs/accelerated_image_ops.md).
Images are ``(height, width, 4)`` arrays; coordinates are taken as the float32 values a
kernel receives. ``addressing`` is the sampler's:
``"clamp"`` (outside reads give the border colour 0), ``"clamp_to_edge"``, or ``"none"``
(every read must be inside the image, as OpenCL requires; ValueError otherwise).

The spec's convolution example: a 4x3 filter, centre (1, 1), at (4, 2) of a 7x4 image
reads x 3..6, y 1..3, tap (0, 0) on pixel (3, 1):

>>> import numpy as np
>>> image = np.zeros((4, 7, 4)); image[1, 3] = 1          # pixel (x=3, y=1)
>>> taps = np.arange(12.0).reshape(1, 3, 4) + 1           # tap (0, 0) is 1
>>> convolve(image, [(4, 2)], taps, center=(1, 1))[0]
array([1., 1., 1., 1.])

The spec's box example: a 2x2 box centred on pixel (1, 1) covers pixels 0..2 of each axis
with weights 1/2, 1, 1/2 (so 1/4, 1/2, 1/4 / 1/2, 1, 1/2 / ... in 2-D, divided by 2 * 2):

>>> box_weights(0.0, 2.0)
(-1, array([0.5, 1. , 0.5]))
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "block_match",
    "block_match_search",
    "box_filter",
    "box_filter_image",
    "box_weights",
    "convolve",
    "convolve_image",
    "nearest",
    "pixels",
]

ADDRESSING = ("clamp", "clamp_to_edge", "none")


def pixels(image: np.ndarray, xs: np.ndarray, ys: np.ndarray, addressing: str) -> np.ndarray:
    """``image[ys, xs]`` (float64) with the sampler's rule for pixels outside the image."""
    if addressing not in ADDRESSING:
        raise ValueError(f"addressing must be one of {ADDRESSING}, got {addressing!r}")
    image = np.asarray(image, dtype=np.float64)
    height, width = image.shape[:2]
    xs, ys = np.asarray(xs, dtype=np.int64), np.asarray(ys, dtype=np.int64)
    inside = (xs >= 0) & (xs < width) & (ys >= 0) & (ys < height)
    if addressing == "none" and not np.all(inside):
        raise ValueError("CLK_ADDRESS_NONE: a read falls outside the image (undefined)")
    values = image[np.clip(ys, 0, height - 1), np.clip(xs, 0, width - 1)]
    if addressing == "clamp":
        values = np.where(inside[..., None], values, 0.0)
    return values


def _coords(coords: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    return np.asarray(coords, dtype=np.float32).reshape(-1, 2).astype(np.float64)


def nearest(coords: np.ndarray) -> np.ndarray:
    """The pixel each coordinate lies in: pixel i spans [i - 0.5, i + 0.5), so floor(c + 0.5).

    >>> nearest(np.array([2.0, 2.49, 2.5, 2.7, -0.5, -0.51]))
    array([ 2,  2,  3,  3,  0, -1])
    """
    return np.floor(np.asarray(coords, dtype=np.float64) + 0.5).astype(np.int64)


def convolve(
    image: np.ndarray,
    coords: Sequence[Sequence[float]] | np.ndarray,
    weights: np.ndarray,
    *,
    center: tuple[int, int],
    separable: bool = False,
    filter_size: tuple[int, int] | None = None,
    addressing: str = "clamp_to_edge",
) -> np.ndarray:
    """``qcom_convolve_imagef`` at each coordinate: (N, 4). The centre tap lands on the
    pixel the coordinate lies in (:func:`nearest`); the phase of an axis is
    ``min(floor(frac(c) * P), P - 1)``, i.e. the offset from that pixel's centre in 1/P
    steps modulo P.

    ``weights`` as stored by a WeightImage, shape (phases, rows, cols): rows = fy for 2-D,
    2 (horizontal, vertical) for separable filters.
    """
    taps = np.asarray(weights, dtype=np.float64)
    phases = taps.shape[0]
    if separable:
        per_axis = phases
        fx, fy = filter_size or (taps.shape[2], taps.shape[2])
    else:
        per_axis = math.isqrt(phases)
        fy, fx = taps.shape[1:]
    cx, cy = center
    c = _coords(coords)
    base = nearest(c)
    phase = np.minimum(np.floor((c - np.floor(c)) * per_axis), per_axis - 1).astype(np.int64)
    x0, y0 = base[:, 0] - cx, base[:, 1] - cy
    ii, jj = np.arange(fx), np.arange(fy)
    window = pixels(
        image,
        x0[:, None, None] + ii[None, None, :],
        y0[:, None, None] + jj[None, :, None],
        addressing,
    )  # (N, fy, fx, 4)
    if separable:
        horizontal = taps[phase[:, 0], 0, :fx]  # (N, fx)
        vertical = taps[phase[:, 1], 1, :fy]  # (N, fy)
        rows = np.einsum("ni,njic->njc", horizontal, window)
        return np.einsum("nj,njc->nc", vertical, rows)
    kernels = taps[phase[:, 1] * per_axis + phase[:, 0]]  # (N, fy, fx)
    return np.einsum("nji,njic->nc", kernels, window)


def box_weights(offset: float, size: float) -> tuple[int, np.ndarray]:
    """(first pixel, weights) along one axis for a box of ``size`` centred ``offset`` past
    a pixel centre: pixel k spans [k - 0.5, k + 0.5], each weighted by its covered length."""
    lo, hi = offset - size / 2, offset + size / 2
    first = int(np.floor(lo - 0.5)) + 1
    last = int(np.ceil(hi + 0.5)) - 1
    k = np.arange(first, last + 1, dtype=np.float64)
    return first, np.clip(np.minimum(k + 0.5, hi) - np.maximum(k - 0.5, lo), 0.0, None)


def box_filter(
    image: np.ndarray,
    coords: Sequence[Sequence[float]] | np.ndarray,
    size: tuple[float, float],
    addressing: str = "clamp_to_edge",
) -> np.ndarray:
    """``qcom_box_filter_imagef`` at each coordinate: (N, 4)."""
    w, h = (float(np.float32(v)) for v in size)
    out = []
    for x, y in _coords(coords):
        bx, by = np.floor(x), np.floor(y)
        fx, wx = box_weights(x - bx, w)
        fy, wy = box_weights(y - by, h)
        xs = int(bx) + fx + np.arange(len(wx))
        ys = int(by) + fy + np.arange(len(wy))
        window = pixels(image, xs[None, :], ys[:, None], addressing)
        out.append(np.einsum("j,i,jic->c", wy, wx, window) / (w * h))
    return np.array(out).reshape(-1, 4)


def _shifted(image: np.ndarray, dx: int, dy: int, addressing: str) -> np.ndarray:
    """Pixel (x + dx, y + dy) for every (x, y) of the image, with the sampler's rule."""
    height, width = image.shape[:2]
    ys, xs = np.mgrid[0:height, 0:width]
    return pixels(image, xs + dx, ys + dy, addressing)


def box_filter_image(
    image: np.ndarray, size: tuple[float, float], addressing: str = "clamp_to_edge"
) -> np.ndarray:
    """``qcom_box_filter_imagef`` at every integer coordinate (x, y) of ``image``: the
    whole-image form of :func:`box_filter` (same weights, vectorised by shifts)."""
    w, h = (float(np.float32(v)) for v in size)
    first_x, wx = box_weights(0.0, w)
    first_y, wy = box_weights(0.0, h)
    image = np.asarray(image, dtype=np.float64)
    out = np.zeros((*image.shape[:2], 4))
    for j, weight_y in enumerate(wy):
        if weight_y:
            row = sum(
                weight_x * _shifted(image, first_x + i, first_y + j, addressing)
                for i, weight_x in enumerate(wx)
                if weight_x
            )
            out += weight_y * row
    return out / (w * h)


def convolve_image(
    image: np.ndarray,
    kernel: np.ndarray,
    center: tuple[int, int],
    addressing: str = "clamp_to_edge",
) -> np.ndarray:
    """``qcom_convolve_imagef`` with the 2-D filter ``kernel`` (fy, fx) at every integer
    coordinate of ``image`` (phase 0; a separable slice as its outer product)."""
    kernel = np.asarray(kernel, dtype=np.float64)
    image = np.asarray(image, dtype=np.float64)
    out = np.zeros((*image.shape[:2], 4))
    for j in range(kernel.shape[0]):
        for i in range(kernel.shape[1]):
            if kernel[j, i]:
                out += kernel[j, i] * _shifted(image, i - center[0], j - center[1], addressing)
    return out


def block_match(
    target: np.ndarray,
    reference: np.ndarray,
    target_coords: Sequence[Sequence[float]] | np.ndarray,
    region: tuple[int, int],
    reference_coords: Sequence[Sequence[int]] | np.ndarray,
    *,
    squared: bool = False,
    addressing: str = "clamp_to_edge",
) -> np.ndarray:
    """``qcom_block_match_sadf`` (or ``_ssdf`` when ``squared``) per coordinate pair: (N, 4)."""
    w, h = region
    t = nearest(_coords(target_coords))
    r = np.asarray(reference_coords, dtype=np.int64).reshape(-1, 2)
    ii, jj = np.arange(w)[None, None, :], np.arange(h)[None, :, None]
    a = pixels(target, t[:, 0, None, None] + ii, t[:, 1, None, None] + jj, addressing)
    b = pixels(reference, r[:, 0, None, None] + ii, r[:, 1, None, None] + jj, addressing)
    d = a - b
    return (d * d if squared else np.abs(d)).sum(axis=(1, 2))


def block_match_search(
    target: np.ndarray,
    reference: np.ndarray,
    region: tuple[int, int],
    radius: int,
    *,
    squared: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The exhaustive search of ``qe_block_match_search``: per full target block of
    ``region``, the displacement (dx, dy), |dx|, |dy| <= radius, of the reference block
    (inside the reference image) with the lowest cost (sum of the four channels); ties go
    to the smaller |dx| + |dy|, then the first in row-major (dy, dx) order.

    Returns vectors (nby, nbx, 2) int32 and costs (nby, nbx) float64 (inf: no candidate).
    """
    w, h = region
    target = np.asarray(target, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    nby, nbx = target.shape[0] // h, target.shape[1] // w
    rh, rw = reference.shape[:2]
    blocks = target[: nby * h, : nbx * w].reshape(nby, h, nbx, w, 4)
    best = np.full((nby, nbx), np.inf)
    best_key = np.full((nby, nbx, 2), np.iinfo(np.int64).max)
    vectors = np.zeros((nby, nbx, 2), np.int32)
    by, bx = np.mgrid[0:nby, 0:nbx]
    for index, (dy, dx) in enumerate(
        (dy, dx) for dy in range(-radius, radius + 1) for dx in range(-radius, radius + 1)
    ):
        ry, rx = by * h + dy, bx * w + dx
        valid = (rx >= 0) & (ry >= 0) & (rx + w <= rw) & (ry + h <= rh)
        ys = np.clip(ry[..., None] + np.arange(h), 0, rh - 1)  # (nby, nbx, h)
        xs = np.clip(rx[..., None] + np.arange(w), 0, rw - 1)  # (nby, nbx, w)
        cand = reference[ys[..., :, None], xs[..., None, :]]  # (nby, nbx, h, w, 4)
        d = blocks.transpose(0, 2, 1, 3, 4) - cand
        cost = (d * d if squared else np.abs(d)).sum(axis=(2, 3, 4))
        cost = np.where(valid, cost, np.inf)
        key = np.stack([np.full_like(by, abs(dx) + abs(dy)), np.full_like(by, index)], -1)
        better = (cost < best) | ((cost == best) & np.isfinite(cost) & _less(key, best_key))
        best = np.where(better, cost, best)
        best_key = np.where(better[..., None], key, best_key)
        vectors = np.where(better[..., None], np.array([dx, dy], np.int32), vectors)
    return vectors, best


def _less(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a[..., 0] < b[..., 0]) | ((a[..., 0] == b[..., 0]) & (a[..., 1] < b[..., 1]))
