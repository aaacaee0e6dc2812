"""The "strips" method of convolve_image / box_filter_image (kernels/filter_strips.cl) at
the largest filters the portable path takes, its plan, and the variants a tuner chooses
from (qcom_ext.ext.accelerated.variants, qcom_ext.ops.variant_tuning) on every device
with images, against the float64 numpy references of qcom_ext.reference.accelerated."""

from __future__ import annotations

import numpy as np
import pytest

import qcom_ext
from qcom_ext import ConfigError, WeightImage
from qcom_ext.ext.accelerated import plan as plan_module
from qcom_ext.ext.accelerated.points import download, empty, upload
from qcom_ext.ext.accelerated.support import FALLBACK_LIMITS, context_path
from qcom_ext.ext.accelerated.variants import filter_variants
from qcom_ext.ops import tuning
from qcom_ext.ops.variant_tuning import choose_variant, time_variants
from qcom_ext.reference import accelerated as accelerated_reference


@pytest.fixture
def queue(kernel_context, device_caps):
    import pyopencl as cl

    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    return cl.CommandQueue(kernel_context)


def grid(width: int, height: int) -> np.ndarray:
    return np.stack(np.meshgrid(np.arange(width), np.arange(height)), -1).reshape(-1, 2)


LARGEST = FALLBACK_LIMITS.max_filter_size[0]


#: The largest filter (16 x 16 taps, four texels of weights a row; each build 4 to 12 s on
#: pocl) runs for the two default launch shapes it reaches a path of its own in: "strips"
#: (a strip of 8 rows, shorter than the filter: the ring of accumulators wraps), 2-D and
#: separable, and "tiled", the convolution's default method. Explicit blocks and local
#: sizes of "strips" (wider blocks, shorter strips, one-row groups) run the filters taller
#: than their strips in tests/test_accelerated_whole_image.py: the same paths, with
#: other constants.
LARGEST_CASES = [
    pytest.param("strips", False, (LARGEST - 1, 0), id="strips-2d"),
    pytest.param("strips", True, (LARGEST // 2, 5), id="strips-separable"),
    pytest.param("tiled", False, (LARGEST // 2, LARGEST - 1), id="tiled-2d"),
]


@pytest.mark.parametrize(("method", "separable", "center"), LARGEST_CASES)
def test_strips_convolve_with_the_largest_filter(kernel_context, queue, method, separable, center):
    rng = np.random.default_rng(31)
    n = LARGEST
    weights = rng.uniform(-1, 1, (2, n) if separable else (n, n))
    w = WeightImage(kernel_context, weights, center=center, separable=separable)
    # No multiple of any tile: one full group and a part of one in both axes (strips:
    # 16 x 64 outputs a group, tiled 16 x 32).
    width, height = 21, 69
    pixels = rng.random((height, width, 4)).astype(np.float32)
    dst = empty(kernel_context, width, height)
    qcom_ext.convolve_image(
        queue, upload(kernel_context, pixels), w, dst, sampler="clamp", method=method
    )
    expected = accelerated_reference.convolve(
        pixels,
        grid(width, height),
        w.weights,
        center=center,
        separable=separable,
        filter_size=(n, n),
        addressing="clamp",
    ).reshape(height, width, 4)
    atol = 2e-5 * float(np.abs(w.weights).sum())
    np.testing.assert_allclose(download(queue, dst), expected, atol=atol)


def test_strips_box_filter_up_to_the_largest_box(kernel_context, queue):
    """The largest box (17 x 17 taps) at the default strip (8 rows, shorter than it: the
    ring of accumulators wraps). Boxes up to 7x7 run every method and launch shape in
    tests/test_accelerated_whole_image.py, the explicit strips of 3 and 5 rows with a
    window taller than them; each further 17 x 17 build (another block or local size, a
    one-column 0.25 x 15.5 box) would cost 5 to 10 s on pocl and reach no other path."""
    size, block, local = (16.0, 16.0), None, None
    width, height = 21, 69  # a group and a part in both axes (16 x 64 outputs by default)
    pixels = np.random.default_rng(5).random((height, width, 4)).astype(np.float32)
    dst = empty(kernel_context, width, height)
    qcom_ext.box_filter_image(
        queue,
        upload(kernel_context, pixels),
        size,
        dst,
        sampler="clamp_to_edge",
        method="strips",
        block=block,
        local_size=local,
    )
    expected = accelerated_reference.box_filter(pixels, grid(width, height), size)
    np.testing.assert_allclose(download(queue, dst), expected.reshape(height, width, 4), atol=2e-6)


def test_strips_plan_uses_its_own_kernel_file(kernel_context, queue):
    plan = plan_module.filter_plan(queue, "strips", (7, 7), (-3, -3), None, None)
    assert plan.local == plan_module.DEFAULT_LOCALS["strips"]
    if context_path(kernel_context) == "native":
        assert plan.source == plan_module.SOURCE_FILE and not plan.exact_local
        assert plan.kernel_name("convolve") == "qe_convolve_image"
        return
    assert plan.source == "filter_strips.cl" and plan.exact_local
    assert plan.kernel_name("box_filter") == "qe_box_filter_strips"
    assert plan.defines["QE_LX"] == plan.local[0] and plan.defines["QE_BY"] == plan.block[1]
    (lx, ly), rows = plan.local, plan.block[1]
    strips = -(-70 // rows)  # per column
    groups = (-(-100 // lx), -(-strips // ly))
    assert plan.sizes((100, 70), queue.device) == ((groups[0] * lx, groups[1] * ly), (lx, ly))


@pytest.mark.parametrize(("local_mem", "rows"), [(1 << 20, 8), (32768, 4), (16384, 1)])
def test_default_strips_shrink_to_the_local_memory(kernel_context, queue, local_mem, rows):
    """The default block's rows halve until the tile and the staged outputs fit (the 16x16
    box on a device with Adreno's 32 KB of local memory, say); a given block never does."""
    from types import SimpleNamespace

    if context_path(kernel_context) == "native":
        pytest.skip("natively every method runs the builtins per pixel")
    device = SimpleNamespace(local_mem_size=local_mem, max_work_group_size=1024)
    small = SimpleNamespace(context=kernel_context, device=device)
    plan = plan_module.filter_plan(small, "strips", (16, 16), (-8, -8), None, None)
    assert plan.block == (1, rows)
    with pytest.raises(ConfigError, match="method='strips' needs"):
        plan_module.filter_plan(small, "strips", (16, 16), (-8, -8), (1, 256), None)


def test_strips_refuses_what_the_device_cannot_run(kernel_context, queue):
    if context_path(kernel_context) == "native":
        pytest.skip("natively every method runs the builtins per pixel")
    device = queue.device
    too_many = device.max_work_group_size * 2
    with pytest.raises(ConfigError, match="work-items a group"):
        plan_module.filter_plan(queue, "strips", (3, 3), (-1, -1), (1, 1), (too_many, 1))
    rows = device.local_mem_size // (16 * 18) + 1  # one 16 x 16 filter's tile too many
    with pytest.raises(ConfigError, match="method='strips' needs"):
        plan_module.filter_plan(queue, "strips", (16, 16), (0, 0), (1, rows), (3, 1))


def test_strips_kernels_are_the_portable_path_only(kernel_context):
    import pyopencl as cl

    from qcom_ext._resources import kernels_dir

    text = (kernels_dir() / "filter_strips.cl").read_text()
    options = ["-I", str(kernels_dir()), "-DQCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops"]
    with pytest.raises(cl.Error, match="portable path"):
        cl.Program(kernel_context, "#include <qcom_ext.h>\n" + text).build(options=options)


SMALL_SPACE = {
    "strips": (((1, 4), (2, 3)), ((8, 2),)),
    "tiled": (((1, 2),), ((4, 4),)),
    "blocked": (((2, 2),), ((4, 4),)),
}


def test_every_variant_gives_the_same_filter(kernel_context, queue):
    rng = np.random.default_rng(9)
    width, height = 21, 13
    pixels = rng.random((height, width, 4)).astype(np.float32)
    src, dst = upload(kernel_context, pixels), empty(kernel_context, width, height)
    w = WeightImage(kernel_context, rng.uniform(-1, 1, (5, 5)), center=(2, 2))
    expected = accelerated_reference.convolve(
        pixels, grid(width, height), w.weights, center=(2, 2)
    ).reshape(height, width, 4)
    variants = filter_variants(queue, src, dst, weights=w, space=SMALL_SPACE)
    native = context_path(kernel_context) == "native"
    assert len(variants) == (1 if native else 4)
    for variant in variants:
        qcom_ext.convolve_image(queue, src, w, dst, **variant.options)
        got = download(queue, dst)
        np.testing.assert_allclose(got, expected, atol=2e-5 * 25, err_msg=variant.describe())


def test_filter_variants_check_their_arguments(kernel_context, queue):
    src, dst = empty(kernel_context, 8, 8), empty(kernel_context, 8, 4)
    with pytest.raises(ConfigError, match="not both"):
        filter_variants(queue, src, src, weights=None, size=None)
    with pytest.raises(ConfigError, match="expected the same size"):
        filter_variants(queue, src, dst, size=(3, 3))


def test_choose_variant_times_each_once_then_reads_the_cache(
    kernel_context, queue, tuning_cache_dir, monkeypatch
):
    """Kernels compiled for their work-group size ("strips", "tiled"): the cache holds
    each one's time. ("blocked" takes any size; where the driver's choice beat its own,
    the entry lacks its time and it is timed again.)"""
    # a readable source (a write-only image as a read_only argument: NVIDIA refuses the
    # launch with CL_INVALID_KERNEL_ARGS, pocl runs it)
    src = upload(kernel_context, np.zeros((16, 24, 4), np.float32))
    dst = empty(kernel_context, 24, 16)
    space = {k: v for k, v in SMALL_SPACE.items() if k != "blocked"}
    variants = filter_variants(queue, src, dst, size=(3, 3), space=space)
    timed = time_variants(variants, queue=queue, repeats=2)
    assert [v for v, _ in timed] == variants
    assert all(0 < seconds < float("inf") for _, seconds in timed)
    best = choose_variant(variants, queue=queue, repeats=2)
    assert best is min(timed, key=lambda item: item[1])[0]  # the cache kept the times

    def no_timing(*args, **kwargs):
        raise AssertionError("a cached variant must not be timed again")

    monkeypatch.setattr(tuning, "_median_ns", no_timing)
    assert choose_variant(variants, queue=queue) is best
    assert len(list(tuning_cache_dir.glob("*.json"))) == len(variants)


def test_choose_variant_needs_a_variant(queue):
    with pytest.raises(ConfigError, match="no variants"):
        choose_variant([], queue=queue)
    with pytest.raises(ConfigError, match="repeats"):
        time_variants([], queue=queue, repeats=0)
