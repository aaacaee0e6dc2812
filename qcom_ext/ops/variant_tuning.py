"""Choose the fastest launch configuration of a whole-image op on a device, through
:func:`qcom_ext.tune`'s timing and cache.

The image ops list what they can run (:func:`qcom_ext.ext.accelerated.variants.filter_variants`
for the convolution and the box filter, :func:`qcom_ext.ext.images.upscale.upscale2x_variants`
for the 2x bicubic upscale): methods, blocks of outputs per work-item and work-group
sizes, each a separately built kernel. :func:`choose_variant` times each with
:func:`~qcom_ext.ops.tuning.tune_report` (its own local size; the tuning cache keeps the
result per kernel, device, driver, build options and global size, so a later call, in
this process or another, times nothing again) and returns the fastest. Its ``options``
are the op's keyword arguments::

    variants = filter_variants(queue, src, dst, size=(7, 7))
    best = choose_variant(variants, queue=queue)
    qcom_ext.box_filter_image(queue, src, (7, 7), dst, **best.options)

Device-specific choices live in the cache, not in code paths per vendor: the defaults of
the ops are what is expected to be best on GPUs in general (see docs/accelerated_image_ops.md).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext.ext.accelerated.rgba import empty_rgba_image, read_rgba_image, rgba_image
>>> from qcom_ext.ext.accelerated.variants import filter_variants
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> src = rgba_image(ctx, np.ones((16, 16, 4), np.float32))
>>> dst = empty_rgba_image(ctx, 16, 16)
>>> space = {"strips": (((1, 4),), ((8, 2),)), "tiled": (((1, 4),), ((8, 2),))}
>>> variants = filter_variants(queue, src, dst, size=(3, 3), space=space)
>>> best = choose_variant(variants, queue=queue, repeats=1, use_cache=False)
>>> best.options["method"] in ("strips", "tiled")
True
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from qcom_ext.errors import ConfigError
from qcom_ext.ext.variant import Variant
from qcom_ext.ops.tuning import tune_report

__all__ = ["choose_variant", "time_variants"]


def _report(variant: Variant, queue: Any, repeats: int, use_cache: bool, force: bool) -> Any:
    return tune_report(
        variant.kernel,
        variant.global_size,
        variant.args,
        candidates=[variant.local_size] if variant.local_size is not None else [],
        queue=queue,
        repeats=repeats,
        use_cache=use_cache,
        force=force,
    )


def _required(variant: Variant, device: Any) -> bool:
    """Whether the kernel is compiled for one work-group size (the driver's choice is then
    that size, or refused)."""
    import pyopencl as cl

    info = cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE
    return any(variant.kernel.get_work_group_info(info, device))


def _seconds(variant: Variant, queue: Any, repeats: int, use_cache: bool, force: bool) -> float:
    """The median device time of ``variant`` at its own local size (inf: it would not run).

    :func:`~qcom_ext.ops.tuning.tune_report` also times the driver's choice and keeps the
    faster of the two; a cached entry holds that one's time only. Where the driver's
    choice won for a kernel that takes any work-group size, the variant's own time is not
    in the entry: it is timed again (without touching the cache)."""
    result = _report(variant, queue, repeats, use_cache, force)
    if result.from_cache:
        same = result.local_size == variant.local_size or _required(variant, queue.device)
        if same and result.best_ns is not None:
            return result.best_ns * 1e-9
        result = _report(variant, queue, repeats, use_cache=False, force=True)
    ns = dict(result.measured).get(variant.local_size)
    if ns is None and _required(variant, queue.device):
        ns = dict(result.measured).get(None)  # the driver ran the required size
    return float("inf") if ns is None else ns * 1e-9


def time_variants(
    variants: Sequence[Variant],
    *,
    queue: Any,
    budget_s: float = 30.0,
    repeats: int = 5,
    use_cache: bool = True,
    force: bool = False,
) -> list[tuple[Variant, float]]:
    """(variant, median seconds) of each of ``variants`` (inf: not timed, over
    ``budget_s`` of timing or refused by the driver), in the order given.

    The kernels' arguments are set here: do not launch the same op on another thread
    meanwhile.
    """
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, not {repeats}")
    start = time.perf_counter()
    timed = []
    for variant in variants:
        if time.perf_counter() - start > budget_s:
            timed.append((variant, float("inf")))
            continue
        timed.append((variant, _seconds(variant, queue, repeats, use_cache, force)))
    return timed


def choose_variant(
    variants: Sequence[Variant],
    *,
    queue: Any,
    budget_s: float = 30.0,
    repeats: int = 5,
    use_cache: bool = True,
    force: bool = False,
) -> Variant:
    """The fastest of ``variants`` (see :func:`time_variants`); ConfigError when there are
    none or none ran."""
    if not variants:
        raise ConfigError("no variants to choose from")
    timed = time_variants(
        variants,
        queue=queue,
        budget_s=budget_s,
        repeats=repeats,
        use_cache=use_cache,
        force=force,
    )
    best, seconds = min(timed, key=lambda item: item[1])
    if seconds == float("inf"):
        raise ConfigError("none of the variants ran on this device")
    return best
