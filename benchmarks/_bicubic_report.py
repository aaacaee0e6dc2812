"""The bicubic suite's tables (:mod:`.cases_bicubic`): its rows as markdown, the lines of
issue 18's target (:mod:`.goals`), judged on the op's default path and stated for its
tuned choice and the old kernels beside it, and the rows it gives the summary table."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchmarks.goals import GOALS, Goal, summary_row
from qcom_ext.tools.bench._case import format_seconds

__all__ = ["UPSCALES", "suite_markdown", "summary_rows"]

_ROWS = (
    ("copy", "image copy"),
    ("default", "`upscale2x_image` default"),
    ("tuned", "`upscale2x_image`, tuned=True"),
    ("bicubic", "`upscale2x` (one bicubic read per output)"),
    ("blocks", "`upscale2x_blocks` (2x2 outputs from 5x5 texels)"),
    ("torch", 'torch `interpolate(mode="bicubic")`, CUDA'),
)
#: the upscales the suite times: the op's default path, its tuned choice, the old kernels
UPSCALES = ("default", "tuned", "bicubic", "blocks")


def _goal(kind: str, rows: dict[str, Any] | None = None) -> Goal:
    """The target's line for ``kind``: the default path (judged) and the tuned one say
    what they ran; the old kernels' lines are for comparison."""
    goal = GOALS["bicubic_2x"]
    if kind in ("default", "tuned"):
        what = rows[kind]["implementation"] if rows else ""
        return replace(goal, what=f"bicubic 2x ({kind} path: {what})")
    return goal if kind == "blocks" else replace(goal, what="bicubic 2x (one read per output)")


def summary_rows(rows: dict[str, Any], source: tuple[int, int]) -> list[dict[str, Any]]:
    """The summary table's rows: the default path and the tuned one against the copies,
    torch and the target (the older kernels stay in the suite's own table)."""
    out = []
    for kind in ("default", "tuned"):
        r, torch = rows[kind], rows.get("torch")
        out.append(
            summary_row(
                f"{_goal(kind, rows).what.replace('bicubic 2x', 'bicubic 2x upscale')}, "
                f"{source[0]}x{source[1]} source",
                seconds=r["seconds"],
                of_buffer_copy=r["of_buffer_copy"],
                of_image_copy=r["of_image_copy"],
                vs_torch=None if torch is None else torch["seconds"] / r["seconds"],
                goal="bicubic_2x",
                value=r["of_buffer_copy"],
            )
        )
    return out


def suite_markdown(data: dict[str, Any]) -> str:
    """The suite's table, the target's verdicts and the check against numpy."""
    (width, height), rows = data["size"], data["rows"]
    lines = [
        f"{width}x{height} RGBA float -> {2 * width}x{2 * height}; `cl_qcom_filter_bicubic` "
        f"path: {data['path']}; median of {data['runs']} runs (profiling events; a "
        f"replayed CUDA graph for torch); {data['copy']}; an upscale moves the source once "
        "and the output once",
        "",
        "| case | ran | time | GB/s | of buffer copy | of image copy |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for kind, label in _ROWS:
        if kind in rows:
            r = rows[kind]
            lines.append(
                f"| {label} | {r.get('implementation', '—')} | {format_seconds(r['seconds'])} "
                f"| {r['GBps']:.3g} | {r['of_buffer_copy']:.2f} | {r['of_image_copy']:.2f} |"
            )
    lines.append("")
    lines.append(f"* judged: {_goal('default', rows).line(rows['default']['of_buffer_copy'])}")
    for kind in ("tuned", "blocks", "bicubic"):
        lines.append(f"* {_goal(kind, rows).line(rows[kind]['of_buffer_copy'])}")
    errors = data["max_error"]
    lines.append(
        "* max difference from numpy at 256 sampled pixels: "
        + ", ".join(f"{errors[kind]:.2g} ({kind})" for kind in UPSCALES)
    )
    return "\n".join(lines) + "\n"
