"""A whole-image 2x bicubic upscale (cl_qcom_filter_bicubic's Catmull-Rom filter), by one
of three kernels (:data:`METHODS`):

* ``"sampler"``: ``kernels/bicubic.cl`` ``upscale2x``, one ``qcom_read_imagef_bicubic``
  per output pixel through a sampler from :func:`~qcom_ext.create_sampler` (the texture
  unit's bicubic filter on Adreno with the extension; the formula from 16 reads elsewhere);
* ``"blocks"``: ``upscale2x_blocks``, the formula specialised for 2x, 2x2 outputs from the
  5x5 texels around their source texel;
* ``"tiles"``: ``kernels/bicubic_tiles.cl``, the same sums as ``"blocks"`` (bit for bit):
  a work-group copies its source tile into local memory (each texel read from the image
  about once), then each work-item walks down ``block`` = (columns, rows) source texels.

Output pixel (X, Y) is the filter at texel-space ((X + 0.5) / 2, (Y + 0.5) / 2) of the
source; texels outside it are the border colour (0), as
:func:`qcom_ext.reference.bicubic.upscale2x` has it. The default method is the hardware
filter where the devices have cl_qcom_filter_bicubic natively, ``"tiles"`` elsewhere
(:func:`default_method`); :func:`upscale2x_variants` lists what a tuner can time, and
``upscale2x_image(..., tuned=True)`` runs the choice a tuner remembered
(:func:`qcom_ext.ops.variant_tuning.choose_variant` with ``remember=True``).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext.ext.accelerated.rgba import empty_rgba_image, read_rgba_image, rgba_image
>>> from qcom_ext.reference.bicubic import upscale2x
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> pixels = np.random.default_rng(0).random((6, 5, 4), dtype=np.float32)
>>> src, dst = rgba_image(ctx, pixels), empty_rgba_image(ctx, 10, 12)
>>> _ = qcom_ext.upscale2x_image(queue, src, dst, method="tiles")
>>> bool(np.allclose(read_rgba_image(queue, dst), upscale2x(pixels), atol=1e-5))
True
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from qcom_ext import _context_cache
from qcom_ext.errors import ConfigError, QcomExtWarning
from qcom_ext.ext.images.sampler import create_sampler, sampler_path
from qcom_ext.ext.program.launch import enqueue
from qcom_ext.ext.program.shared import shared_program
from qcom_ext.ext.variant import Variant, launch_tuned, positive_pair, tuned_options
from qcom_ext.ext.variant_store import VariantKey, kernels_digest

if TYPE_CHECKING:
    import pyopencl

__all__ = [
    "DEFAULT_BLOCK",
    "DEFAULT_LOCAL",
    "METHODS",
    "default_method",
    "upscale2x_image",
    "upscale2x_key",
    "upscale2x_launch",
    "upscale2x_variants",
]

METHODS = ("sampler", "blocks", "tiles")
KERNELS = {"sampler": "upscale2x", "blocks": "upscale2x_blocks", "tiles": "upscale2x_tiles"}
#: Source texels (columns, rows) a work-item of ``"tiles"`` takes, by default: one, whose
#: 2x2 outputs it computes from the 5x5 texels around it in local memory (on the H100 at
#: 4K: 292 us with 32x8 groups, 286 us with 32x16; "blocks" 517 us).
DEFAULT_BLOCK = (1, 1)
#: Work-group sizes by default (``"sampler"`` and ``"blocks"`` launch one work-item per
#: output pixel and per source texel, without bounds checks: their local size must divide
#: the global size, else the driver chooses).
DEFAULT_LOCAL = {"sampler": (16, 16), "blocks": (16, 16), "tiles": (32, 8)}
#: What :func:`upscale2x_variants` offers a tuner for ``"tiles"``: blocks x work-groups.
TILES_BLOCKS = ((1, 1), (1, 2), (2, 1), (1, 4))
TILES_LOCALS = ((32, 8), (32, 16), (32, 4), (16, 16), (64, 4), (16, 8))


def default_method(context: Any) -> str:
    """``"sampler"`` where every device of ``context`` filters bicubic in hardware
    (cl_qcom_filter_bicubic native), else ``"tiles"``."""
    return "sampler" if sampler_path(context) == "native" else "tiles"


def _shapes(queue: Any, src: Any, dst: Any) -> tuple[int, int]:
    """(width, height) of ``src``; ``dst`` must be twice as wide and high."""
    import pyopencl as cl

    for name, image in (("src", src), ("dst", dst)):
        if not isinstance(image, cl.Image) or image.type != cl.mem_object_type.IMAGE2D:
            raise ConfigError(f"{name} must be a 2-D pyopencl.Image, got {type(image).__name__}")
        if image.context != queue.context:
            raise ConfigError(f"{name} belongs to another context than the queue")
    width, height = int(src.width), int(src.height)
    if (int(dst.width), int(dst.height)) != (2 * width, 2 * height):
        raise ConfigError(
            f"dst is {dst.width}x{dst.height}, src {width}x{height}: expected dst "
            f"{2 * width}x{2 * height}"
        )
    return width, height


def _kernel(queue: Any, method: str, defines: dict[str, Any]) -> Any:
    """The kernel of ``method`` built with ``defines``, from the shared programs of the
    queue's context: one shared object, so launches set its arguments and enqueue under
    a lock (``launch.enqueue``)."""
    source = "bicubic_tiles.cl" if method == "tiles" else "bicubic.cl"
    return shared_program(queue, source, defines).kernels[KERNELS[method]]


def _tiles_bytes(block: tuple[int, int], local: tuple[int, int]) -> int:
    """Local memory of a ``"tiles"`` group: its source tile and its staged outputs."""
    outputs = 4 * local[0] * block[0] * local[1] * block[1]
    return 16 * ((local[0] * block[0] + 4) * (local[1] * block[1] + 4) + outputs)


def _fitting_local(device: Any, block: tuple[int, int], local: tuple[int, int]) -> Any:
    """The default work-group, its rows halved until it fits the device."""
    while local[1] > 1 and (
        _tiles_bytes(block, local) > device.local_mem_size
        or local[0] * local[1] > device.max_work_group_size
    ):
        local = (local[0], local[1] // 2)
    return local


def _tiles_defines(device: Any, block: tuple[int, int], local: tuple[int, int]) -> dict[str, Any]:
    """-D values of ``upscale2x_tiles`` (compiled for its work-group size), checked
    against the device's work-group and local-memory limits."""
    if local[0] * local[1] > device.max_work_group_size:
        raise ConfigError(
            f"local_size {local[0]}x{local[1]} is more than the device's "
            f"{device.max_work_group_size} work-items a group"
        )
    tile = _tiles_bytes(block, local)
    if tile > device.local_mem_size:
        raise ConfigError(
            f"method='tiles' needs {tile} bytes of local memory for a {local[0]}x{local[1]} "
            f"group of {block[0]}x{block[1]} blocks; the device has {device.local_mem_size}: "
            "use a smaller local_size or block"
        )
    return {"QE_BX": block[0], "QE_BY": block[1], "QE_LX": local[0], "QE_LY": local[1]}


def _sampler(queue: Any) -> Any:
    """The normalized, clamping bicubic sampler of ``"sampler"`` (nearest plus the formula
    where the extension is not native: that is this method's contract, so no warning)."""

    def build(private: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", QcomExtWarning)
            return create_sampler(private, normalized=True, addressing="clamp")

    return _context_cache.cached(queue, (__name__, "sampler"), build)


def _local(method: str, local_size: Any, global_size: tuple[int, int]) -> Any:
    """The work-group size: ``local_size`` or the default; for the kernels without bounds
    checks it must divide ``global_size`` (the default gives way to the driver's)."""
    if local_size is not None:
        local = positive_pair("local_size", local_size)
        if method != "tiles" and (global_size[0] % local[0] or global_size[1] % local[1]):
            raise ConfigError(
                f"method={method!r} launches {global_size[0]}x{global_size[1]} work-items: "
                f"local_size {local[0]}x{local[1]} must divide that"
            )
        return local
    default = DEFAULT_LOCAL[method]
    if method != "tiles" and (global_size[0] % default[0] or global_size[1] % default[1]):
        return None  # the driver chooses
    return default


def upscale2x_launch(
    queue: Any,
    src: Any,
    dst: Any,
    *,
    method: str | None = None,
    block: Any = None,
    local_size: Any = None,
) -> tuple[Any, tuple[Any, ...], tuple[Any, Any]]:
    """(kernel, arguments, (global, local) sizes) of :func:`upscale2x_image`, checked and
    built but not enqueued."""
    width, height = _shapes(queue, src, dst)
    method = default_method(queue.context) if method is None else method
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if block is not None and method != "tiles":
        raise ConfigError(f"block is an option of method='tiles', not {method!r}")
    block = positive_pair("block", DEFAULT_BLOCK if block is None else block)
    args: tuple[Any, ...]
    if method == "tiles":
        args = (src, dst, np.int32(width), np.int32(height))
        items = (-(-width // block[0]), -(-height // block[1]))
    elif method == "blocks":
        args, items = (src, dst), (width, height)
    else:
        args, items = (src, _sampler(queue), dst), (2 * width, 2 * height)
    local = _local(method, local_size, items)
    if method == "tiles":
        if local_size is None:
            local = _fitting_local(queue.device, block, local)
        kernel = _kernel(queue, method, _tiles_defines(queue.device, block, local))
    else:
        kernel = _kernel(queue, method, {"QCOM_EXT_BICUBIC_NORMALIZED": 1})
    if local is None:
        return kernel, args, (items, None)
    padded = tuple(-(-g // size) * size for g, size in zip(items, local, strict=True))
    return kernel, args, (padded, local)


def upscale2x_image(
    queue: pyopencl.CommandQueue,
    src: pyopencl.Image,
    dst: pyopencl.Image,
    *,
    method: str | None = None,
    block: tuple[int, int] | None = None,
    local_size: tuple[int, int] | None = None,
    wait_for: Sequence[Any] | None = None,
    tuned: bool = False,
) -> pyopencl.Event:
    """``dst`` (2W x 2H) = the 2x bicubic upscale of ``src`` (W x H), both RGBA float
    2-D images of the queue's context (see the module docstring for the methods).

    ``method``: one of :data:`METHODS` (default :func:`default_method`); ``block``:
    source (columns, rows) per work-item of ``"tiles"`` (default :data:`DEFAULT_BLOCK`);
    ``local_size``: the work-group size (default :data:`DEFAULT_LOCAL`). ``tuned=True``
    (with none of those three given): the choice remembered for this source size and
    device (:func:`upscale2x_variants` timed with ``remember=True``), else the defaults.

    >>> import numpy as np, pyopencl as cl, qcom_ext
    >>> from qcom_ext.ext.accelerated.rgba import empty_rgba_image, read_rgba_image, rgba_image
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> queue = cl.CommandQueue(ctx)
    >>> src = rgba_image(ctx, np.ones((8, 8, 4), np.float32))
    >>> dst = empty_rgba_image(ctx, 16, 16)
    >>> _ = qcom_ext.upscale2x_image(queue, src, dst, method="blocks")
    >>> out = read_rgba_image(queue, dst)[:, :, 0]
    >>> float(out[8, 8]), float(out[0, 0]) < 1  # flat inside; the border (0) pulls the edge
    (1.0, True)
    """
    options = {"method": method, "block": block, "local_size": local_size}

    def launch(**chosen: Any) -> Any:
        return upscale2x_launch(queue, src, dst, **chosen)

    tries = tuned_options(lambda: upscale2x_key(queue, src, dst), options) if tuned else [options]
    kernel, args, (global_size, local) = launch_tuned(launch, tries)
    return enqueue(queue, kernel, global_size, local, args, wait_for)


def upscale2x_variants(
    queue: pyopencl.CommandQueue, src: pyopencl.Image, dst: pyopencl.Image
) -> list[Variant]:
    """Every method, ``"tiles"`` with each block of :data:`TILES_BLOCKS` and work-group
    of :data:`TILES_LOCALS` the device runs: what
    :func:`qcom_ext.ops.variant_tuning.choose_variant` times."""
    limit = queue.device.max_work_group_size
    choices: list[dict[str, Any]] = [
        {"method": "tiles", "block": block, "local_size": local}
        for block in TILES_BLOCKS
        for local in TILES_LOCALS
        if local[0] * local[1] <= limit
    ]
    choices += [{"method": "blocks"}, {"method": "sampler"}]
    found: list[Variant] = []
    for options in choices:
        try:
            kernel, args, (global_size, local) = upscale2x_launch(queue, src, dst, **options)
        except ConfigError:
            continue  # more local memory than the device has
        key = found[0].key if found else upscale2x_key(queue, src, dst)
        found.append(Variant(options, kernel, args, global_size, local, key=key))
    return found


def upscale2x_key(queue: Any, src: Any, dst: Any) -> VariantKey:
    """Where the choice of :func:`upscale2x_image` for ``src``'s size on the queue's
    device is remembered (the path of cl_qcom_filter_bicubic is its option)."""
    width, height = _shapes(queue, src, dst)
    sources = kernels_digest("bicubic.cl", "bicubic_tiles.cl")
    path = f"bicubic {sampler_path(queue.context)}"
    return VariantKey.of(queue.device, "upscale2x_image", sources, path, (width, height))
