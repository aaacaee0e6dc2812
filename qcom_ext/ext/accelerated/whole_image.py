"""Whole-image accelerated image ops: every output pixel through the ``qcom_*`` builtins.

``convolve_image`` and ``box_filter_image`` write, for each pixel (x, y) of ``dst``,
``qcom_convolve_imagef`` / ``qcom_box_filter_imagef`` of ``src`` at the integer coordinate
(x, y) (as the extension spec's sample kernels do); ``block_match_image`` finds, for every
block of the target image, the displacement of the best-matching reference block with
``qcom_block_match_sadf`` / ``_ssdf``. The kernels are in ``kernels/accelerated_image_ops.cl``:
natively they call the builtins per pixel; elsewhere the same sums run register-blocked
(a work-item reads the input rows of its block of outputs once), built per filter size.

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

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from qcom_ext import _context_cache
from qcom_ext.device import shared
from qcom_ext.errors import ConfigError
from qcom_ext.ext.accelerated.weights import EXTENSION, WeightImage, box_size, hof_limits

if TYPE_CHECKING:
    import pyopencl

__all__ = [
    "METHODS",
    "MotionField",
    "block_match_image",
    "box_filter_image",
    "convolve_image",
    "empty_rgba_image",
    "read_rgba_image",
    "rgba_image",
    "rgba_supported",
    "sampler",
]

SOURCE_FILE = "accelerated_image_ops.cl"
#: How the portable path computes a whole-image filter (natively the builtin always runs
#: per pixel): "blocked" reads each work-item's input rows straight from the image,
#: "tiled" first copies the work-group's input into local memory, "per_pixel" calls the
#: portable builtin once per pixel (for comparison).
METHODS = ("blocked", "tiled", "per_pixel")
DEFAULT_BLOCKS = {"blocked": (4, 4), "tiled": (1, 4), "per_pixel": (1, 1)}
DEFAULT_LOCALS = {"blocked": (16, 8), "tiled": (16, 8), "per_pixel": (16, 8)}  # H100 sweep
MAX_RADIUS = 127
_ADDRESSING = ("clamp", "clamp_to_edge", "none")

_launch_lock = threading.Lock()  # set_args + enqueue of a shared kernel object, atomically


def _kernel(owner: Any, name: str, defines: dict[str, Any]) -> Any:
    """The kernel ``name`` of the program built with ``defines``, cached for the context
    of ``owner`` (the queue or context the caller holds: see qcom_ext._context_cache)."""
    import pyopencl as cl

    from qcom_ext._resources import kernels_dir
    from qcom_ext.ext.program.build import build_program, kernels, program_options

    context = owner if isinstance(owner, cl.Context) else owner.context
    # The probe's -D flags are part of the key: QCOM_EXT_DISABLE may change them in-process.
    flags = tuple(program_options(list(context.devices)))
    key = (__name__, "kernels", tuple(sorted(defines.items())), flags)

    def build(private: Any) -> dict[str, Any]:
        source = (kernels_dir() / SOURCE_FILE).read_text()
        return kernels(build_program(private, source, defines=defines))

    return _context_cache.cached(owner, key, build)[name]


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


def _image_shape(name: str, image: Any, context: Any) -> tuple[int, int]:
    import pyopencl as cl

    if not isinstance(image, cl.Image) or image.type != cl.mem_object_type.IMAGE2D:
        raise ConfigError(f"{name} must be a 2-D pyopencl.Image, got {type(image).__name__}")
    if image.context != context:
        raise ConfigError(f"{name} belongs to another context than the queue")
    return int(image.width), int(image.height)


def _pair(name: str, value: Any) -> tuple[int, int]:
    try:
        a, b = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a pair of positive integers, got {value!r}") from None
    if a < 1 or b < 1 or (a, b) != tuple(value):
        raise ConfigError(f"{name} must be a pair of positive integers, got {value!r}")
    return a, b


@dataclass(frozen=True)
class _Plan:
    """How one whole-image filter launches: -D values, block and work-group size."""

    defines: dict[str, Any]
    block: tuple[int, int]
    local: tuple[int, int]
    exact_local: bool  # the tiled kernels are compiled for exactly this work-group size


def _plan(
    queue: Any,
    method: str,
    taps: tuple[int, int],
    offset: tuple[int, int],
    block: Any,
    local_size: Any,
    separable: bool = False,
) -> _Plan:
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    block = _pair("block", block if block is not None else DEFAULT_BLOCKS[method])
    local = _pair("local_size", local_size if local_size is not None else DEFAULT_LOCALS[method])
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
    tiled = method == "tiled" and path(queue.context) == "fallback"
    if tiled:
        device = queue.device
        if local[0] * local[1] > device.max_work_group_size:
            raise ConfigError(
                f"local_size {local[0]}x{local[1]} is more than the device's "
                f"{device.max_work_group_size} work-items a group"
            )
        tile = 16 * (local[0] * block[0] + taps[0] - 1) * (local[1] * block[1] + taps[1] - 1)
        if tile > device.local_mem_size:
            raise ConfigError(
                f"method='tiled' needs {tile} bytes of local memory for a "
                f"{local[0]}x{local[1]} group of {block[0]}x{block[1]} blocks; "
                f"the device has {device.local_mem_size}: use a smaller "
                "local_size or block, or method='blocked'"
            )
        defines.update(QE_TILED=True, QE_LX=local[0], QE_LY=local[1])
    return _Plan(defines, block, local, tiled)


def _launch(
    queue: Any,
    kernel: Any,
    args: tuple[Any, ...],
    shape: tuple[int, int],
    plan: _Plan,
    wait_for: Any,
) -> Any:
    import pyopencl as cl

    lx, ly = plan.local
    if not plan.exact_local:
        limit = queue.device.max_work_group_size
        while lx * ly > limit:
            lx, ly = (lx // 2, ly) if lx >= ly else (lx, ly // 2)
    items = (-(-shape[0] // plan.block[0]), -(-shape[1] // plan.block[1]))
    global_size = (-(-items[0] // lx) * lx, -(-items[1] // ly) * ly)
    with _launch_lock:
        kernel.set_args(*args)
        return cl.enqueue_nd_range_kernel(queue, kernel, global_size, (lx, ly), wait_for=wait_for)


def _same_shape(queue: Any, src: Any, dst: Any) -> tuple[int, int]:
    shape = _image_shape("src", src, queue.context)
    if _image_shape("dst", dst, queue.context) != shape:
        raise ConfigError(
            f"dst is {dst.width}x{dst.height}, src {shape[0]}x{shape[1]}: expected the same size"
        )
    return shape


def convolve_image(
    queue: pyopencl.CommandQueue,
    src: pyopencl.Image,
    weights: WeightImage,
    dst: pyopencl.Image,
    *,
    sampler: Any = None,
    method: str = "tiled",
    block: tuple[int, int] | None = None,
    local_size: tuple[int, int] | None = None,
    wait_for: Sequence[Any] | None = None,
) -> pyopencl.Event:
    """``dst(x, y) = qcom_convolve_imagef(src, sampler, (x, y), weights)`` for every pixel.

    ``sampler``: a pyopencl.Sampler with unnormalized coordinates, or an addressing name
    (default "clamp_to_edge"). ``method`` ("blocked", "tiled", "per_pixel"; see
    :data:`METHODS`), ``block`` (outputs per work-item) and ``local_size`` tune the portable
    kernels; defaults in :data:`DEFAULT_BLOCKS` and :data:`DEFAULT_LOCALS`.

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
    shape = _same_shape(queue, src, dst)
    if not isinstance(weights, WeightImage):
        raise ConfigError(f"weights must be a qcom_ext.WeightImage, got {type(weights).__name__}")
    if weights.context != queue.context:
        raise ConfigError("weights belong to another context than the queue")
    if weights.path != path(queue.context):
        raise ConfigError(
            f"weights were made for the {weights.path} path but the kernels now "
            f"take the {path(queue.context)} path (QCOM_EXT_DISABLE changed?): "
            "make the WeightImage again"
        )
    cx, cy = weights.center
    plan = _plan(
        queue, method, weights.filter_size, (-cx, -cy), block, local_size, weights.separable
    )
    kernel = _kernel(queue, "qe_convolve_image", plan.defines)
    args = (src, _check_sampler(sampler, queue), weights.image, dst)
    return _launch(queue, kernel, args, shape, plan, wait_for)


def box_window(size: float) -> tuple[int, int]:
    """(first tap offset, taps) of a box of ``size`` at an integer coordinate, computed
    in float32 exactly as the kernel computes its weights.

    >>> box_window(2.0), box_window(7.0), box_window(2.5)
    ((-1, 3), (-3, 7), (-1, 3))
    """
    half = np.float32(0.5) * np.float32(size)
    first = int(np.floor(-half - np.float32(0.5))) + 1
    last = int(np.ceil(half + np.float32(0.5))) - 1
    return first, last - first + 1


def box_filter_image(
    queue: pyopencl.CommandQueue,
    src: pyopencl.Image,
    size: Any,
    dst: pyopencl.Image,
    *,
    sampler: Any = None,
    method: str = "tiled",
    block: tuple[int, int] | None = None,
    local_size: tuple[int, int] | None = None,
    wait_for: Sequence[Any] | None = None,
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
    shape = _same_shape(queue, src, dst)
    if isinstance(size, np.ndarray) and size.dtype.names:
        width, height = float(size["x"]), float(size["y"])
    else:
        try:
            width, height = size
        except (TypeError, ValueError):
            raise ConfigError(
                f"size must be qcom_ext.box_size(w, h) or a (w, h) pair, got {size!r}"
            ) from None
    packed = box_size(width, height, device=queue.context)
    (ox, nx), (oy, ny) = box_window(float(packed["x"])), box_window(float(packed["y"]))
    plan = _plan(queue, method, (nx, ny), (ox, oy), block, local_size)
    kernel = _kernel(queue, "qe_box_filter_image", plan.defines)
    args = (src, _check_sampler(sampler, queue), packed, dst)
    return _launch(queue, kernel, args, shape, plan, wait_for)


@dataclass
class MotionField:
    """The result of :func:`block_match_image`: per target block, the best displacement.

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
    wait_for: Sequence[Any] | None = None,
) -> MotionField:
    """Exhaustive block matching: for every full ``region`` block of ``target``, the
    displacement (|dx|, |dy| <= ``radius``) of the reference block with the lowest cost
    (``metric`` "sad" or "ssd", summed over the four channels; candidates must lie
    inside ``reference``). Ties go to the smaller |dx| + |dy|, then to the first in
    row-major (dy, dx) order. ``out``: a MotionField of the same geometry to reuse.

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
    import pyopencl as cl

    width, height = _image_shape("target", target, queue.context)
    _image_shape("reference", reference, queue.context)
    region = _pair("region", region)
    limits = hof_limits(queue.context)
    if limits.max_region is not None and (
        region[0] > limits.max_region[0] or region[1] > limits.max_region[1]
    ):
        which = "the device's" if limits.native else "the portable implementation's"
        raise ConfigError(
            f"region {region[0]}x{region[1]} is larger than "
            f"{limits.max_region[0]}x{limits.max_region[1]}, {which} "
            "CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_X/Y_QCOM"
        )
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
    if out is None:
        blocks = shape[0] * shape[1]
        out = MotionField(
            cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 8 * blocks),
            cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 4 * blocks),
            shape,
            region,
            int(radius),
        )
    elif (out.shape, out.region, out.radius) != (shape, region, radius):
        raise ConfigError("out was made for another geometry (shape, region or radius)")
    candidates = (2 * int(radius) + 1) ** 2
    limit = queue.device.max_work_group_size
    lsize = local_size or min(limit, 256, -(-candidates // 32) * 32)
    window = (region[0] + 2 * radius) * (region[1] + 2 * radius)
    tile_bytes = 16 * (region[0] * region[1] + window)
    tiled = (
        path(queue.context) == "fallback"
        and tile_bytes + 8 * lsize <= queue.device.local_mem_size // 2
    )
    args = [
        target,
        reference,
        _check_sampler(sampler, queue),
        _uint2(region),
        np.int32(radius),
        np.int32(metric == "ssd"),
        out.vectors,
        out.costs,
        cl.LocalMemory(8 * lsize),
    ]
    if tiled:  # the portable path reads each pixel once, from local memory
        args.append(cl.LocalMemory(tile_bytes))
    name = "qe_block_match_search_tiled" if tiled else "qe_block_match_search"
    kernel = _kernel(queue, name, {})
    with _launch_lock:
        kernel.set_args(*args)
        out.event = cl.enqueue_nd_range_kernel(
            queue, kernel, (shape[1] * lsize, shape[0]), (lsize, 1), wait_for=wait_for
        )
    return out


def path(context: Any) -> str:
    """``native`` or ``fallback``: how the kernels run on the context's devices."""
    return "native" if shared.all_native(shared.caps_of(context), EXTENSION) else "fallback"


def _uint2(value: tuple[int, int]) -> np.ndarray:
    import pyopencl.cltypes as cltypes

    return cltypes.make_uint2(*value)


_TYPES = {np.dtype(np.float32): "FLOAT", np.dtype(np.float16): "HALF_FLOAT"}


def rgba_supported(context: Any, dtype: Any) -> bool:
    """Whether every device of ``context`` can read RGBA images of ``dtype``."""
    import pyopencl as cl

    wanted = getattr(cl.channel_type, _TYPES[np.dtype(dtype)])
    formats = cl.get_supported_image_formats(
        context, cl.mem_flags.READ_ONLY, cl.mem_object_type.IMAGE2D
    )
    return any(
        f.channel_order == cl.channel_order.RGBA and f.channel_data_type == wanted for f in formats
    )


def rgba_image(context: Any, pixels: np.ndarray, dtype: Any = np.float32) -> Any:
    """A read-only RGBA image of ``pixels`` (height, width, 4), stored as ``dtype``."""
    import pyopencl as cl

    if np.dtype(dtype) not in _TYPES:
        raise ConfigError(f"dtype must be numpy.float32 or numpy.float16, got {dtype!r}")
    data = np.ascontiguousarray(pixels, dtype=dtype)
    if data.ndim != 3 or data.shape[2] != 4 or 0 in data.shape:
        raise ConfigError(f"pixels must have shape (height, width, 4), got {np.shape(pixels)}")
    fmt = cl.ImageFormat(cl.channel_order.RGBA, getattr(cl.channel_type, _TYPES[data.dtype]))
    create = getattr(cl, "create_image", cl.Image)  # create_image: pyopencl 2024.3+
    mf = cl.mem_flags
    return create(
        context,
        mf.READ_ONLY | mf.COPY_HOST_PTR,
        fmt,
        shape=(data.shape[1], data.shape[0]),
        hostbuf=data,
    )


def empty_rgba_image(context: Any, width: int, height: int) -> Any:
    """A write-only RGBA float image."""
    import pyopencl as cl

    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    create = getattr(cl, "create_image", cl.Image)
    return create(context, cl.mem_flags.WRITE_ONLY, fmt, shape=(width, height))


def read_rgba_image(queue: Any, image: Any) -> np.ndarray:
    """The pixels of an RGBA float image as (height, width, 4) float32."""
    import pyopencl as cl

    out = np.empty((image.height, image.width, 4), np.float32)
    cl.enqueue_copy(queue, out, image, origin=(0, 0), region=(image.width, image.height))
    return out
