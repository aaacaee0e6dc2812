"""Run the registered cases of each extension on every path the device can take."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.choice import device_from_spec
from qcom_ext.device.extensions import REGISTRY
from qcom_ext.device.isolated import probe_isolated
from qcom_ext.device.probe import disabling, probe
from qcom_ext.errors import BuildError, ConfigError, QcomExtWarning
from qcom_ext.tools.selftest import _registry
from qcom_ext.tools.selftest._paths import plan_paths
from qcom_ext.tools.selftest._registry import Case, Env, Skip
from qcom_ext.tools.selftest._report import (
    BUILDS_NOTHING,
    CaseResult,
    Comparison,
    DeviceStrings,
    ExtensionReport,
    PathRun,
    SelftestReport,
    difference,
)

__all__ = ["run_selftest", "selected"]

_ERROR_TEXT = 2000  # characters of an exception kept in the report


def selected(only: Iterable[str] | None) -> list[str]:
    """The extensions to check, in registry order: all, or those ``only`` names (full
    names or without the ``cl_qcom_`` prefix; ConfigError for an unknown name).

    >>> selected(["bitreverse", "cl_qcom_perf_hint"])
    ['cl_qcom_perf_hint', 'cl_qcom_bitreverse']
    """
    if only is None:
        return list(REGISTRY)
    wanted = set()
    for item in only:
        for name in (part.strip() for part in str(item).split(",")):
            if not name:
                continue
            full = name if name in REGISTRY else f"cl_qcom_{name}"
            if full not in REGISTRY:
                raise ConfigError(
                    f"--only {name!r} is not a cl_qcom_* extension qcom_ext knows; "
                    f"expected one of: {', '.join(REGISTRY)}"
                )
            wanted.add(full)
    if not wanted:
        raise ConfigError("--only names no extension")
    return [name for name in REGISTRY if name in wanted]


def run_selftest(
    device: Any = None,
    *,
    seed: int = 0,
    only: Sequence[str] | None = None,
    verify: bool = False,
    isolated: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> SelftestReport:
    """Check every extension (or those in ``only``) on ``device`` (a pyopencl.Device, a
    handle, a :class:`~qcom_ext.DeviceCaps`, a ``--device`` value such as
    ``"pocl-3.1-cpu"`` or ``"0:0"``, or None: the device ``qcom_ext.probe()`` picks) on
    each of its paths.

    ``QCOM_EXT_DISABLE`` as set by the caller applies (its names stay off; the report
    lists them); each further path is reached with ``probe(device, disabled=...)`` and
    run inside ``disabling(...)``, which the calling thread alone sees: the environment
    is never changed, and other threads keep their paths. ``verify=True`` first tries
    the risky native calls in a child process (:mod:`qcom_ext.tools.verify.runner`), so
    an extension whose trial crashed is checked on the path it was downgraded to;
    cached verdicts apply either way and go into the report.

    ``isolated=True`` first makes the probe's driver calls in a child process
    (:func:`~qcom_ext.device.isolated.probe_isolated`: of the device a ``--device`` value
    or None names, of every device otherwise), before this process calls the driver: a
    driver that crashes there raises :class:`~qcom_ext.errors.DriverCrashError`.

    ``progress(extension, done, total)`` is called before each extension's checks
    (``qcom-ext selftest``'s progress line).
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an int, got {seed!r}")
    names = selected(only)
    if isolated:
        spec = device if isinstance(device, str) or device is None else None
        probe_isolated(spec, all_devices=spec is None and device is not None)
    if isinstance(device, str):
        device = device_from_spec(device, option="--device")
    if isinstance(device, DeviceCaps):
        caps = probe(device.device_id, verify=True) if verify else device
    else:
        caps = probe(device, verify=verify)
    verdicts = {name: v.to_dict() for name, v in sorted(caps.verdicts.items())}
    report = SelftestReport(
        DeviceStrings.from_caps(caps),
        seed,
        disabled=tuple(sorted(caps.disabled)),
        only=None if only is None else tuple(names),
        problems=tuple(caps.problems),
        verdicts=verdicts,
        quirks=caps.quirks,
        build_problem=caps.build_problem,
    )
    for done, name in enumerate(names):
        if progress is not None:
            progress(name, done, len(names))
        report.extensions.append(_check_extension(caps, name, seed, report.build_problem))
    return report


def _check_extension(
    caps: DeviceCaps, extension: str, seed: int, build_problem: str | None = None
) -> ExtensionReport:
    status = caps.status(extension)
    result = ExtensionReport(extension, status.path, status.reason)
    reason = _registry.unchecked_reason(extension)
    if reason is not None:
        result.unchecked = reason
        return result
    cases = _registry.cases_for(extension)
    plan = plan_paths(caps, extension)
    result.skipped = list(plan.skipped)
    for path, extra in plan.runs:
        applicable = [c for c in cases if c.applies(path)]
        if applicable:
            run = _run_path(caps, extension, path, extra, applicable, seed, build_problem)
            result.runs.append(run)
    result.comparisons = _compare(result.runs, cases)
    return result


def _run_path(
    base: DeviceCaps,
    extension: str,
    path: str,
    extra: frozenset[str],
    cases: list[Case],
    seed: int,
    build_problem: str | None = None,
) -> PathRun:
    """Run ``cases`` on ``path``: the report with ``extra`` disabled goes to every case,
    and the library's own probes see ``extra`` disabled while they run. On a device that
    builds no program (``build_problem``, reported once) a case's BuildError skips it."""
    import pyopencl as cl

    run = PathRun(path)
    caps = probe(base.device_id, disabled=extra)
    if caps.path(extension) != path:  # the device's report changed under the selftest
        run.error = f"expected path {path}, the probe now says {caps.path(extension)}"
        return run
    try:
        context = cl.Context([caps.device()])
        queue = cl.CommandQueue(context)
    except cl.Error as exc:
        run.error = _error_text(exc)
        return run
    env = Env(caps, extension, path, context, queue)
    try:
        with disabling(extra):
            for item in cases:
                result, value = _run_case(item, env.for_case(item.name, seed), build_problem)
                run.cases.append(result)
                if value is not None and item.compare:
                    run.values[item.name] = value
            queue.finish()
    finally:
        env.release()
    return run


def _run_case(
    item: Case, env: Env, build_problem: str | None = None
) -> tuple[CaseResult, tuple[Any, float] | None]:
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome = item.run(env)
        except Skip as exc:
            outcome, failure, skipped = None, "", str(exc)
        except BuildError as exc:  # on a device that builds nothing: said once, above
            outcome, failure, skipped = None, _error_text(exc), ""
            if build_problem:
                failure, skipped = "", BUILDS_NOTHING
        except Exception as exc:  # a selftest reports what broke and goes on
            outcome, failure, skipped = None, _error_text(exc), ""
        else:
            failure = skipped = ""
    elapsed = (time.perf_counter() - start) * 1e3
    notes = tuple(
        dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, QcomExtWarning))
    )
    if outcome is None:
        return CaseResult(
            item.name, 0.0, 0.0, elapsed, error=failure, skipped=skipped, notes=notes
        ), None
    error, where = difference(outcome.got, outcome.want)
    if outcome.note:
        notes = (outcome.note, *notes)
    ran_as = outcome.ran_as if outcome.ran_as not in (None, env.path) else None
    result = CaseResult(
        item.name,
        error,
        outcome.tolerance,
        elapsed,
        mismatch=where if error > outcome.tolerance else "",
        ran_as=ran_as,
        notes=notes,
    )
    return result, (outcome.got, outcome.tolerance)


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= _ERROR_TEXT else text[: _ERROR_TEXT - 3] + "..."


def _compare(runs: list[PathRun], cases: Sequence[Case]) -> list[Comparison]:
    """Each comparable case's result on every later path against the first path's."""
    found = []
    for item in cases:
        having = [r for r in runs if item.name in r.values]
        if len(having) < 2:
            continue
        first, (reference, tolerance) = having[0], having[0].values[item.name]
        for later in having[1:]:
            got, other = later.values[item.name]
            gap, where = difference(got, reference)
            bound = max(tolerance, other)
            found.append(
                Comparison(
                    item.name, (first.path, later.path), gap, bound, where if gap > bound else ""
                )
            )
    return found
