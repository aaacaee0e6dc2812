"""What a benchmark case is: :class:`Case`, and the :class:`Target` it may have to meet;
and what a :class:`Suite` is: a measurement that times itself and writes its own tables."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from qcom_ext import DeviceCaps

__all__ = [
    "UNITS",
    "Case",
    "Suite",
    "SuiteResult",
    "Target",
    "Work",
    "format_seconds",
    "throughput",
]

#: Work per call -> (throughput unit, scale): ``bytes`` moved, ``flops``, ``pixels``.
UNITS = {"bytes": ("GB/s", 1e9), "flops": ("GFLOP/s", 1e9), "pixels": ("Mpix/s", 1e6)}

#: What one call does: ``{"bytes": ..., "flops": ..., "pixels": ...}``, or a function of
#: the setup state that returns it (sizes often depend on the device).
Work = Mapping[str, float] | Callable[[Any], Mapping[str, float]] | None


def throughput(work: Mapping[str, float], seconds: float) -> dict[str, float]:
    """Per-second rates of ``work`` done in ``seconds``.

    >>> throughput({"bytes": 2e9, "pixels": 1e6}, 0.5)
    {'GB/s': 4.0, 'Mpix/s': 2.0}
    """
    unknown = set(work) - set(UNITS)
    if unknown:
        raise ValueError(f"unknown work kind(s) {sorted(unknown)}; expected {sorted(UNITS)}")
    return {UNITS[k][0]: v / seconds / UNITS[k][1] for k, v in work.items() if seconds > 0}


def format_seconds(seconds: float) -> str:
    """``1.23 µs``, ``45.6 ms``: three significant digits in the largest fitting unit."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


@dataclass(frozen=True)
class Target:
    """A limit on a case's median, or on its median minus its group baseline's median."""

    limit_s: float
    over_baseline: bool = False

    def describe(self) -> str:
        what = " over baseline" if self.over_baseline else ""
        return f"< {format_seconds(self.limit_s)}{what}"


@dataclass(frozen=True)
class Case:
    """One timed call. ``setup(device_caps)`` is untimed; ``run(state)`` is timed.

    Cases of one ``group`` are timed interleaved and compared; the ``baseline`` case
    of a group is its ratio 1.0. ``max_rounds`` caps the rounds of slow cases (such as
    subprocesses); ``target`` is checked against the measurement. ``work`` (see
    :data:`Work`) turns the median into rates: GB/s, GFLOP/s, Mpix/s.
    """

    name: str
    group: str
    setup: Callable[[DeviceCaps], Any]
    run: Callable[[Any], object]
    baseline: bool = False
    note: str = ""
    max_rounds: int | None = None
    target: Target | None = None
    work: Work = None

    def work_of(self, state: Any) -> dict[str, float]:
        """The work one call does, given the setup state."""
        work = self.work(state) if callable(self.work) else self.work
        return dict(work or {})


@dataclass(frozen=True)
class SuiteResult:
    """What a suite measured: its tables as markdown, and the data behind them (JSON)."""

    markdown: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class Suite:
    """A measurement run by name (``python -m benchmarks conv-suite``) that times itself.

    Where cases are timed by the runner (wall time, interleaved), a suite measures what it
    needs (profiling events, tuning, other libraries) and returns :class:`SuiteResult`;
    the runner stamps its markdown and writes it into its own ``--update-doc`` block.
    ``arguments(group)`` adds the suite's options to the runner's parser (an argparse
    argument group); ``run(caps, options)`` gets the parsed options, where
    ``options.rounds`` is None unless ``--rounds`` was given and
    ``options.same_run_copy`` is the buffer copy the runner measured for ``--summary``
    (a :class:`~qcom_ext.tools.bench._profiling.CopyBandwidth`; None without it).
    ``aliases``: former names that still run it (its blocks and results carry ``name``).
    A ``default`` suite also runs when no names are given (``qcom-ext bench``,
    ``qcom-ext bench --summary``; keep its run short) and states its results against
    ``options.same_run_copy`` where the runner measured one.
    """

    name: str
    note: str
    run: Callable[[DeviceCaps, Any], SuiteResult]
    arguments: Callable[[Any], None] | None = None
    aliases: tuple[str, ...] = ()
    default: bool = False
