"""The ``qcom-ext`` command line.

``qcom-ext probe`` prints, per device, the path each ``cl_qcom_*`` extension takes;
``--json`` prints the full report, ``--all`` covers every device and ``--device``
picks one the way ``PYOPENCL_CTX`` does (``"1:0"``, ``"nvidia"``). ``qcom-ext tune``
tunes the local sizes of the convolution suite (:mod:`qcom_ext._tune_cli`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from . import __version__, _tune_cli
from .caps import DeviceCaps
from .errors import QcomExtError
from .probe import probe, probe_all

_STYLE = {"native": "green", "khr": "cyan", "fallback": "yellow", "unavailable": "red"}


def _render(caps: DeviceCaps, console: Console) -> None:
    console.rule(f"[bold]{caps.device_name.strip()}[/] — {caps.platform_name}")
    facts = [
        ("label", caps.label),
        ("device version", caps.device_version),
        ("driver", caps.driver_version),
        ("OpenCL C", caps.opencl_c_version),
        ("platform", caps.platform_version),
        ("images", "yes" if caps.image_support else "no"),
    ]
    if caps.is_adreno:
        facts.append(("Adreno", f"{caps.adreno_model} (compiler {caps.adreno_compiler})"))
    if caps.disabled:
        facts.append(("QCOM_EXT_DISABLE", ", ".join(sorted(caps.disabled))))
    for key, value in facts:
        console.print(f"[dim]{key:>15}[/]  {value}")
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("extension")
    table.add_column("path")
    table.add_column("reason", overflow="fold")
    for name, status in sorted(caps.statuses.items()):
        style = _STYLE[status.tier]
        table.add_row(name, f"[{style}]{status.path}[/]", status.reason)
    console.print(table)
    limits = [(k, v) for k, v in caps.limits.items() if v is not None]
    if limits:
        console.print("[dim]limits:[/] " + ", ".join(f"{k}={v}" for k, v in limits))
    for problem in caps.problems:
        console.print(f"[red]problem:[/] {problem}")
    console.print(f"[bold]{caps.summary()}[/]")


def _probe_command(args: argparse.Namespace) -> int:
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    reports = probe_all() if args.all else [probe()]
    if args.json:
        payload = [c.to_dict() for c in reports]
        print(json.dumps(payload if args.all else payload[0], indent=2))
        return 0
    console = Console()
    for caps in reports:
        _render(caps, console)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="qcom-ext", description="Qualcomm Adreno OpenCL extensions, portable."
    )
    parser.add_argument("--version", action="version", version=f"qcom_ext {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    probe_parser = commands.add_parser(
        "probe", help="show the path each cl_qcom_* extension takes on a device"
    )
    probe_parser.add_argument("--json", action="store_true", help="print the full JSON report")
    probe_parser.add_argument("--all", action="store_true", help="every device")
    probe_parser.add_argument(
        "--device", metavar="SPEC", help="device as in PYOPENCL_CTX, e.g. '0:0' or 'nvidia'"
    )
    probe_parser.set_defaults(run=_probe_command)
    _tune_cli.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except QcomExtError as exc:
        print(f"qcom-ext: error: {exc}", file=sys.stderr)
        return 1
