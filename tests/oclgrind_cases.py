"""Every kernel of kernels/*.cl and every compat-header builtin on tiny inputs, checked
against numpy: what tests/test_oclgrind.py runs under Oclgrind (tests/_oclgrind.py starts
this script and reads Oclgrind's reports). The cases are in tests/oclgrind_cases_*.py,
the harness in tests/oclgrind_trial.py.

    python tests/oclgrind_cases.py [--manifest FILE] [--shard I/N] [--defects A,B] [CASE ...]

Runs on the device PYOPENCL_CTX names; prints one line per case and exits 1 on any
mismatch. Each case gets its own context (Oclgrind reads its settings per context), made
without ``OCLGRIND_UNINITIALIZED`` when the case's kernels hit a defect of that plugin
which ``--defects`` says this Oclgrind has (tests/_oclgrind.py DEFECTS). Every kernel
launch is recorded from pyopencl's enqueue (kernel, source file, -D variant; per program
the builtins its source calls), and the builtins that exist only on Adreno (or with
cl_khr_fp16) are checked to fail to build with their documented error; ``--manifest``
writes all of it as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import _oclgrind
import oclgrind_cases_builtins  # noqa: F401 (registers its cases)
import oclgrind_cases_conv_variants  # noqa: F401 (registers its cases)
import oclgrind_cases_convolve  # noqa: F401 (registers its cases)
import oclgrind_cases_images  # noqa: F401 (registers its cases)
import oclgrind_cases_kernels  # noqa: F401 (registers its cases)
import oclgrind_cases_matmul  # noqa: F401 (registers its cases)
import oclgrind_cases_variants  # noqa: F401 (registers its cases)
import pyopencl as cl
from oclgrind_trial import CASES, Kept, Mismatch, Recorder, Trial

import qcom_ext

# ---- running ----------------------------------------------------------------------------


def run(names: list[str], recorder: Recorder, device: Any, defects: set[str]) -> dict[str, Any]:
    """Each case in its own context (Oclgrind reads its settings per context)."""
    results = {}
    for name in names:
        selected = CASES[name]
        blocking = [d for d in selected.defects if d in defects]
        for variable, on in (
            ("OCLGRIND_UNINITIALIZED", not blocking),
            ("OCLGRIND_CHECK_API", selected.check_api),
        ):
            if on:
                os.environ[variable] = "1"
            else:
                os.environ.pop(variable, None)
        recorder.case = name
        before = len(recorder.launches)
        started = time.perf_counter()
        trial = Trial(cl.Context([device]), None, device, recorder)
        trial.queue = cl.CommandQueue(trial.ctx)
        try:
            selected.run(trial)
            trial.queue.finish()
            verdict = "ok"
        except Exception as exc:  # every case runs; the exit status says one failed
            verdict = "MISMATCH" if isinstance(exc, Mismatch) else "ERROR"
            print(f"{name}: {verdict}\n{traceback.format_exc()}", flush=True)
        Kept.objects.clear()
        launched = len(recorder.launches) - before
        seconds = time.perf_counter() - started
        print(
            f"{name}: {verdict} ({trial.checks} checks, {launched} launches, {seconds:.1f} s)",
            flush=True,
        )
        uninitialized = (
            "off: " + "; ".join(f"{d}: {_oclgrind.DEFECTS[d].description}" for d in blocking)
            if blocking
            else True
        )
        results[name] = {
            "name": name,
            "verdict": verdict,
            "checks": trial.checks,
            "launches": launched,
            "uninitialized": uninitialized,
            "seconds": round(seconds, 2),
        }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", help=f"default: all of {', '.join(CASES)}")
    parser.add_argument("--manifest", type=Path, help="write what ran here (JSON)")
    parser.add_argument("--shard", default="0/1", help="I/N: every N-th case from the I-th")
    parser.add_argument(
        "--defects",
        default="",
        help="comma-separated plugin defects this Oclgrind has (the cases "
        "that hit one run without OCLGRIND_UNINITIALIZED)",
    )
    args = parser.parse_args()
    unknown = sorted(set(args.cases) - set(CASES))
    defects = {d for d in args.defects.split(",") if d}
    if unknown or defects - set(_oclgrind.DEFECTS):
        parser.error(f"unknown cases {unknown} or defects {defects - set(_oclgrind.DEFECTS)}")
    index, count = (int(v) for v in args.shard.split("/"))
    names = (args.cases or list(CASES))[index::count]
    for category in (cl.CompilerWarning, cl.RepeatedKernelRetrieval, qcom_ext.QcomExtWarning):
        warnings.simplefilter("ignore", category)  # build logs, pyopencl style, fallbacks
    device = qcom_ext.probe().device()
    print(f"{device.platform.name}: {device.name}", flush=True)
    recorder = Recorder(device)
    recorder.install()
    Kept.install()
    results = run(names, recorder, device, defects)
    if args.manifest:
        args.manifest.write_text(json.dumps(recorder.manifest(results), indent=1))
    ok = all(r["verdict"] == "ok" for r in results.values())
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
