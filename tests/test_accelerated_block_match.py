"""The portable block search (``qe_block_match_tiles``: a work-group per tile of blocks,
the window in local memory, runs of candidate sums in registers) on every device with
images: the numpy oracle's vectors and costs exactly, at sizes that reach every path
(images not a multiple of the tile, blocks at the borders, reference of another size,
radius 0, 1, 4 and 7 (two runs a candidate row), every tile); the same costs bit for bit
as the per-block search through the sampler on non-exact data; any local size (a
tuner's) right; the tile chosen through ``qcom_ext.tune``."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import qcom_ext
from qcom_ext.errors import ConfigError
from qcom_ext.ext.accelerated import plan as plan_module
from qcom_ext.ext.accelerated import whole_image
from qcom_ext.ext.accelerated.points import upload
from qcom_ext.reference import accelerated as accelerated_reference


@pytest.fixture
def queue(device_caps, kernel_context):
    import pyopencl as cl

    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    return cl.CommandQueue(kernel_context)


def exact_frames(shape, reference_shape=None, seed=8):
    """Pixel values k/256: every sum is exact in float32, so the oracle's float64 costs
    are the kernel's exactly. The reference is the target moved by (-3, 2) (cut or padded
    to ``reference_shape``) with rows that match nothing."""
    rng = np.random.default_rng(seed)
    target = (rng.integers(0, 256, (*shape, 4)) / 256).astype(np.float32)
    moved = np.roll(target, (2, -3), axis=(0, 1))
    moved[::7] = 0.5
    if reference_shape is None:
        return target, moved
    reference = np.full((*reference_shape, 4), 0.25, np.float32)
    h, w = min(shape[0], reference_shape[0]), min(shape[1], reference_shape[1])
    reference[:h, :w] = moved[:h, :w]
    return target, reference


def search(queue, target, reference, **options):
    ctx = queue.context
    field = qcom_ext.block_match_image(
        queue, upload(ctx, target), upload(ctx, reference), **options
    )
    return field.get(queue)


def assert_matches_oracle(queue, target, reference, region, radius, metric, tile):
    vectors, costs = search(
        queue, target, reference, region=region, radius=radius, metric=metric, tile=tile
    )
    want_vectors, want_costs = accelerated_reference.block_match_search(
        target, reference, region, radius, squared=metric == "ssd"
    )
    np.testing.assert_array_equal(vectors, want_vectors)
    np.testing.assert_array_equal(costs, want_costs.astype(np.float32))


#: (region, radius, target shape, reference shape or None, metrics, tiles) of the search
#: against the oracle. Each geometry and metric is a program of its own (a build of 3 to
#: 9 s on pocl); a tile is a launch shape of it (about 1 s). Every geometry runs the
#: default tile and the largest (8 x 4: partial tiles), and one of the one-block-wide
#: tiles, (1, 1) or (2, 1), each on a geometry with odd blocks and on the two-run one;
#: both metrics run where the whole-image tests use the same programs (8x8 r4, 3x5 r2,
#: 16x4 r0), one elsewhere (the metric is one line of the kernel, apart from the
#: geometry).
GEOMETRIES = [
    ("8x8-r4", (8, 8), 4, (45, 67), None, ("sad", "ssd"), [(1, 1)]),  # 8x5 blocks
    ("8x8-r1-other-reference", (8, 8), 1, (33, 70), (30, 75), ("sad",), [(2, 1)]),
    ("3x5-r2", (3, 5), 2, (23, 31), None, ("sad", "ssd"), [(2, 1)]),
    ("16x4-r0", (16, 4), 0, (17, 40), None, ("sad", "ssd"), [(1, 1)]),  # one candidate
    # 15 candidate columns: two runs of 8 (one past)
    ("5x3-r7-two-runs", (5, 3), 7, (26, 44), None, ("ssd",), [(1, 1), (2, 1)]),
]
ORACLE_CASES = [
    pytest.param(*geometry, tile, id=f"{name}-{tile}")
    for name, *geometry, tiles in GEOMETRIES
    for tile in [None, *tiles, (8, 4)]
]


@pytest.mark.parametrize(
    ("region", "radius", "shape", "reference_shape", "metrics", "tile"), ORACLE_CASES
)
def test_tiled_search_matches_the_oracle(
    queue, device_caps, tile, region, radius, shape, reference_shape, metrics
):
    target, reference = exact_frames(shape, reference_shape)
    for metric in metrics:
        try:
            assert_matches_oracle(queue, target, reference, region, radius, metric, tile)
        except ConfigError as exc:  # the largest tile: too big for some devices
            if tile is None or "use a smaller tile" not in str(exc):
                raise
            pytest.skip(f"{device_caps.label} cannot take this tile: {exc}")


@pytest.mark.parametrize("tile", [None, (1, 1)])
def test_a_match_just_past_the_window_is_not_taken(queue, tile):
    """r = 7: 15 candidate columns in runs of 8, so each row of runs has one padding lane
    at dx = r + 1. The reference is the target moved 8 columns right: the perfect match
    (cost 0) sits exactly in that lane, outside the window; the answer must be the
    oracle's best inside it (the 5x3-r7 program of the geometries above)."""
    rng = np.random.default_rng(11)
    target = (rng.integers(0, 256, (26, 44, 4)) / 256).astype(np.float32)
    reference = np.roll(target, 8, axis=1)
    assert_matches_oracle(queue, target, reference, (5, 3), 7, "ssd", tile)


def test_the_default_is_the_tiled_search_on_the_portable_path(queue):
    target, reference = exact_frames((24, 24))
    images = [upload(queue.context, a) for a in (target, reference)]
    plan = plan_module.search_plan(queue, *images, (8, 8), 4, "sad", None)
    if whole_image.context_path(queue.context) != "fallback":
        assert plan.tile is None
        return
    assert plan.tile in plan_module.SEARCH_TILES and plan.lanes == 9
    assert plan.scratch_bytes(plan.tile) <= queue.device.local_mem_size // 2


def _per_block(queue, target, reference, region, radius, squared):
    """The per-block search through the portable builtin (qe_block_match_search)."""
    import pyopencl as cl
    import pyopencl.cltypes as cltypes

    ctx = queue.context
    shape = (target.shape[0] // region[1], target.shape[1] // region[0])
    vectors = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 8 * shape[0] * shape[1])
    costs = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4 * shape[0] * shape[1])
    kernel = whole_image._kernel(ctx, "qe_block_match_search", {})
    kernel(
        queue,
        (shape[1] * 32, shape[0]),
        (32, 1),
        upload(ctx, target),
        upload(ctx, reference),
        whole_image.sampler(ctx),
        cltypes.make_uint2(*region),
        np.int32(radius),
        np.int32(squared),
        vectors,
        costs,
        cl.LocalMemory(8 * 32),
    )
    v, c = np.empty((*shape, 2), np.int32), np.empty(shape, np.float32)
    cl.enqueue_copy(queue, v, vectors)
    cl.enqueue_copy(queue, c, costs).wait()
    return v, c


@pytest.mark.parametrize("metric", ["sad", "ssd"])
def test_costs_are_bit_identical_to_the_per_block_search(queue, metric):
    """On values whose sums round: the same order of additions, the same float32 bits
    where the compiler contracts neither kernel (pocl); NVIDIA's fuses ``d * d + s`` into
    an FMA in one of them (OpenCL allows contraction), so there the SSD costs agree to a
    few float32 roundings and the vectors exactly."""
    if whole_image.context_path(queue.context) != "fallback":
        pytest.skip("the native path has no tiled search")
    rng = np.random.default_rng(3)
    target = rng.random((37, 53, 4), dtype=np.float32)
    reference = np.roll(target, (1, 2), axis=(0, 1)) + rng.normal(0, 0.01, target.shape).astype(
        np.float32
    )
    for tile in ((1, 1), (4, 2)):
        got = search(queue, target, reference, region=(8, 8), radius=4, metric=metric, tile=tile)
        want = _per_block(queue, target, reference, (8, 8), 4, metric == "ssd")
        np.testing.assert_array_equal(got[0], want[0])
        if metric == "sad" or queue.device.type & cl.device_type.CPU:
            assert got[1].tobytes() == want[1].tobytes()
        else:
            np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=0)


def test_any_local_size_gives_the_oracle_answer(queue):
    """Local sizes that are no tile (the driver's choice a tuner times first), and a tile
    whose local memory was not given, search each block alone: still exact."""
    import pyopencl as cl

    t = _tuning(queue, (29, 43))
    target, reference = t.frames
    want_vectors, want_costs = accelerated_reference.block_match_search(
        target, reference, (8, 8), 4
    )
    args, full = list(t.tuning.args), t.tuning.args[-1]
    for local, capacity in ((None, full), ((1, 1), full), ((9, 1), 0), ((18, 2), full)):
        args[-1] = np.int32(capacity)
        size = t.tuning.global_size
        if local is not None:
            size = tuple(-(-g // v) * v for g, v in zip(size, local, strict=True))
        t.tuning.kernel(queue, size, local, *args)
        vectors = np.empty((*t.tuning.plan.shape, 2), np.int32)
        costs = np.empty(t.tuning.plan.shape, np.float32)
        cl.enqueue_copy(queue, vectors, t.tuning.args[3])
        cl.enqueue_copy(queue, costs, t.tuning.args[4]).wait()
        np.testing.assert_array_equal(vectors, want_vectors, err_msg=str(local))
        np.testing.assert_array_equal(costs, want_costs.astype(np.float32), err_msg=str(local))


class _Tuned:
    def __init__(self, tuning, frames, images):
        self.tuning, self.frames, self.images = tuning, frames, images


def _tuning(queue, shape):
    frames = exact_frames(shape)
    images = [upload(queue.context, a) for a in frames]
    tuning = whole_image.block_match_tuning(queue, *images, region=(8, 8), radius=4)
    if tuning is None:
        pytest.skip("the search is not tiled here (native path)")
    return _Tuned(tuning, frames, images)


def test_the_tile_is_chosen_through_qcom_ext_tune(queue):
    t = _tuning(queue, (40, 72))
    from qcom_ext.ops.tuning import tune_report

    every = [t.tuning.plan.local_of(x) for x in plan_module.SEARCH_TILES]
    assert t.tuning.candidates and set(t.tuning.candidates) <= set(every)
    report = tune_report(
        t.tuning.kernel,
        t.tuning.global_size,
        t.tuning.args,
        candidates=t.tuning.candidates,
        budget_s=5,
        repeats=1,
        queue=queue,
        pad_global=True,
        use_cache=False,
    )
    timed = [local for local, _ in report.measured]
    assert timed[0] is None and set(timed[1:]) <= set(t.tuning.candidates) and len(timed) > 1
    local = report.local_size
    tile = None if local is None else t.tuning.plan.tile_of(local)
    vectors, costs = qcom_ext.block_match_image(queue, *t.images, tile=tile).get(queue)
    want_vectors, want_costs = accelerated_reference.block_match_search(*t.frames, (8, 8), 4)
    np.testing.assert_array_equal(vectors, want_vectors)
    np.testing.assert_array_equal(costs, want_costs.astype(np.float32))


def test_a_tile_the_device_cannot_take_is_refused(queue):
    if whole_image.context_path(queue.context) != "fallback":
        pytest.skip("the tile is the portable path's option")
    image = upload(queue.context, exact_frames((16, 16))[0])
    with pytest.raises(ConfigError, match="tile must be a pair of positive integers"):
        qcom_ext.block_match_image(queue, image, image, tile=(0, 2))
    items = queue.device.max_work_group_size // 9 + 1
    with pytest.raises(ConfigError, match=f"takes {9 * items} work-items"):
        qcom_ext.block_match_image(queue, image, image, tile=(items, 1))


def test_a_tile_over_the_kernels_own_group_limit_is_refused():
    """A kernel's registers can hold its groups below the device's limit (NVIDIA: the 8x4
    tile at r = 7 passed the device checks, then the launch failed with
    CL_OUT_OF_RESOURCES); the launch is refused first, naming both numbers."""

    class Device:
        name = "stand-in GPU "

    message = "tile 4x2 takes 72 work-items a group; this kernel runs at most 64 on 'stand-in GPU'"
    with pytest.raises(ConfigError, match=message):
        whole_image._check_kernel_group(72, 64, Device(), "tile 4x2")
    whole_image._check_kernel_group(64, 64, Device(), "tile 4x2")  # fits


def test_the_default_tile_falls_back_under_the_kernels_own_limit(queue, monkeypatch):
    """Where the kernel's registers hold its groups below the default tile, the default
    falls back to a tile that fits (a tile asked for is refused instead, as above); the
    result still matches the oracle. The limit is stubbed: pocl's kernels take 4096."""
    launched = []
    real = whole_image._enqueue

    def recording(queue, kernel, args, sizes, wait_for):
        launched.append(sizes[1])
        return real(queue, kernel, args, sizes, wait_for)

    monkeypatch.setattr(whole_image, "_kernel_group_limit", lambda kernel, device: 40)
    monkeypatch.setattr(whole_image, "_enqueue", recording)
    target, reference = exact_frames((45, 67), None)
    assert_matches_oracle(queue, target, reference, (8, 8), 4, "sad", None)
    ((lx, ly),) = launched
    assert lx * ly <= 40 and lx % 9 == 0  # 9 lanes a block at r = 4
    with pytest.raises(ConfigError, match="this kernel runs at most 40"):
        assert_matches_oracle(queue, target, reference, (8, 8), 4, "sad", (4, 2))


def test_tiles_follow_the_device_limits():
    """The default tile is the first that fits half the local memory with at most 256
    work-items; a tile past the local memory is refused, naming both sizes."""
    from types import SimpleNamespace

    plan = plan_module.SearchPlan((135, 240), (8, 8), 4, False, 96)
    adreno_like = SimpleNamespace(
        local_mem_size=32768, max_work_group_size=1024, max_work_item_sizes=[1024] * 3
    )
    tiled = plan_module._tiled(plan, adreno_like, None)
    assert tiled.tile == (2, 2) and tiled.lanes == 9  # (4, 2) takes 24512 bytes > 16384
    assert tiled.scratch_bytes((4, 2)) == 24512 and tiled.scratch_bytes((2, 2)) == 13984
    assert tiled.sizes() == ((120 * 18, 68 * 2), (18, 2))
    with pytest.raises(
        ConfigError, match="needs 43776 bytes of local memory; the device has 32768"
    ):
        plan_module._tiled(plan, adreno_like, (4, 4))
    tiny = SimpleNamespace(
        local_mem_size=4096, max_work_group_size=64, max_work_item_sizes=[64] * 3
    )
    assert plan_module._tiled(plan, tiny, None).tile is None  # the per-block search
