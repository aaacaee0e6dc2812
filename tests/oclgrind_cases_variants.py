"""Oclgrind cases (tests/oclgrind_cases.py runs them, tests/oclgrind_trial.py is the
harness) for the whole-image variants of issue 18: kernels/filter_strips.cl and
kernels/filter_bands.cl through qcom_ext.convolve_image / box_filter_image, and
kernels/bicubic_tiles.cl through qcom_ext.upscale2x_image, at sizes that reach every
path: several work-groups, images that are no multiple of a tile, strips and bands that
end below the image, blocks that overhang its right edge, both addressing modes, the
smallest and the largest filters (16 taps a direction). Each is checked against the
float64 references of qcom_ext.reference and, where the summation order is the same,
bit for bit against the method it replaces ("tiled", "blocks").
"""

from __future__ import annotations

import numpy as np
from oclgrind_trial import Trial, accelerated_close, case

import qcom_ext
from qcom_ext.ext.accelerated.points import download, empty, upload
from qcom_ext.reference import accelerated as accelerated_reference
from qcom_ext.reference.bicubic import upscale2x

HEIGHT, WIDTH = 11, 13
#: (method, block, local size): many groups, partial strips and bands, x overhang
LAUNCHES = (
    ("strips", (2, 3), (4, 2)),
    ("strips", (1, 5), (8, 1)),
    ("bands", (1, 4), (4, 1)),
    ("bands", (1, 7), (8, 1)),
)
#: (fx, fy), centre, separable, addressing
FILTERS = (
    ((5, 5), (2, 2), False, "clamp_to_edge"),
    ((7, 7), (3, 3), True, "clamp"),
    ((1, 1), (0, 0), False, "clamp"),
    ((3, 16), (1, 15), False, "clamp_to_edge"),
    ((16, 16), (8, 8), True, "clamp"),
)
BOXES = ((7.0, 7.0), (2.5, 3.25), (0.5, 1.0), (16.0, 15.9))


def grid() -> np.ndarray:
    return np.stack(np.meshgrid(np.arange(WIDTH), np.arange(HEIGHT)), -1).reshape(-1, 2)


def weights_for(t: Trial, size: tuple[int, int], separable: bool) -> np.ndarray:
    fx, fy = size
    if not separable:
        return t.rng.uniform(-1, 1, (fy, fx)).astype(np.float32)
    rows = np.zeros((2, max(fx, fy)), np.float32)
    rows[0, :fx] = t.rng.uniform(-1, 1, fx)
    rows[1, :fy] = t.rng.uniform(-1, 1, fy)
    return rows


def convolve_by(t: Trial, method: str) -> None:
    """convolve_image by ``method`` ("strips": filter_strips.cl, "bands":
    filter_bands.cl): 2-D and separable filters from 1x1 to 16x16, each launch against
    numpy and "tiled"."""
    pixels = t.rng.uniform(-1, 1, (HEIGHT, WIDTH, 4)).astype(np.float32)
    src, dst = upload(t.ctx, pixels), empty(t.ctx, WIDTH, HEIGHT)
    for size, center, separable, mode in FILTERS:
        w = qcom_ext.WeightImage(
            t.ctx,
            weights_for(t, size, separable),
            center=center,
            separable=separable,
            dtype=np.float32,
            filter_size=size if separable else None,
        )
        want = accelerated_reference.convolve(
            pixels,
            grid(),
            w.weights,
            center=center,
            separable=separable,
            filter_size=size,
            addressing=mode,
        ).reshape(HEIGHT, WIDTH, 4)
        qcom_ext.convolve_image(
            t.queue, src, w, dst, sampler=mode, method="tiled", local_size=(4, 2)
        )
        tiled = download(t.queue, dst)
        for launch_method, block, local in LAUNCHES:
            if launch_method != method:
                continue
            qcom_ext.convolve_image(
                t.queue, src, w, dst, sampler=mode, method=method, block=block, local_size=local
            )
            what = f"convolve_image {method} {block} {local} {w!r} {mode}"
            got = download(t.queue, dst)
            accelerated_close(t, what, got, want)
            t.equal(f"{what} against tiled", got, tiled)


def box_filter_by(t: Trial, method: str) -> None:
    """box_filter_image by ``method``: boxes from half a pixel to 16 x 15.9."""
    pixels = t.rng.random((HEIGHT, WIDTH, 4)).astype(np.float32)
    src, dst = upload(t.ctx, pixels), empty(t.ctx, WIDTH, HEIGHT)
    for size in BOXES:
        want = accelerated_reference.box_filter(pixels, grid(), size).reshape(HEIGHT, WIDTH, 4)
        for launch_method, block, local in LAUNCHES:
            if launch_method != method:
                continue
            qcom_ext.box_filter_image(
                t.queue, src, size, dst, method=method, block=block, local_size=local
            )
            accelerated_close(
                t,
                f"box_filter_image {method} {block} {local} {size}",
                download(t.queue, dst),
                want,
            )


# One case a method: under Oclgrind the two methods together took 17.6 s (convolve) and
# 14.5 s (box), the two heaviest cases, whose shards ran past 30 s on a loaded machine.


@case("image-reads")
def case_convolve_image_strips(t: Trial) -> None:
    """convolve_image by "strips" (filter_strips.cl): :func:`convolve_by`."""
    convolve_by(t, "strips")


@case("image-reads")
def case_convolve_image_bands(t: Trial) -> None:
    """convolve_image by "bands" (filter_bands.cl): :func:`convolve_by`."""
    convolve_by(t, "bands")


@case("image-reads")
def case_box_filter_image_strips(t: Trial) -> None:
    """box_filter_image by "strips": :func:`box_filter_by`."""
    box_filter_by(t, "strips")


@case("image-reads")
def case_box_filter_image_bands(t: Trial) -> None:
    """box_filter_image by "bands": :func:`box_filter_by`."""
    box_filter_by(t, "bands")


@case("image-reads")
def case_upscale2x_image_every_method(t: Trial) -> None:
    """upscale2x_image: "tiles" (bicubic_tiles.cl) at several blocks and groups, bit for bit
    with "blocks", and every method against numpy."""
    h, w = 7, 9
    pixels = t.rng.random((h, w, 4), dtype=np.float32)
    src, dst = upload(t.ctx, pixels), empty(t.ctx, 2 * w, 2 * h)
    want = upscale2x(pixels)
    qcom_ext.upscale2x_image(t.queue, src, dst, method="blocks")
    blocks = download(t.queue, dst)
    t.close("upscale2x_image blocks", blocks, want, atol=2e-5)
    qcom_ext.upscale2x_image(t.queue, src, dst, method="sampler")
    t.close("upscale2x_image sampler", download(t.queue, dst), want, atol=2e-5)
    for block, local in (((1, 2), (4, 2)), ((2, 3), (2, 2)), ((1, 1), (8, 8)), (None, None)):
        qcom_ext.upscale2x_image(t.queue, src, dst, method="tiles", block=block, local_size=local)
        got = download(t.queue, dst)
        t.close(f"upscale2x_image tiles {block} {local}", got, want, atol=2e-5)
        t.equal(f"upscale2x_image tiles {block} {local} against blocks", got, blocks)
