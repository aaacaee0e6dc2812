"""The selftest report: per extension, the paths run, each case's error and time, the
paths compared with each other, and the paths not run with their reasons.

>>> difference([1.0, 2.0], [1.0, 2.5])
(0.5, 'element 1: 2 against 2.5')
>>> difference({"row_pitch": 256, "size": 8192}, {"row_pitch": 320, "size": 8192})
(64.0, 'row_pitch: 256 against 320')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.quirks import Quirk

__all__ = [
    "CaseResult",
    "Comparison",
    "DeviceStrings",
    "ExtensionReport",
    "PathRun",
    "SelftestReport",
    "difference",
]

SCHEMA = 1


def _scalar(value: Any) -> float | str:
    if isinstance(value, str):
        return value
    return float(value)


def difference(got: Any, want: Any) -> tuple[float, str]:
    """The largest absolute difference of ``got`` and ``want`` and where it is (``inf``
    when they do not have the same shape or keys, or where only one is NaN).

    Mappings compare key by key (values: numbers, booleans or strings, which must be
    equal); anything else as float64 arrays.
    """
    if isinstance(got, Mapping) or isinstance(want, Mapping):
        if not (isinstance(got, Mapping) and isinstance(want, Mapping)):
            return math.inf, "a mapping compared with a non-mapping"
        if list(got) != list(want):
            return math.inf, f"keys {list(got)} against {list(want)}"
        worst, where = 0.0, ""
        for key in want:
            a, b = _scalar(got[key]), _scalar(want[key])
            if isinstance(a, str) or isinstance(b, str):
                error = 0.0 if a == b else math.inf
            else:
                error = float(_gap(np.array([a]), np.array([b]))[0])
            if error > worst:
                worst, where = error, f"{key}: {got[key]!r} against {want[key]!r}"
        return worst, where
    a = np.asarray(got, dtype=np.float64)
    b = np.asarray(want, dtype=np.float64)
    if a.shape != b.shape:
        return math.inf, f"shape {a.shape} against {b.shape}"
    if a.size == 0:
        return 0.0, ""
    gaps = _gap(a.ravel(), b.ravel())
    index = int(np.argmax(gaps))
    if gaps[index] == 0:
        return 0.0, ""
    position = np.unravel_index(index, a.shape)
    spot = position[0] if len(position) == 1 else tuple(int(p) for p in position)
    return float(gaps[index]), f"element {spot}: {a[position]:.9g} against {b[position]:.9g}"


def _gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        gap = np.abs(a - b)
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & (a == b)
    return np.where(both_nan | same_inf, 0.0, np.where(np.isnan(gap), np.inf, gap))


def _number(value: float) -> float | None:
    """JSON has no infinity or NaN: those become null (the mismatch text says why)."""
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class CaseResult:
    """One case on one path. ``error`` is set when it raised; ``skipped`` when it could
    not run here (the reason)."""

    name: str
    max_error: float
    tolerance: float
    time_ms: float
    error: str = ""
    mismatch: str = ""
    skipped: str = ""
    ran_as: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.skipped) or (not self.error and self.max_error <= self.tolerance)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "skipped": self.skipped or None,
            "max_error": _number(self.max_error),
            "tolerance": self.tolerance,
            "time_ms": round(self.time_ms, 3),
            "error": self.error or None,
            "mismatch": self.mismatch or None,
            "ran_as": self.ran_as,
            "notes": list(self.notes),
        }


@dataclass
class PathRun:
    """The cases of one extension on one path (``path`` as ``DeviceCaps.path`` says)."""

    path: str
    cases: list[CaseResult] = field(default_factory=list)
    error: str = ""  # the run could not start (no context, ...)
    values: dict[str, tuple[Any, float]] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.error and all(c.ok for c in self.cases)

    @property
    def skipped(self) -> str:
        """The reason, when every case was skipped on this path."""
        if self.error or not self.cases or not all(c.skipped for c in self.cases):
            return ""
        return "; ".join(dict.fromkeys(c.skipped for c in self.cases))

    @property
    def max_error(self) -> float:
        errors = [c.max_error for c in self.cases if not c.skipped and not c.error]
        return max(errors, default=0.0)

    @property
    def time_ms(self) -> float:
        return sum(c.time_ms for c in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "skipped": self.skipped or None,
            "error": self.error or None,
            "max_error": _number(self.max_error),
            "time_ms": round(self.time_ms, 3),
            "cases": [c.to_dict() for c in self.cases],
        }


@dataclass(frozen=True)
class Comparison:
    """One case's results on two paths, compared with each other."""

    case: str
    paths: tuple[str, str]
    max_difference: float
    tolerance: float
    mismatch: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.max_difference <= self.tolerance)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "paths": list(self.paths),
            "ok": self.ok,
            "max_difference": _number(self.max_difference),
            "tolerance": self.tolerance,
            "mismatch": self.mismatch or None,
        }


@dataclass
class ExtensionReport:
    """One extension: the path the device takes by default and why, the runs, the
    comparisons between paths, the paths not run, or why the extension has no check."""

    extension: str
    path: str
    reason: str
    runs: list[PathRun] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unchecked: str = ""

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs) and all(c.ok for c in self.comparisons)

    @property
    def outcome(self) -> str:
        """``fail``, ``pass``, ``skipped`` (nothing could run), ``unavailable`` (no path;
        no refusal check) or ``unchecked``."""
        if not self.ok:
            return "fail"
        if self.unchecked:
            return "unchecked"
        ran = [r for r in self.runs if not r.skipped]
        if ran:
            return "pass"
        return "unavailable" if self.path == "unavailable" else "skipped"

    @property
    def max_error(self) -> float:
        return max((r.max_error for r in self.runs), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "extension": self.extension,
            "path": self.path,
            "reason": self.reason,
            "outcome": self.outcome,
            "ok": self.ok,
            "paths_run": [r.path for r in self.runs if not r.skipped],
            "max_error": _number(self.max_error),
            "time_ms": round(sum(r.time_ms for r in self.runs), 3),
            "runs": [r.to_dict() for r in self.runs],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "skipped_paths": [{"path": p, "reason": why} for p, why in self.skipped],
            "unchecked": self.unchecked or None,
        }


@dataclass(frozen=True)
class DeviceStrings:
    """What identifies the device and its driver in a bug report."""

    label: str
    platform: str
    platform_version: str
    device: str
    device_version: str
    driver: str
    opencl_c_version: str
    adreno_model: str | None
    adreno_compiler: str | None
    image_support: bool

    @classmethod
    def from_caps(cls, caps: DeviceCaps) -> DeviceStrings:
        return cls(
            caps.label,
            caps.platform_name,
            caps.platform_version,
            caps.device_name.strip(),
            caps.device_version,
            caps.driver_version,
            caps.opencl_c_version,
            caps.adreno_model,
            caps.adreno_compiler,
            caps.image_support,
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


#: A case's skip reason on a device that builds no program (the report says why, once).
BUILDS_NOTHING = "the device builds no program (see the build problem above)"


@dataclass
class SelftestReport:
    """The whole selftest of one device (``qcom-ext selftest --json`` prints
    :meth:`to_dict`)."""

    device: DeviceStrings
    seed: int
    disabled: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    extensions: list[ExtensionReport] = field(default_factory=list)
    problems: tuple[str, ...] = ()
    #: The child-process trial verdicts (qcom_ext.tools.verify.runner) that applied, as dicts.
    verdicts: dict[str, Any] = field(default_factory=dict)
    #: The known driver/compiler quirks that apply to the device (DeviceCaps.quirks).
    quirks: tuple[Quirk, ...] = ()
    #: Why the device builds no program at all (DeviceCaps.build_problem), or None: the
    #: checks that build kernels are then skipped (BUILDS_NOTHING), and the selftest
    #: fails on this one line.
    build_problem: str | None = None

    @property
    def ok(self) -> bool:
        unbuilt = any(
            case.skipped == BUILDS_NOTHING
            for item in self.extensions
            for run in item.runs
            for case in run.cases
        )
        return not unbuilt and all(e.ok for e in self.extensions)

    def extension(self, name: str) -> ExtensionReport:
        """The report of extension ``name`` (KeyError names the ones checked)."""
        for item in self.extensions:
            if item.extension == name:
                return item
        raise KeyError(
            f"{name!r} was not checked; checked: {', '.join(e.extension for e in self.extensions)}"
        )

    def counts(self) -> dict[str, int]:
        """How many extensions had each outcome."""
        counts = dict.fromkeys(("pass", "fail", "skipped", "unavailable", "unchecked"), 0)
        for item in self.extensions:
            counts[item.outcome] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        from qcom_ext._version import __version__

        return {
            "schema": SCHEMA,
            "qcom_ext": __version__,
            "ok": self.ok,
            "device": self.device.to_dict(),
            "seed": self.seed,
            "disabled": list(self.disabled),
            "only": None if self.only is None else list(self.only),
            "problems": list(self.problems),
            "build_problem": self.build_problem,
            "verdicts": self.verdicts,
            "quirks": [quirk.to_dict() for quirk in self.quirks],
            "counts": self.counts(),
            "extensions": [e.to_dict() for e in self.extensions],
        }
