"""The conv suite's summary (:mod:`.cases_conv`): medians over the MobileNetV2 layers
against the targets (issue 18's, :mod:`.goals`, and issue 7's tuning gain), its markdown
tables, the met / NOT met lines and the rows it gives the summary table."""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.goals import GOALS, summary_row

__all__ = ["TARGETS", "goal_lines", "markdown", "progress_line", "summarise", "summary_rows"]

#: summary value -> the least it must reach: issue 18's (see .goals) and issue 7's tuning gain
TARGETS = {
    "pointwise_vs_torch": GOALS["pointwise"].limit,
    "pointwise_slowest_vs_torch": GOALS["pointwise_slowest"].limit,
    "depthwise_peak_bandwidth": GOALS["depthwise"].limit,
    "tuning_gain": 1.15,
}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians against the issue's targets (None where nothing was measured)."""
    best_1x1 = _best_per_layer([r for r in rows if r["kind"] == "1x1"], "vs_torch")
    mace = [r["vs_torch"] for r in rows if r["variant"] == "tile 2x4" and "vs_torch" in r]
    best_depthwise = _best_per_layer(rows, "bandwidth_fraction")
    gains = [r["gain"] for r in rows if not r.get("required_local", r["variant"] == "tiled")]
    slowest = min(best_1x1.values(), key=lambda r: r["vs_torch"], default=None)
    values = {
        "pointwise_vs_torch": _median([r["vs_torch"] for r in best_1x1.values()]),
        "pointwise_slowest_vs_torch": None if slowest is None else slowest["vs_torch"],
        "pointwise_slowest_layer": None if slowest is None else slowest["layer"],
        "pointwise_mace_vs_torch": _median(mace),
        "pointwise_best_tiles": {k: v["variant"] for k, v in best_1x1.items()},
        "depthwise_roofline": _median([r["roofline_fraction"] for r in best_depthwise.values()]),
        "depthwise_peak_bandwidth": _median(
            [r["bandwidth_fraction"] for r in best_depthwise.values()]
        ),
        "depthwise_vs_torch": _median(
            [r["vs_torch"] for r in best_depthwise.values() if "vs_torch" in r]
        ),
        "depthwise_best_variants": {k: v["variant"] for k, v in best_depthwise.items()},
        "depthwise_layers": len(best_depthwise),
        "pointwise_layers": len({r["layer"] for r in rows if r["kind"] == "1x1"}),
        "tuning_gain": _median(gains),
    }
    values["targets"] = {
        name: {
            "limit": limit,
            "value": values[name],
            "met": None if values[name] is None else values[name] >= limit,
        }
        for name, limit in TARGETS.items()
    }
    return values


def _best_per_layer(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """Layer name -> its row with the largest ``key`` (rows without ``key`` left out)."""
    best: dict[str, dict[str, Any]] = {}
    for row in rows:
        if key in row and (row["layer"] not in best or row[key] > best[row["layer"]][key]):
            best[row["layer"]] = row
    return best


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def progress_line(row: dict[str, Any]) -> str:
    text = (
        f"{row['layer']:<14} {row['variant']:<9} {row['tuned_ns'] / 1e3:9.1f} us "
        f"{row['gflops']:8.1f} GFLOP/s  tuned {row['local_size']} x{row['gain']:.2f}"
    )
    if "bandwidth_fraction" in row:
        text += (
            f"  {row['gbps']:.1f} GB/s = {row['bandwidth_fraction']:.0%} of peak copy, "
            f"{row['roofline_fraction']:.0%} of a same-size copy"
        )
    if "vs_torch" in row:
        text += f"  torch {row['torch_gflops']:.1f} GFLOP/s ({row['vs_torch']:.2f}x)"
    return text


def markdown(result: dict[str, Any], header: str) -> str:
    """The measurements as markdown tables under ``header``."""
    bw = result["bandwidth"]
    lines = [
        header,
        "",
        f"Measured copy bandwidth (best of the rounds): buffer {bw['buffer_copy_Bps'] / 1e9:.1f}"
        f" GB/s ({bw['copy_bytes'] / 1e6:.0f} MB buffer: the peak)"
        + (
            f", RGBA float image {bw['image_copy_Bps'] / 1e9:.1f} GB/s"
            if "image_copy_Bps" in bw
            else ""
        )
        + ".",
        "",
        "| layer | shape (C x H x W) | kernel | variant | driver | tuned | local size "
        "| gain | GFLOP/s | GB/s | of peak copy | of same-size copy | torch GFLOP/s "
        "| vs torch |",
        "|---|---|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in result["rows"]:
        cells = [
            r["layer"],
            r["shape"],
            f"`{r['kernel']}`",
            r["variant"] or "—",
            f"{r['driver_ns'] / 1e3:.1f} µs",
            f"{r['tuned_ns'] / 1e3:.1f} µs",
            str(tuple(r["local_size"])) if r["local_size"] else "driver",
            f"{r['gain']:.2f}x",
            f"{r['gflops']:.1f}",
            f"{r['gbps']:.1f}",
            f"{r['bandwidth_fraction']:.0%}" if "bandwidth_fraction" in r else "",
            f"{r['roofline_fraction']:.0%}" if "roofline_fraction" in r else "",
            f"{r['torch_gflops']:.1f}" if "torch_gflops" in r else "",
            f"{r['vs_torch']:.2f}" if "vs_torch" in r else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| target | limit | value | verdict |", "|---|--:|--:|---|"]
    for name, t in result["summary"]["targets"].items():
        value = "—" if t["value"] is None else f"{t['value']:.2f}"
        verdict = {True: "met", False: "NOT met", None: "not measured"}[t["met"]]
        lines.append(f"| {name} | {t['limit']} | {value} | {verdict} |")
    lines += [""] + [f"* {line}" for line in goal_lines(result["summary"])]
    return "\n".join(lines) + "\n"


def goal_lines(summary: dict[str, Any]) -> list[str]:
    """The met / NOT met lines of issue 18's targets (:data:`.goals.GOALS`)."""
    slowest = summary["pointwise_slowest_layer"]
    return [
        GOALS["depthwise"].line(summary["depthwise_peak_bandwidth"]),
        GOALS["pointwise"].line(summary["pointwise_vs_torch"]),
        GOALS["pointwise_slowest"].line(
            summary["pointwise_slowest_vs_torch"], "" if slowest is None else slowest
        ),
    ]


def summary_rows(summary: dict[str, Any], batch: int) -> list[dict[str, Any]]:
    """The summary table's rows: depthwise and 1x1 medians, the slowest 1x1 shape."""
    rows = []
    if summary["depthwise_layers"]:
        rows.append(
            summary_row(
                f"depthwise 3x3, median of {summary['depthwise_layers']} MobileNetV2 "
                f"shapes, batch {batch}",
                of_buffer_copy=summary["depthwise_peak_bandwidth"],
                vs_torch=summary["depthwise_vs_torch"],
                goal="depthwise",
                value=summary["depthwise_peak_bandwidth"],
            )
        )
    if summary["pointwise_vs_torch"] is not None:  # without torch there is nothing to show
        median = f"median of {summary['pointwise_layers']} shapes"
        rows.append(
            summary_row(
                f"1x1 conv, {median}, batch {batch}",
                vs_torch=summary["pointwise_vs_torch"],
                goal="pointwise",
                value=summary["pointwise_vs_torch"],
            )
        )
    if summary["pointwise_slowest_layer"] is not None:
        rows.append(
            summary_row(
                f"1x1 conv, slowest shape ({summary['pointwise_slowest_layer']}), batch {batch}",
                vs_torch=summary["pointwise_slowest_vs_torch"],
                goal="pointwise_slowest",
                value=summary["pointwise_slowest_vs_torch"],
            )
        )
    return rows
