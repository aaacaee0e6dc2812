"""What every sample shares: the ``--device`` option (the ``qcom-ext`` command line's
device rule), the probe line it prints, and timings that keep the first run (kernel
builds included) apart from the steady state."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import qcom_ext
from qcom_ext.device.choice import device_from_spec, pyopencl_ctx
from qcom_ext.tools._output import terminal_safe
from qcom_ext.tools.cli import DEVICE_HELP

T = TypeVar("T")


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser described by the sample's first docstring line, with ``--device``."""
    result = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    result.add_argument("--device", metavar="SPEC", help=DEVICE_HELP)
    return result


def probe_device(args: argparse.Namespace) -> qcom_ext.DeviceCaps:
    """The report of the device ``--device`` names, as ``qcom-ext probe --device`` reads it
    (a label such as ``pocl-3.1-cpu`` or a part of one, or ``PYOPENCL_CTX``'s ``0:0`` /
    ``nvidia``); default: the one pyopencl picks. A value that names no device, or
    several, ends the sample with one line on stderr and exit status 2 (a usage error).
    """
    if not args.device:
        return qcom_ext.probe()
    try:
        handle = device_from_spec(args.device, option="--device")
    except qcom_ext.QcomExtError as exc:
        print(f"{Path(sys.argv[0]).name}: error: {terminal_safe(str(exc))}", file=sys.stderr)
        raise SystemExit(2) from None
    os.environ["PYOPENCL_CTX"] = pyopencl_ctx(handle)  # pyopencl's own choice agrees
    return qcom_ext.probe(handle)


def report(caps: qcom_ext.DeviceCaps, extension: str) -> qcom_ext.ExtensionStatus:
    """Print, and return, the path ``extension`` takes on the device."""
    status = caps.status(extension)
    print(f"{caps.label}: {extension} -> {status.path} ({status.reason})")
    return status


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


@dataclass(frozen=True)
class Timing:
    """The first run's seconds (the kernels built on first use, on a cold driver cache,
    are in it) and the median of the runs after it."""

    first_s: float
    warm_s: float
    runs: int
    first_holds: str = "kernel builds included"

    def __str__(self) -> str:
        return (
            f"first run {_duration(self.first_s)} ({self.first_holds}), then "
            f"{_duration(self.warm_s)} (median of {self.runs})"
        )


def timed(
    run: Callable[[], T], repeats: int = 3, first_holds: str = "kernel builds included"
) -> tuple[Timing, T]:
    """Time ``run`` (which must wait for its work) once, then ``repeats`` more times; the
    :class:`Timing` (``first_holds``: what the first run does besides the work) and the
    last run's result."""
    start = time.perf_counter()
    result = run()
    first = time.perf_counter() - start
    warm = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = run()
        warm.append(time.perf_counter() - start)
    return Timing(first, statistics.median(warm), len(warm), first_holds), result


def write_png(path: str, pixels: Any, mode: str) -> None:
    """Save ``pixels`` (a numpy array) as a PNG with Pillow, or say why not."""
    try:
        from PIL import Image
    except ImportError:
        print("Pillow is not installed: no PNG written")
        return
    Image.fromarray(pixels, mode).save(path)
    print(f"wrote {path}")
