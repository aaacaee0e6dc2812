"""The selftest report as rich tables (``qcom-ext selftest`` without ``--json``)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.text import Text

from qcom_ext.device.quirks import Quirk
from qcom_ext.tools._output import console as _console
from qcom_ext.tools._table import Column, Row, print_facts, print_table, print_wrapped
from qcom_ext.tools.selftest._report import ExtensionReport, PathRun, SelftestReport

__all__ = ["render"]

_OUTCOME = {
    "pass": "[green]pass[/]",
    "fail": "[bold red]FAIL[/]",
    "skipped": "[yellow]skipped[/]",
    "unavailable": "[dim]unavailable[/]",
    "unchecked": "[dim]unchecked[/]",
}


def _number(value: float) -> str:
    return f"{value:.3g}"


def _run_row(item: ExtensionReport, run: PathRun) -> tuple[str, str, str, str, str]:
    if run.error:
        return run.path, _OUTCOME["fail"], "", "", escape(run.error)
    if run.skipped:
        return run.path, _OUTCOME["skipped"], "", "", escape(run.skipped)
    failed = [c for c in run.cases if not c.ok]
    ran = [c for c in run.cases if not c.skipped]
    verdict = _OUTCOME["fail"] if failed else _OUTCOME["pass"]
    notes = [f"{len(ran)} case{'s' * (len(ran) != 1)}"]
    moved = sorted({c.ran_as for c in run.cases if c.ran_as})
    if moved:
        notes.append(f"the library took {', '.join(moved)}")
    for comparison in item.comparisons:
        if comparison.paths[1] == run.path:
            gap = _number(comparison.max_difference)
            if comparison.ok:
                notes.append(f"same as {comparison.paths[0]} (max diff {gap})")
            else:
                notes.append(
                    f"[bold red]differs from {comparison.paths[0]}[/] by {gap} "
                    f"({escape(comparison.case)})"
                )
    return run.path, verdict, _number(run.max_error), f"{run.time_ms:.1f}", "; ".join(notes)


_COLUMNS = (
    Column("extension"),
    Column("path"),
    Column("result"),
    Column("max error", right=True),
    Column("ms", right=True),
)


def _rows(report: SelftestReport) -> list[Row]:
    """One row per extension and path (the extension named on its first), its notes."""
    rows = []
    for item in report.extensions:
        name = item.extension
        if item.unchecked:
            unchecked = Text.from_markup(_OUTCOME["unchecked"])
            rows.append(Row((name, item.path, unchecked, "", ""), item.unchecked))
            continue
        cells = []
        for run in item.runs:
            row = _run_row(item, run)
            if run.path == "unavailable" and run.ok:  # the refusal was checked
                why = f": {escape(item.reason)}" if item.path == "unavailable" else ""
                row = (*row[:4], f"refused, as it must be where it has no path{why}")
            cells.append(row)
        if not item.runs:
            cells.append(("unavailable", _OUTCOME["unavailable"], "", "", escape(item.reason)))
        cells += [
            (f"[dim]{path}[/]", "[dim]not run[/]", "", "", f"[dim]{escape(why)}[/]")
            for path, why in item.skipped
            if not (path == "fallback" and item.path == "unavailable")
        ]  # in the reason
        for index, (*row, note) in enumerate(cells):
            marked = [Text.from_markup(cell) for cell in row]
            rows.append(Row((name if index == 0 else "", *marked), Text.from_markup(note)))
    return rows


def _failures(report: SelftestReport) -> list[str]:
    lines = []
    for item in report.extensions:
        for run in item.runs:
            if run.error:
                lines.append(f"{item.extension} [{run.path}]: {run.error}")
            for result in run.cases:
                if result.ok:
                    continue
                detail = result.error or (
                    f"max error {_number(result.max_error)} > tolerance "
                    f"{_number(result.tolerance)}; {result.mismatch}"
                )
                lines.append(f"{item.extension} [{run.path}] {result.name}: {detail}")
        for comparison in item.comparisons:
            if not comparison.ok:
                first, second = comparison.paths
                gap, bound = _number(comparison.max_difference), _number(comparison.tolerance)
                lines.append(
                    f"{item.extension} {first} vs {second} {comparison.case}: differ "
                    f"by {gap} > {bound}; {comparison.mismatch}"
                )
    return lines


def _quirk_line(quirk: Quirk) -> str:
    """One line per known quirk of the device: id, effect, source."""
    return (
        f"[yellow]quirk:[/] {escape(quirk.id)}: {escape(quirk.effect)} "
        f"[dim]({escape(quirk.source)})[/]"
    )


def render(report: SelftestReport, console: Any = None) -> None:
    """Print the report: device strings, one row per extension and path, the failures."""
    console = console or _console()
    device = report.device
    console.rule(f"[bold]qcom-ext selftest[/] {escape(device.label)} — {escape(device.device)}")
    facts = [
        ("platform", f"{device.platform} ({device.platform_version})"),
        ("device version", device.device_version),
        ("driver", device.driver),
        ("OpenCL C", device.opencl_c_version),
    ]
    if device.adreno_model:
        facts.append(("Adreno", f"{device.adreno_model} (compiler {device.adreno_compiler})"))
    facts.append(("seed", str(report.seed)))
    if report.disabled:
        facts.append(("QCOM_EXT_DISABLE", ", ".join(report.disabled)))
    print_facts(console, [(key, str(value)) for key, value in facts])
    for problem in report.problems:
        console.print(f"[red]probe problem:[/] {escape(problem)}")
    if report.build_problem:
        console.print(
            f"[bold red]the device builds no program:[/] {escape(report.build_problem)} "
            "(the checks that build kernels are skipped)"
        )
    for quirk in report.quirks:
        print_wrapped(console, Text.from_markup(_quirk_line(quirk)))
    for name, verdict in report.verdicts.items():
        if verdict["outcome"] != "ok":
            console.print(
                f"[red]trial {verdict['outcome']}:[/] {escape(name)}: "
                f"{escape(verdict['detail'])} (downgraded)"
            )
    print_table(console, _COLUMNS, _rows(report))
    failures = _failures(report)
    if failures:
        console.print("[bold red]failures[/]")
        for line in failures:
            console.print(f"  {escape(line)}")
    counts = ", ".join(f"{n} {what}" for what, n in report.counts().items() if n)
    verdict = "[bold green]OK[/]" if report.ok else "[bold red]FAILED[/]"
    console.print(f"{verdict} ({counts})")
