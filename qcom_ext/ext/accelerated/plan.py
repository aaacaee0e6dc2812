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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ext.accelerated.support import accelerated_limits, context_path
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
        import pyopencl as cl

        vectors = np.empty((*self.shape, 2), np.int32)
        costs = np.empty(self.shape, np.float32)
        wait = [self.event] if self.event is not None else None
        cl.enqueue_copy(queue, vectors, self.vectors, wait_for=wait)
        cl.enqueue_copy(queue, costs, self.costs, wait_for=wait).wait()
        return vectors, costs


@dataclass(frozen=True)
class SearchPlan:
    """How one block search launches: the geometry, the work-group size and whether the
    portable kernel reads the target block and the reference window from local memory."""

    shape: tuple[int, int]  # blocks down, blocks across
    region: tuple[int, int]
    radius: int
    squared: bool  # SSD rather than SAD
    local: int
    tile_bytes: int  # 0: the search reads through the sampler (native, or too little memory)

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
) -> SearchPlan:
    """The plan of :func:`~qcom_ext.block_match_image`'s search (its arguments checked)."""
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
    window = (region[0] + 2 * radius) * (region[1] + 2 * radius)
    tile_bytes = 16 * (region[0] * region[1] + window)
    tiled = (
        context_path(queue.context) == "fallback"
        and tile_bytes + 8 * local <= device.local_mem_size // 2
    )
    return SearchPlan(shape, region, radius, metric == "ssd", local, tile_bytes if tiled else 0)
