"""Oclgrind cases (tests/oclgrind_cases.py runs them, tests/oclgrind_trial.py is
the harness): the portable ``qcom_convolve_imagef`` with filters longer than one texel
of weights (5, 7 and 8 taps per direction, separable and 2-D), checked against a
reference written here from the definition (plain loops, not
``qcom_ext.reference.accelerated``) and, on an impulse, against the taps themselves.

Issue 15 finding 11(a): Oclgrind 21.10 ran the lane helper's ``?:`` chain, which LLVM 14
turns into a ``switch`` on ``lane`` truncated to ``i2``, as if the truncation kept the
high bits, so vertical taps 4 and 5 of a separable filter read lane ``.w``. The 3-tap
filters of the other cases never reached a second texel. Coordinates are integers: the
base pixel is the coordinate itself under the pixel convention of finding 11(b)
(floor(c + 0.5)), and phase 0 is the one used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from oclgrind_trial import Mismatch, Trial, accelerated_close, case

import qcom_ext
from qcom_ext.ext.accelerated.points import PointOps, download, empty, upload
from qcom_ext.ext.accelerated.whole_image import METHODS

HEIGHT, WIDTH = 12, 26
RANDOM_COLUMNS = 10  # random pixels in x < 10; zeros elsewhere but the impulse
IMPULSE = (18, 6)  # (x, y): every window of the impulse coordinates stays in x 11..25
IMPULSE_VALUE = np.array([1.0, 2.0, 4.0, 8.0], np.float32)  # exact products per channel


def correlate(
    pixels: np.ndarray, coords: np.ndarray, taps: np.ndarray, center: tuple[int, int], mode: str
) -> np.ndarray:
    """The definition at integer coordinates: tap (i, j) of a (fy, fx) filter multiplies
    pixel (x - cx + i, y - cy + j); outside the image "clamp" reads 0, "clamp_to_edge"
    the nearest edge pixel. Float64, (N, 4)."""
    height, width = pixels.shape[:2]
    fy, fx = taps.shape
    cx, cy = center
    out = np.zeros((len(coords), 4))
    for n, (x, y) in enumerate(np.asarray(coords, np.int64)):
        for j in range(fy):
            for i in range(fx):
                px, py = x - cx + i, y - cy + j
                if mode == "clamp" and not (0 <= px < width and 0 <= py < height):
                    continue
                pixel = pixels[min(max(py, 0), height - 1), min(max(px, 0), width - 1)]
                out[n] += float(taps[j, i]) * pixel.astype(np.float64)
    return out


def test_image(t: Trial) -> np.ndarray:
    pixels = np.zeros((HEIGHT, WIDTH, 4), np.float32)
    pixels[:, :RANDOM_COLUMNS] = t.rng.uniform(-1, 1, (HEIGHT, RANDOM_COLUMNS, 4))
    pixels[IMPULSE[1], IMPULSE[0]] = IMPULSE_VALUE
    return pixels


def impulse_coords(size: tuple[int, int], center: tuple[int, int]) -> np.ndarray:
    """For tap (i, j), row-major: the coordinate whose window puts it on the impulse."""
    (fx, fy), (cx, cy), (x, y) = size, center, IMPULSE
    return np.array(
        [(x + cx - i, y + cy - j) for j in range(fy) for i in range(fx)], np.float32
    ).reshape(-1, 2)


def filter_taps(t: Trial, size: tuple[int, int], separable: bool) -> tuple[Any, np.ndarray]:
    """(weights for WeightImage, the (fy, fx) filter they mean) with distinct random taps."""
    fx, fy = size
    if not separable:
        taps = t.rng.uniform(-1, 1, (fy, fx)).astype(np.float32)
        return taps, taps
    rows = np.zeros((2, max(fx, fy)), np.float32)
    rows[0, :fx] = t.rng.uniform(0.5, 1.5, fx) * t.rng.choice([-1, 1], fx)
    rows[1, :fy] = t.rng.uniform(0.5, 1.5, fy) * t.rng.choice([-1, 1], fy)
    return rows, np.outer(rows[1, :fy], rows[0, :fx])


def check_builtin(
    t: Trial, size: tuple[int, int], center: tuple[int, int], separable: bool, mode: str
) -> None:
    """One launch (the uninitialized-value check stays on): integer coordinates over and
    around the random pixels, then one per tap on the impulse."""
    pixels = test_image(t)
    weights, taps = filter_taps(t, size, separable)
    image = qcom_ext.WeightImage(
        t.ctx,
        weights,
        center=center,
        separable=separable,
        dtype=np.float32,
        filter_size=size if separable else None,
    )
    xs, ys = np.meshgrid([-2, 0, 3, 6, 9, 11], [-2, 0, 5, 10, 13])
    grid = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32)
    readout = impulse_coords(size, center)
    coords = np.concatenate([grid, readout])
    got = PointOps(t.ctx).convolve(t.queue, upload(t.ctx, pixels), image, coords, mode)
    what = f"qcom_convolve_imagef {image!r} {mode}"
    tap_values = got[len(grid) :] / IMPULSE_VALUE
    wrong = np.flatnonzero(~np.isclose(tap_values, taps.reshape(-1, 1), rtol=1e-6, atol=0))
    if wrong.size:
        (fx, _), first = size, sorted({int(k) // 4 for k in wrong})
        listed = ", ".join(f"({k % fx}, {k // fx})" for k in first[:12])
        raise Mismatch(f"{what}: the impulse response is wrong at taps (i, j) {listed}")
    t.checks += 1
    accelerated_close(t, what, got, correlate(pixels, coords, taps, center, mode))


# (fx, fy), centre, separable, addressing: 5, 7 and 8 taps in each direction, both kinds
BUILTIN_FILTERS = {
    "separable_5": ((5, 5), (2, 2), True, "clamp_to_edge"),
    "separable_7": ((7, 7), (3, 1), True, "clamp"),
    "separable_8": ((8, 8), (7, 4), True, "clamp_to_edge"),
    "separable_8x5": ((8, 5), (1, 4), True, "clamp"),
    "separable_5x7": ((5, 7), (4, 6), True, "clamp_to_edge"),
    "2d_5x7": ((5, 7), (2, 3), False, "clamp_to_edge"),
    "2d_7x8": ((7, 8), (0, 7), False, "clamp"),
    "2d_8x5": ((8, 5), (5, 0), False, "clamp_to_edge"),
}


def _register(name: str, spec: tuple[Any, ...]) -> None:
    def run(t: Trial) -> None:
        check_builtin(t, *spec)

    run.__name__ = f"case_convolve_{name}"
    run.__doc__ = f"qcom_convolve_imagef, {name.replace('_', ' ')} taps (fx x fy)"
    case()(run)


for _name, _spec in BUILTIN_FILTERS.items():
    _register(_name, _spec)


@case("image-reads")
def case_convolve_image_long_filters(t: Trial) -> None:
    """kernels/accelerated_image_ops.cl through qcom_ext.convolve_image, every method,
    with an 8x8 separable and a 7x5 2-D filter (two texels of weights per row)."""
    pixels = t.rng.uniform(-1, 1, (7, 9, 4)).astype(np.float32)
    src, dst = upload(t.ctx, pixels), empty(t.ctx, 9, 7)
    grid = np.stack(np.meshgrid(np.arange(9), np.arange(7)), -1).reshape(-1, 2)
    for size, center, separable in (((8, 8), (3, 5), True), ((7, 5), (6, 1), False)):
        weights, taps = filter_taps(t, size, separable)
        w = qcom_ext.WeightImage(
            t.ctx, weights, center=center, separable=separable, dtype=np.float32
        )
        want = correlate(pixels, grid, taps, center, "clamp").reshape(7, 9, 4)
        for method in METHODS:
            local = (2, 2) if method == "tiled" else None
            qcom_ext.convolve_image(
                t.queue, src, w, dst, sampler="clamp", method=method, local_size=local
            )
            accelerated_close(t, f"convolve_image {method} {w!r}", download(t.queue, dst), want)
