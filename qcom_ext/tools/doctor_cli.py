"""``qcom-ext doctor`` and ``qcom-ext env`` (:mod:`qcom_ext.device.doctor`).

``qcom-ext doctor`` prints the verdict and its fix, then the facts it read: pyopencl's
library and platforms, qcom_ext's binding, the kernel's GPU, the ICD sources and the
OpenCL libraries on disk. ``--json`` prints the report (exit status 0 when the verdict
is ``ok``, 1 otherwise). ``qcom-ext env`` prints the fix's ``export`` lines for the
current shell: ``eval "$(qcom-ext env)"``, then start Python.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from qcom_ext.device.doctor import DoctorReport, doctor
from qcom_ext.device.doctor.gather import DEFAULT_TIMEOUT
from qcom_ext.tools._output import console as _console
from qcom_ext.tools._output import terminal_safe

__all__ = ["add_parsers"]

_STATUS = {"ok": "bold green", "fix": "bold yellow", "problem": "bold red"}


class _Rows:
    """Label and value rows, the value folded under itself within the console width."""

    def __init__(self) -> None:
        self.grid = Table.grid(padding=(0, 2))
        self.grid.add_column(justify="right", style="dim", no_wrap=True)
        self.grid.add_column(overflow="fold")

    def __call__(self, _console: Console, label: str, value: str, style: str = "") -> None:
        self.grid.add_row(label, Text(value, style=style))  # driver strings: never markup


def _platforms(platforms: list[dict[str, Any]]) -> str:
    if not platforms:
        return "none"
    return "; ".join(
        f"{p['name']} ({p['driver']}: {', '.join(p['devices']) or 'no device'})" for p in platforms
    )


def render(report: DoctorReport, console: Console) -> None:
    """The verdict first, then the facts, within the console's width."""
    data = report.to_dict()
    verdict = data["verdict"]
    console.rule(Text("qcom-ext doctor", style="bold"))
    _line = _Rows()
    _line(
        console, "verdict", f"{verdict['status']} ({verdict['code']})", _STATUS[verdict["status"]]
    )
    _line(console, "", verdict["summary"])
    fix = verdict["fix"]
    if fix:
        _line(console, "fix", fix["text"], "bold")
        for command in fix["commands"]:
            _line(console, "run", command)
        for export in fix["exports"]:
            _line(console, "sh", export)
        if fix["exports"]:
            _line(console, "", 'or: eval "$(qcom-ext env)", then start Python', "dim")
    for note in verdict["notes"]:
        _line(console, "note", note)
    console.print(_line.grid)
    console.rule(Text("facts", style="dim"))
    console.print(_facts(data, console))


def _facts(data: dict[str, Any], console: Console) -> Table:
    """The facts' rows: the system, pyopencl's side, the ICD sources, the libraries."""
    py = data["python"]
    _line = _Rows()
    _line(console, "system", f"{data['system']} (sysroot {data['sysroot']})")
    _line(console, "GPU", data["kernel"]["described"])
    if py["pyopencl"] is None:
        _line(console, "pyopencl", py["import_error"] or (py["crash"] and str(py["crash"])) or "?")
    else:
        _line(console, "pyopencl", f"{py['pyopencl']}, linked with {py['links'] or '?'}")
        _line(console, "calls", f"{py['library']} ({py['library_kind']})")
        _line(console, "platforms", _platforms(py["platforms"]))
        binding = py["binding"]
        _line(console, "qcom_ext", f"{binding['library']} ({binding['origin']})")
    for name, value in data["env"].items():
        _line(console, "env", f"{name}={value}")
    for source in data["icd_sources"]:
        read = "read" if source["read"] else "NOT read"
        _line(console, "ICDs", f"{source['path']} ({source['where']}, {read})")
        for entry in source["entries"]:
            found = entry["found"] or "not found"
            _line(console, "", f"{entry['icd_file'] or '-'}: {entry['library']} -> {found}")
    for lib in data["libraries"]:
        elf = lib["elf"]
        what = f"{elf['kind']}, soname {elf['soname']}" if elf["error"] is None else elf["error"]
        _line(console, "library", f"{lib['path']} ({what})")
        if lib["crash"]:
            _line(
                console,
                "",
                f"crashed: {lib['crash'].get('stage')} ({lib['crash'].get('signal')})",
                "red",
            )
        elif lib["loaded"] is False:
            _line(console, "", f"does not load: {lib['error']}")
        elif lib["loaded"]:
            _line(console, "", f"platforms: {_platforms(lib['platforms'])}")
        elif lib["skipped"]:
            _line(console, "", lib["skipped"], "dim")
    return _line.grid


def _doctor_command(args: argparse.Namespace) -> int:
    report = doctor(timeout=args.timeout)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        render(report, _console())
    return 0 if report.verdict.status == "ok" else 1


def _env_command(args: argparse.Namespace) -> int:
    report = doctor(timeout=args.timeout)
    fix = report.verdict.fix
    lines = [f"# qcom-ext doctor: {report.verdict.summary}"]
    if fix is None or not fix.env:
        lines += [f"# {report.verdict.line()}", "# nothing to export"]
    else:
        lines += [f"# run once: {command}" for command in fix.commands] + fix.exports()
    for line in lines:  # eval runs what this prints: no control character reaches it
        print(terminal_safe(line.replace("\n", " ")))
    return 0 if fix is not None and fix.env else (0 if report.verdict.status == "ok" else 1)


def add_parsers(commands: Any) -> None:
    """Add ``doctor`` and ``env`` to the ``qcom-ext`` subcommands."""
    timeout = dict(
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help="seconds each child process may take (default %(default)s)",
    )
    parser = commands.add_parser(
        "doctor",
        help="how this Python reaches an OpenCL driver (Snapdragon: Qualcomm's), and the fix",
        description="Reads which OpenCL library pyopencl calls, the ICD files, the vendor "
        "libraries (each loaded in a child process) and the kernel's GPU, then says what "
        "is wrong and the exact fix. QCOM_EXT_SYSROOT points it at another tree.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--timeout", **timeout)
    parser.set_defaults(run=_doctor_command)
    env = commands.add_parser(
        "env",
        help='print the doctor\'s fix as export lines: eval "$(qcom-ext env)"',
        description="Prints the environment the doctor's fix sets, as POSIX shell export "
        "lines, to run before Python starts.",
    )
    env.add_argument("--timeout", **timeout)
    env.set_defaults(run=_env_command)
