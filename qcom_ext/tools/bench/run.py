"""Run benchmark cases side by side: ``python -m qcom_ext.tools.bench.run [CASE|GROUP|SUITE ...]``.

Cases (and suites) come from ``qcom_ext/tools/bench/cases_*.py``. The cases of a group are timed
interleaved (each round times one batch of every case in turn), a batch repeating the
call until it takes at least ``--batch-ms``. Reported per call: median, min and
interquartile range over the rounds, and the ratio of the median to the group baseline's
median.

Cases that declare their ``work`` also get rates (GB/s, GFLOP/s, Mpix/s).

Suites (``conv-suite``, ``hof-suite``, ``bicubic-suite``) time themselves and write their
own tables; they run only when named, with their own options (``--help`` lists them).

``--device 1:0`` (or a name such as ``nvidia``) picks the device like ``PYOPENCL_CTX``;
``--json`` and ``--markdown`` write the results with a header of stamps (device,
driver, Python, qcom_ext, host CPU, date, and the command line); ``--compare old.json``
adds each case's speed-up over an earlier run; ``--update-doc docs/BENCHMARKS.md``
replaces (or appends) this device's block of those groups, and one block per suite, in a
markdown file (``--doc-key`` names the device's blocks; default: its label). Also
``qcom-ext bench``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import os
import pkgutil
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from dataclasses import replace as dataclasses_replace
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import qcom_ext
from qcom_ext import DeviceCaps, QcomExtError
from qcom_ext.tools.bench._case import Case, Suite, SuiteResult, Target, format_seconds, throughput

__all__ = [
    "BLOCK_END",
    "Report",
    "Result",
    "UnknownCaseError",
    "block_begin",
    "command_line",
    "compare",
    "discover",
    "discover_suites",
    "main",
    "measure",
    "replace_block",
    "select",
    "stamps",
    "update_doc",
    "write",
]

DEFAULT_ROUNDS = 15
DEFAULT_BATCH_S = 0.020
_MAX_LOOPS = 10_000_000
BLOCK_END = "<!-- /bench -->"
#: QCOM_EXT_* variables that do not change what is measured (kept out of the command stamp)
_MACHINE_ENV = frozenset({"QCOM_EXT_CACHE_DIR", "QCOM_EXT_TEST_DEVICES"})


class UnknownCaseError(ValueError):
    """Raised by :func:`select` for names that are neither a case nor a group."""

    def __init__(self, unknown: Sequence[str], known: Sequence[str]) -> None:
        self.unknown, self.known = list(unknown), list(known)
        super().__init__(
            f"unknown benchmark case or group: {', '.join(self.unknown)}; "
            f"known: {', '.join(self.known)}"
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


def _case_modules() -> list[Any]:
    package = importlib.import_module(__package__ or "qcom_ext.tools.bench")
    infos = sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)
    return [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for info in infos
        if info.name.startswith("cases_")
    ]


def discover() -> list[Case]:
    """Every case of every ``qcom_ext/tools/bench/cases_*.py`` module, in module order."""
    cases: list[Case] = []
    for module in _case_modules():
        cases += module.CASES
    _check(cases)
    return cases


def discover_suites(cases: Iterable[Case] = ()) -> list[Suite]:
    """The ``SUITES`` of every ``qcom_ext/tools/bench/cases_*.py`` module, in module order; their
    names must differ from each other and from the names and groups of ``cases``."""
    suites = [s for module in _case_modules() for s in getattr(module, "SUITES", [])]
    _check_suite_names(suites, cases)
    return suites


def _check_suite_names(suites: Sequence[Suite], cases: Iterable[Case]) -> None:
    names = [s.name for s in suites]
    taken = {c.name for c in cases} | {c.group for c in cases}
    clash = sorted({n for n in names if names.count(n) > 1} | (set(names) & taken))
    if clash:
        raise ValueError(f"suite names must be unique and differ from cases/groups: {clash}")


def _check(cases: Iterable[Case]) -> None:
    names: set[str] = set()
    baselines: dict[str, str] = {}
    for case in cases:
        if case.name in names:
            raise ValueError(f"two benchmark cases are named {case.name!r}")
        names.add(case.name)
        if case.baseline and baselines.setdefault(case.group, case.name) != case.name:
            raise ValueError(
                f"group {case.group!r} has two baselines: {baselines[case.group]}, {case.name}"
            )


def select(cases: Sequence[Case], wanted: Sequence[str]) -> list[Case]:
    """The cases named, or in a group named (all if none); each group keeps its baseline."""
    if not wanted:
        return list(cases)
    known = [c.name for c in cases] + sorted({c.group for c in cases})
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise UnknownCaseError(unknown, known)
    groups = {c.group for c in cases if c.name in wanted or c.group in wanted}
    return [c for c in cases if c.group in groups and (c.baseline or _chosen(c, wanted))]


def _chosen(case: Case, wanted: Sequence[str]) -> bool:
    return case.name in wanted or case.group in wanted


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
    ...              {"QCOM_EXT_HOF_SIZE": "640x360", "QCOM_EXT_CACHE_DIR": "/tmp/c"})
    'QCOM_EXT_HOF_SIZE=640x360 qcom-ext bench probe --device 0:0'
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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        for group, members in groups.items():
            steps = max(min(rounds, c.max_rounds or rounds) for c in members)
            task = progress.add_task(f"{group} ({len(members)} cases)", total=steps)
            results += _measure_group(
                members, caps, rounds, batch_ns, lambda t=task: progress.advance(t)
            )
    return Report(header=stamps(caps, command), results=results)


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


def replace_block(text: str, begin: str, body: str) -> str:
    """``text`` with the block opened by the line ``begin`` (closed by ``<!-- /bench -->``)
    holding ``body``; appended at the end when there is no such block.

    >>> doc = "intro\\n<!-- bench d g -->\\nold\\n<!-- /bench -->\\nafter\\n"
    >>> replace_block(doc, "<!-- bench d g -->", "new\\n")
    'intro\\n<!-- bench d g -->\\nnew\\n<!-- /bench -->\\nafter\\n'
    """
    block = f"{begin}\n{body.rstrip()}\n{BLOCK_END}\n"
    if begin not in text:
        return text.rstrip("\n") + ("\n\n" if text else "") + block
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
        text = replace_block(text, block_begin(key, [name]), f"{stamp}\n{suite.markdown}")
    path.write_text(text)


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
        Path(json_path).write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    if markdown_path is not None:
        Path(markdown_path).write_text(report.to_markdown())


def render(report: Report, console: Console) -> None:
    """The stamp line, the cases as a rich table, then each suite's markdown."""
    h = report.header
    console.print(
        f"[bold]{h['device_label']}[/] ({h['device_name']}) · {h['driver_version']}"
        f" · {h['python']} · qcom_ext {h['qcom_ext']} · {h['host_cpu']} · {h['date']}"
    )
    if report.results:
        console.print(_rich_table(report.results))
    for name, suite in report.suites.items():
        console.rule(name)
        console.print(suite.markdown, markup=False, highlight=False)


def _rich_table(results: list[Result]) -> Table:
    compared = any(r.speedup is not None for r in results)
    columns = ["group", "case", "median", "min", "IQR", "ratio", "rate"]
    columns += ["vs earlier"] if compared else []
    table = Table(show_edge=False, pad_edge=False)
    for column in [*columns, "target", "note"]:
        justify = "left" if column in ("group", "case", "target", "note") else "right"
        table.add_column(column, justify=justify, overflow="fold")
    for r in results:
        style = {True: "green", False: "bold red", None: "yellow"}[r.target_met]
        target = f"[{style}]{_target_text(r)}[/]" if r.target else ""
        cells = [
            r.group,
            r.name,
            format_seconds(r.median_s),
            format_seconds(r.min_s),
            format_seconds(r.iqr_s),
            _ratio_text(r),
            _rate_text(r),
        ]
        cells += [_speedup_text(r)] if compared else []
        table.add_row(*cells, target, r.note)
    return table


def _parser(prog: str, suites: Sequence[Suite]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Time qcom_ext cases side by side; run suites by name.",
        epilog="Suites: " + "; ".join(f"{s.name}: {s.note}" for s in suites),
    )
    parser.add_argument(
        "cases", nargs="*", metavar="NAME", help="case, group or suite names (all cases)"
    )
    parser.add_argument("--device", help="device like PYOPENCL_CTX: '1:0', 'nvidia'")
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help=f"rounds per group ({DEFAULT_ROUNDS}); timed launches of a suite (its default)",
    )
    parser.add_argument(
        "--batch-ms",
        type=float,
        default=DEFAULT_BATCH_S * 1e3,
        help="least time of one timed batch (ms)",
    )
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument("--markdown", type=Path, help="write the results as markdown")
    parser.add_argument("--compare", type=Path, help="an earlier --json: show speed-ups")
    parser.add_argument(
        "--update-doc",
        type=Path,
        help="replace this device's blocks (the cases' groups, each suite) in a markdown file",
    )
    parser.add_argument(
        "--doc-key", help="the device's name in --update-doc blocks (default: its label)"
    )
    parser.add_argument("--list", action="store_true", help="list the cases and suites, exit")
    for suite in suites:
        if suite.arguments is not None:
            suite.arguments(parser.add_argument_group(f"{suite.name} options"))
    return parser


def main(
    argv: Sequence[str] | None = None, prog: str = "python -m qcom_ext.tools.bench.run"
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cases = discover()
    suites = {s.name: s for s in discover_suites(cases)}
    parser = _parser(prog, list(suites.values()))
    args = parser.parse_args(argv)
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    earlier = None
    if args.compare is not None:
        try:
            earlier = json.loads(args.compare.read_text())
        except (OSError, ValueError) as exc:
            parser.error(f"--compare {args.compare}: {exc}")
    wanted_suites = [suites[n] for n in dict.fromkeys(args.cases) if n in suites]
    wanted = [n for n in args.cases if n not in suites]
    try:
        chosen = select(cases, wanted) if wanted or not wanted_suites else []
    except UnknownCaseError as exc:
        parser.error(str(UnknownCaseError(exc.unknown, exc.known + list(suites))))
    console = Console() if sys.stdout.isatty() else Console(width=160)
    if args.list:
        for case in chosen:
            mark = " (baseline)" if case.baseline else ""
            console.print(f"{case.group:<12} {case.name}{mark}  [dim]{case.note}[/]")
        for suite in wanted_suites or (suites.values() if not args.cases else []):
            console.print(f"{'suite':<12} {suite.name}  [dim]{suite.note}[/]")
        return 0
    command = command_line(prog, argv)
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    try:
        caps = qcom_ext.probe()
    except QcomExtError as exc:
        parser.exit(1, f"benchmarks: no device to run on: {exc}\n")
    rounds = args.rounds or DEFAULT_ROUNDS
    report = measure(chosen, caps, rounds, args.batch_ms / 1e3, Console(stderr=True), command)
    if wanted_suites:
        results = {s.name: s.run(caps, args) for s in wanted_suites}
        report = dataclasses_replace(report, suites=results)
    if earlier is not None:
        try:
            report = compare(report, earlier)
        except ValueError as exc:
            parser.error(f"--compare {args.compare}: {exc}")
    render(report, console)
    write(report, json_path=args.json, markdown_path=args.markdown)
    if args.update_doc is not None:
        update_doc(report, args.update_doc, args.doc_key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
