"""Whole-image accelerated image ops: every output pixel through the ``qcom_*`` builtins.

``convolve_image`` and ``box_filter_image`` write, for each pixel (x, y) of ``dst``,
``qcom_convolve_imagef`` / ``qcom_box_filter_imagef`` of ``src`` at the integer coordinate
(x, y) (as the extension spec's sample kernels do); ``block_match_image`` finds, for every
block of the target image, the displacement of the best-matching reference block with
``qcom_block_match_sadf`` / ``_ssdf``. The kernels are in ``kernels/accelerated_image_ops.cl``:
natively they call the builtins per pixel; elsewhere the same sums run register-blocked
(a work-item reads the input rows of its block of outputs once), built per filter size.
:mod:`.plan` checks the arguments and sizes the launches; this module builds (and caches)
the programs and samplers per context and enqueues. It is also the documented
``qcom_ext.image_ops``, so it carries the RGBA image helpers of :mod:`.rgba` too.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> pixels = np.zeros((8, 8, 4), np.float32); pixels[4, 4] = 1.0
>>> src, dst = rgba_image(ctx, pixels), empty_rgba_image(ctx, 8, 8)
>>> _ = box_filter_image(queue, src, qcom_ext.box_size(2, 2, device=ctx), dst)
>>> read_rgba_image(queue, dst)[3:6, 3:6, 0] * 4
array([[0.25, 0.5 , 0.25],
       [0.5 , 1.  , 0.5 ],
       [0.25, 0.5 , 0.25]], dtype=float32)
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from qcom_ext import _context_cache
from qcom_ext.errors import ConfigError
from qcom_ext.ext.accelerated.plan import (
    DEFAULT_METHODS,
    METHODS,
    SOURCE_FILE,
    SOURCES,
    MotionField,
    SearchPlan,
    box_extent,
    box_window,
    filter_plan,
    same_shape,
    search_plan,
    search_tiles,
)
from qcom_ext.ext.accelerated.rgba import (
    empty_rgba_image,
    read_rgba_image,
    rgba_image,
    rgba_supported,
)
from qcom_ext.ext.accelerated.support import context_path
from qcom_ext.ext.accelerated.weights import WeightImage, box_size
from qcom_ext.ext.program.launch import enqueue
from qcom_ext.ext.program.shared import shared_program
from qcom_ext.ext.variant import launch_tuned, tuned_options
from qcom_ext.ext.variant_store import VariantKey, kernels_digest

if TYPE_CHECKING:
    import pyopencl

__all__ = [
    "METHODS",
    "MotionField",
    "SearchTuning",
    "block_match_image",
    "block_match_tuning",
    "box_filter_image",
    "box_filter_launch",
    "context_path",
    "convolve_image",
    "convolve_launch",
    "empty_rgba_image",
    "filter_key",
    "read_rgba_image",
    "rgba_image",
    "rgba_supported",
    "sampler",
]

_ADDRESSING = ("clamp", "clamp_to_edge", "none")


def _kernel(owner: Any, name: str, defines: dict[str, Any], source: str = SOURCE_FILE) -> Any:
    """The kernel ``name`` of ``kernels/<source>`` built with ``defines``, from the shared
    programs of the context of ``owner`` (the queue or context the caller holds)."""
    return shared_program(owner, source, defines).kernels[name]


def sampler(context: pyopencl.Context, addressing: str = "clamp_to_edge") -> pyopencl.Sampler:
    """A cached unnormalized, nearest sampler with ``addressing`` ("clamp",
    "clamp_to_edge" or "none"): what the accelerated builtins expect. ``context`` may
    be a queue (the cache lives as long as the object given)."""
    import pyopencl as cl

    if addressing not in _ADDRESSING:
        raise ConfigError(
            f"addressing must be one of {', '.join(_ADDRESSING)}, got {addressing!r}"
        )
    mode = getattr(cl.addressing_mode, addressing.upper())

    def build(private: Any) -> Any:
        return cl.Sampler(private, False, mode, cl.filter_mode.NEAREST)

    return _context_cache.cached(context, (__name__, "sampler", addressing), build)


def _check_sampler(value: Any, queue: Any) -> Any:
    import pyopencl as cl

    if value is None:
        return sampler(queue)
    if isinstance(value, str):
        return sampler(queue, value)
    if not isinstance(value, cl.Sampler):
        raise ConfigError(
            f"sampler must be a pyopencl.Sampler or an addressing name, got {type(value).__name__}"
        )
    if value.get_info(cl.sampler_info.NORMALIZED_COORDS):
        raise ConfigError(
            "the accelerated image ops take pixel coordinates: use a sampler "
            "with normalized_coords=False"
        )
    return value


def _enqueue(
    queue: Any,
    kernel: Any,
    args: Sequence[Any],
    sizes: tuple[tuple[int, ...], tuple[int, ...]],
    wait_for: Any,
) -> Any:
    """Set the arguments of a cached (shared) kernel and enqueue it, atomically."""
    global_size, local_size = sizes
    return enqueue(queue, kernel, global_size, local_size, args, wait_for)


def convolve_image(
    queue: pyopencl.CommandQueue,
    src: pyopencl.Image,
    weights: WeightImage,
    dst: pyopencl.Image,
    *,
    sampler: Any = None,
    method: str | None = None,
    block: tuple[int, int] | None = None,
    local_size: tuple[int, int] | None = None,
    wait_for: Sequence[Any] | None = None,
    tuned: bool = False,
) -> pyopencl.Event:
    """``dst(x, y) = qcom_convolve_imagef(src, sampler, (x, y), weights)`` for every pixel.

    ``sampler``: a pyopencl.Sampler with unnormalized coordinates, or an addressing name
    (default "clamp_to_edge"). ``method`` (one of :data:`METHODS`; default
    :data:`.plan.DEFAULT_METHODS`), ``block`` (outputs per work-item) and ``local_size``
    tune the portable kernels; defaults in :data:`.plan.DEFAULT_BLOCKS` and
    :data:`.plan.DEFAULT_LOCALS`; the fastest for a device from
    :func:`qcom_ext.ops.variant_tuning.choose_variant`. ``tuned=True`` (with none of
    those three given) runs the choice it remembered for this op, filter size, image
    size and device (``remember=True``), else the defaults.

    >>> import numpy as np, pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> queue = cl.CommandQueue(ctx)
    >>> pixels = np.zeros((8, 8, 4), np.float32); pixels[4, 4] = 1.0
    >>> src, dst = rgba_image(ctx, pixels), empty_rgba_image(ctx, 8, 8)
    >>> weights = qcom_ext.WeightImage(ctx, np.full((3, 3), 0.125), center=(1, 1))
    >>> _ = qcom_ext.convolve_image(queue, src, weights, dst)
    >>> float(read_rgba_image(queue, dst)[:, :, 0].sum())  # 9 taps of 1/8
    1.125
    """
    options = {"method": method, "block": block, "local_size": local_size}

    def launch(**chosen: Any) -> Any:
        return convolve_launch(queue, src, weights, dst, sampler=sampler, **chosen)

    if tuned:
        key = functools.partial(filter_key, queue, src, dst, weights=weights)
        return _enqueue(queue, *launch_tuned(launch, tuned_options(key, options)), wait_for)
    return _enqueue(queue, *launch(**options), wait_for)


def convolve_launch(
    queue: Any,
    src: Any,
    weights: Any,
    dst: Any,
    *,
    sampler: Any,
    method: str | None,
    block: Any,
    local_size: Any,
) -> tuple[Any, tuple[Any, ...], tuple[tuple[int, ...], ...]]:
    """(kernel, arguments, (global, local) sizes) of :func:`convolve_image`, checked and
    built but not enqueued (what :mod:`.variants` times)."""
    shape = same_shape(queue, src, dst)
    if not isinstance(weights, WeightImage):
        raise ConfigError(f"weights must be a qcom_ext.WeightImage, got {type(weights).__name__}")
    if weights.context != queue.context:
        raise ConfigError("weights belong to another context than the queue")
    if weights.path != context_path(queue.context):
        raise ConfigError(
            f"weights were made for the {weights.path} path but the kernels now "
            f"take the {context_path(queue.context)} path (QCOM_EXT_DISABLE changed?): "
            "make the WeightImage again"
        )
    cx, cy = weights.center
    method = DEFAULT_METHODS["convolve"] if method is None else method
    plan = filter_plan(
        queue, method, weights.filter_size, (-cx, -cy), block, local_size, weights.separable
    )
    kernel = _kernel(queue, plan.kernel_name("convolve"), plan.defines, plan.source)
    args = (src, _check_sampler(sampler, queue), weights.image, dst)
    return kernel, args, plan.sizes(shape, queue.device)


def box_filter_image(
    queue: pyopencl.CommandQueue,
    src: pyopencl.Image,
    size: Any,
    dst: pyopencl.Image,
    *,
    sampler: Any = None,
    method: str | None = None,
    block: tuple[int, int] | None = None,
    local_size: tuple[int, int] | None = None,
    wait_for: Sequence[Any] | None = None,
    tuned: bool = False,
) -> pyopencl.Event:
    """``dst(x, y) = qcom_box_filter_imagef(src, sampler, (x, y), size)`` for every pixel.

    ``size``: :func:`~qcom_ext.box_size` or a (width, height) pair (checked against the
    device's limit). Other arguments as :func:`convolve_image`.

    >>> import numpy as np, pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> queue = cl.CommandQueue(ctx)
    >>> pixels = np.ones((8, 8, 4), np.float32)
    >>> src, dst = rgba_image(ctx, pixels), empty_rgba_image(ctx, 8, 8)
    >>> _ = qcom_ext.box_filter_image(queue, src, qcom_ext.box_size(2.5, 2.5, device=ctx), dst)
    >>> bool(np.allclose(read_rgba_image(queue, dst), 1.0))  # a flat image stays flat
    True
    """
    options = {"method": method, "block": block, "local_size": local_size}

    def launch(**chosen: Any) -> Any:
        return box_filter_launch(queue, src, size, dst, sampler=sampler, **chosen)

    if tuned:
        key = functools.partial(filter_key, queue, src, dst, size=size)
        return _enqueue(queue, *launch_tuned(launch, tuned_options(key, options)), wait_for)
    return _enqueue(queue, *launch(**options), wait_for)


def filter_key(queue: Any, src: Any, dst: Any, *, weights: Any = None, size: Any = None) -> Any:
    """Where the choice of :func:`convolve_image` (``weights``) or :func:`box_filter_image`
    (``size``) for ``src``'s size on the queue's device is remembered
    (:class:`~qcom_ext.ext.variant_store.VariantKey`): the path and the filter's extent
    are its options."""
    shape = same_shape(queue, src, dst)
    if weights is not None:
        op = "convolve_image"
        taps = (
            f"weights {weights.filter_size} center {weights.center} separable {weights.separable}"
        )
    else:
        op, taps = "box_filter_image", f"size {box_extent(size)}"
    sources = kernels_digest(SOURCE_FILE, *sorted(SOURCES.values()))
    return VariantKey.of(queue.device, op, sources, f"{context_path(queue.context)} {taps}", shape)


def box_filter_launch(
    queue: Any,
    src: Any,
    size: Any,
    dst: Any,
    *,
    sampler: Any,
    method: str | None,
    block: Any,
    local_size: Any,
) -> tuple[Any, tuple[Any, ...], tuple[tuple[int, ...], ...]]:
    """(kernel, arguments, sizes) of :func:`box_filter_image`, as :func:`convolve_launch`."""
    shape = same_shape(queue, src, dst)
    packed = box_size(*box_extent(size), device=queue.context)
    (ox, nx), (oy, ny) = box_window(float(packed["x"])), box_window(float(packed["y"]))
    method = DEFAULT_METHODS["box_filter"] if method is None else method
    plan = filter_plan(queue, method, (nx, ny), (ox, oy), block, local_size)
    kernel = _kernel(queue, plan.kernel_name("box_filter"), plan.defines, plan.source)
    args = (src, _check_sampler(sampler, queue), packed, dst)
    return kernel, args, plan.sizes(shape, queue.device)


def block_match_image(
    queue: pyopencl.CommandQueue,
    target: pyopencl.Image,
    reference: pyopencl.Image,
    *,
    region: tuple[int, int] = (8, 8),
    radius: int = 4,
    metric: str = "sad",
    sampler: Any = None,
    out: MotionField | None = None,
    local_size: int | None = None,
    tile: tuple[int, int] | None = None,
    wait_for: Sequence[Any] | None = None,
) -> MotionField:
    """Exhaustive block matching: for every full ``region`` block of ``target``, the
    displacement (|dx|, |dy| <= ``radius``) of the reference block with the lowest cost
    (``metric`` "sad" or "ssd", summed over the four channels; candidates must lie
    inside ``reference``). Ties go to the smaller |dx| + |dy|, then to the first in
    row-major (dy, dx) order. ``out``: a MotionField of the same geometry to reuse.
    ``tile``: target blocks (across, down) a work-group of the portable search takes
    (default: the first of :data:`.plan.SEARCH_TILES` that fits the device and the
    kernel's own work-group limit, which its registers can hold below the device's; a
    tile asked for that does not fit is a ConfigError; tune it with
    :func:`block_match_tuning`); ``local_size``: work-items a block of the per-block
    search (native, or where the window does not fit local memory).

    >>> import numpy as np, pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> queue = cl.CommandQueue(ctx)
    >>> rng = np.random.default_rng(1)
    >>> gray = (rng.integers(0, 256, (16, 16, 1)) / 256).astype(np.float32)
    >>> frame = rgba_image(ctx, np.repeat(gray, 4, axis=2))
    >>> field = qcom_ext.block_match_image(queue, frame, frame, region=(8, 8), radius=2)
    >>> vectors, costs = field.get(queue)
    >>> field.shape, bool((vectors == 0).all()), float(costs.max())  # same frame: no motion
    ((2, 2), True, 0.0)
    """
    checked = (queue, target, reference, region, radius, metric, local_size, tile)
    plan = search_plan(*checked)
    out = plan.field(queue, out)
    kernel, args = _search_kernel(queue, plan, target, reference, sampler, out)
    if plan.tile is not None:  # the tiled search: its group within the kernel's own limit
        limit = _kernel_group_limit(kernel, queue.device)
        if tile is None and _items(plan) > limit:  # the default tile: a smaller one (rare)
            plan = search_plan(*checked, max_items=limit)
            kernel, args = _search_kernel(queue, plan, target, reference, sampler, out)
        if plan.tile is not None:
            _check_kernel_group(_items(plan), limit, queue.device, f"tile {_tile_name(plan)}")
    out.event = _enqueue(queue, kernel, args, plan.sizes(), wait_for)
    return out


def _items(plan: SearchPlan) -> int:
    """Work-items a group of ``plan``'s launch."""
    return int(np.prod(plan.sizes()[1]))


def _tile_name(plan: SearchPlan) -> str:
    return f"{plan.tile[0]}x{plan.tile[1]}"


def _kernel_group_limit(kernel: Any, device: Any) -> int:
    """The most work-items ``kernel`` runs in a group on ``device`` (its registers can
    hold it below the device's own limit)."""
    import pyopencl as cl

    return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))


def _check_kernel_group(items: int, limit: int, device: Any, what: str) -> None:
    """ConfigError where ``items`` work-items a group are more than the kernel's ``limit``
    on ``device`` (the driver would answer CL_OUT_OF_RESOURCES at the launch)."""
    if items > limit:
        raise ConfigError(
            f"{what} takes {items} work-items a group; this kernel runs at most {limit} on "
            f"{device.name.strip()!r} (its registers): use a smaller tile"
        )


def _search_kernel(
    queue: Any,
    plan: SearchPlan,
    target: Any,
    reference: Any,
    sampler: Any,
    out: MotionField,
    scratch: int | None = None,
) -> tuple[Any, list[Any]]:
    """The kernel ``plan`` launches and its arguments (``scratch``: the tiled search's
    local memory in bytes, default what its tile takes)."""
    import pyopencl as cl

    images = [target, reference, _check_sampler(sampler, queue)]
    if plan.tile is None:
        args = [
            *images,
            _uint2(plan.region),
            np.int32(plan.radius),
            np.int32(plan.squared),
            out.vectors,
            out.costs,
            cl.LocalMemory(8 * plan.local),
        ]
        return _kernel(queue, "qe_block_match_search", {}), args
    scratch = plan.scratch_bytes(plan.tile) if scratch is None else scratch
    args = [*images, out.vectors, out.costs, cl.LocalMemory(scratch), np.int32(scratch // 16)]
    return _kernel(queue, "qe_block_match_tiles", plan.defines), args


@dataclass(frozen=True)
class SearchTuning:
    """What a tuner times to choose the portable search's tile: ``kernel`` with ``args``
    (local memory for the largest candidate) over ``global_size`` (pad it to each
    candidate), the ``candidates`` (local sizes, one per tile) and the ``plan``, whose
    :meth:`~.plan.SearchPlan.tile_of` turns the chosen local size back into a tile."""

    kernel: Any
    global_size: tuple[int, int]
    args: list[Any]
    candidates: list[tuple[int, int]]
    plan: SearchPlan


def block_match_tuning(
    queue: pyopencl.CommandQueue,
    target: pyopencl.Image,
    reference: pyopencl.Image,
    *,
    region: tuple[int, int] = (8, 8),
    radius: int = 4,
    metric: str = "sad",
    sampler: Any = None,
) -> SearchTuning | None:
    """The portable search's tiles as local sizes for :func:`qcom_ext.tune` (None where
    the search is not tiled: natively, or when no tile fits the device)::

        t = block_match_tuning(queue, target, reference)
        local = qcom_ext.tune(t.kernel, t.global_size, t.args, candidates=t.candidates,
                              pad_global=True, queue=queue)
        tile = None if local is None else t.plan.tile_of(local)
        block_match_image(queue, target, reference, tile=tile)

    Every local size gives the right answer (one that is no tile, such as the driver's
    choice, searches each block alone through the sampler), so the tuner may time any.
    """
    plan = search_plan(queue, target, reference, region, radius, metric, None)
    tiles = search_tiles(plan, queue.device) if plan.tile is not None else []
    if not tiles:
        return None
    scratch = max(plan.scratch_bytes(t) for t in tiles)
    out = plan.field(queue, None)
    kernel, args = _search_kernel(queue, plan, target, reference, sampler, out, scratch)
    global_size = (plan.shape[1] * plan.lanes, plan.shape[0])
    return SearchTuning(kernel, global_size, args, [plan.local_of(t) for t in tiles], plan)


def _uint2(value: tuple[int, int]) -> np.ndarray:
    import pyopencl.cltypes as cltypes

    return cltypes.make_uint2(*value)
