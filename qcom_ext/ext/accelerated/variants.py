"""The launch configurations of :func:`~qcom_ext.convolve_image` and
:func:`~qcom_ext.box_filter_image` a tuner can time on a device: each method of the
portable path (:data:`.plan.METHODS` but ``"per_pixel"``) with the blocks and work-group
sizes of :data:`SPACE` that fit the device. Natively the builtins run per pixel whatever
the method, so there is one variant. Each carries the op's
:func:`~qcom_ext.ext.accelerated.whole_image.filter_key`, so a chooser that remembers
its choice keeps it where ``tuned=True`` calls of the op look.

    variants = filter_variants(queue, src, dst, weights=w)      # or size=(7, 7)
    best = qcom_ext.ops.variant_tuning.choose_variant(variants, queue=queue, remember=True)
    qcom_ext.convolve_image(queue, src, w, dst, **best.options)  # or tuned=True

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext.ext.accelerated.rgba import empty_rgba_image, read_rgba_image, rgba_image
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> src = rgba_image(ctx, np.ones((16, 16, 4), np.float32))
>>> dst = empty_rgba_image(ctx, 16, 16)
>>> space = {"strips": (((1, 4),), ((8, 2), (4, 4))), "bands": (((1, 8),), ((16, 1),))}
>>> found = filter_variants(queue, src, dst, size=(3, 3), space=space)
>>> sorted(v.describe() for v in found) if context_path(ctx) == "fallback" else 3
['bands block 1x8 local 16x1', 'strips block 1x4 local 4x4', 'strips block 1x4 local 8x2']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from qcom_ext.errors import ConfigError
from qcom_ext.ext.accelerated.support import context_path
from qcom_ext.ext.accelerated.whole_image import box_filter_launch, convolve_launch, filter_key
from qcom_ext.ext.variant import Variant

if TYPE_CHECKING:
    import pyopencl

__all__ = ["SPACE", "filter_variants"]

#: method -> (blocks, work-group sizes) to time: around each method's best shapes on the
#: H100 (docs/accelerated_image_ops.md, "Performance of the portable path"); shapes whose
#: tile does not fit the device's local memory are left out.
SPACE: dict[str, tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]] = {
    "tiled": (((1, 4), (1, 8)), ((16, 8), (16, 16))),
    "strips": (((1, 4), (1, 8), (1, 16)), ((16, 8), (32, 4), (16, 16), (64, 2))),
    "bands": (((1, 16), (1, 32)), ((32, 1), (64, 1), (128, 1))),
    "blocked": (((2, 2), (2, 4)), ((16, 8), (8, 8))),
}


def filter_variants(
    queue: pyopencl.CommandQueue,
    src: pyopencl.Image,
    dst: pyopencl.Image,
    *,
    weights: Any = None,
    size: Any = None,
    sampler: Any = None,
    space: Any = None,
) -> list[Variant]:
    """The variants of ``convolve_image(queue, src, weights, dst)`` (``weights`` given) or
    ``box_filter_image(queue, src, size, dst)`` (``size`` given) that the device can run
    (a tile larger than its local memory or a group larger than it allows is left out);
    ``space`` replaces :data:`SPACE`. Every variant's program is built here."""
    if (weights is None) == (size is None):
        raise ConfigError("give weights (a convolution) or size (a box filter), not both")
    launch, operand = (
        (convolve_launch, weights) if weights is not None else (box_filter_launch, size)
    )
    per_pixel = {"method": "per_pixel", "block": None, "local_size": None}
    launch(queue, src, operand, dst, sampler=sampler, **per_pixel)  # the arguments, checked
    key = filter_key(queue, src, dst, weights=weights, size=size)
    if context_path(queue.context) == "native":
        space = {"per_pixel": ((None,), (None,))}
    choices: list[dict[str, Any]] = [
        {"method": method, "block": block, "local_size": local}
        for method, (blocks, locals_) in (SPACE if space is None else space).items()
        for block in blocks
        for local in locals_
    ]
    found = []
    for options in choices:
        try:
            kernel, args, (global_size, local) = launch(
                queue, src, operand, dst, sampler=sampler, **options
            )
        except ConfigError:
            continue  # too much local memory or too many work-items for this device
        found.append(Variant(options, kernel, args, global_size, local, key=key))
    return found
