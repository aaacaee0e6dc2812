"""``qcom-ext tune``: tune the local sizes of the convolution suite on one device.

Each layer of :func:`qcom_ext.ops.suite.suite` (MobileNetV2 shapes) is prepared with
random weights and tuned with :func:`qcom_ext.ops.tuning.tune_report`; the results go to the
tuning cache, so later runs of the ops with these shapes use them. A rich progress bar
follows the candidates; a table of driver vs tuned times ends the run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import warnings
from collections.abc import Iterator
from typing import Any

from rich.console import Console

from qcom_ext.tools._output import check_writable, progress_bar, write_text
from qcom_ext.tools._output import console as _console
from qcom_ext.tools._table import Column, Row, print_table

__all__ = ["add_parser"]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "tune",
        help="tune the local sizes of the convolution suite (MobileNetV2 shapes)",
        description="Times the candidate local sizes (and, for the depthwise and 1x1 "
        "layers, the kernel variants) of each layer of the convolution suite "
        "(MobileNetV2 shapes, random weights) on one device, and keeps the fastest in the "
        "tuning cache: qcom_ext.ops layers of these shapes then run with it. A progress "
        "bar follows the candidates; a table of the driver's choice against the tuned "
        "time per layer ends the run. A quick run on a CPU device: --scale 0.25 --kinds "
        "1x1.",
    )
    parser.add_argument(
        "--device",
        metavar="SPEC",
        help="the device: its label as 'qcom-ext probe' prints it, or as in PYOPENCL_CTX",
    )
    parser.add_argument("--batch", type=int, default=1, help="batch size N (default 1)")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="spatial size factor (0.25: a quick run on a CPU device)",
    )
    parser.add_argument(
        "--kinds",
        default="conv,depthwise,1x1,int8",
        help="comma-separated layer kinds: conv, depthwise, 1x1, int8",
    )
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=5.0,
        help="seconds of tuning per layer before no new candidate starts",
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per candidate")
    parser.add_argument("--force", action="store_true", help="tune even what is cached")
    parser.add_argument(
        "--variants",
        choices=("search", "default"),
        default="search",
        help="search the kernel variants of the depthwise and 1x1 layers for each shape "
        "(default), or tune only the local size of each layer's default variant",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from qcom_ext.errors import ConfigError
    from qcom_ext.ops.suite import suite
    from qcom_ext.ops.tuning import tuning_dir

    if args.batch < 1:
        raise ConfigError(f"--batch must be at least 1, not {args.batch}")
    if args.json:
        check_writable(args.json, "--json")
    layers = suite(kinds=[k for k in args.kinds.split(",") if k], scale=args.scale)
    caps, queue = _open(args.device)
    device = queue.device
    console = _console()
    if not device.image_support:
        skipped = [layer.name for layer in layers if layer.kind in ("conv", "depthwise")]
        layers = [layer for layer in layers if layer.kind not in ("conv", "depthwise")]
        if skipped:
            console.print(f"[yellow]no image support: skipping {', '.join(skipped)}[/]")
    console.print(
        f"tuning {len(layers)} layers on [bold]{caps.label}[/] "
        f"({device.name.strip()}), batch {args.batch}, {args.dtype}; "
        f"cache {tuning_dir()}"
    )
    rows = _tune(queue, layers, args, console)
    _print_table(rows, console)
    gains = [row["gain"] for row in rows if row["gain"]]
    if gains:
        console.print(f"median gain over the driver's choice: {statistics.median(gains):.2f}x")
    if args.json:
        results = {"device": caps.label, "batch": args.batch, "dtype": args.dtype, "results": rows}
        write_text(args.json, json.dumps(results, indent=1), "--json")
    return 0


def _open(spec: str | None) -> tuple[Any, Any]:
    """The report of the ``--device`` (a label, or PYOPENCL_CTX syntax; none: probe()'s
    choice) and a profiling queue on it; the device is passed down, the environment left
    alone."""
    import pyopencl as cl

    from qcom_ext.device.choice import device_from_spec
    from qcom_ext.device.probe import probe

    caps = probe(device_from_spec(spec, option="--device") if spec else None)
    device = caps.device()
    context = cl.Context([device])
    return caps, cl.CommandQueue(context, device, cl.command_queue_properties.PROFILING_ENABLE)


def _tune(queue: Any, layers: list[Any], args: argparse.Namespace, console: Console) -> list:
    """Tune each layer with a progress bar; one result row per layer."""
    import numpy as np

    from qcom_ext.ops._variants import VariantLayer
    from qcom_ext.ops.suite import prepare

    rows: list[dict[str, Any]] = []
    with progress_bar(console, transient=False) as progress:
        overall = progress.add_task("suite", total=len(layers))
        for layer in layers:
            task = progress.add_task(layer.name, total=1)
            op, x = prepare(queue, layer, batch=args.batch, dtype=np.dtype(args.dtype))

            def step(done: int, total: int, task: Any = task) -> None:
                progress.update(task, completed=done, total=total)

            only = args.variants == "default" and isinstance(op, VariantLayer)
            narrowed = {"variants": [op.default_variant(x.shape)]} if only else {}
            with _spill_lines(console, layer.name):
                report = op.tune(
                    queue,
                    x,
                    budget_s=args.budget_s,
                    repeats=args.repeats,
                    force=args.force,
                    progress=step,
                    **narrowed,
                )
            progress.update(task, completed=progress.tasks[task].total)
            progress.advance(overall)
            rows.append(_row(queue, layer, op, x, report))
    return rows


@contextlib.contextmanager
def _spill_lines(console: Console, layer: str) -> Iterator[None]:
    """A console line for each :class:`RegisterSpillWarning` the block raises; every
    warning then goes on to the caller's filters."""
    from qcom_ext.errors import RegisterSpillWarning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
    for caught in seen:
        if issubclass(caught.category, RegisterSpillWarning):
            console.print(f"[yellow]{layer}: register spill:[/] {caught.message}")
        warnings.warn_explicit(caught.message, caught.category, caught.filename, caught.lineno)


def _row(queue: Any, layer: Any, op: Any, x: Any, report: Any) -> dict[str, Any]:
    from qcom_ext.ops._variants import VariantLayer

    out = op.output_for(queue, x)
    variant = op.variant_for(x.shape) if isinstance(op, VariantLayer) else None
    launcher = op.launcher if variant is None else op.plan(variant, x, out)[0]
    return {
        "layer": layer.name,
        "kernel": launcher.identity.kernel,
        "variant": variant,
        "global_size": list(op.global_size(x, out)),
        "local_size": report.local_size,
        "driver_ns": report.driver_ns,
        "best_ns": report.best_ns,
        "gain": report.gain,
        "from_cache": report.from_cache,
    }


_COLUMNS = (
    *(Column(name) for name in ("layer", "kernel", "global", "local")),
    *(Column(name, right=True) for name in ("driver", "tuned", "gain")),
)


def _print_table(rows: list[dict[str, Any]], console: Console) -> None:
    """A row per layer, at the console's width (:mod:`qcom_ext.tools._table`)."""
    table_rows = [
        Row(
            (
                row["layer"],
                row["kernel"],
                str(tuple(row["global_size"])),
                str(row["local_size"] or "driver"),
                _ms(row["driver_ns"]),
                _ms(row["best_ns"]),
                f"{row['gain']:.2f}x" if row["gain"] else "—",
            ),
            "cached" if row["from_cache"] else "",
        )
        for row in rows
    ]
    print_table(console, _COLUMNS, table_rows, note_header="")


def _ms(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e6:.3f} ms"
