"""cl_qcom_accelerated_image_ops on every device that has images: the spec's worked
examples (golden), random cases against the float64 numpy references of
qcom_ext.reference.accelerated (fp32 and fp16 images, three addressing modes), the whole-image
ops, and the host-side validation of WeightImage, box_size and the image ops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import ConfigError, WeightImage, box_size
from qcom_ext.ext.accelerated.support import FALLBACK_LIMITS
from qcom_ext.ext.accelerated.weights import fallback_layout
from qcom_ext.ext.accelerated.plan import box_window
from qcom_ext.reference import accelerated as hof_reference
from qcom_ext.ext.accelerated.points import PointOps, download, empty, supports, upload

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


def limits_of(ctx):
    return qcom_ext.hof_limits(ctx)


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
    expected = hof_reference.convolve(pixels, coords, flat.weights, center=(0, 0))
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
        hof_reference.convolve(pixels, coords, sobel.weights, center=(1, 1), addressing="clamp"),
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
    sad, ssd = ops.block_match(
        queue,
        upload(kernel_context, target),
        upload(kernel_context, reference),
        (3, 3),
        [(1.0, 0.0)],
        [(4, 1)],
    )
    np.testing.assert_allclose(sad[0], np.abs(diff).sum(axis=(0, 1)), rtol=1e-6)
    np.testing.assert_allclose(ssd[0], (diff * diff).sum(axis=(0, 1)), rtol=1e-6)
    # Pixels outside the two blocks do not count; every pixel inside does.
    for y, x, inside in ((3, 1, False), (0, 4, False), (2, 3, True), (0, 1, True)):
        changed = target.copy()
        changed[y, x] += 10.0
        sad2, _ = ops.block_match(
            queue,
            upload(kernel_context, changed),
            upload(kernel_context, reference),
            (3, 3),
            [(1.0, 0.0)],
            [(4, 1)],
        )
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
    """Coordinates whose base pixel floor(c) lies in xs x ys (inclusive), any fraction."""
    base = draw(
        st.lists(st.tuples(st.integers(*xs), st.integers(*ys)), min_size=count, max_size=count)
    )
    fraction = draw(
        st.lists(st.tuples(st.floats(0, 0.99), st.floats(0, 0.99)), min_size=count, max_size=count)
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
    expected = hof_reference.convolve(
        pixels,
        coords,
        w.weights,
        center=(cx, cy),
        separable=separable,
        filter_size=(fx, fy),
        addressing=addressing,
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
    expected = hof_reference.box_filter(pixels, coords, size, addressing)
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
        expected = hof_reference.block_match(
            target, reference, tcoords, region, rcoords, squared=squared, addressing=addressing
        )
        # Up to 32 * 32 non-negative float32 terms: relative error <= n * 2**-24 = 6.1e-5.
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


# ---- whole-image ops ------------------------------------------------------------------


METHODS = [
    ("blocked", None, None),
    ("tiled", None, None),
    ("tiled", (8, 4), (2, 2)),
    ("per_pixel", None, None),
]


@pytest.mark.parametrize(
    ("method", "local", "method_block"),
    METHODS,
    ids=["blocked", "tiled", "tiled-8x4-2x2", "per-pixel"],
)
@pytest.mark.parametrize(
    ("shape", "separable", "center", "size", "block"),
    [
        ((5, 5), False, (2, 2), (37, 29), (4, 4)),
        ((3, 7), False, (0, 6), (9, 40), (2, 3)),
        ((2, 7), True, (1, 3), (33, 17), (4, 4)),
        ((1, 1), False, (0, 0), (5, 3), (1, 1)),
    ],
    ids=["5x5", "3x7-corner-centre", "separable-2x7", "1x1"],
)
@pytest.mark.parametrize("addressing", ["clamp", "clamp_to_edge"])
def test_convolve_image_matches_numpy(
    device_caps,
    kernel_context,
    queue,
    method,
    local,
    method_block,
    shape,
    separable,
    center,
    size,
    block,
    addressing,
):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    rng = np.random.default_rng(21)
    fx, fy = shape
    weights = rng.uniform(-1, 1, (2, max(fx, fy)) if separable else (fy, fx))
    if separable:
        weights[0, fx:] = 0
        weights[1, fy:] = 0
    w = WeightImage(
        kernel_context,
        weights,
        center=center,
        separable=separable,
        filter_size=shape if separable else None,
    )
    width, height = size
    pixels = rng.random((height, width, 4)).astype(np.float32)
    dst = empty(kernel_context, width, height)
    qcom_ext.convolve_image(
        queue,
        upload(kernel_context, pixels),
        w,
        dst,
        sampler=addressing,
        method=method,
        block=method_block or block,
        local_size=local,
    )
    grid = np.stack(np.meshgrid(np.arange(width), np.arange(height)), -1).reshape(-1, 2)
    expected = hof_reference.convolve(
        pixels,
        grid,
        w.weights,
        center=center,
        separable=separable,
        filter_size=shape,
        addressing=addressing,
    ).reshape(height, width, 4)
    np.testing.assert_allclose(download(queue, dst), expected, atol=tolerance(w.weights))


@pytest.mark.parametrize(
    ("method", "local", "block"), METHODS, ids=["blocked", "tiled", "tiled-8x4-2x2", "per-pixel"]
)
@pytest.mark.parametrize("size", [(7.0, 7.0), (2.0, 2.0), (2.5, 3.25), (0.5, 1.0), (16.0, 15.9)])
def test_box_filter_image_matches_numpy(
    device_caps, kernel_context, queue, method, local, block, size
):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    width, height = 35, 22
    pixels = np.random.default_rng(4).random((height, width, 4)).astype(np.float32)
    dst = empty(kernel_context, width, height)
    qcom_ext.box_filter_image(
        queue,
        upload(kernel_context, pixels),
        box_size(*size, device=kernel_context),
        dst,
        method=method,
        block=block,
        local_size=local,
    )
    grid = np.stack(np.meshgrid(np.arange(width), np.arange(height)), -1).reshape(-1, 2)
    expected = hof_reference.box_filter(pixels, grid, size).reshape(height, width, 4)
    np.testing.assert_allclose(download(queue, dst), expected, atol=2e-6)


def test_box_window_matches_reference_weights():
    for size in (0.25, 1.0, 2.0, 2.5, 3.0, 7.0, 7.5, 15.99, 16.0):
        first, weights = hof_reference.box_weights(0.0, size)
        nonzero = np.flatnonzero(weights)
        assert box_window(size) == (first + nonzero[0], len(nonzero)), size


@pytest.mark.parametrize("metric", ["sad", "ssd"])
@pytest.mark.parametrize(("region", "radius"), [((8, 8), 4), ((3, 5), 2), ((16, 4), 0)])
def test_block_match_image_finds_the_motion(
    device_caps, kernel_context, queue, metric, region, radius
):
    """Pixel values k/256 sum exactly in float32, so vectors and costs are exact."""
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    rng = np.random.default_rng(8)
    height, width = 45, 67
    target = (rng.integers(0, 256, (height, width, 4)) / 256).astype(np.float32)
    reference = np.roll(target, (2, -3), axis=(0, 1))
    reference[::7] = 0.5  # some rows that match nothing
    field = qcom_ext.block_match_image(
        queue,
        upload(kernel_context, target),
        upload(kernel_context, reference),
        region=region,
        radius=radius,
        metric=metric,
    )
    vectors, costs = field.get(queue)
    expected_vectors, expected_costs = hof_reference.block_match_search(
        target, reference, region, radius, squared=metric == "ssd"
    )
    assert field.shape == (height // region[1], width // region[0])
    np.testing.assert_array_equal(vectors, expected_vectors)
    np.testing.assert_array_equal(costs, expected_costs.astype(np.float32))
    if radius >= 3:
        assert (vectors == (-3, 2)).all(axis=-1).mean() > 0.5


# ---- host-side validation ---------------------------------------------------------------


@pytest.fixture(scope="module")
def any_context():
    import pyopencl as cl

    for caps in qcom_ext.probe_all():
        if caps.image_support:
            return cl.Context([caps.device()])
    pytest.skip("no OpenCL device with images")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weights": np.ones((3, 3)), "center": (1, 3)}, r"center \(1, 3\) is outside the 3x3"),
        ({"weights": np.ones((3, 3)), "center": (1,)}, "center must be a pair"),
        ({"weights": np.ones((3, 3)), "center": (1.0, 1)}, "center must be a pair of integers"),
        (
            {"weights": np.ones((3, 3)), "center": (-1, 0)},
            "center must be a pair of integers >= 0",
        ),
        ({"weights": np.ones(3), "center": (0, 0)}, r"2-D weights must have shape .* got \(3,\)"),
        ({"weights": np.ones((2, 3, 3)), "center": (0, 0)}, "2 phases; expected P\\*P slices"),
        ({"weights": np.ones((8, 3, 3)), "center": (0, 0)}, "8 phases"),
        ({"weights": np.ones((3, 3)), "center": (0, 0), "dtype": np.float64}, "dtype must be"),
        ({"weights": np.ones((3, 3)), "center": (0, 0), "dtype": np.int8}, "dtype must be"),
        ({"weights": [["a"]], "center": (0, 0)}, "real numbers"),
        ({"weights": np.full((2, 2), np.nan), "center": (0, 0)}, "finite"),
        ({"weights": np.full((2, 2), 1e6), "center": (0, 0)}, "does not fit in float16"),
        ({"weights": np.ones((17, 3)), "center": (0, 0)}, "3x17 is larger than 16x16"),
        ({"weights": np.ones((256, 1, 1)), "center": (0, 0)}, "256 phases is more than 64"),
        ({"weights": np.ones((3, 3)), "center": (0, 0), "separable": True}, r"shape \(2, n\)"),
        (
            {"weights": np.ones((3, 2, 3)), "center": (0, 0), "separable": True},
            "3 phases; expected a power of two",
        ),
        (
            {
                "weights": np.ones((2, 3)),
                "center": (0, 0),
                "separable": True,
                "filter_size": (2, 3),
            },
            "must be 0",
        ),
        (
            {
                "weights": np.ones((2, 3)),
                "center": (0, 0),
                "separable": True,
                "filter_size": (2, 2),
            },
            "needs rows of max",
        ),
        ({"weights": np.ones((2, 3)), "center": (0, 0), "separable": 1}, "True or False"),
        ({"weights": np.ones((3, 3)), "center": (0, 0), "filter_size": (3, 2)}, "does not match"),
    ],
)
def test_weight_image_rejects_bad_input(any_context, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        WeightImage(any_context, **kwargs)


def test_weight_image_fallback_layout_and_rounding(any_context):
    taps = np.array([[0.1, -2.0, 3.0], [4.0, 5.0, 6.0]])
    w = WeightImage(any_context, taps, center=(2, 1))
    assert w.weights.dtype == np.float16 and not w.weights.flags.writeable
    assert w.weights[0].tolist() == taps.astype(np.float16).tolist()
    exact = WeightImage(any_context, taps, center=(2, 1), dtype=np.float32)
    assert exact.weights[0, 0, 0] == np.float32(0.1)
    if w.path == "fallback":
        layout = fallback_layout(exact)
        assert layout.shape == (3, 2, 4)  # header row + fy weight rows; 4 taps a texel
        assert layout[0, 0].tolist() == [3, 2, 2, 1] and layout[0, 1].tolist() == [1, 0, 1, 1]
        assert layout[1].reshape(-1)[:3].tolist() == np.float32([0.1, -2, 3]).tolist()
        assert layout[2].reshape(-1).tolist() == [4, 5, 6, 0, 0, 0, 0, 0]
        assert "fallback" in repr(w) and "2-D 3x2" in repr(w)


def test_box_size_is_two_floats_and_checked(any_context):
    size = box_size(2, 1.25, device=any_context)
    assert size.tobytes() == np.float32([2, 1.25]).tobytes()
    limit = qcom_ext.hof_limits(any_context).max_filter_size
    with pytest.raises(ConfigError, match="larger than"):
        box_size(limit[0] + 1, 1, device=any_context)
    for bad in (0, -1, float("nan"), float("inf"), True, "2"):
        with pytest.raises(ConfigError, match="box width"):
            box_size(bad, 1, device=any_context)


def test_image_ops_reject_bad_arguments(any_context):
    import pyopencl as cl

    queue = cl.CommandQueue(any_context)
    small, big = empty(any_context, 4, 4), empty(any_context, 5, 4)
    w = WeightImage(any_context, np.ones((3, 3)), center=(1, 1))
    with pytest.raises(ConfigError, match="expected the same size"):
        qcom_ext.convolve_image(queue, small, w, big)
    with pytest.raises(ConfigError, match=r"qcom_ext\.WeightImage"):
        qcom_ext.convolve_image(queue, small, np.ones((3, 3)), small)
    with pytest.raises(ConfigError, match=r"2-D pyopencl\.Image"):
        qcom_ext.box_filter_image(queue, np.ones((4, 4)), (2, 2), small)
    normalized = cl.Sampler(any_context, True, cl.addressing_mode.CLAMP, cl.filter_mode.NEAREST)
    with pytest.raises(ConfigError, match="normalized_coords=False"):
        qcom_ext.box_filter_image(queue, small, (2, 2), small, sampler=normalized)
    with pytest.raises(ConfigError, match="addressing must be one of"):
        qcom_ext.box_filter_image(queue, small, (2, 2), small, sampler="repeat")
    with pytest.raises(ConfigError, match="size must be"):
        qcom_ext.box_filter_image(queue, small, 2.0, small)
    with pytest.raises(ConfigError, match="region 40x8 is larger than 32x32"):
        qcom_ext.block_match_image(queue, small, small, region=(40, 8))
    with pytest.raises(ConfigError, match="no full 8x8 block"):
        qcom_ext.block_match_image(queue, small, small)
    with pytest.raises(ConfigError, match="radius must be"):
        qcom_ext.block_match_image(queue, small, small, region=(2, 2), radius=-1)
    with pytest.raises(ConfigError, match="metric must be"):
        qcom_ext.block_match_image(queue, small, small, region=(2, 2), metric="ncc")
    with pytest.raises(ConfigError, match="block must be"):
        qcom_ext.convolve_image(queue, small, w, small, block=(0, 4))


@pytest.mark.parametrize("addressing", ["clamp", "clamp_to_edge"])
def test_whole_image_references_agree_with_the_point_references(addressing):
    rng = np.random.default_rng(6)
    pixels = rng.random((9, 13, 4))
    grid = np.stack(np.meshgrid(np.arange(13), np.arange(9)), -1).reshape(-1, 2)
    for size in ((2.0, 2.0), (2.5, 3.3), (7.0, 7.0), (0.5, 1.0)):
        whole = hof_reference.box_filter_image(pixels, size, addressing)
        points = hof_reference.box_filter(pixels, grid, size, addressing).reshape(9, 13, 4)
        np.testing.assert_allclose(whole, points, rtol=1e-12, atol=1e-12)
    kernel = rng.uniform(-1, 1, (3, 5))
    whole = hof_reference.convolve_image(pixels, kernel, (4, 1), addressing)
    points = hof_reference.convolve(
        pixels, grid, kernel[None], center=(4, 1), addressing=addressing
    ).reshape(9, 13, 4)
    np.testing.assert_allclose(whole, points, rtol=1e-12, atol=1e-12)


def test_weights_for_the_other_path_are_refused(any_context):
    import pyopencl as cl

    queue = cl.CommandQueue(any_context)
    image = empty(any_context, 4, 4)
    w = WeightImage(any_context, np.ones((3, 3)), center=(1, 1))
    w.path = "native" if w.path == "fallback" else "fallback"  # as if QCOM_EXT_DISABLE changed
    with pytest.raises(ConfigError, match="make the WeightImage again"):
        qcom_ext.convolve_image(queue, image, w, image)
    with pytest.raises(ConfigError, match="method must be one of"):
        w.path = qcom_ext.ext.accelerated.support.context_path(any_context)
        qcom_ext.convolve_image(queue, image, w, image, method="fast")


NATIVE_STUBS = """
/* What the Adreno compiler declares for cl_qcom_accelerated_image_ops (spec signatures);
 * bodies only so that this device can compile the native branches. */
#define qcom_weight_image_t image2d_t
typedef float2 qcom_box_size_t;
float4 qcom_convolve_imagef(__read_only image2d_t image, sampler_t sampler, float2 coord,
                            __read_only qcom_weight_image_t weight_image)
{ return read_imagef(weight_image, sampler, coord) + read_imagef(image, sampler, coord); }
float4 qcom_box_filter_imagef(__read_only image2d_t image, sampler_t sampler, float2 coord,
                              const qcom_box_size_t box_size)
{ return read_imagef(image, sampler, coord) * box_size.x; }
float4 qcom_block_match_sadf(__read_only image2d_t target_image, sampler_t sampler,
                             float2 coord, uint2 region, __read_only image2d_t reference_image,
                             uint2 reference_coord)
{ return read_imagef(target_image, sampler, coord) * (float)region.x; }
float4 qcom_block_match_ssdf(__read_only image2d_t target_image, sampler_t sampler,
                             float2 coord, uint2 region, __read_only image2d_t reference_image,
                             uint2 reference_coord)
{ return read_imagef(reference_image, sampler, convert_float2(reference_coord)); }
"""


@pytest.mark.parametrize("source", ["accelerated_image_ops.cl", "points"])
def test_native_branches_compile_against_the_builtins_declarations(kernel_context, source):
    """With -DQCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops the compat part defines nothing
    and the kernels call the builtins per pixel: they must compile against the spec's
    declarations (stubbed here, as no Adreno is at hand)."""
    import pyopencl as cl

    from qcom_ext._resources import kernels_dir
    from qcom_ext.ext.accelerated.points import SOURCE

    text = (kernels_dir() / source).read_text() if source.endswith(".cl") else SOURCE
    program = cl.Program(kernel_context, NATIVE_STUBS + "#include <qcom_ext.h>\n" + text)
    options = [
        "-I",
        str(kernels_dir()),
        "-DQCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops",
        "-DQE_FX=5",
        "-DQE_FY=5",
        "-DQE_OX=-2",
        "-DQE_OY=-2",
    ]
    built = program.build(options=options)
    names = {k.function_name for k in built.all_kernels()}
    if source.endswith(".cl"):  # the portable-only tiled search is left out natively
        assert names == {"qe_convolve_image", "qe_box_filter_image", "qe_block_match_search"}
    else:
        assert names == {"qe_convolve_at", "qe_box_filter_at", "qe_block_match_at"}
