"""The selftest's registry: the checks of each extension, or why it has none.

A *case* is one small computation of an extension, run on one path with the inputs of
its own random generator, that returns an :class:`Outcome`: the device's result, the
numpy reference and the tolerance. The check modules (``checks_*.py``) register cases
with :func:`case` and extensions without a computation to check with :func:`unchecked`.

This is the one registry of checks: a case marked ``trial="..."`` is also the trial of
its extension's risky native calls, which ``probe(verify=True)`` runs in a child process
(:mod:`qcom_ext.tools.verify.runner`) on the native path and on each Khronos tier.

>>> from qcom_ext.tools.selftest import _registry
>>> [c.name for c in _registry.cases_for("cl_qcom_bitreverse")]
['qcom_bitreverse of 4096 uints']
>>> _registry.trial_case("cl_qcom_bitreverse").trial
'the trial kernel of qcom_bitreverse (4096 uints), compiled and run'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from qcom_ext.device.extensions import REGISTRY
from qcom_ext.errors import ConfigError
from qcom_ext.tools.selftest._env import Env

__all__ = [
    "Case",
    "Env",
    "Outcome",
    "Skip",
    "case",
    "cases_for",
    "function_name",
    "refused",
    "trial_case",
    "unchecked",
    "unchecked_reason",
]

#: The tiers a case runs on unless it says otherwise (``unavailable`` runs refusal checks).
USABLE = ("native", "khr", "fallback")
TIERS = (*USABLE, "unavailable")


class Skip(Exception):
    """Raised by a case that cannot run on this device or path; the message says why."""


@dataclass(frozen=True)
class Outcome:
    """What a case measured: ``got`` against ``want`` (arrays, numbers, or mappings of
    named numbers), within ``tolerance`` (absolute). ``ran_as`` is the path the library
    reports having taken where it says (a missing entry point can move it); ``note`` is
    shown with the result."""

    got: Any
    want: Any
    tolerance: float = 0.0
    ran_as: str | None = None
    note: str = ""


def refused(extension: str, attempt: Callable[[], Any]) -> Outcome:
    """The outcome of ``attempt()``, a call that must raise ExtensionUnavailable naming
    ``extension`` (where it has no path, qcom_ext refuses rather than fakes it)."""
    from qcom_ext.errors import ExtensionUnavailable

    key = "refused, naming the extension"
    try:
        attempt()
    except ExtensionUnavailable as exc:
        return Outcome({key: exc.extension == extension}, {key: True}, note=str(exc))
    return Outcome(
        {key: False}, {key: True}, note="the call succeeded where the extension has no path"
    )


CaseFunction = Callable[[Env], Outcome]


@dataclass(frozen=True)
class Case:
    """One registered computation of an extension.

    ``trial``: what the case tries, where it is its extension's trial (the text names it
    in a verdict's reason, ``"the trial recording ..."``); ``needs_device=False`` for a
    trial that makes no OpenCL call (the tests' stand-ins for crashing drivers).
    """

    extension: str
    name: str
    run: CaseFunction
    tiers: tuple[str, ...] = USABLE
    compare: bool = True  # compare the paths' results with each other
    trial: str = ""
    needs_device: bool = True

    def applies(self, path: str) -> bool:
        return path.split(":", 1)[0] in self.tiers


def function_name(function: Callable[..., Any]) -> str:
    """``"module:qualname"`` of a module-level function of an importable module (what a
    trial's child process imports); ConfigError for anything else.

    >>> function_name(function_name)
    'qcom_ext.tools.selftest._registry:function_name'
    """
    module, qualname = getattr(function, "__module__", ""), getattr(function, "__qualname__", "")
    name = f"{module}:{qualname}"
    if not module or not qualname or "<" in qualname or module == "__main__":
        raise ConfigError(
            f"trial function {name!r}: expected a module-level function of an importable "
            "module ('package.module:function'), which the child process imports"
        )
    return name


_CASES: dict[str, list[Case]] = {}
_UNCHECKED: dict[str, str] = {}


def _known(extension: str) -> None:
    if extension not in REGISTRY:
        raise ConfigError(f"{extension!r} is not in qcom_ext.device.extensions.REGISTRY")


def case(
    extension: str,
    name: str,
    *,
    tiers: tuple[str, ...] = USABLE,
    compare: bool = True,
    trial: str = "",
    needs_device: bool = True,
) -> Callable[[CaseFunction], CaseFunction]:
    """Register the decorated function as a case of ``extension``.

    ``tiers`` are the paths it runs on (``("unavailable",)``: a refusal check, run where
    the extension has no path); ``compare=False`` where the paths may rightly differ
    (a layout the driver chooses, a sub-group size each path defines). ``trial``
    (what it tries, ``"the trial ..."``) makes it the extension's one trial: it then
    also runs in verify's child process, natively and on each Khronos tier.
    """
    _known(extension)
    unknown = set(tiers) - set(TIERS)
    if unknown or not tiers:
        raise ConfigError(f"case {name!r}: tiers {tiers!r}; expected some of {TIERS}")
    if extension in _UNCHECKED:
        raise ConfigError(f"{extension} is registered as unchecked")
    if trial and "native" not in tiers:
        raise ConfigError(f"case {name!r}: a trial tries the native path; tiers {tiers!r}")

    def register(run: CaseFunction) -> CaseFunction:
        cases = _CASES.setdefault(extension, [])
        if any(c.name == name for c in cases):
            raise ConfigError(f"{extension} has two cases named {name!r}")
        if trial:
            function_name(run)  # the child imports it by name
            if any(c.trial for c in cases):
                raise ConfigError(f"{extension} has two trials (case {name!r})")
        cases.append(Case(extension, name, run, tuple(tiers), compare, trial, needs_device))
        return run

    return register


def unchecked(extension: str, reason: str) -> None:
    """Record that ``extension`` has no computation to check, and why."""
    _known(extension)
    if extension in _CASES or not reason:
        raise ConfigError(f"{extension}: unchecked needs a reason and no registered cases")
    _UNCHECKED[extension] = reason


def cases_for(extension: str) -> tuple[Case, ...]:
    """The registered cases of ``extension``, in registration order."""
    return tuple(_CASES.get(extension, ()))


def trial_case(extension: str) -> Case | None:
    """The case that is the trial of ``extension``, or None (no risky native call)."""
    return next((c for c in _CASES.get(extension, ()) if c.trial), None)


def unchecked_reason(extension: str) -> str | None:
    """Why ``extension`` has no check (None when it has cases)."""
    return _UNCHECKED.get(extension)


def coverage() -> Mapping[str, str]:
    """Every registry extension -> ``"checked"`` or the reason it is not."""
    return {name: ("checked" if name in _CASES else _UNCHECKED.get(name, "")) for name in REGISTRY}
