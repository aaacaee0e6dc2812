"""The report's checks: one per (extension, path, case), each with a stable id and a verdict.

A check's id is ``<extension>/<path>/<case>``, where ``<case>`` is the name of the
selftest case's function without its leading underscores (``_bitreverse`` ->
``bitreverse``): the id stays the same from run to run and from version to version while
the case's description (what the selftest prints) may be reworded. An extension the
selftest has no computation for has one check, ``<extension>/<path>/no_check``.

Verdicts follow the CTS rule: a path the device does not have (not advertised, a tier
missing, disabled by the user) is ``skip``, never ``fail``:

``pass``
    the case ran within its tolerance of numpy's result (and of the first path's);
``fail``
    it raised, missed its tolerance, differed from another path's result, the path
    could not start, its trial failed in a child process, or the device builds no
    program at all (the selftest fails on that too);
``crash``
    its trial (``probe --verify``) killed or hung the child process that ran it;
``skip``
    the path or the case is not there on this device (the reason says why);
``unchecked``
    qcom_ext has no computation to check for the extension (the reason says why).

>>> from qcom_ext.tools.selftest import run_selftest
>>> found = checks_from_selftest(run_selftest(only=["bitreverse"]))
>>> [c["id"].split("/", 1)[1] for c in found]  # the paths run, then those not there
['fallback/bitreverse', 'native/bitreverse', 'khr:cl_khr_extended_bit_ops/bitreverse']
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import ConfigError
from qcom_ext.tools.selftest import _registry
from qcom_ext.tools.selftest._paths import plan_paths
from qcom_ext.tools.selftest._registry import Case
from qcom_ext.tools.selftest._report import (
    BUILDS_NOTHING,
    CaseResult,
    ExtensionReport,
    PathRun,
    SelftestReport,
)

__all__ = ["NO_CHECK", "VERDICTS", "case_id", "check_id", "checks_from_selftest", "planned"]

VERDICTS = ("pass", "fail", "skip", "crash", "unchecked")
NO_CHECK = "no_check"
#: How a child-process trial's outcome (qcom_ext.device.verdicts) reads as a verdict.
_TRIAL = {"crashed": "crash", "timed_out": "crash", "inconclusive": "crash", "failed": "fail"}


def case_id(case: Case) -> str:
    """The case part of a check id: its function's name, lower case, ``[a-z0-9_]``."""
    name = getattr(case.run, "__name__", "") or case.name
    return re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "case"


def check_id(extension: str, path: str, case: str) -> str:
    """``<extension>/<path>/<case>``."""
    return f"{extension}/{path}/{case}"


def _check(
    extension: str,
    path: str,
    case: str,
    verdict: str,
    reason: str,
    max_error: float | None = None,
    seconds: float | None = None,
) -> dict[str, Any]:
    finite = max_error is not None and math.isfinite(max_error)
    return {
        "id": check_id(extension, path, case),
        "extension": extension,
        "path": path,
        "verdict": verdict,
        "max_error": float(max_error) if finite else None,
        "seconds": None if seconds is None else round(seconds, 6),
        "reason": reason,
    }


def _ran(
    case: Case, result: CaseResult, path: str, build_problem: str | None, differs: str
) -> dict[str, Any]:
    """The check of a case that ran (or tried to) on ``path``."""
    ext, cid, seconds = case.extension, case_id(case), result.time_ms / 1e3
    if result.skipped == BUILDS_NOTHING:
        why = f"the device builds no program: {build_problem or 'see the probe'}"
        return _check(ext, path, cid, "fail", why, None, seconds)
    if result.skipped:
        return _check(ext, path, cid, "skip", result.skipped, None, seconds)
    if result.error:
        return _check(ext, path, cid, "fail", result.error, None, seconds)
    if not result.ok:
        over = f"error {result.max_error:g} over tolerance {result.tolerance:g}"
        reason = f"{over}: {result.mismatch}"
        return _check(ext, path, cid, "fail", reason, result.max_error, seconds)
    if differs:
        return _check(ext, path, cid, "fail", differs, result.max_error, seconds)
    notes = [f"within tolerance {result.tolerance:g}"]
    if result.ran_as:
        notes.append(f"ran as {result.ran_as}")
    return _check(ext, path, cid, "pass", "; ".join(notes), result.max_error, seconds)


def _differences(item: ExtensionReport) -> dict[tuple[str, str], str]:
    """(later path, case name) -> why its result differs from the first path's."""
    found = {}
    for comparison in item.comparisons:
        if not comparison.ok:
            first, later = comparison.paths
            found[(later, comparison.case)] = (
                f"differs from the {first} path's result by {comparison.max_difference:g} "
                f"(tolerance {comparison.tolerance:g}): {comparison.mismatch}"
            )
    return found


def _run_checks(
    item: ExtensionReport, run: PathRun, build_problem: str | None
) -> Iterable[dict[str, Any]]:
    cases = [c for c in _registry.cases_for(item.extension) if c.applies(run.path)]
    results = {r.name: r for r in run.cases}
    differs = _differences(item)
    for case in cases:
        result = results.get(case.name)
        if run.error or result is None:
            why = run.error or "the case did not run on this path"
            yield _check(item.extension, run.path, case_id(case), "fail", why)
        else:
            differ = differs.get((run.path, case.name), "")
            yield _ran(case, result, run.path, build_problem, differ)


def _trial_of(verdicts: Mapping[str, Any], extension: str, path: str) -> Mapping[str, Any] | None:
    """The child-process trial verdict of ``path`` (the native path's is filed under the
    extension, a Khronos tier's under the tier), or None."""
    key = extension if path == "native" else path.removeprefix("khr:")
    found = verdicts.get(key) if path == "native" or path.startswith("khr:") else None
    return found if isinstance(found, Mapping) else None


def _skipped_checks(
    extension: str, path: str, reason: str, trial: Mapping[str, Any] | None
) -> Iterable[dict[str, Any]]:
    """The checks of a path that did not run; where its trial failed or crashed in a
    child process, that is the verdict of the trial's case."""
    verdict = _TRIAL.get(str(trial.get("outcome"))) if trial else None
    for case in _registry.cases_for(extension):
        if not case.applies(path):
            continue
        if verdict and case.trial:
            yield _check(extension, path, case_id(case), verdict, _trial_reason(trial or {}))
        else:
            yield _check(extension, path, case_id(case), "skip", reason)


def _trial_reason(trial: Mapping[str, Any]) -> str:
    from qcom_ext.device.verdicts import Verdict

    try:
        return Verdict.from_dict(trial).reason
    except (ValueError, TypeError):
        return f"the trial ended {trial.get('outcome')!r} in a child process"


def checks_from_selftest(report: SelftestReport) -> list[dict[str, Any]]:
    """Every check of a selftest report, extension by extension, path by path."""
    found: list[dict[str, Any]] = []
    for item in report.extensions:
        if item.unchecked:
            found.append(_check(item.extension, item.path, NO_CHECK, "unchecked", item.unchecked))
            continue
        for run in item.runs:
            found.extend(_run_checks(item, run, report.build_problem))
        for path, reason in item.skipped:
            trial = _trial_of(report.verdicts, item.extension, path)
            found.extend(_skipped_checks(item.extension, path, reason, trial))
    return found


#: verdict(extension, path, case id) -> one of "pass", "fail", "crash", "unchecked".
VerdictFunction = Callable[[str, str, str], str]


def planned(caps: DeviceCaps, verdict: VerdictFunction) -> list[dict[str, Any]]:
    """The checks the selftest would make on ``caps``'s device, from its report alone
    (no device), with ``verdict`` deciding each case that would run; the paths the
    device does not have are ``skip`` as in a real run (synthetic reports)."""
    found: list[dict[str, Any]] = []
    for extension in caps.statuses:
        reason = _registry.unchecked_reason(extension)
        if reason is not None:
            found.append(_check(extension, caps.path(extension), NO_CHECK, "unchecked", reason))
            continue
        plan = plan_paths(caps, extension)
        for path, _ in plan.runs:
            for case in _registry.cases_for(extension):
                if case.applies(path):
                    cid = case_id(case)
                    said = verdict(extension, path, cid)
                    if said not in VERDICTS or said == "skip":
                        raise ConfigError(
                            f"synthetic verdict {said!r} for {extension}/{path}/{cid}: "
                            "expected pass, fail, crash or unchecked (skips follow the paths)"
                        )
                    error = 0.0 if said == "pass" else None
                    found.append(_check(extension, path, cid, said, f"synthetic {said}", error))
        for path, why in plan.skipped:
            found.extend(_skipped_checks(extension, path, why, None))
    return found
