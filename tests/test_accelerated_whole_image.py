"""The whole-image accelerated image ops (qcom_ext.convolve_image, box_filter_image,
block_match_image) on every device that has images, for every method, against the float64
numpy references of qcom_ext.reference.accelerated; their kernels' native branches compile
against the builtins' declarations."""

from __future__ import annotations

import numpy as np
import pytest

import qcom_ext
from qcom_ext import WeightImage, box_size
from qcom_ext.errors import ConfigError
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
    ("strips", None, None),
    ("strips", (4, 2), (2, 3)),  # many groups, strips that end below the image
    ("strips", (8, 2), (1, 5)),
    ("bands", None, (1, 16)),  # block (1, rows), local (columns, 1)
    ("bands", (4, 1), (1, 3)),  # many bands and segments, the last cut by the image
]
METHOD_IDS = [
    "blocked",
    "tiled",
    "tiled-8x4-2x2",
    "per-pixel",
    "strips",
    "strips-4x2-2x3",
    "strips-8x2-1x5",
    "bands",
    "bands-4x1-1x3",
]


FILTERS = {
    "5x5": ((5, 5), False, (2, 2), (37, 29), (4, 4)),
    "3x7-corner-centre": ((3, 7), False, (0, 6), (9, 40), (2, 3)),
    "separable-2x7": ((2, 7), True, (1, 3), (33, 17), (4, 4)),
    "1x1": ((1, 1), False, (0, 0), (5, 3), (1, 1)),
}
#: The methods with an explicit block and local size run the two filters taller than
#: their strips / segments (3 or 5 rows), one 2-D and one separable: those reach their
#: every path (ring wrap, chunk longer than the segment, weights over two texels). The
#: 5x5 and 1x1 filters would add only a build each (each filter and launch shape is its
#: own program, the cost of these tests on pocl), not a path: the same kernels at their
#: default launch shapes run them.
TALL_ONLY = {"strips-4x2-2x3", "strips-8x2-1x5", "bands-4x1-1x3"}
CONVOLVE_CASES = [
    pytest.param(*method, *FILTERS[name], id=f"{name}-{method_id}")
    for name in FILTERS
    for method, method_id in zip(METHODS, METHOD_IDS, strict=True)
    if method_id not in TALL_ONLY or name in ("3x7-corner-centre", "separable-2x7")
]


@pytest.mark.parametrize(
    ("method", "local", "method_block", "shape", "separable", "center", "size", "block"),
    CONVOLVE_CASES,
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
    """Every method against the reference; both addressings share a program (the
    sampler is an argument), so the second is nearly free."""
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
    try:
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
    except ConfigError as exc:  # e.g. strips of 4x4 blocks: 72 KB, NVIDIA has 48 KB
        if "bytes of local memory" not in str(exc):
            raise
        pytest.skip(f"{device_caps.label} has too little local memory: {exc}")
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


BOXES = {"size0": (7.0, 7.0), "size1": (2.0, 2.0), "size2": (2.5, 3.25), "size3": (0.5, 1.0)}
#: As for the filters: the explicit launch shapes run the box taller than their strips /
#: segments (7x7) and the one with fractional edges and FX != FY (2.5 x 3.25).
BOX_CASES = [
    pytest.param(*method, BOXES[name], id=f"{name}-{method_id}")
    for name in BOXES
    for method, method_id in zip(METHODS, METHOD_IDS, strict=True)
    if method_id not in TALL_ONLY or name in ("size0", "size2")
]


@pytest.mark.parametrize(("method", "local", "block", "size"), BOX_CASES)
def test_box_filter_image_matches_numpy(
    device_caps, kernel_context, queue, method, local, block, size
):
    """Every method on boxes up to 7x7 (7 taps: already taller than the explicit strips
    of 3 and 5 rows and than bands' segment of 3, and in bands' one-filter chunks). The
    largest box (17 x 17 taps, one build of 5 to 40 s a method on pocl) runs where a long
    window takes a path of its own: "strips", the box's default method, whose default
    strip (8 rows) is shorter than it, in
    tests/test_accelerated_variants.py::test_strips_box_filter_up_to_the_largest_box."""
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
/* Stand-ins for what the Adreno compiler provides for cl_qcom_accelerated_image_ops: the
 * spec's signatures, with bodies computing the spec's formulas (written for this test,
 * not the compat header's code). The weight image is the portable layout a WeightImage has
 * on this device (texel (0, 0) = fx, fy, cx, cy; (1, 0) = phases, separable, P; weight
 * row r of slice s in image row 1 + s * rows + r, four taps a texel). */
#define qcom_weight_image_t image2d_t
typedef float2 qcom_box_size_t;
constant sampler_t qe_exact = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                              CLK_FILTER_NEAREST;
float qe_tap(image2d_t w, int row, int i)
{
    float4 t = read_imagef(w, qe_exact, (int2)(i / 4, row));
    float lanes[4] = {t.x, t.y, t.z, t.w};
    return lanes[i % 4];
}
float4 qe_pix(image2d_t image, sampler_t s, int x, int y)
{ return read_imagef(image, s, (float2)(x + 0.5f, y + 0.5f)); }
int qe_phase(float c, int p) /* offset from the nearest centre in 1/P steps, modulo P */
{ return ((int)floor((c - floor(c + 0.5f)) * p) % p + p) % p; }
float4 qcom_convolve_imagef(__read_only image2d_t image, sampler_t sampler, float2 coord,
                            __read_only qcom_weight_image_t weight_image)
{
    float4 h0 = read_imagef(weight_image, qe_exact, (int2)(0, 0));
    float4 h1 = read_imagef(weight_image, qe_exact, (int2)(1, 0));
    int fx = (int)h0.x, fy = (int)h0.y, cx = (int)h0.z, cy = (int)h0.w, p = (int)h1.z;
    int bx = (int)floor(coord.x + 0.5f), by = (int)floor(coord.y + 0.5f);
    int px = qe_phase(coord.x, p), py = qe_phase(coord.y, p);
    float4 sum = 0.0f;
    for (int j = 0; j < fy; j++)
        for (int i = 0; i < fx; i++) {
            float tap = h1.y != 0.0f ? qe_tap(weight_image, 1 + 2 * px, i) *
                                           qe_tap(weight_image, 2 + 2 * py, j)
                                     : qe_tap(weight_image, 1 + (py * p + px) * fy + j, i);
            sum += tap * qe_pix(image, sampler, bx - cx + i, by - cy + j);
        }
    return sum;
}
float4 qcom_box_filter_imagef(__read_only image2d_t image, sampler_t sampler, float2 coord,
                              const qcom_box_size_t box_size)
{
    float2 lo = coord - 0.5f * box_size, hi = coord + 0.5f * box_size;
    float4 sum = 0.0f;
    for (int j = (int)floor(lo.y) - 1; j <= (int)ceil(hi.y) + 1; j++)
        for (int i = (int)floor(lo.x) - 1; i <= (int)ceil(hi.x) + 1; i++) {
            float ax = fmax(0.0f, fmin(i + 0.5f, hi.x) - fmax(i - 0.5f, lo.x));
            float ay = fmax(0.0f, fmin(j + 0.5f, hi.y) - fmax(j - 0.5f, lo.y));
            sum += ax * ay * qe_pix(image, sampler, i, j);
        }
    return sum / (box_size.x * box_size.y);
}
float4 qe_match(image2d_t t, sampler_t s, float2 tc, uint2 region, image2d_t r, uint2 rc,
                int squared)
{
    int tx = (int)floor(tc.x + 0.5f), ty = (int)floor(tc.y + 0.5f);
    float4 sum = 0.0f;
    for (int j = 0; j < (int)region.y; j++)
        for (int i = 0; i < (int)region.x; i++) {
            float4 d = qe_pix(t, s, tx + i, ty + j) - qe_pix(r, s, rc.x + i, rc.y + j);
            sum += squared ? d * d : fabs(d);
        }
    return sum;
}
float4 qcom_block_match_sadf(__read_only image2d_t target_image, sampler_t sampler,
                             float2 coord, uint2 region, __read_only image2d_t reference_image,
                             uint2 reference_coord)
{ return qe_match(target_image, sampler, coord, region, reference_image, reference_coord, 0); }
float4 qcom_block_match_ssdf(__read_only image2d_t target_image, sampler_t sampler,
                             float2 coord, uint2 region, __read_only image2d_t reference_image,
                             uint2 reference_coord)
{ return qe_match(target_image, sampler, coord, region, reference_image, reference_coord, 1); }
"""
NATIVE = "-DQCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops"


def native_program(context, text, defines=()):
    """``text`` built as on an Adreno: the compat part defines nothing, the stand-ins above
    play the builtins."""
    import pyopencl as cl

    from qcom_ext._resources import kernels_dir

    program = cl.Program(context, NATIVE_STUBS + "#include <qcom_ext.h>\n" + text)
    return program.build(options=["-I", str(kernels_dir()), NATIVE, *defines])


def test_native_point_kernels_call_the_builtins_with_their_arguments(kernel_context, queue):
    """The point kernels' native branch (kernels/accelerated_points.cl) against the
    stand-ins: argument order and types reach the builtins as the spec has them, so the
    results are the independent oracle's (tests/accelerated_spec.py)."""
    import accelerated_spec as spec
    import pyopencl as cl

    from qcom_ext._resources import kernels_dir
    from qcom_ext.ext.accelerated.points import SOURCE_FILE
    from qcom_ext.ext.accelerated.whole_image import sampler

    if not kernel_context.devices[0].image_support:
        pytest.skip("no image support")
    rng = np.random.default_rng(12)
    pixels = rng.random((7, 9, 4)).astype(np.float32)
    other = rng.random((7, 9, 4)).astype(np.float32)
    coords = np.array([(4.0, 3.0), (2.7, 1.2), (5.49, 4.5), (0.3, 6.6)], np.float32)
    mf = cl.mem_flags
    buffer = cl.Buffer(kernel_context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=coords)
    out, out2 = (cl.Buffer(kernel_context, mf.WRITE_ONLY, 16 * len(coords)) for _ in "ab")
    src, ref = upload(kernel_context, pixels), upload(kernel_context, other)
    smp = sampler(kernel_context, "clamp")
    built = native_program(kernel_context, (kernels_dir() / SOURCE_FILE).read_text())

    def result(buf):
        host = np.empty((len(coords), 4), np.float32)
        cl.enqueue_copy(queue, host, buf)
        return host

    taps = rng.uniform(-1, 1, (4, 3, 2))  # 2x2 phases of a 2x3 filter, centre (1, 2)
    w = WeightImage(kernel_context, taps, center=(1, 2), dtype=np.float32)
    built.qe_convolve_at(queue, (len(coords),), None, src, smp, w.image, buffer, out)
    expected = spec.at_points(spec.convolve, coords, pixels, w.weights, (1, 2), "clamp")
    np.testing.assert_allclose(result(out), expected, rtol=1e-5, atol=1e-5)
    size = np.array((2.5, 1.5), np.float32).view(cl.cltypes.float2)[0]
    built.qe_box_filter_at(queue, (len(coords),), None, src, smp, size, buffer, out)
    expected = spec.at_points(spec.box_filter, coords, pixels, (2.5, 1.5), "clamp")
    np.testing.assert_allclose(result(out), expected, rtol=1e-5, atol=1e-5)
    rc = np.array([(0, 1), (3, 2), (1, 0), (2, 3)], np.uint32)
    rbuf = cl.Buffer(kernel_context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=rc)
    region = cl.cltypes.make_uint2(3, 2)
    built.qe_block_match_at(queue, (4,), None, src, smp, region, ref, buffer, rbuf, out, out2)
    for squared, buf in ((False, out), (True, out2)):
        expected = [
            spec.block_match(pixels, other, t, (3, 2), r, squared, "clamp")
            for t, r in zip(coords, rc, strict=True)
        ]
        np.testing.assert_allclose(result(buf), expected, rtol=1e-5, atol=1e-5)


def test_native_whole_image_kernels_call_the_builtins_per_pixel(kernel_context, queue):
    """kernels/accelerated_image_ops.cl's native branch against the stand-ins: every pixel
    (x, y) of dst is the builtin at (x, y) with the kernel's own arguments."""
    import accelerated_spec as spec

    from qcom_ext._resources import kernels_dir
    from qcom_ext.ext.accelerated.whole_image import sampler

    if not kernel_context.devices[0].image_support:
        pytest.skip("no image support")
    rng = np.random.default_rng(13)
    pixels = rng.random((5, 6, 4)).astype(np.float32)
    src, dst = upload(kernel_context, pixels), empty(kernel_context, 6, 5)
    smp = sampler(kernel_context, "clamp_to_edge")
    text = (kernels_dir() / "accelerated_image_ops.cl").read_text()
    defines = ["-DQE_FX=3", "-DQE_FY=2", "-DQE_OX=0", "-DQE_OY=-1", "-DQE_BX=1", "-DQE_BY=1"]
    built = native_program(kernel_context, text, defines)
    grid = [(x, y) for y in range(5) for x in range(6)]
    w = WeightImage(kernel_context, rng.uniform(-1, 1, (2, 3)), center=(0, 1))
    built.qe_convolve_image(queue, (6, 5), None, src, smp, w.image, dst)
    expected = spec.at_points(spec.convolve, grid, pixels, w.weights, (0, 1), "clamp_to_edge")
    got = download(queue, dst).reshape(-1, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    built.qe_box_filter_image(queue, (6, 5), None, src, smp, box_size(1.5, 2.0), dst)
    expected = spec.at_points(spec.box_filter, grid, pixels, (1.5, 2.0), "clamp_to_edge")
    got = download(queue, dst).reshape(-1, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("source", ["accelerated_image_ops.cl", "accelerated_points.cl"])
def test_native_branches_compile_against_the_builtins_declarations(kernel_context, source):
    """With -DQCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops the compat part defines nothing
    and the kernels call the builtins per pixel: they must compile against the spec's
    declarations (stubbed here, as no Adreno is at hand)."""
    import pyopencl as cl

    from qcom_ext._resources import kernels_dir

    text = (kernels_dir() / source).read_text()
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
    if source == "accelerated_image_ops.cl":  # the portable-only tiled search is left out
        assert names == {"qe_convolve_image", "qe_box_filter_image", "qe_block_match_search"}
    else:
        assert names == {"qe_convolve_at", "qe_box_filter_at", "qe_block_match_at"}
