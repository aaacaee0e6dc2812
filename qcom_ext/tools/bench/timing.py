"""Timing benchmark cases side by side: the cases of a group run interleaved (each round
times one batch of every case in turn, the order rotating), a batch repeating the call
until it takes at least ``batch_s`` with the garbage collector off. Per case: the median,
min and interquartile range over the rounds, and the ratio to the group's baseline.

>>> import time
>>> from qcom_ext import DeviceCaps
>>> from qcom_ext.tools.bench._case import Case
>>> caps = DeviceCaps.from_info(extensions="", disabled=())
>>> cases = [Case("a", "g", lambda caps: None, lambda _: time.sleep(0), baseline=True)]
>>> [(r.name, r.ratio, r.rounds) for r in measure(cases, caps, rounds=2, batch_s=1e-4).results]
[('a', 1.0, 2)]
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console

from qcom_ext import DeviceCaps
from qcom_ext.tools.bench._case import Case, Target, throughput
from qcom_ext.tools.bench.report import Report, Result, stamps

__all__ = ["DEFAULT_BATCH_S", "DEFAULT_ROUNDS", "measure"]

DEFAULT_ROUNDS = 15
DEFAULT_BATCH_S = 0.020
_MAX_LOOPS = 10_000_000


def _time_batch(case: Case, state: Any, loops: int) -> int:
    """Nanoseconds for ``loops`` calls of ``case.run`` with the garbage collector off."""
    run, gc_was_on = case.run, gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(loops):
            run(state)
        return time.perf_counter_ns() - start
    finally:
        if gc_was_on:
            gc.enable()


def _calibrate(case: Case, state: Any, batch_ns: int) -> int:
    """The loop count whose batch takes at least ``batch_ns`` (the first try warms up)."""
    loops = 1
    while True:
        elapsed = _time_batch(case, state, loops)
        if elapsed >= batch_ns or loops >= _MAX_LOOPS:
            return loops
        estimate = math.ceil(loops * 1.1 * batch_ns / max(elapsed, 1))
        loops = min(max(loops * 2, estimate), _MAX_LOOPS)


def _stats(samples: list[float]) -> tuple[float, float, float]:
    if len(samples) < 2:
        return samples[0], samples[0], 0.0
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return median, min(samples), q3 - q1


def _groups(cases: Sequence[Case]) -> dict[str, list[Case]]:
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.group, []).append(case)
    return groups


def _measure_group(
    members: list[Case],
    caps: DeviceCaps,
    rounds: int,
    batch_ns: int,
    tick: Callable[[], None] = lambda: None,
) -> list[Result]:
    states = [case.setup(caps) for case in members]
    loops = [
        _calibrate(case, state, batch_ns) for case, state in zip(members, states, strict=True)
    ]
    limits = [min(rounds, case.max_rounds or rounds) for case in members]
    samples: list[list[float]] = [[] for _ in members]
    for r in range(max(limits)):
        for offset in range(len(members)):  # rotate the order so no case always goes first
            i = (r + offset) % len(members)
            if r < limits[i]:
                samples[i].append(_time_batch(members[i], states[i], loops[i]) / loops[i] / 1e9)
        tick()
    stats = [_stats(s) for s in samples]
    base = next((stats[i][0] for i, c in enumerate(members) if c.baseline), None)
    results = []
    works = [case.work_of(state) for case, state in zip(members, states, strict=True)]
    rows = zip(members, loops, limits, stats, works, strict=True)
    for case, n, limit, (median, low, iqr), work in rows:
        met = None if case.target is None else _target_met(case.target, median, base)
        results.append(
            Result(
                name=case.name,
                group=case.group,
                baseline=case.baseline,
                note=case.note,
                rounds=limit,
                loops=n,
                median_s=median,
                min_s=low,
                iqr_s=iqr,
                ratio=None if base is None else median / base,
                target=None if case.target is None else case.target.describe(),
                target_met=met,
                throughput=throughput(work, median),
            )
        )
    return results


def _target_met(target: Target, median: float, base: float | None) -> bool | None:
    if target.over_baseline:
        return None if base is None else median - base < target.limit_s
    return median < target.limit_s


def measure(
    cases: Sequence[Case],
    caps: DeviceCaps,
    rounds: int = DEFAULT_ROUNDS,
    batch_s: float = DEFAULT_BATCH_S,
    console: Console | None = None,
    command: str | None = None,
) -> Report:
    """Time ``cases`` group by group on the device ``caps`` describes.

    With a ``console``, a progress bar (one step per group round) is drawn on it;
    ``command`` is stamped into the report's header.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, not {rounds}")
    groups = _groups(cases)
    results: list[Result] = []
    batch_ns = max(1, int(batch_s * 1e9))
    if console is None:
        for members in groups.values():
            results += _measure_group(members, caps, rounds, batch_ns)
        return Report(header=stamps(caps, command), results=results)
    from qcom_ext.tools._output import progress_bar

    with progress_bar(console) as progress:
        for group, members in groups.items():
            steps = max(min(rounds, c.max_rounds or rounds) for c in members)
            task = progress.add_task(f"{group} ({len(members)} cases)", total=steps)
            results += _measure_group(
                members, caps, rounds, batch_ns, lambda t=task: progress.advance(t)
            )
    return Report(header=stamps(caps, command), results=results)
