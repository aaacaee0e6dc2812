"""The child process of :mod:`qcom_ext.tools.verify.runner`:
``python -m qcom_ext.tools.verify.child``.

Reads the spec (JSON) on stdin: the device's platform and device index with the strings
that must match there, the verdicts the parent already holds (applied to this process's
``probe()``), and the trials to run in order, each a selftest case by its
``module:qualname``. Reports on its own copy of stdout, one line each,
``qcom_ext-trial: begin <ext>`` before a trial and ``qcom_ext-trial: end <ext> <json>``
after it (with ``spills``, the kernels it built that spill registers); whatever the
driver or a kernel prints goes to stderr. A trial that kills the process leaves a
``begin`` without its ``end``: the parent names the signal.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
import warnings
from typing import Any, TextIO

from qcom_ext._isolation import no_core_dumps
from qcom_ext.device import verdicts as _verdicts
from qcom_ext.device.location import find_device
from qcom_ext.device.probe import probe
from qcom_ext.errors import BuildError, CLError, QcomExtError, QcomExtWarning
from qcom_ext.ext.program.build import kernels
from qcom_ext.ext.program.kernel_info import kernel_info
from qcom_ext.tools.selftest._env import Env, case_rng
from qcom_ext.tools.selftest._registry import Outcome, Skip
from qcom_ext.tools.selftest._report import difference
from qcom_ext.tools.verify._process import PROTOCOL

__all__ = ["main", "problem_of", "run", "spilled_kernels", "trial_outcome"]

_DETAIL = 400


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _DETAIL else line[: _DETAIL - 3] + "..."


def _load(function: str) -> Any:
    """The case function named ``"module:qualname"``, imported."""
    module, _, name = function.partition(":")
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    return target


def problem_of(outcome: Outcome | None, env: Env) -> str:
    """Why a trial's outcome fails it (``""``: it passes): a result off the reference by
    more than the tolerance, or the library taking another path than the one on trial.
    A stand-in that returns None has no result to check."""
    if outcome is None:
        return ""
    error, where = difference(outcome.got, outcome.want)
    if error > outcome.tolerance:
        return f"wrong result: error {error:g} > tolerance {outcome.tolerance:g} ({where})"
    if outcome.ran_as not in (None, env.path):
        return f"{env.extension} took the {outcome.ran_as!r} path, not {env.path!r}"
    return ""


def spilled_kernels(env: Env) -> list[list[Any]]:
    """``[name, private bytes per work-item]`` of every kernel of the programs ``env``
    built that spills (:func:`qcom_ext.kernel_info`); a kernel the driver will not
    describe is left out."""
    import pyopencl

    found: list[list[Any]] = []
    for program in list(env.store.values()):
        if not isinstance(program, pyopencl.Program):
            continue
        for name, kernel in sorted(kernels(program).items()):
            try:
                info = kernel_info(kernel, env.device)
            except (QcomExtError, pyopencl.Error):
                continue
            if info.spills:
                found.append([name, info.private_mem_size])
    return found


def _with_spills(result: dict[str, Any], spills: list[list[Any]]) -> dict[str, Any]:
    """The end report with its ``spills``, named in the detail of a trial that passed."""
    if spills:
        result["spills"] = spills
        if result["outcome"] == "ok" and not result["detail"]:
            named = ", ".join(f"{name} ({size} B)" for name, size in spills)
            result["detail"] = _one_line(f"register spill (private memory per work-item): {named}")
    return result


def trial_outcome(item: dict[str, str], device: Any) -> dict[str, Any]:
    """Run one trial (``item``: extension, function, subject, path) on ``device`` (None:
    a trial that needs none) in this process: ``{"outcome", "detail", "log"}``, plus
    ``spills`` (:func:`spilled_kernels`) when a kernel it built spills."""
    caps = probe(device) if device is not None else None
    rng = case_rng(item["subject"], item["function"], 0)
    env = Env(caps, item["subject"], item["path"], device=device, rng=rng, isolated=True)
    spills: list[list[Any]] = []
    try:
        with warnings.catch_warnings():  # a weaker path warns, by design: not a failure
            warnings.simplefilter("ignore", QcomExtWarning)
            problem = problem_of(_load(item["function"])(env), env)
        spills = spilled_kernels(env) if device is not None else []
    except Skip as exc:  # nothing risky could run here: no verdict against the extension
        return {"outcome": "ok", "detail": _one_line(f"skipped: {exc}"), "log": ""}
    except (CLError, BuildError) as exc:
        return {"outcome": "failed", "detail": _one_line(str(exc)), "log": str(exc)[-4000:]}
    except Exception as exc:
        text = traceback.format_exc()
        detail = _one_line(f"{type(exc).__name__}: {exc}")
        return {"outcome": "failed", "detail": detail, "log": text[-4000:]}
    finally:
        env.release()
    if problem:
        failed = {"outcome": "failed", "detail": _one_line(problem), "log": problem[-4000:]}
        return _with_spills(failed, spills)
    return _with_spills({"outcome": "ok", "detail": "", "log": ""}, spills)


def run(spec: dict[str, Any], report: TextIO) -> int:
    def emit(*parts: str) -> None:
        report.write(" ".join((PROTOCOL, *parts)) + "\n")
        report.flush()

    try:
        _verdicts.use_verdicts_of_parent(_verdicts.Verdict.from_dict(v) for v in spec["verdicts"])
        device = find_device(spec["device"])
    except Exception as exc:
        emit("setup-error", json.dumps(f"{type(exc).__name__}: {exc}"))
        return 2
    for item in spec["trials"]:
        emit("begin", item["extension"])
        emit("end", item["extension"], json.dumps(trial_outcome(item, device)))
    return 0


def main() -> int:
    no_core_dumps()
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # driver and kernel output goes to stderr, never into the report
    sys.stdout = sys.stderr
    with report:  # closed once the trials are done: the parent then waits for the exit
        return run(json.load(sys.stdin), report)


if __name__ == "__main__":
    sys.exit(main())
