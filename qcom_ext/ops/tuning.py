"""Local work-size autotuning: :func:`tune` and its persistent JSON cache.

:func:`tune` times a kernel's candidate local sizes with profiling events (a warm-up run,
then the median of ``repeats`` runs each), the driver's own choice (``None``) included,
and returns the fastest. Candidates the kernel or device cannot take (too large for
``CL_KERNEL_WORK_GROUP_SIZE`` or ``CL_DEVICE_MAX_WORK_ITEM_SIZES``, not dividing the global
size when it may not be padded, refused by the enqueue) are rejected, never timed.

A kernel that spills registers (:func:`qcom_ext.kernel_info`: private memory on a GPU)
is tuned all the same, with a :class:`~qcom_ext.errors.RegisterSpillWarning`: no local
size makes up for the memory traffic, and a smaller ``__private`` footprint may.

Results persist in the tuning cache (:mod:`qcom_ext.ops.tuning_cache`: one JSON file per
kernel, device, driver, build options and global size), so later launches and later
processes use them.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> src = "__kernel void twice(__global float *a) { a[get_global_id(0)] *= 2.0f; }"
>>> kernel = cl.Kernel(qcom_ext.build_program(ctx, src), "twice")
>>> buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096 * 4)
>>> local = qcom_ext.tune(kernel, (4096,), [buf], candidates=[(64,), (128,)], budget_s=1,
...                       use_cache=False)
>>> local in [None, (64,), (128,)]
True
"""

from __future__ import annotations

import logging
import math
import statistics
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from qcom_ext.errors import CLError, ConfigError, DriverAnswerError, RegisterSpillWarning
from qcom_ext.ext.program.kernel_info import kernel_info
from qcom_ext.ops.tuning_cache import (
    KernelIdentity,
    LocalSize,
    TuningCache,
    TuningResult,
    cached_local_size,
    forget,
    kernel_identity,
    open_cache,
    remember,
    tuning_dir,
)

log = logging.getLogger(__name__)

__all__ = [
    "KernelIdentity",
    "TuningCache",
    "TuningResult",
    "cached_local_size",
    "default_candidates",
    "forget",
    "kernel_identity",
    "tune",
    "tune_report",
    "tuning_dir",
    "warn_if_spills",
]


def padded(global_size: Sequence[int], local_size: LocalSize) -> tuple[int, ...]:
    """``global_size`` rounded up to a multiple of ``local_size`` in every dimension."""
    if local_size is None:
        return tuple(int(g) for g in global_size)
    return tuple(
        -(-int(g) // int(ls)) * int(ls) for g, ls in zip(global_size, local_size, strict=True)
    )


def _pow2_up(value: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, value))))


def default_candidates(
    global_size: Sequence[int], max_items: Sequence[int], max_group: int
) -> list[tuple[int, ...]]:
    """Power-of-two local sizes of 32, 64, 128 and 256 work-items (fewer where the device
    allows fewer), at most the next power of two of the global size in each dimension,
    widest in dimension 0 first (the dimension adjacent work-items share)."""
    dims = len(global_size)
    if not 1 <= dims <= 3:
        raise ConfigError(f"global_size must have 1 to 3 dimensions, not {dims}")
    bound = [min(int(m), _pow2_up(int(g))) for g, m in zip(global_size, max_items, strict=False)]
    found: list[tuple[int, ...]] = []
    for total in (64, 128, 256, 32, 16):
        if total > max_group:
            continue
        shapes = []
        x = total
        while x >= 1:
            rest = total // x
            if dims == 1:
                shape = (x,) if rest == 1 else None
            elif dims == 2:
                shape = (x, rest)
            else:
                shape = (x, rest, 1)
            if shape and all(s <= b for s, b in zip(shape, bound, strict=True)):
                shapes.append(shape)
            x //= 2
        found += [s for s in shapes if s not in found]
    return found


def _problem(
    local: tuple[int, ...], global_size: Sequence[int], pad_global: bool, limits: dict[str, Any]
) -> str | None:
    if len(local) != len(global_size):
        return f"has {len(local)} dimensions, the global size {len(global_size)}"
    if any((not isinstance(v, int)) or v < 1 for v in local):
        return "sizes must be positive integers"
    required = limits["required"]
    if required and any(required) and tuple(required[: len(local)]) != local:
        return f"the kernel requires reqd_work_group_size {tuple(required[: len(local)])}"
    if math.prod(local) > limits["group"]:
        return f"{math.prod(local)} work-items exceed the kernel's limit {limits['group']}"
    for d, (v, m) in enumerate(zip(local, limits["items"], strict=False)):
        if v > m:
            return f"dimension {d}: {v} exceeds CL_DEVICE_MAX_WORK_ITEM_SIZES {m}"
    if not pad_global:
        for d, (g, v) in enumerate(zip(global_size, local, strict=True)):
            if g % v:
                return f"dimension {d}: global size {g} is not a multiple of {v}"
    return None


def _median_ns(
    queue: Any, kernel: Any, global_size: Sequence[int], local: LocalSize, repeats: int
) -> float:
    import pyopencl as cl

    size = padded(global_size, local)
    cl.enqueue_nd_range_kernel(queue, kernel, size, local).wait()  # warm-up
    events = [cl.enqueue_nd_range_kernel(queue, kernel, size, local) for _ in range(repeats)]
    cl.wait_for_events(events)
    return float(statistics.median(e.profile.end - e.profile.start for e in events))


def _profiling_queue(kernel: Any, queue: Any) -> tuple[Any, Any]:
    import pyopencl as cl

    if queue is not None:
        device = queue.device
        if queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
            return queue, device
        return cl.CommandQueue(
            queue.context, device, cl.command_queue_properties.PROFILING_ENABLE
        ), device
    context = kernel.context
    device = context.devices[0]
    return cl.CommandQueue(context, device, cl.command_queue_properties.PROFILING_ENABLE), device


def _limits(kernel: Any, device: Any) -> dict[str, Any]:
    """What :func:`_problem` checks a local size against, for ``kernel`` on ``device``."""
    import pyopencl as cl

    info = cl.kernel_work_group_info
    return {
        "group": kernel.get_work_group_info(info.WORK_GROUP_SIZE, device),
        "items": list(device.max_work_item_sizes),
        "required": list(kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, device)),
    }


def warn_if_spills(kernel: Any, device: Any) -> None:
    """A :class:`~qcom_ext.errors.RegisterSpillWarning` when ``kernel`` spills on
    ``device`` (:func:`qcom_ext.kernel_info`); a driver that will not say is silent."""
    try:
        info = kernel_info(kernel, device)
    except (CLError, DriverAnswerError):
        return
    if info.spills:
        warnings.warn(
            f"{info.describe()}; tuning its local size cannot recover the memory traffic",
            RegisterSpillWarning,
            stacklevel=4,
        )


def _runnable(
    local: LocalSize, global_size: Sequence[int], pad_global: bool, limits: dict[str, Any]
) -> bool:
    """Whether a cached local size is one the kernel and device can run (else a miss)."""
    if local is None:
        return True
    problem = _problem(local, global_size, pad_global, limits)
    if problem is not None:
        log.info("cached local size %s not used: %s; tuning again", local, problem)
    return problem is None


def _ordered_candidates(
    candidates: Iterable[Sequence[int] | None] | None,
    global_size: Sequence[int],
    limits: dict[str, Any],
) -> list[LocalSize]:
    """The driver's choice (None) first, then ``candidates`` (default: the kernel's
    required size, else :func:`default_candidates`)."""
    if candidates is None:
        required = limits["required"]
        if any(required):
            listed: list[LocalSize] = [tuple(required[: len(global_size)])]
        else:
            listed = list(default_candidates(global_size, limits["items"], limits["group"]))
    else:
        listed = [None if c is None else tuple(c) for c in candidates]
    return [None] + [c for c in listed if c is not None]


def _time_candidates(
    queue: Any,
    kernel: Any,
    global_size: tuple[int, ...],
    ordered: list[LocalSize],
    limits: dict[str, Any],
    *,
    pad_global: bool,
    budget_s: float,
    repeats: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[list[tuple[LocalSize, float]], list[tuple[LocalSize, str]]]:
    """(measured, rejected): the median time of each of the ``ordered`` local sizes,
    and why each other one was not timed (see :func:`tune_report`)."""
    import pyopencl as cl

    measured: list[tuple[LocalSize, float]] = []
    rejected: list[tuple[LocalSize, str]] = []
    progress = progress or (lambda done, total: None)
    start = time.perf_counter()
    for index, local in enumerate(ordered):
        progress(index, len(ordered))
        if local is not None and measured and time.perf_counter() - start > budget_s:
            rejected.append((local, f"not timed: budget of {budget_s:g} s spent"))
            continue
        problem = None if local is None else _problem(local, global_size, pad_global, limits)
        if problem is None:
            try:
                measured.append((local, _median_ns(queue, kernel, global_size, local, repeats)))
                continue
            except cl.Error as exc:
                problem = f"enqueue refused: {exc}"
        rejected.append((local, problem))
    progress(len(ordered), len(ordered))
    return measured, rejected


def tune_report(
    kernel: Any,
    global_size: Sequence[int],
    args: Sequence[Any] | None = None,
    *,
    candidates: Iterable[Sequence[int] | None] | None = None,
    budget_s: float = 5.0,
    repeats: int = 5,
    queue: Any = None,
    pad_global: bool = False,
    source: str | None = None,
    options: str | None = None,
    identity: KernelIdentity | None = None,
    use_cache: bool = True,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> TuningResult:
    """Like :func:`tune`, but returns the :class:`TuningResult` with all timings.

    ``identity`` replaces the one read from the kernel (``source`` and ``options`` are
    then unused): the ops pass the identity their lookups use.
    """
    global_size = tuple(int(g) for g in global_size)
    if not global_size or any(g < 1 for g in global_size):
        raise ConfigError(f"global_size {global_size} must be positive sizes")
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, not {repeats}")
    queue, device = _profiling_queue(kernel, queue)
    if identity is None:
        identity = kernel_identity(kernel, device, source=source, options=options)
    cache = open_cache() if use_cache else None
    limits = _limits(kernel, device)
    if cache is not None and not force:
        found = cache.load(identity, global_size, pad_global)
        if found is not None and _runnable(found.local_size, global_size, pad_global, limits):
            return found
    if args is not None:
        kernel.set_args(*args)
    warn_if_spills(kernel, device)
    ordered = _ordered_candidates(candidates, global_size, limits)
    measured, rejected = _time_candidates(
        queue,
        kernel,
        global_size,
        ordered,
        limits,
        pad_global=pad_global,
        budget_s=budget_s,
        repeats=repeats,
        progress=progress,
    )
    driver_ns = next((ns for ls, ns in measured if ls is None), None)
    best_local, best_ns = min(measured, key=lambda item: item[1]) if measured else (None, None)
    result = TuningResult(best_local, best_ns, driver_ns, tuple(measured), tuple(rejected))
    remember(identity, global_size, pad_global, result)
    if cache is not None:
        cache.store(identity, global_size, pad_global, result)
    return result


def tune(
    kernel: Any,
    global_size: Sequence[int],
    args: Sequence[Any] | None = None,
    *,
    candidates: Iterable[Sequence[int] | None] | None = None,
    budget_s: float = 5.0,
    **options: Any,
) -> LocalSize:
    """The fastest local size for ``kernel`` over ``global_size`` (None: the driver's).

    ``args`` are set on the kernel first (None: already set); the kernel is run many
    times, so it must not depend on its own previous output. ``candidates`` default to
    :func:`default_candidates`; the driver's choice is always timed first, and after
    ``budget_s`` seconds no further candidate is started. Keyword options (see
    :func:`tune_report`): ``repeats``, ``queue`` (a profiling queue is made if it has
    none), ``pad_global`` (round the global size up to each candidate instead of
    rejecting candidates that do not divide it: the kernel must check its bounds),
    ``source``/``options`` (identity of programs built from binaries), ``use_cache``,
    ``force`` (tune even when cached), ``progress(done, total)``.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> src = "__kernel void twice(__global float *a) { a[get_global_id(0)] *= 2.0f; }"
    >>> kernel = cl.Kernel(qcom_ext.build_program(ctx, src), "twice")
    >>> buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1024 * 4)
    >>> qcom_ext.tune(kernel, (1024,), [buf], candidates=[(32,), (64,)], budget_s=1,
    ...               use_cache=False) in [None, (32,), (64,)]
    True
    """
    return tune_report(
        kernel, global_size, args, candidates=candidates, budget_s=budget_s, **options
    ).local_size
