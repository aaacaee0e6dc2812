"""The accelerated builtins written straight from the extension spec's definitions, with
plain loops, one coordinate and one pixel at a time: an oracle independent of
qcom_ext.reference.accelerated (which the package's samples and selftest use), for the
random device tests and for that reference's own tests.

The pixel convention (docs/accelerated_image_ops.md, "One pixel convention"): pixel i is
the unit interval [i - 0.5, i + 0.5) around the integer i, so a coordinate lies in pixel
floor(c + 0.5), and a box weighs each pixel by the area of its square inside the box.
Coordinates are taken as the float32 values a kernel receives; float64 arithmetic.
"""

from __future__ import annotations

import math

import numpy as np

ZERO = np.zeros(4)


def texel(image: np.ndarray, i: int, j: int, addressing: str) -> np.ndarray:
    """Pixel (x=i, y=j) as the sampler returns it: CLK_ADDRESS_CLAMP gives the border
    colour (0 for RGBA), CLK_ADDRESS_CLAMP_TO_EDGE the nearest edge pixel, and
    CLK_ADDRESS_NONE is only defined inside the image."""
    height, width = image.shape[:2]
    if 0 <= i < width and 0 <= j < height:
        return image[j, i].astype(np.float64)
    if addressing == "clamp":
        return ZERO
    assert addressing == "clamp_to_edge", f"read of ({i}, {j}) outside the image"
    return image[min(max(j, 0), height - 1), min(max(i, 0), width - 1)].astype(np.float64)


def pixel_of(c: float) -> int:
    """The pixel whose interval [i - 0.5, i + 0.5) holds c."""
    return math.floor(float(np.float32(c)) + 0.5)


def phase_of(c: float, per_axis: int) -> int:
    """Offset of c from its pixel's centre, in steps of 1/P, modulo P (0: on the centre)."""
    c = float(np.float32(c))
    return math.floor((c - pixel_of(c)) * per_axis) % per_axis


def convolve(image, coord, weights, center, addressing, separable=False, filter_size=None):
    """qcom_convolve_imagef at one coordinate: filter tap (i, j) of the phase's slice
    multiplies pixel (b - center + (i, j)), b the pixel the coordinate lies in."""
    weights = np.asarray(weights, dtype=np.float64)
    if separable:
        per_axis = weights.shape[0]
        fx, fy = filter_size or (weights.shape[2], weights.shape[2])
    else:
        per_axis = math.isqrt(weights.shape[0])
        fy, fx = weights.shape[1:]
    px, py = phase_of(coord[0], per_axis), phase_of(coord[1], per_axis)
    bx, by = pixel_of(coord[0]), pixel_of(coord[1])
    total = np.zeros(4)
    for j in range(fy):
        for i in range(fx):
            if separable:
                tap = weights[px, 0, i] * weights[py, 1, j]  # outer product of the two
            else:
                tap = weights[py * per_axis + px, j, i]
            total += tap * texel(image, bx - center[0] + i, by - center[1] + j, addressing)
    return total


def _overlap(k: int, lo: float, hi: float) -> float:
    return max(0.0, min(k + 0.5, hi) - max(k - 0.5, lo))


def box_filter(image, coord, size, addressing):
    """qcom_box_filter_imagef at one coordinate: sum over the pixels of (area of the pixel's
    square inside the box centred on coord) * pixel, divided by width * height."""
    w, h = (float(np.float32(v)) for v in size)
    x, y = (float(np.float32(v)) for v in coord)
    x0, x1, y0, y1 = x - w / 2, x + w / 2, y - h / 2, y + h / 2
    total = np.zeros(4)
    for j in range(math.floor(y0) - 1, math.ceil(y1) + 2):
        for i in range(math.floor(x0) - 1, math.ceil(x1) + 2):
            area = _overlap(i, x0, x1) * _overlap(j, y0, y1)
            if area > 0.0:
                total += area * texel(image, i, j, addressing)
    return total / (w * h)


def block_match(target, reference, target_coord, region, reference_coord, squared, addressing):
    """qcom_block_match_sadf / _ssdf at one pair: the region-sized blocks whose top-left
    pixels are the one target_coord lies in and reference_coord."""
    tx, ty = pixel_of(target_coord[0]), pixel_of(target_coord[1])
    rx, ry = int(reference_coord[0]), int(reference_coord[1])
    total = np.zeros(4)
    for j in range(region[1]):
        for i in range(region[0]):
            d = texel(target, tx + i, ty + j, addressing)
            d = d - texel(reference, rx + i, ry + j, addressing)
            total += d * d if squared else np.abs(d)
    return total


def at_points(function, coords, *args, **kwargs) -> np.ndarray:
    """``function`` at every coordinate of ``coords``: (N, 4)."""
    return np.array([function(args[0], c, *args[1:], **kwargs) for c in coords]).reshape(-1, 4)
