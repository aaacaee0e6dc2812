"""The whole-image accelerated image ops (qcom_ext.convolve_image, box_filter_image,
block_match_image) on every device that has images, for every method, against the float64
numpy references of qcom_ext.reference.accelerated; their kernels' native branches compile
against the builtins' declarations."""

from __future__ import annotations

import numpy as np
import pytest

import qcom_ext
from qcom_ext import WeightImage, box_size
from qcom_ext.ext.accelerated.plan import box_window
from qcom_ext.ext.accelerated.points import download, empty, upload
from qcom_ext.reference import accelerated as accelerated_reference


@pytest.fixture
def queue(kernel_context):
    import pyopencl as cl

    return cl.CommandQueue(kernel_context)


def tolerance(weights: np.ndarray) -> float:
    """Float32 accumulation over the taps: relative to the sum of |weights|."""
    return 2e-5 * max(1.0, float(np.abs(weights).sum()))


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
    expected = accelerated_reference.convolve(
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
    expected = accelerated_reference.box_filter(pixels, grid, size).reshape(height, width, 4)
    np.testing.assert_allclose(download(queue, dst), expected, atol=2e-6)


def test_box_window_matches_reference_weights():
    for size in (0.25, 1.0, 2.0, 2.5, 3.0, 7.0, 7.5, 15.99, 16.0):
        first, weights = accelerated_reference.box_weights(0.0, size)
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
    expected_vectors, expected_costs = accelerated_reference.block_match_search(
        target, reference, region, radius, squared=metric == "ssd"
    )
    assert field.shape == (height // region[1], width // region[0])
    np.testing.assert_array_equal(vectors, expected_vectors)
    np.testing.assert_array_equal(costs, expected_costs.astype(np.float32))
    if radius >= 3:
        assert (vectors == (-3, 2)).all(axis=-1).mean() > 0.5


@pytest.mark.parametrize("addressing", ["clamp", "clamp_to_edge"])
def test_whole_image_references_agree_with_the_point_references(addressing):
    rng = np.random.default_rng(6)
    pixels = rng.random((9, 13, 4))
    grid = np.stack(np.meshgrid(np.arange(13), np.arange(9)), -1).reshape(-1, 2)
    for size in ((2.0, 2.0), (2.5, 3.3), (7.0, 7.0), (0.5, 1.0)):
        whole = accelerated_reference.box_filter_image(pixels, size, addressing)
        points = accelerated_reference.box_filter(pixels, grid, size, addressing).reshape(9, 13, 4)
        np.testing.assert_allclose(whole, points, rtol=1e-12, atol=1e-12)
    kernel = rng.uniform(-1, 1, (3, 5))
    whole = accelerated_reference.convolve_image(pixels, kernel, (4, 1), addressing)
    points = accelerated_reference.convolve(
        pixels, grid, kernel[None], center=(4, 1), addressing=addressing
    ).reshape(9, 13, 4)
    np.testing.assert_allclose(whole, points, rtol=1e-12, atol=1e-12)


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
