"""Local work-size autotuning: :func:`tune` and its persistent JSON cache.

:func:`tune` times a kernel's candidate local sizes with profiling events (a warm-up run,
then the median of ``repeats`` runs each), the driver's own choice (``None``) included,
and returns the fastest. Candidates the kernel or device cannot take (too large for
``CL_KERNEL_WORK_GROUP_SIZE`` or ``CL_DEVICE_MAX_WORK_ITEM_SIZES``, not dividing the global
size when it may not be padded, refused by the enqueue) are rejected, never timed.

Results persist as one JSON file per key in ``tuning/`` of the cache root
(``QCOM_EXT_CACHE_DIR``, else the user cache directory; ``QCOM_EXT_NO_CACHE=1`` keeps
them in memory only). The key is the platform, device, driver version, kernel name,
source hash, build options, global size and whether the global size may be padded, so
a new driver, source or option set is tuned afresh. Files are written to a temporary
name and renamed, so concurrent writers never leave a torn file; a file that does not
parse or does not match its key is ignored (and replaced by the next tuning).

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

import hashlib
import json
import logging
import math
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from qcom_ext._cache_dir import (
    cache_enabled,
    cache_subdir,
    read_json,
    unwritable,
    write_atomically,
)
from qcom_ext.errors import ConfigError

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
]

FORMAT = "qcom_ext-tuning"
VERSION = 1
LocalSize = tuple[int, ...] | None
log = logging.getLogger(__name__)
#: A tuning file larger than this is not read (a miss, replaced by the next tuning).
MAX_ENTRY_BYTES = 1 << 16


@dataclass(frozen=True)
class KernelIdentity:
    """What a tuned local size is valid for, besides the global size."""

    platform: str
    device: str
    driver: str
    kernel: str
    source_sha256: str
    options: str

    def key(self, global_size: Sequence[int], pad_global: bool) -> dict[str, Any]:
        """The full cache key of one global size (stored in the entry and checked)."""
        return {
            **asdict(self),
            "global_size": [int(g) for g in global_size],
            "pad_global": bool(pad_global),
        }

    def digest(self, global_size: Sequence[int], pad_global: bool) -> str:
        text = json.dumps(self.key(global_size, pad_global), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def kernel_identity(
    kernel: Any, device: Any = None, *, source: str | None = None, options: str | None = None
) -> KernelIdentity:
    """The identity of ``kernel`` on ``device`` (default: its context's first device).

    The source comes from the program (``CL_PROGRAM_SOURCE``) unless given; a program
    created from binaries has none: one :func:`qcom_ext.build_program` loaded from its
    cache is keyed by the source it was built from (as when it compiles it), any other
    by the hash of its binaries.
    """
    import pyopencl as cl

    from qcom_ext.ext.program.build import binaries_digest, source_digest

    program = kernel.get_info(cl.kernel_info.PROGRAM)
    device = device if device is not None else kernel.context.devices[0]
    source_sha256 = None
    if source is None:
        source = program.get_info(cl.program_info.SOURCE) or ""
        if not source.strip():
            binaries = program.get_info(cl.program_info.BINARIES)
            source_sha256 = source_digest(binaries)
            source = "binary:" + binaries_digest(binaries)
    if options is None:
        options = program.get_build_info(device, cl.program_build_info.OPTIONS) or ""
    return KernelIdentity(
        platform=device.platform.name.strip(),
        device=device.name.strip(),
        driver=device.driver_version.strip(),
        kernel=kernel.function_name,
        source_sha256=source_sha256 or hashlib.sha256(source.encode()).hexdigest(),
        options=" ".join(options.split()),
    )


def tuning_dir() -> Path:
    """The directory of the tuning cache now (``<cache root>/tuning``)."""
    return cache_subdir("tuning")


@dataclass(frozen=True)
class TuningResult:
    """What :func:`tune_report` found. Times are median device nanoseconds per run."""

    local_size: LocalSize
    best_ns: float | None
    driver_ns: float | None
    measured: tuple[tuple[LocalSize, float], ...] = ()
    rejected: tuple[tuple[LocalSize, str], ...] = ()
    from_cache: bool = False

    @property
    def gain(self) -> float | None:
        """Driver's median over the best median (1.0: the driver's choice is the best)."""
        if not self.best_ns or not self.driver_ns:
            return None
        return self.driver_ns / self.best_ns


@dataclass
class TuningCache:
    """One JSON file per key in ``directory``."""

    directory: Path
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def path(self, digest: str) -> Path:
        return self.directory / f"{digest}.json"

    def load(
        self, identity: KernelIdentity, global_size: Sequence[int], pad_global: bool
    ) -> TuningResult | None:
        """The stored result, or None when absent, unreadable, corrupt or foreign."""
        path = self.path(identity.digest(global_size, pad_global))
        entry = read_json(path, max_bytes=MAX_ENTRY_BYTES, validate=lambda e: type(e) is dict)
        return None if entry is None else _decode(entry, identity.key(global_size, pad_global))

    def store(
        self,
        identity: KernelIdentity,
        global_size: Sequence[int],
        pad_global: bool,
        result: TuningResult,
    ) -> Path | None:
        """Write the entry atomically; its path, or None (with a warning) when impossible."""
        path = self.path(identity.digest(global_size, pad_global))
        entry = {
            "format": FORMAT,
            "version": VERSION,
            "key": identity.key(global_size, pad_global),
            "local_size": None if result.local_size is None else list(result.local_size),
            "best_ns": result.best_ns,
            "driver_ns": result.driver_ns,
            "measured": [[None if ls is None else list(ls), ns] for ls, ns in result.measured],
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        try:
            write_atomically(path, json.dumps(entry, indent=1).encode())
            return path
        except OSError as exc:
            unwritable("tuning cache", path, exc)
            return None


def _decode(entry: Any, key: dict[str, Any]) -> TuningResult | None:
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    if entry.get("version") != VERSION or entry.get("key") != key:
        return None
    local = entry.get("local_size")
    dims = len(key["global_size"])
    if local is not None:
        if (
            not isinstance(local, list)
            or len(local) != dims
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in local)
        ):
            return None
        local = tuple(local)
    best, driver_ns = entry.get("best_ns"), entry.get("driver_ns")
    if not all(v is None or _is_time(v) for v in (best, driver_ns)):
        return None
    return TuningResult(local, best, driver_ns, from_cache=True)


def _is_time(value: Any) -> bool:
    """A median time as stored: a finite number of nanoseconds >= 0 (a bool is not one)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


_memory: dict[tuple[KernelIdentity, tuple[int, ...], bool], TuningResult | None] = {}
_memory_lock = threading.Lock()


def forget() -> None:
    """Drop the in-process memo of cache lookups (files are re-read on the next lookup)."""
    with _memory_lock:
        _memory.clear()


def _cache() -> TuningCache | None:
    return TuningCache(tuning_dir()) if cache_enabled() else None


def cached_local_size(
    identity: KernelIdentity, global_size: Sequence[int], pad_global: bool = True
) -> LocalSize:
    """The tuned local size for this kernel and global size, or None (driver's choice)
    when it was never tuned. Lookups are memoised in the process (see :func:`forget`), so
    a launch pays a dict lookup, not a file read."""
    key = (identity, tuple(int(g) for g in global_size), bool(pad_global))
    try:
        found = _memory[key]
    except KeyError:
        cache = _cache()
        found = cache.load(identity, key[1], pad_global) if cache else None
        with _memory_lock:
            _memory[key] = found
    return None if found is None else found.local_size


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


def _limits(kernel: Any, device: Any) -> dict[str, Any]:
    """What :func:`_problem` checks a local size against, for ``kernel`` on ``device``."""
    import pyopencl as cl

    info = cl.kernel_work_group_info
    return {
        "group": kernel.get_work_group_info(info.WORK_GROUP_SIZE, device),
        "items": list(device.max_work_item_sizes),
        "required": list(kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, device)),
    }


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
    import pyopencl as cl

    global_size = tuple(int(g) for g in global_size)
    if not global_size or any(g < 1 for g in global_size):
        raise ConfigError(f"global_size {global_size} must be positive sizes")
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, not {repeats}")
    queue, device = _profiling_queue(kernel, queue)
    if identity is None:
        identity = kernel_identity(kernel, device, source=source, options=options)
    cache = _cache() if use_cache else None
    limits = _limits(kernel, device)
    if cache is not None and not force:
        found = cache.load(identity, global_size, pad_global)
        if found is not None and _runnable(found.local_size, global_size, pad_global, limits):
            return found
    if args is not None:
        kernel.set_args(*args)
    if candidates is None:
        required = limits["required"]
        if any(required):
            listed: list[LocalSize] = [tuple(required[: len(global_size)])]
        else:
            listed = list(default_candidates(global_size, limits["items"], limits["group"]))
    else:
        listed = [None if c is None else tuple(c) for c in candidates]
    ordered: list[LocalSize] = [None] + [c for c in listed if c is not None]
    measured: list[tuple[LocalSize, float]] = []
    rejected: list[tuple[LocalSize, str]] = []
    start = time.perf_counter()
    for index, local in enumerate(ordered):
        if progress is not None:
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
    if progress is not None:
        progress(len(ordered), len(ordered))
    driver_ns = next((ns for ls, ns in measured if ls is None), None)
    best_local, best_ns = min(measured, key=lambda item: item[1]) if measured else (None, None)
    result = TuningResult(best_local, best_ns, driver_ns, tuple(measured), tuple(rejected))
    with _memory_lock:
        _memory[(identity, global_size, bool(pad_global))] = result
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
