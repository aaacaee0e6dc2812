"""The ``qcom-ext`` command line.

``qcom-ext probe`` prints, per device, the path each ``cl_qcom_*`` extension takes;
``--json`` prints the full report, ``--all`` covers every device and ``--device``
picks one by the label ``probe`` prints (``pocl-3.1-cpu``, or a part of it) or the way
``PYOPENCL_CTX`` does (``"1:0"``, ``"nvidia"``: :mod:`qcom_ext.device.choice`);
``--verify`` first tries the risky native calls in a child process
(:mod:`qcom_ext.tools.verify.runner`); ``--isolated`` makes every driver call of the
probe in a child process (:mod:`qcom_ext.device.isolated`), so a driver that crashes
there is an error message and exit status 1.
``qcom-ext selftest`` runs every extension's computation on a device, on each path the
device can take, against numpy and path against path (:mod:`qcom_ext.tools.selftest`);
``--json`` prints the report to attach to a bug report; exit status 1 on failure.
``qcom-ext report`` writes the one JSON file to attach to a bug report: probe, selftest,
versions, nothing private (:mod:`qcom_ext.tools.report_cli`).
``qcom-ext doctor`` says how this Python reaches an OpenCL driver and the fix, ``qcom-ext
env`` prints that fix as export lines (:mod:`qcom_ext.tools.doctor_cli`).
``qcom-ext tune`` tunes the local sizes of the convolution suite
(:mod:`qcom_ext.tools.tune_cli`); ``qcom-ext bench`` runs the benchmark cases.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from qcom_ext._version import __version__
from qcom_ext.device import report_text
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.choice import device_from_spec
from qcom_ext.device.isolated import probe_isolated
from qcom_ext.device.kernel_gpu import read_kernel_gpu
from qcom_ext.device.probe import probe, probe_all
from qcom_ext.errors import DriverCrashError, DriverTimeoutError, QcomExtError
from qcom_ext.tools import compat_cli as _compat_cli
from qcom_ext.tools import doctor_cli as _doctor_cli
from qcom_ext.tools import report_cli as _report_cli
from qcom_ext.tools import tune_cli as _tune_cli
from qcom_ext.tools._output import console as _console
from qcom_ext.tools._output import terminal_safe, with_extension_progress
from qcom_ext.tools._table import Column, Row, print_facts, print_table

_ISOLATED_HINT = (
    "qcom-ext: the driver ran in a child process (--isolated) and qcom-ext never called "
    "it itself; without --isolated the same call would have ended qcom-ext. Report it to "
    "the driver's vendor, or point QCOM_EXT_OPENCL_LIBRARY at another OpenCL library."
)
_PATH_COLUMNS = (Column("extension"), Column("path"))
_STYLE = {"native": "green", "khr": "cyan", "fallback": "yellow", "unavailable": "red"}


def _facts(caps: DeviceCaps) -> list[tuple[str, str]]:
    """The device's facts as (key, value) rows."""
    facts = [
        ("label", caps.label),
        ("platform", f"{caps.platform_name} ({caps.platform_version.strip()})"),
        ("driver", f"{caps.driver} ({caps.driver_version.strip()})"),
        ("device version", caps.device_version),
        ("OpenCL C", caps.opencl_c_version),
        ("images", "yes" if caps.image_support else "no"),
    ]
    adreno = report_text.adreno_fact(caps)
    if adreno:
        facts.append(("Adreno", adreno))
    if caps.disabled:
        facts.append(("QCOM_EXT_DISABLE", ", ".join(sorted(caps.disabled))))
    return facts


def _render_paths(caps: DeviceCaps, console: Console) -> None:
    """Each extension's path, and its reason on its own indented lines."""
    rows = [
        Row((name, Text(status.path, style=_STYLE[status.tier])), Text(status.reason))
        for name, status in sorted(caps.statuses.items())
    ]
    print_table(console, _PATH_COLUMNS, rows, header=False, notes_below=True)


def _render_verdicts(caps: DeviceCaps, console: Console) -> None:
    console.print("[bold]trials in a child process[/]")
    rows = []
    for name, verdict in sorted(caps.verdicts.items()):
        style = "green" if verdict.outcome == "ok" else "bold red"
        detail = f": {verdict.detail}" if verdict.detail else ""
        note = Text(f"verified {verdict.verified}{detail}")
        rows.append(Row((name, Text(verdict.outcome, style=style)), note))
    print_table(console, _PATH_COLUMNS, rows, header=False, notes_below=True)


def _render(caps: DeviceCaps, console: Console) -> None:
    console.rule(Text(caps.device_name.strip(), style="bold"))
    print_facts(console, _facts(caps))
    _render_paths(caps, console)
    unknown = report_text.unknown_line(caps)
    if unknown:
        console.print(Text(unknown))
    limits = [(k, v) for k, v in caps.limits.items() if v is not None]
    if limits:
        console.print("[dim]limits:[/] " + ", ".join(f"{k}={v}" for k, v in limits))
    if caps.verdicts:
        _render_verdicts(caps, console)
    _render_quirks(caps, console)
    for problem in caps.problems:
        console.print(Text.assemble(("problem: ", "red"), problem))
    console.print(Text(caps.summary(), style="bold"))


def _render_quirks(caps: DeviceCaps, console: Console) -> None:
    """The ``quirks:`` block: id and effect of each known quirk that applies, then its
    source (qcom_ext.device.quirks; docs/QUIRKS.md lists them all)."""
    if not caps.quirks:
        return
    console.print("[dim]quirks:[/]")
    for quirk in caps.quirks:
        console.print(f"  [yellow]{escape(quirk.id)}[/]: {escape(quirk.effect)}", soft_wrap=True)
        console.print(f"    [dim]{escape(quirk.source)}[/]", soft_wrap=True)


def chosen_device(spec: str | None) -> int | None:
    """The device a ``--device`` value names (a label as ``probe`` prints it, or
    ``PYOPENCL_CTX``'s syntax: :func:`~qcom_ext.device.choice.device_from_spec`), passed
    down as a handle; None without one (``qcom_ext.probe()``'s choice). The environment
    is left as it is."""
    return device_from_spec(spec, option="--device") if spec else None


def _probe_command(args: argparse.Namespace) -> int:
    if args.isolated:
        reports = probe_isolated(args.device, all_devices=args.all, verify=args.verify)
    elif args.all:
        reports = probe_all(verify=args.verify)
    else:
        reports = [probe(chosen_device(args.device), verify=args.verify)]
    if args.json:
        payload = [c.to_dict() for c in reports]
        print(json.dumps(payload if args.all else payload[0], indent=2))
        return 0
    console = _console()
    for caps in reports:
        _render(caps, console)
    kernel = None if any(c.qualcomm_driver for c in reports) else read_kernel_gpu()
    if kernel is not None and kernel.adreno_seen:
        console.print(
            Text(
                f"Adreno hardware ({kernel.describe()}) but no Qualcomm OpenCL "
                "platform: run 'qcom-ext doctor'",
                style="yellow",
            )
        )
    return 0


def benchmarks_runner() -> Any:
    """The benchmark runner module, :mod:`qcom_ext.tools.bench.run`."""
    from qcom_ext.tools.bench import run

    return run


def _bench_command(args: argparse.Namespace) -> int:
    return int(benchmarks_runner().main(args.args, prog="qcom-ext bench"))


def _selftest_command(args: argparse.Namespace) -> int:
    from qcom_ext.tools.selftest import run_selftest
    from qcom_ext.tools.selftest._render import render

    options = dict(seed=args.seed, only=args.only, verify=args.verify, isolated=args.isolated)
    report = with_extension_progress(  # on a terminal's stderr only
        lambda **progress: run_selftest(args.device, **options, **progress),
        enabled=not args.json,
    )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        render(report, _console())
    return 0 if report.ok else 1


#: ``--device``'s help, shared by every command that takes it.
DEVICE_HELP = (
    "the device: its label as 'qcom-ext probe' prints it (e.g. pocl-3.1-cpu, or a part "
    "of it), or as in PYOPENCL_CTX ('0:0', 'nvidia')"
)


def _add_device_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", metavar="SPEC", help=DEVICE_HELP)
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="make the probe's driver calls (clGetPlatformIDs, the device queries) in a "
        "child process first: a driver that crashes there is an error, not the end of "
        "qcom-ext",
    )


def _add_probe(commands: Any) -> None:
    parser = commands.add_parser(
        "probe",
        help="show the path each cl_qcom_* extension takes on a device",
        description="Shows what the device is (driver, OpenCL versions, Adreno model and "
        "compiler) and, for every cl_qcom_* extension, the path it takes there: native, "
        "a Khronos equivalent, the portable fallback or unavailable, with the reason "
        "(docs/probe.md).",
    )
    parser.add_argument("--json", action="store_true", help="print the full JSON report")
    parser.add_argument("--all", action="store_true", help="every device")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="first try each native call the device would make in a child process (cached "
        "per device and driver); an extension whose trial crashes or fails is downgraded",
    )
    _add_device_options(parser)
    parser.set_defaults(run=_probe_command)


def _add_selftest(commands: Any) -> None:
    parser = commands.add_parser(
        "selftest",
        help="run every extension's computation on a device, on each path it can take",
        description="Runs every extension's checks on a device, on each path it can take "
        "(native, the Khronos tier, the portable fallback), compares each result with "
        "numpy and the paths with each other, and prints a table of what ran, errors and "
        "times (--json: the report to attach to a bug report). Exit status 1 when a check "
        "failed; progress on stderr where it is a terminal (docs/selftest.md).",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--seed", type=int, default=0, help="random inputs' seed")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="first try the risky native calls in a child process (probe --verify)",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="EXT",
        help="check only this extension (cl_qcom_bitreverse or bitreverse; repeat or "
        "separate with commas)",
    )
    _add_device_options(parser)
    parser.set_defaults(run=_selftest_command)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qcom-ext", description="Qualcomm Adreno OpenCL extensions, portable."
    )
    parser.add_argument("--version", action="version", version=f"qcom_ext {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_probe(commands)
    _add_selftest(commands)
    _report_cli.add_parser(commands)
    _doctor_cli.add_parsers(commands)
    _tune_cli.add_parser(commands)
    _compat_cli.add_parser(commands)
    bench_parser = commands.add_parser(
        "bench",
        help="time the benchmark cases on a device (qcom-ext bench --help)",
        add_help=False,
    )
    bench_parser.add_argument("args", nargs=argparse.REMAINDER)
    bench_parser.set_defaults(run=_bench_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status. A reader that goes away (``qcom-ext probe
    --json | head -1``) ends it quietly with status 1, as rich's console does for the
    tables."""
    try:
        return _main(argv)
    except BrokenPipeError:
        _stdout_to_devnull()
        return 1


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit does not
    raise (and print) BrokenPipeError again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (an in-process caller)
        pass


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # its options belong to the benchmarks runner's own parser
        args = argparse.Namespace(args=argv[1:], run=_bench_command)
    else:
        args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except QcomExtError as exc:
        print(f"qcom-ext: error: {terminal_safe(str(exc))}", file=sys.stderr)
        if isinstance(exc, (DriverCrashError, DriverTimeoutError)):
            print(_ISOLATED_HINT, file=sys.stderr)
        return 1


if __name__ == "__main__":  # python -m qcom_ext.tools.cli runs it too, not silently nothing
    sys.exit(main())
