"""Checks of cl_qcom_accelerated_image_ops: the builtins at chosen points and the
whole-image ops, against the float64 references of :mod:`qcom_ext.reference.accelerated`.

First the extension spec's worked examples (exact), then random filters, boxes and blocks
at fractional coordinates. Natively and portably the same inputs run, and the two
results are compared: that is where real hardware and the documented conventions could
part (the pixel-centre convention, the phase mapping, half-float weight rounding,
fixed-point coordinate arithmetic).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qcom_ext.reference import accelerated as ref
from qcom_ext.tools.selftest._registry import Env, Outcome, case

EXTENSION = "cl_qcom_accelerated_image_ops"


def _ops(env: Env) -> Any:
    """The run's PointOps (programs built once per run, under its path)."""
    from qcom_ext.ext.accelerated.points import PointOps

    if "point ops" not in env.store:
        env.store["point ops"] = PointOps(env.context)
    return env.store["point ops"]


def _upload(env: Env, pixels: np.ndarray) -> Any:
    from qcom_ext.ext.accelerated.points import upload

    return upload(env.context, pixels)


def _grid(width: int, height: int) -> np.ndarray:
    return np.stack(np.meshgrid(np.arange(width), np.arange(height)), -1).reshape(-1, 2)


@case(EXTENSION, "convolve: spec 4x3 filter, centre (1, 1), at (4, 2)")
def _spec_convolution(env: Env) -> Outcome:
    from qcom_ext.ext.accelerated.weights import WeightImage

    y, x = np.mgrid[0:4, 0:7].astype(np.float32)
    pixels = np.stack([x, y, x + 10 * y, np.ones_like(x)], -1)
    image, got, want = _upload(env, pixels), [], []
    for j in range(3):
        for i in range(4):
            taps = np.zeros((3, 4))
            taps[j, i] = 1.0
            w = WeightImage(env.context, taps, center=(1, 1))
            got.append(_ops(env).convolve(env.queue, image, w, [(4.0, 2.0)])[0])
            want.append(pixels[1 + j, 3 + i])
    return Outcome(np.array(got), np.array(want))


@case(
    EXTENSION,
    "convolve: 2-D 5x5, 2x2 phases, fractional coords",
    trial="the trial weight image (CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM) and qcom_convolve_imagef "
    "kernel",
)
def _convolution_2d_phases(env: Env) -> Outcome:
    from qcom_ext.ext.accelerated.weights import WeightImage

    pixels = env.rng.random((19, 23, 4)).astype(np.float32)
    w = WeightImage(env.context, env.rng.uniform(-1, 1, (4, 5, 5)), center=(2, 1))
    coords = env.rng.uniform(-3, 25, (64, 2)).astype(np.float32)
    got = _ops(env).convolve(env.queue, _upload(env, pixels), w, coords, "clamp")
    want = ref.convolve(pixels, coords, w.weights, center=w.center, addressing="clamp")
    return Outcome(got, want, 1e-4, ran_as=w.path)


@case(EXTENSION, "convolve: separable 7x3, 2 phases")
def _convolution_separable_phases(env: Env) -> Outcome:
    from qcom_ext.ext.accelerated.weights import WeightImage

    pixels = env.rng.random((19, 23, 4)).astype(np.float32)
    weights = env.rng.uniform(-1, 1, (2, 2, 7))
    weights[:, 1, 3:] = 0
    w = WeightImage(env.context, weights, center=(3, 1), separable=True, filter_size=(7, 3))
    coords = env.rng.uniform(-3, 25, (64, 2)).astype(np.float32)
    got = _ops(env).convolve(env.queue, _upload(env, pixels), w, coords, "clamp_to_edge")
    want = ref.convolve(
        pixels, coords, w.weights, center=w.center, separable=True, filter_size=(7, 3)
    )
    return Outcome(got, want, 1e-4)


@case(EXTENSION, "box: spec 2x2 box at (1, 1)")
def _spec_box(env: Env) -> Outcome:
    got = np.zeros((4, 4))
    for y in range(4):
        for x in range(4):
            pixels = np.zeros((4, 4, 4), np.float32)
            pixels[y, x] = 1.0
            out = _ops(env).box_filter(env.queue, _upload(env, pixels), (2.0, 2.0), [(1.0, 1.0)])
            got[y, x] = out[0, 0] * 4
    want = np.zeros((4, 4))
    want[:3, :3] = [[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]]
    return Outcome(got, want)


@case(EXTENSION, "box: 3.3x2.6 at fractional coords")
def _box_fractional(env: Env) -> Outcome:
    pixels = env.rng.random((17, 21, 4)).astype(np.float32)
    coords = env.rng.uniform(-2, 22, (64, 2)).astype(np.float32)
    size = (3.3, 2.6)
    got = _ops(env).box_filter(env.queue, _upload(env, pixels), size, coords, "clamp")
    return Outcome(got, ref.box_filter(pixels, coords, size, "clamp"), 1e-5)


@case(EXTENSION, "block match: spec region (3, 3)")
def _spec_block_match(env: Env) -> Outcome:
    target = env.rng.random((4, 5, 4)).astype(np.float32)
    reference = env.rng.random((4, 8, 4)).astype(np.float32)
    sad, ssd = _ops(env).block_match(
        env.queue, _upload(env, target), _upload(env, reference), (3, 3), [(1.0, 0.0)], [(4, 1)]
    )
    d = target[0:3, 1:4].astype(np.float64) - reference[1:4, 4:7]
    want = np.stack([np.abs(d).sum(axis=(0, 1)), (d * d).sum(axis=(0, 1))])
    return Outcome(np.stack([sad[0], ssd[0]]), want, 1e-5)


@case(EXTENSION, "block match: random 8x4 SAD/SSD")
def _block_match_random(env: Env) -> Outcome:
    target = env.rng.random((20, 24, 4)).astype(np.float32)
    reference = env.rng.random((20, 24, 4)).astype(np.float32)
    tcoords = env.rng.uniform(0, 16, (32, 2)).astype(np.float32)
    rcoords = env.rng.integers(0, 16, (32, 2)).astype(np.uint32)
    sad, ssd = _ops(env).block_match(
        env.queue, _upload(env, target), _upload(env, reference), (8, 4), tcoords, rcoords
    )
    want = np.concatenate(
        [
            ref.block_match(target, reference, tcoords, (8, 4), rcoords),
            ref.block_match(target, reference, tcoords, (8, 4), rcoords, squared=True),
        ]
    )
    return Outcome(np.concatenate([sad, ssd]), want, 1e-4)


@case(EXTENSION, "whole image: 5x5 convolve, 7x7 box")
def _whole_image(env: Env) -> Outcome:
    from qcom_ext.ext.accelerated.points import download, empty
    from qcom_ext.ext.accelerated.weights import WeightImage
    from qcom_ext.ext.accelerated.whole_image import box_filter_image, convolve_image

    pixels = env.rng.random((27, 33, 4)).astype(np.float32)
    image, dst = _upload(env, pixels), empty(env.context, 33, 27)
    w = WeightImage(env.context, env.rng.uniform(-1, 1, (5, 5)), center=(2, 2))
    convolve_image(env.queue, image, w, dst)
    got = [download(env.queue, dst)]
    want = [ref.convolve(pixels, _grid(33, 27), w.weights, center=(2, 2)).reshape(27, 33, 4)]
    box_filter_image(env.queue, image, (7.0, 7.0), dst)
    got.append(download(env.queue, dst))
    want.append(ref.box_filter(pixels, _grid(33, 27), (7.0, 7.0)).reshape(27, 33, 4))
    return Outcome(np.stack(got), np.stack(want), 1e-4)


@case(EXTENSION, "whole image: 8x8 block search")
def _block_search(env: Env) -> Outcome:
    from qcom_ext.ext.accelerated.whole_image import block_match_image

    target = (env.rng.integers(0, 256, (32, 40, 4)) / 256).astype(np.float32)
    reference = np.roll(target, (1, 2), axis=(0, 1))
    field_ = block_match_image(
        env.queue, _upload(env, target), _upload(env, reference), region=(8, 8), radius=3
    )
    vectors, _ = field_.get(env.queue)
    want, _ = ref.block_match_search(target, reference, (8, 8), 3)
    return Outcome(vectors.astype(np.float64), want.astype(np.float64))


@case(EXTENSION, "pixel convention: 1x1 convolve, box, block match at fractional coords")
def _pixel_convention(env: Env) -> Outcome:
    """The one pixel convention (pixel i spans [i - 0.5, i + 0.5)) where the builtins could
    part: at x = 2.7 a 1x1 convolution and a 1x1 block match give pixel 3, a 1x1 box
    0.3 * p2 + 0.7 * p3. Natively the run also compares these with the portable code, which
    settles the convention on the device."""
    from qcom_ext.ext.accelerated.weights import WeightImage

    pixels = env.rng.random((6, 8, 4)).astype(np.float32)
    image, zero = _upload(env, pixels), _upload(env, np.zeros((6, 8, 4), np.float32))
    xs = np.array([2.0, 2.25, 2.49, 2.5, 2.7, 3.2, 0.51, 5.75], np.float32)
    coords = np.stack([xs, np.float32(2.5) + xs / 4], -1).astype(np.float32)
    one = WeightImage(env.context, [[1.0]], center=(0, 0), dtype=np.float32)
    ops = _ops(env)
    conv = ops.convolve(env.queue, image, one, coords)
    box = ops.box_filter(env.queue, image, (1.0, 1.0), coords)
    sad, _ = ops.block_match(env.queue, image, zero, (1, 1), coords, np.zeros_like(coords))
    got = np.concatenate([conv, box, sad])
    want = np.concatenate(
        [
            ref.convolve(pixels, coords, one.weights, center=(0, 0)),
            ref.box_filter(pixels, coords, (1.0, 1.0)),
            ref.block_match(pixels, np.zeros_like(pixels), coords, (1, 1), np.zeros((8, 2))),
        ]
    )
    return Outcome(got, want, 1e-4, ran_as=one.path)
