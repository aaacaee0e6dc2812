"""Run benchmark cases side by side: ``python -m qcom_ext.tools.bench.run [CASE|GROUP|SUITE ...]``.

Cases (and suites) come from ``qcom_ext/tools/bench/cases_*.py`` (the on-device cases the
wheel ships); the checkout's ``benchmarks/`` lab runs this same runner over its own
``cases_*.py`` too (``python -m benchmarks``: the suites, torch and OpenCV beside qcom_ext,
the kernel profiles). The cases of a group are timed
interleaved (each round times one batch of every case in turn), a batch repeating the
call until it takes at least ``--batch-ms``. Reported per call: median, min and
interquartile range over the rounds, and the ratio of the median to the group baseline's
median.

Cases that declare their ``work`` also get rates (GB/s, GFLOP/s, Mpix/s).

Suites time themselves and write their own tables: the wheel's ``ops-suite``
(:mod:`.cases_ops`: qcom_ext.ops' GEMV and a conv layer against the same run's buffer
copy) runs by default, like the cases; the lab's (``conv-suite``, ``accelerated-suite``,
``bicubic-suite``, ...) run only when named (or by a former name, a suite's ``aliases``),
with their own options (``--help`` lists them). ``--summary`` adds one table of what ran
(:func:`.report.with_summary`): a row per case (its median and, where it declares the
bytes it moves, their share of a buffer copy measured in the same run) and the suites'
rows (op, time, share of the buffer copy; the lab's add the image copy, the ratio to torch
and the target), with device, driver and date, first in the output and, with
``--update-doc``, in its own block under the page's "## Summary" heading.

``--device 1:0`` (or a name such as ``nvidia``, or a device label such as ``pocl-3.1-cpu``)
picks the device like ``PYOPENCL_CTX``;
``--json`` and ``--markdown`` write the results with a header of stamps (device,
driver, Python, qcom_ext, host CPU, date, and the command line); ``--compare old.json``
adds each case's speed-up over an earlier run; ``--update-doc docs/BENCHMARKS.md``
replaces (or appends) this device's block of those groups, and one block per suite, in a
markdown file (``--doc-key`` names the device's blocks; default: its label). Also
``qcom-ext bench``. The timing is :mod:`.timing`'s, the report and its files
:mod:`.report`'s; this module finds the cases and suites and reads the command line.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace as dataclasses_replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

import qcom_ext
from qcom_ext import QcomExtError
from qcom_ext._cache_dir import parse_json
from qcom_ext.device.choice import device_from_spec, pyopencl_ctx
from qcom_ext.tools._output import check_writable, terminal_safe
from qcom_ext.tools._output import console as _console
from qcom_ext.tools._table import Column, Row, print_table
from qcom_ext.tools.bench._case import Case, Suite
from qcom_ext.tools.bench._profiling import measure_copy, profiling_queue
from qcom_ext.tools.bench.report import (
    BLOCK_END,
    Report,
    Result,
    block_begin,
    command_line,
    compare,
    render,
    replace_block,
    stamps,
    update_doc,
    with_summary,
    write,
)
from qcom_ext.tools.bench.timing import DEFAULT_BATCH_S, DEFAULT_ROUNDS, measure

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
    "suites_by_name",
    "update_doc",
    "write",
]


class UnknownCaseError(ValueError):
    """Raised by :func:`select` for names that are neither a case nor a group."""

    def __init__(self, unknown: Sequence[str], known: Sequence[str]) -> None:
        self.unknown, self.known = list(unknown), list(known)
        super().__init__(
            f"unknown benchmark case or group: {', '.join(self.unknown)}; "
            f"known: {', '.join(self.known)}"
        )


#: The packages whose ``cases_*.py`` modules ``qcom-ext bench`` runs: the on-device cases
#: the wheel ships. The checkout's lab (``python -m benchmarks``) adds its own package.
PACKAGES = ("qcom_ext.tools.bench",)


def _case_modules(packages: Sequence[str] = PACKAGES) -> list[Any]:
    modules = []
    for name in packages:
        package = importlib.import_module(name)
        infos = sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)
        modules += [
            importlib.import_module(f"{name}.{info.name}")
            for info in infos
            if info.name.startswith("cases_")
        ]
    return modules


def discover(packages: Sequence[str] = PACKAGES) -> list[Case]:
    """Every case of every ``cases_*.py`` module of ``packages``, in package and module
    order."""
    cases: list[Case] = []
    for module in _case_modules(packages):
        cases += module.CASES
    _check(cases)
    return cases


def discover_suites(cases: Iterable[Case] = (), packages: Sequence[str] = PACKAGES) -> list[Suite]:
    """The ``SUITES`` of every ``cases_*.py`` module of ``packages``, in module order; their
    names must differ from each other and from the names and groups of ``cases``."""
    suites = [s for module in _case_modules(packages) for s in getattr(module, "SUITES", [])]
    _check_suite_names(suites, cases)
    return suites


def _check_suite_names(suites: Sequence[Suite], cases: Iterable[Case]) -> None:
    names = [n for s in suites for n in (s.name, *s.aliases)]
    taken = {c.name for c in cases} | {c.group for c in cases}
    clash = sorted({n for n in names if names.count(n) > 1} | (set(names) & taken))
    if clash:
        raise ValueError(f"suite names must be unique and differ from cases/groups: {clash}")


def suites_by_name(suites: Iterable[Suite]) -> dict[str, Suite]:
    """Each suite under its name and its aliases (former names).

    >>> from qcom_ext.tools.bench._case import Suite
    >>> sorted(suites_by_name([Suite("new-suite", "", print, aliases=("old-suite",))]))
    ['new-suite', 'old-suite']
    """
    return {n: s for s in suites for n in (s.name, *s.aliases)}


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


def _also(suite: Suite) -> str:
    return f" (also {', '.join(suite.aliases)})" if suite.aliases else ""


def _default(suite: Suite) -> str:
    return " (runs by default)" if suite.default else ""


#: The end of ``qcom-ext bench``'s epilog: where the lab's suites are.
_NO_SUITES = (
    "The lab's suites (qcom_ext's ops against torch and OpenCV, issue 18's targets; kernel "
    "profiles) are in a checkout: python -m benchmarks --help."
)


def _parser(prog: str, suites: Sequence[Suite], lab: bool = False) -> argparse.ArgumentParser:
    listed = "; ".join(f"{s.name}{_also(s)}{_default(s)}: {s.note}" for s in suites)
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Time qcom_ext cases side by side; run suites by name.",
        epilog=" ".join(
            ([f"Suites: {listed}."] if suites else []) + ([] if lab else [_NO_SUITES])
        ),
    )
    parser.add_argument(
        "cases", nargs="*", metavar="NAME", help="case, group or suite names (all cases)"
    )
    parser.add_argument(
        "--device", help="device label ('pocl-3.1-cpu') or like PYOPENCL_CTX: '1:0', 'nvidia'"
    )
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
    parser.add_argument(
        "--summary",
        action="store_true",
        help="also write one table of what ran: op or case, time, share of the buffer "
        "copy measured in the same run (where the bytes are known), the lab's ratio to "
        "torch and target, device, driver, date (block KEY summary)",
    )
    parser.add_argument("--list", action="store_true", help="list the cases and suites, exit")
    for suite in suites:
        if suite.arguments is not None:
            suite.arguments(parser.add_argument_group(f"{suite.name} options"))
    return parser


def _list(console: Console, chosen: Sequence[Case], suites: Iterable[Suite]) -> int:
    rows, group = [], None
    for case in chosen:
        mark = " (baseline)" if case.baseline else ""
        name = case.group if case.group != group else ""
        rows.append(Row((name, case.name + mark), Text(case.note, style="dim")))
        group = case.group
    for index, suite in enumerate(suites):
        name = "suite" if index == 0 else ""
        rows.append(Row((name, suite.name), Text(suite.note, style="dim")))
    print_table(console, (Column("group"), Column("name")), rows, note_header="what")
    return 0


_COMPARE_MAX_BYTES = 64 << 20  # a report of every case and suite is well under 1 MiB
_COMPARE_MAX_DEPTH = 64  # a report nests 6 deep; json's recursion ends near 1000


def _earlier(parser: argparse.ArgumentParser, path: Path | None) -> dict[str, Any] | None:
    """The ``--compare`` JSON report (None without the option)."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        parser.error(f"--compare {path}: {exc.strerror or exc}")
    earlier = parse_json(data, max_bytes=_COMPARE_MAX_BYTES, max_depth=_COMPARE_MAX_DEPTH)
    if not isinstance(earlier, dict):
        parser.error(
            f"--compare {path}: not a benchmark JSON report (a UTF-8 JSON object of at most "
            f"{_COMPARE_MAX_BYTES >> 20} MiB, nested at most {_COMPARE_MAX_DEPTH} deep, "
            "finite numbers)"
        )
    return earlier


def _with_suites(
    report: Report, caps: Any, args: argparse.Namespace, suites: Sequence[Suite], rounds: int
) -> Report:
    """``report`` with the results of ``suites`` and, with ``--summary``, the summary
    (:func:`.report.with_summary`). Its roofline is one buffer copy of this run, measured
    for the cases and the default suites (``options.same_run_copy``); the lab's suites
    measure their own, at their sizes."""
    shared = args.summary and (report.results or any(s.default for s in suites))
    args.same_run_copy = measure_copy(profiling_queue(caps), 0, rounds) if shared else None
    if suites:
        report = dataclasses_replace(report, suites={s.name: s.run(caps, args) for s in suites})
    return with_summary(report, args.same_run_copy) if args.summary else report


def main(
    argv: Sequence[str] | None = None,
    prog: str = "python -m qcom_ext.tools.bench.run",
    packages: Sequence[str] = PACKAGES,
) -> int:
    """Run the cases and suites named in ``argv`` (``--help``) from the ``cases_*.py``
    modules of ``packages``; 0 on success."""
    argv = list(sys.argv[1:] if argv is None else argv)
    cases = discover(packages)
    found = discover_suites(cases, packages)
    suites = suites_by_name(found)
    parser = _parser(prog, found, lab=tuple(packages) != PACKAGES)
    args = parser.parse_args(argv)
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    earlier = _earlier(parser, args.compare)
    outputs = (("--json", args.json), ("--markdown", args.markdown))
    for option, path in (*outputs, ("--update-doc", args.update_doc)):
        if path is not None:
            try:
                check_writable(path, option)
            except QcomExtError as exc:  # one line before the run, not a traceback after it
                parser.exit(1, f"{parser.prog}: error: {exc}\n")
    named = list({id(s): s for n in args.cases if (s := suites.get(n))}.values())
    wanted = [n for n in args.cases if n not in suites]
    try:
        chosen = select(cases, wanted) if wanted or not named else []
    except UnknownCaseError as exc:
        parser.error(str(UnknownCaseError(exc.unknown, exc.known + [s.name for s in found])))
    console = _console()  # the terminal's width; 80 columns when not a terminal
    if args.list:
        return _list(console, chosen, named or (found if not args.cases else []))
    wanted_suites = named or ([s for s in found if s.default] if not args.cases else [])
    command = command_line(prog, argv)
    try:
        if args.device:  # a label too: the cases read PYOPENCL_CTX, as indices
            os.environ["PYOPENCL_CTX"] = pyopencl_ctx(device_from_spec(args.device))
        caps = qcom_ext.probe()
    except QcomExtError as exc:
        parser.exit(1, f"benchmarks: no device to run on: {terminal_safe(str(exc))}\n")
    rounds = args.rounds or DEFAULT_ROUNDS
    report = measure(chosen, caps, rounds, args.batch_ms / 1e3, _console(stderr=True), command)
    report = _with_suites(report, caps, args, wanted_suites, rounds)
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
