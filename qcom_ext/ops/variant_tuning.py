"""The one variant chooser: time candidate kernel variants
(:class:`~qcom_ext.ext.variant.Variant`) through :func:`qcom_ext.tune`'s timing and cache,
pick the fastest and remember it (:mod:`qcom_ext.ext.variant_store`).

:func:`choose` serves both kinds of candidates:

* the whole-image ops' launch configurations
  (:func:`qcom_ext.ext.accelerated.variants.filter_variants` for the convolution and the
  box filter, :func:`qcom_ext.ext.images.upscale.upscale2x_variants` for the 2x bicubic
  upscale): methods, blocks of outputs per work-item and work-group sizes, each a
  separately built kernel timed at its own work-group size;
* the variants of a layer (:meth:`qcom_ext.ops._variants.VariantLayer.tune`: depthwise
  and 1x1), each timed at the local size :func:`~qcom_ext.ops.tuning.tune_report` finds
  for it.

Each is timed with :func:`~qcom_ext.ops.tuning.tune_report` (the tuning cache keeps the
result per kernel, device, driver, build options and global size, so a later call, in
this process or another, times nothing again); one that does not build is skipped, one
the driver refuses or that is not reached within ``budget_s`` counts as infinitely slow.
The fastest wins (the first listed on a tie). When more than one was offered and the
caller asks (a layer's ``tune`` always does; :func:`choose_variant` with
``remember=True``), the choice is remembered under the candidates' key, and the op runs it
later: a layer made without a variant, a whole-image op called with ``tuned=True``::

    variants = filter_variants(queue, src, dst, size=(7, 7))
    best = choose_variant(variants, queue=queue, remember=True)  # for this op and shape
    qcom_ext.box_filter_image(queue, src, (7, 7), dst, **best.options)   # that one
    qcom_ext.box_filter_image(queue, src, (7, 7), dst, tuned=True)       # the same

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

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from qcom_ext.errors import BuildError, ConfigError
from qcom_ext.ext.variant import Variant
from qcom_ext.ext.variant_store import store_variant
from qcom_ext.ops.tuning import TuningResult, tune_report

__all__ = ["Timed", "choose", "choose_variant", "time_variants"]

log = logging.getLogger(__name__)

#: A candidate: a built variant, or a callable that builds it when its turn comes (it
#: may raise BuildError or ConfigError: that variant is then skipped).
Candidate = Variant | Callable[[], Variant]


@dataclass(frozen=True)
class Timed:
    """One candidate's timing: ``ns`` the median device nanoseconds of what the op
    launches (inf: not timed), ``report`` the tuner's result (None: not timed)."""

    variant: Variant
    ns: float
    report: TuningResult | None

    @property
    def seconds(self) -> float:
        return self.ns * 1e-9


def _report(variant: Variant, queue: Any, use_cache: bool, force: bool, **options: Any) -> Any:
    tuned = variant.local_size == "tuned"
    candidates = variant.candidates if tuned else [variant.local_size]
    return tune_report(
        variant.kernel,
        variant.global_size,
        variant.args,
        candidates=[c for c in candidates if c is not None] if candidates is not None else None,
        queue=queue,
        identity=variant.identity,
        pad_global=variant.pad_global,
        use_cache=use_cache,
        force=force,
        **options,
    )


def _required(variant: Variant, device: Any) -> bool:
    """Whether the kernel is compiled for one work-group size (the driver's choice is then
    that size, or refused)."""
    import pyopencl as cl

    info = cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE
    return any(variant.kernel.get_work_group_info(info, device))


def _ns(variant: Variant, queue: Any, use_cache: bool, force: bool, **options: Any) -> Timed:
    """The median device time of what the op launches: at the variant's own local size,
    or (``"tuned"``) at the best one found (inf: it would not run).

    :func:`~qcom_ext.ops.tuning.tune_report` also times the driver's choice and keeps the
    faster of the two; a cached entry holds that one's time only. Where the driver's
    choice won for a kernel that takes any work-group size, the variant's own time is not
    in the entry: it is timed again (without touching the cache)."""
    result = _report(variant, queue, use_cache, force, **options)
    if variant.local_size == "tuned":
        return Timed(variant, math.inf if result.best_ns is None else result.best_ns, result)
    if result.from_cache:
        same = result.local_size == variant.local_size or _required(variant, queue.device)
        if same and result.best_ns is not None:
            return Timed(variant, result.best_ns, result)
        result = _report(variant, queue, use_cache=False, force=True, **options)
    ns = dict(result.measured).get(variant.local_size)
    if ns is None and _required(variant, queue.device):
        ns = dict(result.measured).get(None)  # the driver ran the required size
    return Timed(variant, math.inf if ns is None else ns, result)


def _built(candidate: Candidate) -> Variant | None:
    if isinstance(candidate, Variant):
        return candidate
    try:
        return candidate()
    except (BuildError, ConfigError) as exc:  # e.g. more registers or local memory
        log.info("variant not tuned: %s", exc)
        return None


def _remember(timed: list[Timed], best: Timed, offered: int) -> None:
    """Keep ``best`` under its key when a choice was made (more than one offered)."""
    key = best.variant.key
    if key is None or offered < 2:
        return
    measured = [(t.variant.remembered(), t.ns) for t in timed if t.ns != math.inf]
    store_variant(key, best.variant.remembered(), best.ns, measured)


def choose(
    candidates: Sequence[Candidate],
    *,
    queue: Any,
    budget_s: float = 30.0,
    repeats: int = 5,
    use_cache: bool = True,
    force: bool = False,
    remember: bool = True,
    **options: Any,
) -> tuple[Timed | None, list[Timed]]:
    """(the fastest, every timing in the order given) of ``candidates``: see the module.

    ``budget_s``: no candidate is started after that many seconds (the rest count as
    inf; one not built yet is left out); ``repeats``, ``use_cache``, ``force`` and
    ``options`` (e.g. ``budget_s`` of a variant's own local-size search as
    ``local_budget_s``) go to :func:`~qcom_ext.ops.tuning.tune_report`. The fastest is
    None when none ran. With ``remember`` the choice is kept under the candidates' key.
    The kernels' arguments are set here: do not launch the same op on another thread
    meanwhile."""
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, not {repeats}")
    local_budget = options.pop("local_budget_s", 5.0)
    start = time.perf_counter()
    timed: list[Timed] = []
    for candidate in candidates:
        if time.perf_counter() - start > budget_s:
            if isinstance(candidate, Variant):
                timed.append(Timed(candidate, math.inf, None))
            continue
        variant = _built(candidate)
        if variant is not None:
            report = dict(options, repeats=repeats, budget_s=local_budget)
            timed.append(_ns(variant, queue, use_cache, force, **report))
    best = min(timed, key=lambda t: t.ns) if timed else None
    if best is None or best.ns == math.inf:
        return None, timed
    if remember:
        _remember(timed, best, len(candidates))
    return best, timed


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
    ``budget_s`` of timing or refused by the driver), in the order given (nothing is
    remembered).

    The kernels' arguments are set here: do not launch the same op on another thread
    meanwhile.
    """
    _, timed = choose(
        variants,
        queue=queue,
        budget_s=budget_s,
        repeats=repeats,
        use_cache=use_cache,
        force=force,
        remember=False,
    )
    return [(t.variant, t.seconds) for t in timed]


def choose_variant(
    variants: Sequence[Variant],
    *,
    queue: Any,
    budget_s: float = 30.0,
    repeats: int = 5,
    use_cache: bool = True,
    force: bool = False,
    remember: bool = False,
) -> Variant:
    """The fastest of ``variants`` (see :func:`choose`); ConfigError when there are
    none or none ran. With ``remember`` the choice is kept for the op, device and input
    shape (:mod:`qcom_ext.ext.variant_store`): the op called with ``tuned=True`` runs it."""
    if not variants:
        raise ConfigError("no variants to choose from")
    best, _ = choose(
        variants,
        queue=queue,
        budget_s=budget_s,
        repeats=repeats,
        use_cache=use_cache,
        force=force,
        remember=remember,
    )
    if best is None:
        raise ConfigError("none of the variants ran on this device")
    return best.variant
