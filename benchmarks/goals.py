"""The targets of issue 18 (kernels to the memory roofline) that the suites judge, and the
met / NOT met line each prints. Fractions are of the buffer-copy bandwidth measured in the
same run (:mod:`._profiling`); ratios to torch are torch's time over ours.

>>> GOALS["box_7x7"].line(0.58)
'7x7 box filter (default method): 0.58 of buffer copy (target >= 0.85 of buffer copy): NOT met'
>>> GOALS["block_match"].line(412e-6)
'8x8 block match, r = 4, 4K: 412 µs (target <= 428 µs, 2x faster than 856 µs): met'
>>> GOALS["pointwise"].line(None)
'1x1 conv (median over the MobileNetV2 shapes): not measured (target >= 1.25x torch)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qcom_ext.tools.bench import report
from qcom_ext.tools.bench._case import format_seconds

__all__ = ["BLOCK_MATCH_BEFORE_S", "GOALS", "Goal", "summary_row"]

#: 8x8 block match, r = 4, 4K RGBA float on an H100 before issue 18 (docs/BENCHMARKS.md).
BLOCK_MATCH_BEFORE_S = 856e-6


@dataclass(frozen=True)
class Goal:
    """A target: ``value >= limit`` (or ``<=`` with ``at_most``), stated in ``unit``."""

    what: str
    unit: str  # "of buffer copy", "x torch" or "s" (a time)
    limit: float
    at_most: bool = False
    why: str = ""  # what the limit stands for, in the line

    def met(self, value: float | None) -> bool | None:
        """Whether ``value`` meets the target (None: not measured)."""
        if value is None:
            return None
        return value <= self.limit if self.at_most else value >= self.limit

    def _text(self, value: float) -> str:
        if self.unit == "s":
            return format_seconds(value)
        if self.unit == "x torch":
            return f"{value:.2f}x torch"
        return f"{value:.2f} {self.unit}"

    def target(self) -> str:
        sign = "<=" if self.at_most else ">="
        why = f", {self.why}" if self.why else ""
        return f"target {sign} {self._text(self.limit)}{why}"

    def line(self, value: float | None, note: str = "") -> str:
        """``what: value (target ...): met`` (or ``NOT met``, or ``not measured``)."""
        note = f"; {note}" if note else ""
        if value is None:
            return f"{self.what}: not measured ({self.target()}){note}"
        verdict = "met" if self.met(value) else "NOT met"
        return f"{self.what}: {self._text(value)} ({self.target()}): {verdict}{note}"

    def verdict(self, value: float | None) -> str:
        """The summary table's cell: ``met``, ``NOT met`` or an empty string."""
        return {True: "met", False: "NOT met", None: ""}[self.met(value)]


GOALS = {
    "box_7x7": Goal("7x7 box filter (default method)", "of buffer copy", 0.85),
    "convolve_5x5": Goal("5x5 convolution (default method)", "of buffer copy", 0.85),
    "bicubic_2x": Goal(
        "bicubic 2x (2x2 outputs per work-item)",
        "of buffer copy",
        0.85,
        why="source read once + output written once",
    ),
    "block_match": Goal(
        "8x8 block match, r = 4, 4K",
        "s",
        BLOCK_MATCH_BEFORE_S / 2,
        at_most=True,
        why=f"2x faster than {format_seconds(BLOCK_MATCH_BEFORE_S)}",
    ),
    "depthwise": Goal(
        "depthwise (median over the MobileNetV2 shapes)", "of peak buffer copy", 0.85
    ),
    "pointwise": Goal("1x1 conv (median over the MobileNetV2 shapes)", "x torch", 1.25),
    "pointwise_slowest": Goal("1x1 conv (slowest shape)", "x torch", 0.8),
}


def summary_row(
    op: str,
    *,
    seconds: float | None = None,
    of_buffer_copy: float | None = None,
    of_image_copy: float | None = None,
    vs_torch: float | None = None,
    goal: str | None = None,
    value: float | None = None,
) -> dict[str, Any]:
    """One row of the summary table (:func:`qcom_ext.tools.bench.report.summary_row`, the
    wheel's, with the target worded here): ``op`` took ``seconds`` (None: a median over
    shapes), reached ``of_buffer_copy`` of the buffer copy (and ``of_image_copy`` of the
    image copy), ran ``vs_torch`` times torch's speed; ``goal`` names its :data:`GOALS`
    entry, judged on ``value``.

    >>> summary_row("7x7 box", seconds=1e-4, of_buffer_copy=0.9, goal="box_7x7", value=0.9)[
    ...     "target"]
    '>= 0.85 of buffer copy: met'
    """
    target = ""
    if goal is not None:
        g = GOALS[goal]
        target = f"{g.target().removeprefix('target ')}: {g.verdict(value) or 'not judged'}"
    return report.summary_row(
        op,
        seconds=seconds,
        of_buffer_copy=of_buffer_copy,
        of_image_copy=of_image_copy,
        vs_torch=vs_torch,
        target=target,
    )
