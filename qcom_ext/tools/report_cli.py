"""``qcom-ext report``: the one file to attach to a bug report, for one device.

Probes the device, runs the selftest there and writes the report
(:mod:`qcom_ext.tools.fleet.report`) to ``-o FILE`` or to
``qcom-ext-report-<device>-<date>.json`` in the current folder, then prints the file's
path and one line of counts. One device per report, as every ``qcom-ext`` command: the
one ``qcom_ext.probe()`` picks, or ``--device``; a machine with several devices gets one
report per device, one run each. The exit status is 0 when the file was written,
whatever its verdicts say (the file carries them).
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.text import Text

from qcom_ext.tools._output import check_writable, with_extension_progress
from qcom_ext.tools._output import console as _console

__all__ = ["add_parser"]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "report",
        help="write one JSON file about a device (probe, selftest, versions) for a bug report",
        description="Probes the device, runs the selftest on every path it can take and "
        "writes one self-contained JSON file: the device's identity (as gpuinfo.org keys "
        "its reports, plus the Adreno model and compiler), the probe, one check per "
        "extension, path and case with its verdict, and the versions of Python, pyopencl "
        "and qcom_ext. Nothing private goes in: host and user names, home paths, serial "
        "numbers, MAC and IP addresses are replaced. Attach the file to the issue "
        "(docs/report.md).",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write it (default: qcom-ext-report-<device>-<date>.json here)",
    )
    parser.add_argument(
        "--device",
        metavar="SPEC",
        help="the device: its label as 'qcom-ext probe' prints it (e.g. pocl-3.1-cpu, or "
        "a part of it), or as in PYOPENCL_CTX ('0:0', 'nvidia'); one report per device",
    )
    parser.add_argument(
        "--no-selftest",
        action="store_true",
        help="the probe alone (no check runs): for a device where the selftest cannot run",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="EXT",
        help="check only this extension (as selftest --only; repeat or separate with commas)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random inputs' seed")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="first try the risky native calls in a child process: a crash there is a "
        "'crash' verdict in the report, not the end of qcom-ext",
    )
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="make the probe's driver calls in a child process first",
    )
    parser.set_defaults(run=_report_command)


def _report_command(args: argparse.Namespace) -> int:
    from qcom_ext.tools.fleet.report import counts, default_filename, run_report, write_report

    if args.output is not None:
        check_writable(args.output, "--output")
    options = dict(
        selftest=not args.no_selftest,
        only=args.only,
        seed=args.seed,
        verify=args.verify,
        isolated=args.isolated,
    )
    report = with_extension_progress(
        lambda **progress: run_report(args.device, **options, **progress),
        enabled=not args.no_selftest,
    )
    path = args.output or default_filename(report)
    if args.output is None:
        check_writable(path, "the report")
    written = write_report(report, path)
    tally = ", ".join(f"{n} {verdict}" for verdict, n in counts(report).items())
    label = report["probe"]["facts"].get("label", "")
    console = _console(soft_wrap=True)
    console.print(Text(str(written)))
    console.print(Text(f"{label}: {len(report['checks'])} checks: {tally}"))
    return 0
