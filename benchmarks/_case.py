"""What a benchmark case is: :class:`Case`, and the :class:`Target` it may have to meet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qcom_ext import DeviceCaps

__all__ = ["Case", "Target", "format_seconds"]


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
    subprocesses); ``target`` is checked against the measurement.
    """

    name: str
    group: str
    setup: Callable[[DeviceCaps], Any]
    run: Callable[[Any], object]
    baseline: bool = False
    note: str = ""
    max_rounds: int | None = None
    target: Target | None = None
