"""cl_qcom_accelerated_image_ops's builtins on every device that has images: the spec's
worked examples (golden), the one pixel convention at fractional coordinates, and random
cases (fp32 and fp16 images, three addressing modes) evaluated at points against
tests/accelerated_spec.py, the builtins written straight from the spec's definitions with
plain loops; the package's numpy reference (qcom_ext.reference.accelerated) is checked
against that oracle too. The whole-image ops: test_accelerated_whole_image.py; host-side
validation: test_accelerated_validation.py."""

from __future__ import annotations

import accelerated_spec as spec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qcom_ext import WeightImage
from qcom_ext.ext.accelerated.points import PointOps, supports, upload
from qcom_ext.ext.accelerated.support import FALLBACK_LIMITS
from qcom_ext.reference import accelerated as accelerated_reference

EXT = "cl_qcom_accelerated_image_ops"
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
DTYPES = [np.float32, np.float16]
ADDRESSING = ["clamp", "clamp_to_edge", "none"]


@pytest.fixture
def ops(device_caps, kernel_context):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support ({EXT} needs images)")
    return PointOps(kernel_context)


@pytest.fixture
def queue(kernel_context):
    import pyopencl as cl

    return cl.CommandQueue(kernel_context)


def need(context, dtype) -> None:
    if not supports(context, dtype):
        pytest.skip(f"the device cannot read RGBA {np.dtype(dtype).name} images")


def tolerance(weights: np.ndarray) -> float:
    """Float32 accumulation over the taps: relative to the sum of |weights|."""
    return 2e-5 * max(1.0, float(np.abs(weights).sum()))


def ramp(width: int, height: int) -> np.ndarray:
    """Pixel (x, y) = (x, y, x + 10 y, 1): every pixel identifiable."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    return np.stack([x, y, x + 10 * y, np.ones_like(x)], -1)


# ---- the spec's worked examples --------------------------------------------------------


def test_spec_convolution_4x3_centre_1_1_at_4_2(ops, queue, kernel_context):
    """Filter tap (i, j) lands on pixel (3 + i, 1 + j): the region x 3..6, y 1..3."""
    image = upload(kernel_context, ramp(7, 4))
    for j in range(3):
        for i in range(4):
            taps = np.zeros((3, 4))
            taps[j, i] = 1.0
            w = WeightImage(kernel_context, taps, center=(1, 1))
            out = ops.convolve(queue, image, w, [(4.0, 2.0)])[0]
            assert out.tolist() == ramp(7, 4)[1 + j, 3 + i].tolist(), (i, j)
    rng = np.random.default_rng(7)
    taps = rng.uniform(-1, 1, (3, 4))
    w = WeightImage(kernel_context, taps, center=(1, 1), dtype=np.float32)
    pixels = rng.random((4, 7, 4)).astype(np.float32)
    expected = np.einsum("ji,jic->c", taps, pixels[1:4, 3:7])
    out = ops.convolve(queue, upload(kernel_context, pixels), w, [(4.0, 2.0)])[0]
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_spec_separable_example_equals_its_2d_filter(ops, queue, kernel_context):
    """Horizontal (1, 2) and vertical (3, 4) make the 2-D filter [[3, 6], [4, 8]]."""
    separable = WeightImage(kernel_context, [[1, 2], [3, 4]], center=(0, 0), separable=True)
    assert separable.kernel_2d().tolist() == [[3, 6], [4, 8]]
    flat = WeightImage(kernel_context, [[3, 6], [4, 8]], center=(0, 0))
    pixels = np.random.default_rng(3).random((6, 9, 4)).astype(np.float32)
    image = upload(kernel_context, pixels)
    coords = [(x, y) for y in range(6) for x in range(9)]
    a = ops.convolve(queue, image, separable, coords)
    b = ops.convolve(queue, image, flat, coords)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-5)
    expected = accelerated_reference.convolve(pixels, coords, flat.weights, center=(0, 0))
    np.testing.assert_allclose(a, expected, rtol=1e-6, atol=1e-5)


def test_spec_sobel_2d_and_separable_agree(ops, queue, kernel_context):
    """The spec's sample: the 3x3 Sobel filter and its separable form give one result."""
    sobel = WeightImage(kernel_context, [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], center=(1, 1))
    separable = WeightImage(kernel_context, [[-1, 0, 1], [1, 2, 1]], center=(1, 1), separable=True)
    pixels = np.random.default_rng(5).random((8, 8, 4)).astype(np.float32)
    image = upload(kernel_context, pixels)
    coords = [(x, y) for y in range(8) for x in range(8)]
    a = ops.convolve(queue, image, sobel, coords, sampler="clamp")
    b = ops.convolve(queue, image, separable, coords, sampler="clamp")
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(
        a,
        accelerated_reference.convolve(
            pixels, coords, sobel.weights, center=(1, 1), addressing="clamp"
        ),
        atol=1e-5,
    )


def test_spec_box_2x2_at_1_1(ops, queue, kernel_context):
    """The box weights 0.25 0.5 0.25 / 0.5 1 0.5 / 0.25 0.5 0.25, normalised by w * h."""
    weights = np.zeros((4, 4))
    for y in range(4):
        for x in range(4):
            pixels = np.zeros((4, 4, 4), np.float32)
            pixels[y, x] = 1.0
            out = ops.box_filter(queue, upload(kernel_context, pixels), (2.0, 2.0), [(1.0, 1.0)])
            weights[y, x] = out[0, 0] * 4
            assert out[0].tolist() == [out[0, 0]] * 4
    expected = np.zeros((4, 4))
    expected[:3, :3] = [[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]]
    assert weights.tolist() == expected.tolist()


def test_box_size_order_is_width_then_height(ops, queue, kernel_context):
    """A 3x1 box averages a row, a 1x3 box a column: the two floats are not swapped."""
    pixels = ramp(5, 5)
    image = upload(kernel_context, pixels)
    row = ops.box_filter(queue, image, (3.0, 1.0), [(2.0, 2.0)])[0]
    column = ops.box_filter(queue, image, (1.0, 3.0), [(2.0, 2.0)])[0]
    assert row.tolist() == pixels[2, 1:4].mean(axis=0).tolist()
    assert column.tolist() == pixels[1:4, 2].mean(axis=0).tolist()


def test_spec_block_match_region_3x3(ops, queue, kernel_context):
    """Target x 1..3, y 0..2 of a 5x4 image against reference x 4..6, y 1..3 of an 8x4."""
    rng = np.random.default_rng(11)
    target = rng.random((4, 5, 4)).astype(np.float32)
    reference = rng.random((4, 8, 4)).astype(np.float32)
    diff = target[0:3, 1:4].astype(np.float64) - reference[1:4, 4:7]

    def match(target):  # (SAD, SSD) of the spec's target (1.0, 0.0) and reference (4, 1)
        image = upload(kernel_context, target)
        return ops.block_match(queue, image, references, (3, 3), [(1.0, 0.0)], [(4, 1)])

    references = upload(kernel_context, reference)
    sad, ssd = match(target)
    np.testing.assert_allclose(sad[0], np.abs(diff).sum(axis=(0, 1)), rtol=1e-6)
    np.testing.assert_allclose(ssd[0], (diff * diff).sum(axis=(0, 1)), rtol=1e-6)
    # Pixels outside the two blocks do not count; every pixel inside does.
    for y, x, inside in ((3, 1, False), (0, 4, False), (2, 3, True), (0, 1, True)):
        changed = target.copy()
        changed[y, x] += 10.0
        sad2, _ = match(changed)
        assert (not np.allclose(sad2, sad)) == inside, (x, y)


def test_phase_is_chosen_from_the_fraction(ops, queue, kernel_context):
    """2 phases per axis (4 slices, slice py * 2 + px): fraction < 0.5 is phase 0."""
    slices = np.zeros((4, 1, 1))
    slices[:, 0, 0] = [1, 2, 3, 4]
    w = WeightImage(kernel_context, slices, center=(0, 0))
    assert w.phases_per_axis == 2
    image = upload(kernel_context, np.ones((4, 4, 4), np.float32))
    coords = [(1.0, 1.0), (1.49, 1.0), (1.5, 1.0), (1.99, 1.2), (1.2, 1.7), (1.75, 1.5)]
    out = ops.convolve(queue, image, w, coords)[:, 0]
    assert out.tolist() == [1, 1, 2, 2, 3, 4]
    separable = np.zeros((4, 2, 1))
    separable[:, 0, 0] = [1, 2, 3, 4]  # horizontal weight of phase px
    separable[:, 1, 0] = [10, 20, 30, 40]  # vertical weight of phase py
    ws = WeightImage(kernel_context, separable, center=(0, 0), separable=True)
    out = ops.convolve(queue, image, ws, [(2.0, 2.0), (2.3, 2.6), (2.99, 2.26)])[:, 0]
    assert out.tolist() == [10, 2 * 30, 4 * 20]


# ---- random cases against the numpy references -----------------------------------------


@st.composite
def filters(draw, separable: bool):
    fx = draw(st.integers(1, FALLBACK_LIMITS.max_filter_size[0]))
    fy = draw(st.integers(1, FALLBACK_LIMITS.max_filter_size[1]))
    per_axis = draw(st.sampled_from([1, 2, 4]))
    center = (draw(st.integers(0, fx - 1)), draw(st.integers(0, fy - 1)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if separable:
        n = max(fx, fy)
        weights = rng.uniform(-1, 1, (per_axis, 2, n))
        weights[:, 0, fx:] = 0
        weights[:, 1, fy:] = 0
        phases = per_axis
    else:
        phases = per_axis * per_axis
        weights = rng.uniform(-1, 1, (phases, fy, fx))
    return weights, (fx, fy), center


def random_image(draw, max_size: int = 24, min_size: tuple[int, int] = (1, 1)) -> np.ndarray:
    width = draw(st.integers(min_size[0], max(min_size[0], max_size)))
    height = draw(st.integers(min_size[1], max(min_size[1], max_size)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.uniform(-1, 1, (height, width, 4)).astype(np.float32)


def random_coords(
    draw, width: int, height: int, margin: tuple[float, float, float, float], count: int = 24
) -> np.ndarray:
    """Coordinates in [-left, width + right) x [-top, height + bottom), some integral."""
    left, right, top, bottom = margin
    unit = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=count, max_size=count)
    u = np.array(draw(unit))
    low, high = np.array([-left, -top]), np.array([width - 1 + right, height - 1 + bottom])
    coords = (low + u * (high - low)).astype(np.float32)
    coords[: count // 4] = np.floor(coords[: count // 4])
    return coords


def inside_coords(draw, xs: tuple[int, int], ys: tuple[int, int], count: int = 24) -> np.ndarray:
    """Coordinates whose pixel floor(c + 0.5) lies in xs x ys (inclusive), any fraction."""
    base = draw(
        st.lists(st.tuples(st.integers(*xs), st.integers(*ys)), min_size=count, max_size=count)
    )
    fraction = draw(
        st.lists(
            st.tuples(st.floats(-0.5, 0.49), st.floats(-0.5, 0.49)), min_size=count, max_size=count
        )
    )
    return (np.array(base, np.float32) + np.array(fraction, np.float32)).astype(np.float32)


@pytest.mark.parametrize("separable", [False, True], ids=["2d", "separable"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("addressing", ADDRESSING)
@SETTINGS
@given(data=st.data())
def test_convolution_matches_numpy(ops, queue, kernel_context, separable, dtype, addressing, data):
    need(kernel_context, dtype)
    weights, (fx, fy), (cx, cy) = data.draw(filters(separable))
    smallest = (fx, fy) if addressing == "none" else (1, 1)  # "none": taps stay inside
    pixels = random_image(data.draw, min_size=smallest).astype(dtype)
    height, width = pixels.shape[:2]
    if addressing == "none":
        coords = inside_coords(data.draw, (cx, width - fx + cx), (cy, height - fy + cy))
    else:
        coords = random_coords(data.draw, width, height, (fx + 1, fx + 1, fy + 1, fy + 1))
    w = WeightImage(
        kernel_context,
        weights,
        center=(cx, cy),
        separable=separable,
        filter_size=(fx, fy) if separable else None,
    )
    out = ops.convolve(queue, upload(kernel_context, pixels, dtype), w, coords, addressing)
    expected = spec.at_points(
        spec.convolve,
        coords,
        pixels,
        w.weights,
        (cx, cy),
        addressing,
        separable=separable,
        filter_size=(fx, fy),
    )
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=tolerance(w.weights[0]))


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("addressing", ADDRESSING)
@SETTINGS
@given(data=st.data())
def test_box_filter_matches_numpy(ops, queue, kernel_context, dtype, addressing, data):
    need(kernel_context, dtype)
    max_x, max_y = FALLBACK_LIMITS.max_filter_size
    size = (
        data.draw(st.floats(0.0625, max_x, width=32)),
        data.draw(st.floats(0.0625, max_y, width=32)),
    )
    reach_x, reach_y = size[0] / 2 + 1, size[1] / 2 + 1
    smallest = (int(2 * reach_x) + 2, int(2 * reach_y) + 2) if addressing == "none" else (1, 1)
    pixels = random_image(data.draw, min_size=smallest).astype(dtype)
    height, width = pixels.shape[:2]
    if addressing == "none":  # the covered pixels must lie inside the image
        coords = random_coords(data.draw, width, height, (-reach_x, -reach_x, -reach_y, -reach_y))
    else:
        coords = random_coords(data.draw, width, height, (size[0], size[0], size[1], size[1]))
    out = ops.box_filter(queue, upload(kernel_context, pixels, dtype), size, coords, addressing)
    expected = spec.at_points(spec.box_filter, coords, pixels, size, addressing)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("addressing", ADDRESSING)
@SETTINGS
@given(data=st.data())
def test_block_match_matches_numpy(ops, queue, kernel_context, dtype, addressing, data):
    need(kernel_context, dtype)
    max_x, max_y = FALLBACK_LIMITS.max_region
    region = (data.draw(st.integers(1, max_x)), data.draw(st.integers(1, max_y)))
    smallest = region if addressing == "none" else (1, 1)  # "none": blocks stay inside
    target = random_image(data.draw, 40, smallest).astype(dtype)
    reference = random_image(data.draw, 40, smallest).astype(dtype)
    count = 12
    if addressing == "none":
        tcoords = inside_coords(
            data.draw, (0, target.shape[1] - region[0]), (0, target.shape[0] - region[1]), count
        )
        rx = data.draw(
            st.lists(
                st.integers(0, reference.shape[1] - region[0]), min_size=count, max_size=count
            )
        )
        ry = data.draw(
            st.lists(
                st.integers(0, reference.shape[0] - region[1]), min_size=count, max_size=count
            )
        )
    else:
        tcoords = random_coords(
            data.draw,
            target.shape[1],
            target.shape[0],
            (region[0] + 2, 3, region[1] + 2, 3),
            count,
        )
        rx = data.draw(
            st.lists(st.integers(0, reference.shape[1] + 2), min_size=count, max_size=count)
        )
        ry = data.draw(
            st.lists(st.integers(0, reference.shape[0] + 2), min_size=count, max_size=count)
        )
    rcoords = np.array([rx, ry], np.uint32).T
    sad, ssd = ops.block_match(
        queue,
        upload(kernel_context, target, dtype),
        upload(kernel_context, reference, dtype),
        region,
        tcoords,
        rcoords,
        addressing,
    )
    for squared, out in ((False, sad), (True, ssd)):
        expected = [
            spec.block_match(target, reference, t, region, r, squared, addressing)
            for t, r in zip(tcoords, rcoords, strict=True)
        ]
        # Up to 32 * 32 non-negative float32 terms: relative error <= n * 2**-24 = 6.1e-5.
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


# ---- one pixel convention at fractional coordinates (issue 15 finding 11b) -------------


def test_fractional_coordinate_lies_in_the_pixel_whose_square_holds_it(ops, queue, kernel_context):
    """At x = 2.7 (pixel 3 spans [2.5, 3.5)): a 1x1 convolution and a 1x1 block match give
    pixel 3, a 1x1 box 0.3 * p2 + 0.7 * p3; at 2.49 pixel 2 and 0.51 * p2 + 0.49 * p3."""
    pixels = ramp(6, 3)
    image = upload(kernel_context, pixels)
    one = WeightImage(kernel_context, [[1.0]], center=(0, 0))
    zero = upload(kernel_context, np.zeros((3, 6, 4), np.float32))
    p2, p3 = pixels[1, 2].astype(np.float64), pixels[1, 3].astype(np.float64)
    for x, nearest, left in ((2.7, p3, 0.3), (2.49, p2, 0.51), (2.5, p3, 0.5)):
        coords = [(x, 1.0)]
        conv = ops.convolve(queue, image, one, coords)[0]
        sad, _ = ops.block_match(queue, image, zero, (1, 1), coords, [(0, 0)])
        box = ops.box_filter(queue, image, (1.0, 1.0), coords)[0]
        assert conv.tolist() == nearest.tolist(), x
        assert sad[0].tolist() == np.abs(nearest).tolist(), x
        np.testing.assert_allclose(box, left * p2 + (1 - left) * p3, rtol=1e-6, atol=1e-6)
    # Below zero too: -0.5 lies in pixel 0, -0.51 in pixel -1 (the border with "clamp").
    out = ops.convolve(queue, image, one, [(-0.5, 1.0), (-0.51, 1.0)], sampler="clamp")
    assert out[:, 0].tolist() == [0.0, 0.0] and out[:, 1].tolist() == [1.0, 0.0]


# ---- the package's reference against the independent oracle ------------------------------


@SETTINGS
@given(data=st.data(), separable=st.booleans(), addressing=st.sampled_from(ADDRESSING[:2]))
def test_package_reference_matches_the_spec_oracle(data, separable, addressing):
    weights, (fx, fy), center = data.draw(filters(separable))
    pixels = random_image(data.draw, 12)
    height, width = pixels.shape[:2]
    coords = random_coords(data.draw, width, height, (fx + 1, fx + 1, fy + 1, fy + 1), 8)
    got = accelerated_reference.convolve(
        pixels,
        coords,
        weights,
        center=center,
        separable=separable,
        filter_size=(fx, fy),
        addressing=addressing,
    )
    expected = spec.at_points(
        spec.convolve, coords, pixels, weights, center, addressing, separable, (fx, fy)
    )
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
    size = (data.draw(st.floats(0.0625, 16, width=32)), data.draw(st.floats(0.0625, 16, width=32)))
    got = accelerated_reference.box_filter(pixels, coords, size, addressing)
    expected = spec.at_points(spec.box_filter, coords, pixels, size, addressing)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
    region = (data.draw(st.integers(1, 8)), data.draw(st.integers(1, 8)))
    rcoords = np.array(
        data.draw(
            st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), min_size=8, max_size=8)
        )
    )
    for squared in (False, True):
        got = accelerated_reference.block_match(
            pixels, pixels[::-1], coords, region, rcoords, squared=squared, addressing=addressing
        )
        expected = [
            spec.block_match(pixels, pixels[::-1], t, region, r, squared, addressing)
            for t, r in zip(coords, rcoords, strict=True)
        ]
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
