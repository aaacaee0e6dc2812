"""What a benchmark run reports and where it goes: :class:`Result` per case, the
:class:`Report` with its stamps (device, driver, Python, qcom_ext, host CPU, date, command),
``--compare`` speed-ups, JSON / markdown files, the ``--update-doc`` blocks of a markdown
page and the console table (examples: :func:`compare`, :func:`command_line`,
:func:`replace_block`).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from dataclasses import replace as dataclasses_replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

import qcom_ext
from qcom_ext import DeviceCaps
from qcom_ext.tools._output import write_text
from qcom_ext.tools._table import Column, Row, print_table
from qcom_ext.tools.bench._case import UNITS, SuiteResult, format_seconds

if TYPE_CHECKING:  # the runner measures it (pyopencl); the report only reads it
    from qcom_ext.tools.bench._profiling import CopyBandwidth

__all__ = [
    "BLOCK_END",
    "SUMMARY",
    "SUMMARY_SECTION",
    "Report",
    "Result",
    "block_begin",
    "case_summary_rows",
    "command_line",
    "compare",
    "render",
    "replace_block",
    "stamps",
    "summary_row",
    "summary_rows",
    "summary_table",
    "update_doc",
    "with_summary",
    "write",
]

BLOCK_END = "<!-- /bench -->"
#: the summary table's name (its block: ``<!-- bench KEY summary -->``)
SUMMARY = "summary"
#: the heading a new summary block goes under (before its first subsection) in a page
SUMMARY_SECTION = "## Summary"
#: QCOM_EXT_* variables that do not change what is measured (kept out of the command stamp)
# Variables that say where things are or how the test suite runs, not what is measured.
_MACHINE_ENV = frozenset(
    {
        "QCOM_EXT_CACHE_DIR",
        "QCOM_EXT_TEST_DEVICES",
        "QCOM_EXT_TEST_BUDGET_S",
        "QCOM_EXT_LEAK_CYCLES",
        "QCOM_EXT_FUZZ_EXAMPLES",
        "QCOM_EXT_FUZZ_REPORT",
    }
)


@dataclass(frozen=True)
class Result:
    """The measurement of one case; times are seconds per call."""

    name: str
    group: str
    baseline: bool
    note: str
    rounds: int
    loops: int
    median_s: float
    min_s: float
    iqr_s: float
    ratio: float | None
    target: str | None
    target_met: bool | None
    throughput: dict[str, float] = field(default_factory=dict)
    speedup: float | None = None  # earlier run's median / this median (--compare)


@dataclass(frozen=True)
class Report:
    """Stamps of where, when and how; one :class:`Result` per case; the suites' results."""

    header: dict[str, Any]
    results: list[Result]
    suites: dict[str, SuiteResult] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        suites = {name: dict(s.data) for name, s in self.suites.items()}
        return {"header": self.header, "results": [asdict(r) for r in self.results]} | (
            {"suites": suites} if suites else {}
        )

    def to_markdown(self) -> str:
        """The stamp, the cases' table, then each suite's tables under its name."""
        parts = [_stamp(self.header)]
        if self.results:
            parts.append(self.table())
        for name, suite in self.suites.items():
            parts.append(f"### `{name}`\n\n{suite.markdown.rstrip()}\n")
        return "\n".join(parts)

    def table(self) -> str:
        """``group | case | median | min | IQR | ratio | rate | note`` of the cases."""
        compared = any(r.speedup is not None for r in self.results)
        head = "| group | case | median | min | IQR | ratio | rate |"
        rule = "|---|---|--:|--:|--:|--:|--:|"
        if compared:
            head, rule = head + " vs earlier |", rule + "--:|"
        lines = [head + " note |", rule + "---|"]
        for r in self.results:
            cells: tuple[str, ...] = (
                r.group,
                f"`{r.name}`",
                format_seconds(r.median_s),
                format_seconds(r.min_s),
                format_seconds(r.iqr_s),
                _ratio_text(r),
                _rate_text(r),
            )
            if compared:
                cells += (_speedup_text(r),)
            cells += (_note_text(r),)
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(lines) + "\n"


def _host_cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def stamps(caps: DeviceCaps, command: str | None = None) -> dict[str, Any]:
    """Where, when and how: device, driver, Python, qcom_ext, host CPU, date, command."""
    return {
        "device_label": caps.label,
        "device_name": caps.device_name.strip(),
        "driver_version": caps.driver_version,
        "platform_version": caps.platform_version,
        "opencl_c_version": caps.opencl_c_version,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "qcom_ext": qcom_ext.__version__,
        "host_cpu": _host_cpu(),
        "host_cpus": os.cpu_count(),
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": command,
    }


def command_line(prog: str, argv: Sequence[str], environ: dict[str, str] | None = None) -> str:
    """The shell command that reproduces a run: the ``QCOM_EXT_*`` variables that change
    what is measured (and ``PYOPENCL_CTX`` when ``--device`` is not given), then the
    program and its arguments.

    >>> command_line("qcom-ext bench", ["probe", "--device", "0:0"],
    ...              {"QCOM_EXT_BENCH_BICUBIC_SIZE": "640x360", "QCOM_EXT_CACHE_DIR": "/tmp/c"})
    'QCOM_EXT_BENCH_BICUBIC_SIZE=640x360 qcom-ext bench probe --device 0:0'
    """
    environ = dict(os.environ if environ is None else environ)
    names = [k for k in environ if k.startswith("QCOM_EXT_") and k not in _MACHINE_ENV]
    if "PYOPENCL_CTX" in environ and not any(a.startswith("--device") for a in argv):
        names.append("PYOPENCL_CTX")
    env = [f"{k}={shlex.quote(environ[k])}" for k in sorted(names)]
    return " ".join([*env, prog, *(shlex.quote(a) for a in argv)])


def _stamp(h: dict[str, Any]) -> str:
    """The stamp line (device label, driver, ..., date) and, when known, the command."""
    line = (
        f"**{h['device_label']}** ({h['device_name']}) · driver {h['driver_version']} · "
        f"platform {h['platform_version']} · {h['opencl_c_version']} · {h['python']} · "
        f"qcom_ext {h['qcom_ext']} · host {h['host_cpu']} ({h['host_cpus']} CPUs) · "
        f"{h['date']}\n"
    )
    return line + (f"\nCommand: `{h['command']}`\n" if h.get("command") else "")


def compare(report: Report, earlier: dict[str, Any]) -> Report:
    """``report`` with each case's speed-up over the same case in ``earlier`` (JSON dict).

    >>> old = {"results": [{"name": "a", "median_s": 2.0}]}
    >>> r = Result("a", "g", True, "", 1, 1, 1.0, 1.0, 0.0, 1.0, None, None)
    >>> compare(Report({}, [r]), old).results[0].speedup
    2.0
    """
    try:
        before = {r["name"]: float(r["median_s"]) for r in earlier["results"]}
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"not a benchmark JSON report (need results[].name/median_s): {exc}"
        ) from exc
    results = [
        dataclasses_replace(r, speedup=before[r.name] / r.median_s if r.name in before else None)
        for r in report.results
    ]
    return dataclasses_replace(report, results=results)


def replace_block(text: str, begin: str, body: str, section: str | None = None) -> str:
    """``text`` with the block opened by the line ``begin`` (closed by ``<!-- /bench -->``)
    holding ``body``; a new block goes at the end of the ``section``'s (a ``##`` heading
    line) own text, before its first ``###`` subsection, if the text has that heading;
    else at the end.

    >>> doc = "intro\\n<!-- bench d g -->\\nold\\n<!-- /bench -->\\nafter\\n"
    >>> replace_block(doc, "<!-- bench d g -->", "new\\n")
    'intro\\n<!-- bench d g -->\\nnew\\n<!-- /bench -->\\nafter\\n'
    >>> replace_block("## A\\n\\na\\n\\n### A1\\n", "<!-- bench e g -->", "x", "## A")
    '## A\\n\\na\\n\\n<!-- bench e g -->\\nx\\n<!-- /bench -->\\n\\n### A1\\n'
    """
    block = f"{begin}\n{body.rstrip()}\n{BLOCK_END}\n"
    if begin not in text:
        heading = None if section is None else re.search(f"^{re.escape(section)}$", text, re.M)
        if heading is None:
            return text.rstrip("\n") + ("\n\n" if text else "") + block
        following = re.compile(r"^##+ ", re.M).search(text, heading.end())
        end = len(text) if following is None else following.start()
        head = text[:end].rstrip("\n")
        return head + "\n\n" + block + ("\n" + text[end:] if following else "")
    start = text.index(begin)
    end = text.find(BLOCK_END, start)
    if end < 0:
        raise ValueError(f"the block {begin!r} has no closing {BLOCK_END}")
    end += len(BLOCK_END)
    if text.startswith("\n", end):
        end += 1
    return text[:start] + block + text[end:]


def block_begin(key: str, names: Iterable[str]) -> str:
    """``<!-- bench <key> <names> -->``: key is the device's (its label by default)."""
    return f"<!-- bench {key} {','.join(sorted(names))} -->"


def update_doc(report: Report, path: Path, key: str | None = None) -> None:
    """Replace this device's block for these groups in markdown file ``path`` (or append
    it), and one block per suite. Each block holds the stamp (device label, driver, ...,
    date, command) and the tables. ``key`` names the device (default: its label).
    """
    key = key or report.header["device_label"]
    text = path.read_text() if path.exists() else ""
    stamp = _stamp(report.header)
    if report.results:
        groups = {r.group for r in report.results}
        text = replace_block(text, block_begin(key, groups), f"{stamp}\n{report.table()}")
    for name, suite in report.suites.items():
        section = SUMMARY_SECTION if name == SUMMARY else None
        body = f"{stamp}\n{suite.markdown}"
        text = replace_block(text, block_begin(key, [name]), body, section)
    write_text(path, text, "--update-doc")


def summary_row(
    op: str,
    *,
    seconds: float | None = None,
    of_buffer_copy: float | None = None,
    of_image_copy: float | None = None,
    vs_torch: float | None = None,
    target: str = "",
) -> dict[str, Any]:
    """One row of the summary table (:func:`summary_table`): ``op`` took ``seconds`` (None:
    a median over shapes), reached ``of_buffer_copy`` of the same run's buffer copy (and
    ``of_image_copy`` of its image copy), ran ``vs_torch`` times torch's speed (the lab's),
    against ``target`` (the lab's ``goals.summary_row`` words it).

    >>> summary_row("GEMV f16", seconds=1e-3, of_buffer_copy=0.5)["vs_torch"] is None
    True
    """
    return {
        "op": op,
        "seconds": seconds,
        "of_buffer_copy": of_buffer_copy,
        "of_image_copy": of_image_copy,
        "vs_torch": vs_torch,
        "target": target,
    }


def case_summary_rows(results: Iterable[Result], copy: CopyBandwidth | None) -> list[dict]:
    """A summary row per runner-timed case: its median, and where the case declares the
    bytes it moves (its GB/s), their share of ``copy``, the buffer copy of the same run.

    >>> r = Result("a", "g", True, "", 1, 1, 1e-3, 1e-3, 0.0, 1.0, None, None, {"GB/s": 5.0})
    >>> from qcom_ext.tools.bench._profiling import CopyBandwidth
    >>> copy = CopyBandwidth(buffer_Bps=10e9, buffer_bytes=1 << 26, rounds=3)
    >>> case_summary_rows([r], copy)[0]["of_buffer_copy"]
    0.5
    """
    rows = []
    for r in results:
        rate = r.throughput.get(UNITS["bytes"][0])
        share = None
        if rate is not None and copy is not None:
            share = copy.fraction(rate * UNITS["bytes"][1] * r.median_s, r.median_s)
        rows.append(summary_row(f"{r.group}: {r.name}", seconds=r.median_s, of_buffer_copy=share))
    return rows


#: The summary's columns: (heading, markdown alignment, the row's key, its cell); the last
#: three (the lab's image copy, torch and targets) are shown where some row has a value in
#: one of them.
_SUMMARY_COLUMNS = (
    ("op", "---", "op", str),
    ("time", "--:", "seconds", format_seconds),
    ("of buffer copy", "--:", "of_buffer_copy", lambda v: f"{v:.2f}"),
    ("of image copy", "--:", "of_image_copy", lambda v: f"{v:.2f}"),
    ("vs torch", "--:", "vs_torch", lambda v: f"{v:.2f}x"),
    ("target", "---", "target", str),
)


def summary_rows(report: Report) -> list[dict[str, Any]]:
    """The summary's rows: its own (:func:`with_summary` put them there), else every
    suite's ``summary_rows``."""
    if SUMMARY in report.suites:
        return list(report.suites[SUMMARY].data["rows"])
    return [r for s in report.suites.values() for r in s.data.get("summary_rows", [])]


def summary_table(report: Report, rows: Sequence[dict[str, Any]] | None = None) -> str:
    """One markdown table of ``rows`` (default: :func:`summary_rows`, made by
    :func:`summary_row`): op, time (— for a median over shapes), share of the buffer
    copy's bandwidth (the roofline) and, where the lab's rows supply any of them, the
    share of the image copy's, torch's time over qcom_ext's, the target and its verdict;
    then device, driver, date.

    >>> rows = [summary_row("box", seconds=1.6e-4, of_buffer_copy=0.58, vs_torch=5.5,
    ...                     target=">= 0.85 of buffer copy: NOT met")]
    >>> header = {"device_label": "gpu", "driver_version": "1.0", "date": "2026-11-26T01:00"}
    >>> print(summary_table(Report(header, [], {"s": SuiteResult("", {"summary_rows": rows})})))
    | op | time | of buffer copy | of image copy | vs torch | target | device | driver | date |
    |---|--:|--:|--:|--:|---|---|---|---|
    | box | 160 µs | 0.58 | — | 5.50x | >= 0.85 of buffer copy: NOT met | gpu | 1.0 | 2026-11-26 |
    <BLANKLINE>
    """
    rows = summary_rows(report) if rows is None else rows
    h = report.header
    where = (h["device_label"], h["driver_version"], str(h["date"])[:10])
    columns = _summary_columns(rows)
    lines = [
        "| " + " | ".join([*(c[0] for c in columns), "device", "driver", "date"]) + " |",
        "|" + "|".join([*(c[1] for c in columns), "---", "---", "---"]) + "|",
    ]
    for r in rows:
        cells = [_cell(r.get(key), text) for _, _, key, text in columns]
        cells = [c.replace("|", "\\|") for c in (*cells, *where)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _summary_columns(rows: Sequence[dict[str, Any]]) -> tuple[tuple, ...]:
    """The :data:`_SUMMARY_COLUMNS` shown for ``rows``: all of them where some row has a
    value in the lab's (image copy, torch, target: the lab's table keeps its layout), else
    the first three."""
    lab = any(_given(r.get(c[2])) for r in rows for c in _SUMMARY_COLUMNS[3:])
    return _SUMMARY_COLUMNS if lab else _SUMMARY_COLUMNS[:3]


def _given(value: Any) -> bool:
    return value is not None and value != ""


def _cell(value: Any, text: Any) -> str:
    return text(value) if _given(value) else "—"


def with_summary(report: Report, copy: CopyBandwidth | None = None) -> Report:
    """``report`` with the summary table (:func:`summary_table`) first among its suites'
    results, under :data:`SUMMARY`: a row per runner-timed case (its share of ``copy``,
    the buffer copy measured in the same run, where it moves bytes:
    :func:`case_summary_rows`), then each suite's rows. Its data: the rows, ``copy`` and
    the line that states it (``roofline``), above the table."""
    rows = case_summary_rows(report.results, copy) + summary_rows(report)
    data: dict[str, Any] = {"rows": rows}
    text = summary_table(report, rows)
    if copy is not None:
        data |= copy.as_dict() | {"roofline": f"{copy.describe()}, measured in this run"}
        text = f"{data['roofline']}\n\n{text}"
    table = SuiteResult(text, data)
    return dataclasses_replace(report, suites={SUMMARY: table, **report.suites})


def _ratio_text(r: Result) -> str:
    if r.ratio is None:
        return "—"
    text = f"{r.ratio:.2f}" if r.ratio >= 0.1 else f"{r.ratio:.2g}"
    return f"{text} (baseline)" if r.baseline else text


def _rate_text(r: Result) -> str:
    return ", ".join(f"{v:.3g} {unit}" for unit, v in r.throughput.items()) or "—"


def _speedup_text(r: Result) -> str:
    return "—" if r.speedup is None else f"{r.speedup:.2f}x"


def _target_text(r: Result) -> str:
    if r.target is None:
        return ""
    verdict = {True: "met", False: "NOT met", None: "no baseline"}[r.target_met]
    return f"target {r.target}: {verdict}"


def _note_text(r: Result) -> str:
    return "; ".join(part for part in (r.note, _target_text(r)) if part)


def write(
    report: Report, json_path: Path | None = None, markdown_path: Path | None = None
) -> None:
    """Write the report as JSON and/or markdown."""
    if json_path is not None:
        write_text(json_path, json.dumps(report.to_dict(), indent=2) + "\n", "--json")
    if markdown_path is not None:
        write_text(markdown_path, report.to_markdown(), "--markdown")


def render(report: Report, console: Console) -> None:
    """The stamp line, the cases' table, the summary's rows, then each other suite's
    markdown; the tables fit the console's width (:mod:`qcom_ext.tools._table`)."""
    h = report.header
    console.print(
        f"[bold]{h['device_label']}[/] ({h['device_name']}) · {h['driver_version']}"
        f" · {h['python']} · qcom_ext {h['qcom_ext']} · {h['host_cpu']} · {h['date']}"
    )
    if report.results:
        _print_cases(report.results, console)
    for name, suite in report.suites.items():
        console.rule(name)
        if name == SUMMARY:
            _print_summary(report, console)
        else:
            console.print(suite.markdown, markup=False, highlight=False, soft_wrap=True)


def _print_cases(results: list[Result], console: Console) -> None:
    """A row per case (the group above its cases when the row is too wide), its target's
    verdict and note under it when they do not fit at its end."""
    compared = any(r.speedup is not None for r in results)
    columns = [Column("group"), Column("case")]
    columns += [Column(c, right=True) for c in ("median", "min", "IQR", "ratio", "rate")]
    columns += [Column("vs earlier", right=True)] if compared else []
    rows, group = [], None
    for r in results:
        style = {True: "green", False: "bold red", None: "yellow"}[r.target_met]
        note = Text(_target_text(r), style=style) if r.target else Text()
        if r.note:
            note.append(("; " if r.target else "") + r.note)
        cells = [
            r.group if r.group != group else "",
            r.name,
            format_seconds(r.median_s),
            format_seconds(r.min_s),
            format_seconds(r.iqr_s),
            _ratio_text(r),
            _rate_text(r),
        ]
        cells += [_speedup_text(r)] if compared else []
        rows.append(Row(cells, note))
        group = r.group
    print_table(console, columns, rows, note_header="target; note")


def _print_summary(report: Report, console: Console) -> None:
    """The summary's rows (:func:`summary_table`'s, less the device stamps the first
    line gives): op, time and shares (the lab's image copy and torch columns where its
    rows have them), the target and its verdict under the row when it does not fit."""
    if roofline := report.suites[SUMMARY].data.get("roofline"):
        console.print(roofline, markup=False, highlight=False)
    found = summary_rows(report)
    shown = [c for c in _summary_columns(found) if c[2] != "target"]
    columns = [Column(heading, right=align == "--:") for heading, align, _, _ in shown]
    rows = [
        Row([_cell(r.get(key), text) for _, _, key, text in shown], r.get("target") or "")
        for r in found
    ]
    print_table(console, columns, rows, note_header="target")
