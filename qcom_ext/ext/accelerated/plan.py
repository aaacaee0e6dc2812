"""How a whole-image accelerated op launches: its arguments checked, then its ``-D``
values, blocks and work sizes (:func:`filter_plan`, :func:`search_plan`), and the
:class:`MotionField` a block search fills. Nothing here builds or enqueues a kernel
(:mod:`qcom_ext.ext.accelerated.whole_image` does).

>>> box_window(2.0), box_window(7.0), box_window(2.5)
((-1, 3), (-3, 7), (-1, 3))
>>> positive_pair("block", (4, 2))
(4, 2)
>>> positive_pair("block", (4, 0))
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: block must be a pair of positive integers, got (4, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from dataclasses import field as _field
from typing import TYPE_CHECKING, Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ext.accelerated.support import accelerated_limits, context_path
from qcom_ext.ext.program.launch import copy
from qcom_ext.ext.variant import positive_pair

if TYPE_CHECKING:
    import pyopencl

__all__ = [
    "DEFAULT_BLOCKS",
    "DEFAULT_LOCALS",
    "DEFAULT_METHODS",
    "MAX_RADIUS",
    "METHODS",
    "SOURCES",
    "SOURCE_FILE",
    "MotionField",
    "Plan",
    "SearchPlan",
    "box_window",
    "filter_plan",
    "image_shape",
    "positive_pair",
    "same_shape",
    "search_plan",
]

#: How the portable path computes a whole-image filter (natively the builtin always runs
#: per pixel): "blocked" reads each work-item's input rows straight from the image,
#: "tiled" first copies the work-group's input into local memory, "per_pixel" calls the
#: portable builtin once per pixel (for comparison), "strips" copies the input into local
#: memory like "tiled", then each work-item walks a long vertical strip of outputs with a
#: ring of accumulators (``kernels/filter_strips.cl``), "bands" has a work-group walk down
#: a band of columns, one output column a work-item, the input rows double-buffered in
#: local memory in chunks (``kernels/filter_bands.cl``: block (1, rows walked), local size
#: (columns, 1)). All give the builtin's sums, in its order.
METHODS = ("blocked", "tiled", "per_pixel", "strips", "bands")
#: The method each op takes by default: the fastest on the H100 at 4K (docs/BENCHMARKS.md,
#: issue 18: 5x5 convolution "tiled" 134 us, "strips" 138; 7x7 box "strips" 135 us,
#: "tiled" 156), both with tiles in local memory, which Adreno's 32 KB also holds.
DEFAULT_METHODS = {"convolve": "tiled", "box_filter": "strips"}
#: Blocks (outputs per work-item) and work-group sizes by default; "tiled" and "strips"
#: halve the block's rows where the tile would not fit the device's local memory.
DEFAULT_BLOCKS = {
    "blocked": (4, 4),
    "tiled": (1, 4),
    "per_pixel": (1, 1),
    "strips": (1, 8),
    "bands": (1, 16),
}
DEFAULT_LOCALS = {
    "blocked": (16, 8),
    "tiled": (16, 8),
    "per_pixel": (16, 8),
    "strips": (16, 8),
    "bands": (32, 1),
}
#: The kernel file of each method's portable path (natively every method calls the
#: builtins of ``kernels/accelerated_image_ops.cl`` per pixel).
SOURCES = {"strips": "filter_strips.cl", "bands": "filter_bands.cl"}
SOURCE_FILE = "accelerated_image_ops.cl"
MAX_RADIUS = 127


def image_shape(name: str, image: Any, context: Any) -> tuple[int, int]:
    """(width, height) of a 2-D image of ``context``, or ConfigError naming ``name``."""
    import pyopencl as cl

    if not isinstance(image, cl.Image) or image.type != cl.mem_object_type.IMAGE2D:
        raise ConfigError(f"{name} must be a 2-D pyopencl.Image, got {type(image).__name__}")
    if image.context != context:
        raise ConfigError(f"{name} belongs to another context than the queue")
    return int(image.width), int(image.height)


def same_shape(queue: Any, src: Any, dst: Any) -> tuple[int, int]:
    """(width, height) of ``src`` and ``dst``, which must match."""
    shape = image_shape("src", src, queue.context)
    if image_shape("dst", dst, queue.context) != shape:
        raise ConfigError(
            f"dst is {dst.width}x{dst.height}, src {shape[0]}x{shape[1]}: expected the same size"
        )
    return shape


@dataclass(frozen=True)
class Plan:
    """How one whole-image filter launches: -D values, block and work-group size."""

    defines: dict[str, Any]
    block: tuple[int, int]
    local: tuple[int, int]
    exact_local: bool  # the tiled kernels are compiled for exactly this work-group size
    source: str = SOURCE_FILE  # the kernel file, in kernels/

    def kernel_name(self, op: str) -> str:
        """The kernel of ``op`` ("convolve" or "box_filter") in :attr:`source`."""
        suffix = {source: method for method, source in SOURCES.items()}.get(self.source, "image")
        return f"qe_{op}_{suffix}"

    def sizes(self, shape: tuple[int, int], device: Any) -> tuple[tuple[int, ...], ...]:
        """(global, local) sizes covering an image of ``shape`` (width, height)."""
        lx, ly = self.local
        if not self.exact_local:
            limit = device.max_work_group_size
            while lx * ly > limit:
                lx, ly = (lx // 2, ly) if lx >= ly else (lx, ly // 2)
        items = (-(-shape[0] // self.block[0]), -(-shape[1] // self.block[1]))
        return (-(-items[0] // lx) * lx, -(-items[1] // ly) * ly), (lx, ly)


def _tile_bytes(
    local: tuple[int, int], block: tuple[int, int], taps: tuple[int, int], method: str
) -> int:
    """Local memory of a "tiled" or "strips" group: its input tile (float4 pixels) and,
    for "strips", its outputs (staged there for compact image writes)."""
    tile = 16 * (local[0] * block[0] + taps[0] - 1) * (local[1] * block[1] + taps[1] - 1)
    if method == "strips":
        tile += 16 * local[0] * block[0] * local[1] * block[1]
    return tile


def _default_block(
    device: Any, method: str, local: tuple[int, int], taps: tuple[int, int]
) -> tuple[int, int]:
    """The default block of ``method``, its rows halved until the group's tile fits the
    device's local memory (large filters, or 32 KB of local memory as on Adreno)."""
    block = DEFAULT_BLOCKS[method]
    if method in ("tiled", "strips"):
        while block[1] > 1 and _tile_bytes(local, block, taps, method) > device.local_mem_size:
            block = (block[0], block[1] // 2)
    return block


def _tiled_defines(
    device: Any,
    local: tuple[int, int],
    block: tuple[int, int],
    taps: tuple[int, int],
    method: str = "tiled",
) -> dict[str, Any]:
    if local[0] * local[1] > device.max_work_group_size:
        raise ConfigError(
            f"local_size {local[0]}x{local[1]} is more than the device's "
            f"{device.max_work_group_size} work-items a group"
        )
    tile = _tile_bytes(local, block, taps, method)
    if tile > device.local_mem_size:
        raise ConfigError(
            f"method={method!r} needs {tile} bytes of local memory for a "
            f"{local[0]}x{local[1]} group of {block[0]}x{block[1]} blocks; "
            f"the device has {device.local_mem_size}: use a smaller "
            "local_size or block, or method='blocked'"
        )
    return {"QE_TILED": True, "QE_LX": local[0], "QE_LY": local[1]}


def _bands_defines(
    device: Any, local: tuple[int, int], block: tuple[int, int], taps: tuple[int, int]
) -> dict[str, Any]:
    """-D values of ``kernels/filter_bands.cl``: chunks of at least 6 input rows where
    local memory allows (two chunks of ``local[0] + fx - 1`` pixels a row)."""
    if block[0] != 1 or local[1] != 1:
        raise ConfigError(
            f"method='bands' takes block (1, rows) and local_size (columns, 1), got block "
            f"{block[0]}x{block[1]} and local_size {local[0]}x{local[1]}"
        )
    if local[0] > min(device.max_work_group_size, device.max_work_item_sizes[0]):
        raise ConfigError(
            f"local_size {local[0]}x1 is more than the device's "
            f"{device.max_work_group_size} work-items a group"
        )
    row = 16 * (local[0] + taps[0] - 1)
    multiple = -(-6 // taps[1])
    while multiple > 1 and 2 * multiple * taps[1] * row > device.local_mem_size // 2:
        multiple -= 1
    if 2 * multiple * taps[1] * row > device.local_mem_size:
        raise ConfigError(
            f"method='bands' needs {2 * taps[1] * row} bytes of local memory for a band of "
            f"{local[0]} columns; the device has {device.local_mem_size}: use a smaller "
            "local_size"
        )
    return {"QE_LX": local[0], "QE_SEG": block[1], "QE_CM": multiple}


def filter_plan(
    queue: Any,
    method: str,
    taps: tuple[int, int],
    offset: tuple[int, int],
    block: Any,
    local_size: Any,
    separable: bool = False,
) -> Plan:
    """The plan of a filter with ``taps`` (x, y) whose first tap is ``offset`` from the
    output pixel, for ``method`` (see :data:`METHODS`), ``block`` and ``local_size``."""
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    local = positive_pair(
        "local_size", local_size if local_size is not None else DEFAULT_LOCALS[method]
    )
    if block is None:
        block = _default_block(queue.device, method, local, taps)
    block = positive_pair("block", block)
    defines = {
        "QE_FX": taps[0],
        "QE_FY": taps[1],
        "QE_OX": offset[0],
        "QE_OY": offset[1],
        "QE_BX": block[0],
        "QE_BY": block[1],
        "QE_SEPARABLE": int(separable),
        "QE_PER_PIXEL": method == "per_pixel",
    }
    portable = context_path(queue.context) == "fallback"
    tiled = method in ("tiled", "strips", "bands") and portable
    if tiled and method == "bands":
        defines.update(_bands_defines(queue.device, local, block, taps))
    elif tiled:
        defines.update(_tiled_defines(queue.device, local, block, taps, method))
        if method == "strips":
            defines["QE_STAGE"] = 1
    source = SOURCES.get(method, SOURCE_FILE) if portable else SOURCE_FILE
    return Plan(defines, block, local, tiled, source)


def box_window(size: float) -> tuple[int, int]:
    """(first tap offset, taps) of a box of ``size`` at an integer coordinate, computed
    in float32 exactly as the kernel computes its weights (see the module docstring)."""
    half = np.float32(0.5) * np.float32(size)
    first = int(np.floor(-half - np.float32(0.5))) + 1
    last = int(np.ceil(half + np.float32(0.5))) - 1
    return first, last - first + 1


def box_extent(size: Any) -> tuple[float, float]:
    """(width, height) of a :func:`~qcom_ext.box_size` scalar or a (w, h) pair."""
    if isinstance(size, np.ndarray) and size.dtype.names:
        return float(size["x"]), float(size["y"])
    try:
        width, height = size
    except (TypeError, ValueError):
        raise ConfigError(
            f"size must be qcom_ext.box_size(w, h) or a (w, h) pair, got {size!r}"
        ) from None
    return width, height


@dataclass
class MotionField:
    """The result of :func:`~qcom_ext.block_match_image`: per target block, the best
    displacement.

    ``vectors`` (int2 per block) and ``costs`` (float per block) are pyopencl Buffers in
    row-major block order; ``shape`` is (blocks down, blocks across); ``event`` completes
    when both are written. ``get()`` waits and returns numpy arrays ``(vectors (nby, nbx,
    2) int32, costs (nby, nbx) float32)``.
    """

    vectors: Any
    costs: Any
    shape: tuple[int, int]
    region: tuple[int, int]
    radius: int
    event: Any = None

    def get(self, queue: pyopencl.CommandQueue) -> tuple[np.ndarray, np.ndarray]:

        vectors = np.empty((*self.shape, 2), np.int32)
        costs = np.empty(self.shape, np.float32)
        wait = [self.event] if self.event is not None else None
        copy(queue, vectors, self.vectors, wait_for=wait, is_blocking=False)
        copy(queue, costs, self.costs, wait_for=wait)
        return vectors, costs


#: Blocks (across, down) a work-group of the portable search takes, by preference: the
#: default is the first that fits the device (:func:`search_tiles`); a tuner picks among
#: them all (:func:`qcom_ext.ext.accelerated.whole_image.block_match_tuning`).
SEARCH_TILES = ((8, 4), (4, 4), (4, 2), (2, 2), (2, 1), (1, 1))
_TILE_ITEMS = 256  # the default tile's work-items at most (any the device allows when asked)


@dataclass(frozen=True)
class SearchPlan:
    """How one block search launches: the geometry, and either the per-block search
    through the sampler (``tile`` None: native, or the window does not fit) with ``local``
    work-items a block, or the portable tiled search (``qe_block_match_tiles``): ``tile``
    blocks a work-group, ``lanes`` work-items a block, built with ``defines``."""

    shape: tuple[int, int]  # blocks down, blocks across
    region: tuple[int, int]
    radius: int
    squared: bool  # SSD rather than SAD
    local: int
    tile: tuple[int, int] | None = None
    lanes: int = 1
    defines: dict[str, int] = _field(default_factory=dict)

    def field(self, queue: Any, out: MotionField | None) -> MotionField:
        """``out`` if it has this geometry (else ConfigError), or a new MotionField."""
        import pyopencl as cl

        if out is None:
            blocks = self.shape[0] * self.shape[1]
            return MotionField(
                cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 8 * blocks),
                cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 4 * blocks),
                self.shape,
                self.region,
                self.radius,
            )
        if (out.shape, out.region, out.radius) != (self.shape, self.region, self.radius):
            raise ConfigError("out was made for another geometry (shape, region or radius)")
        return out

    def local_of(self, tile: tuple[int, int]) -> tuple[int, int]:
        """The local size of the tiled search for ``tile`` blocks a work-group."""
        return self.lanes * tile[0], tile[1]

    def tile_of(self, local: tuple[int, int]) -> tuple[int, int]:
        """The tile a local size of the tiled search stands for (see :meth:`local_of`)."""
        return local[0] // self.lanes, local[1]

    def scratch_bytes(self, tile: tuple[int, int]) -> int:
        """Local memory the tiled search takes for ``tile``: a key (8 bytes) a work-item,
        then the target pixels and the reference window, float4 each (as the kernel lays
        them out: window rows padded to an odd stride)."""
        (w, h), r, cx = self.region, self.radius, self.defines["QE_BM_CX"]
        side = 2 * r + 1
        pad = -(-side // cx) * cx - side
        tw, th = tile[0] * w, tile[1] * h
        stride = (tw + 2 * r + pad) | 1
        items = self.lanes * tile[0] * tile[1]
        return 16 * ((items + 1) // 2 + tw * th + stride * (th + 2 * r))

    def sizes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(global, local) sizes of the launch."""
        if self.tile is None:
            return (self.shape[1] * self.local, self.shape[0]), (self.local, 1)
        (lx, ly), (tx, ty) = self.local_of(self.tile), self.tile
        return (-(-self.shape[1] // tx) * lx, -(-self.shape[0] // ty) * ly), (lx, ly)


def search_defines(region: tuple[int, int], radius: int, squared: bool) -> dict[str, int]:
    """The -D values of ``qe_block_match_tiles``: the geometry, and how many candidate
    columns a work-item sums at once (the candidate rows split into runs of at most 12).

    >>> search_defines((8, 8), 4, False)
    {'QE_BM_W': 8, 'QE_BM_H': 8, 'QE_BM_R': 4, 'QE_BM_CX': 9, 'QE_BM_SSD': 0}
    >>> search_defines((16, 4), 7, True)["QE_BM_CX"]  # 15 columns: two runs of 8
    8
    """
    side = 2 * radius + 1
    runs = -(-side // 12)
    return {
        "QE_BM_W": region[0],
        "QE_BM_H": region[1],
        "QE_BM_R": radius,
        "QE_BM_CX": -(-side // runs),
        "QE_BM_SSD": int(squared),
    }


def search_tiles(
    plan: SearchPlan, device: Any, budget: int | None = None
) -> list[tuple[int, int]]:
    """The tiles of :data:`SEARCH_TILES` whose work-group the device can run and whose
    local memory fits ``budget`` bytes (default: the whole of the device's)."""
    budget = device.local_mem_size if budget is None else budget
    limit = min(device.max_work_group_size, device.max_work_item_sizes[0])
    return [
        tile
        for tile in SEARCH_TILES
        if plan.lanes * tile[0] <= limit
        and plan.lanes * tile[0] * tile[1] <= device.max_work_group_size
        and plan.scratch_bytes(tile) <= budget
    ]


def _region(queue: Any, region: Any) -> tuple[int, int]:
    region = positive_pair("region", region)
    limits = accelerated_limits(queue.context)
    biggest = limits.max_region
    if biggest is not None and (region[0] > biggest[0] or region[1] > biggest[1]):
        raise ConfigError(
            f"region {region[0]}x{region[1]} is larger than {biggest[0]}x{biggest[1]}, "
            f"{limits.where()} CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_X/Y_QCOM"
        )
    return region


def search_plan(
    queue: Any,
    target: Any,
    reference: Any,
    region: Any,
    radius: Any,
    metric: str,
    local_size: int | None,
    tile: Any = None,
    max_items: int = _TILE_ITEMS,
) -> SearchPlan:
    """The plan of :func:`~qcom_ext.block_match_image`'s search (its arguments checked):
    on the portable path the tiled search with ``tile`` (default: see :func:`_tiled`;
    ``max_items``: the most work-items the default tile may take)."""
    width, height = image_shape("target", target, queue.context)
    image_shape("reference", reference, queue.context)
    region = _region(queue, region)
    if (
        isinstance(radius, bool)
        or not isinstance(radius, (int, np.integer))
        or not (0 <= radius <= MAX_RADIUS)
    ):
        raise ConfigError(f"radius must be an integer 0..{MAX_RADIUS}, got {radius!r}")
    if metric not in ("sad", "ssd"):
        raise ConfigError(f"metric must be 'sad' or 'ssd', got {metric!r}")
    shape = (height // region[1], width // region[0])
    if 0 in shape:
        raise ConfigError(f"target {width}x{height} holds no full {region[0]}x{region[1]} block")
    radius = int(radius)
    candidates = (2 * radius + 1) ** 2
    device = queue.device
    local = local_size or min(device.max_work_group_size, 256, -(-candidates // 32) * 32)
    plan = SearchPlan(shape, region, radius, metric == "ssd", local)
    if context_path(queue.context) != "fallback":
        return plan
    return _tiled(plan, device, tile, max_items)


def _tiled(plan: SearchPlan, device: Any, tile: Any, max_items: int = _TILE_ITEMS) -> SearchPlan:
    """``plan`` as the tiled search with ``tile`` (checked), or the first tile of
    :data:`SEARCH_TILES` that fits the device in half its local memory with at most
    ``max_items`` work-items (``plan`` unchanged when none does)."""
    side = 2 * plan.radius + 1
    defines = search_defines(plan.region, plan.radius, plan.squared)
    tiled = replace(plan, lanes=side * -(-side // defines["QE_BM_CX"]), defines=defines)
    if tile is not None:
        tile = positive_pair("tile", tile)
        local = tiled.local_of(tile)
        if local[0] * local[1] > device.max_work_group_size:
            raise ConfigError(
                f"tile {tile[0]}x{tile[1]} takes {local[0] * local[1]} work-items; the device "
                f"runs {device.max_work_group_size} a group: use a smaller tile"
            )
        if tiled.scratch_bytes(tile) > device.local_mem_size:
            raise ConfigError(
                f"tile {tile[0]}x{tile[1]} needs {tiled.scratch_bytes(tile)} bytes of local "
                f"memory; the device has {device.local_mem_size}: use a smaller tile"
            )
        return replace(tiled, tile=tile)
    fitting = [
        t
        for t in search_tiles(tiled, device, device.local_mem_size // 2)
        if tiled.lanes * t[0] * t[1] <= max_items
    ]
    return replace(tiled, tile=fitting[0]) if fitting else plan
