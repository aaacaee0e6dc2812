"""``python -m benchmarks.fleet [--count N] [--seed S] [--format F]``: ``qcom-ext compat``
over N synthetic fleet reports (100,000 by default), timed (docs/fleet.md, "Scale").

The reports (qcom_ext.tools.fleet.synthetic) are written first, untimed, to a temporary
directory as 16 newline-delimited files; then ``qcom-ext compat DIR --format F -o FILE``
runs in a child process, started in that directory, and its wall time, CPU time and
peak resident memory (``getrusage(RUSAGE_CHILDREN)``) are printed with its counts.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from qcom_ext.tools.fleet import synthetic

__all__ = ["main"]

FILES = 16


def _write(folder: Path, count: int, seed: int) -> int:
    """The synthetic reports in ``FILES`` files under ``folder``; their total bytes."""
    outs = [(folder / f"part-{i:02d}.ndjson").open("w", encoding="utf-8") for i in range(FILES)]
    try:
        for number, report in enumerate(synthetic.reports(count, seed)):
            outs[number % FILES].write(json.dumps(report, separators=(",", ":")) + "\n")
    finally:
        for out in outs:
            out.close()
    return sum(p.stat().st_size for p in folder.glob("*.ndjson"))


def main(argv: Sequence[str] | None = None) -> int:
    """Generate, merge, print the measurement; the command's exit status."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet", description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=("markdown", "json", "html"), default="json")
    parser.add_argument(
        "--reports",
        metavar="DIR",
        help="keep the generated reports in DIR, or reuse those already there (untimed)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qcom-ext-fleet-bench-") as scratch:
        folder = Path(args.reports or Path(scratch) / "reports")
        folder.mkdir(exist_ok=True)
        started = time.perf_counter()
        if any(folder.glob("*.ndjson")):
            size = sum(p.stat().st_size for p in folder.glob("*.ndjson"))
        else:
            size = _write(folder, args.count, args.seed)
        generated = time.perf_counter() - started
        output = Path(scratch) / f"matrix.{args.format}"
        command = [sys.executable, "-m", "qcom_ext.tools.cli", "compat", str(folder)]
        command += ["--format", args.format, "-o", str(output)]
        started = time.perf_counter()
        status = subprocess.run(command, cwd=scratch, check=False).returncode
        wall = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_mib, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
        print(f"{args.count} reports, {size / 2**20:.0f} MiB in {FILES} files "
              f"(generated in {generated:.1f} s, untimed)")  # fmt: skip
        print(f"qcom-ext compat --format {args.format}: {wall:.1f} s wall, {cpu:.1f} CPU-s, "
              f"peak RSS {peak_mib:.0f} MiB, exit status {status}")  # fmt: skip
        if status == 0 and args.format == "json":
            merged = json.loads(output.read_text())
            counts = {k: merged["intake"][k] for k in ("read", "merged", "skipped")}
            print(f"intake {counts}; reports {merged['reports']}; matrix rows "
                  f"{len(merged['matrix'])}; contradictions {len(merged['contradictions'])}; "
                  f"quirk proposals {[p['id'] for p in merged['quirk_proposals']]}")  # fmt: skip
        print(f"machine: {platform.machine()}, {platform.processor() or '?'}, "
              f"python {platform.python_version()}")  # fmt: skip
    return status


if __name__ == "__main__":
    sys.exit(main())
