"""Every path a device can take for an extension, each forced by disabling the ones before.

The selftest never picks a path itself: it asks :func:`qcom_ext.probe` for the report
with more names disabled (``probe(device, disabled=names)``, on top of the user's
``QCOM_EXT_DISABLE``) and runs each path's cases inside ``disabling(names)``, so the
library's own calls take that path too, exactly as the library decides for every call;
the environment is never rewritten. A native extension is forced to its fallback by its
own name (which also drops its Khronos tiers, so those are unreachable on that device);
a Khronos tier by the tier's name.

>>> from qcom_ext import probe
>>> plan = plan_paths(probe(), "cl_qcom_protected_context")
>>> plan.runs[-1][0]           # never a fallback: where it is not (or no longer) native
'unavailable'
>>> plan_paths(probe(), "cl_qcom_bitreverse").runs[-1][0]
'fallback'
"""

from __future__ import annotations

from dataclasses import dataclass

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.extensions import REGISTRY, broken_reason, khronos_problem

__all__ = ["PathPlan", "plan_paths"]


@dataclass(frozen=True)
class PathPlan:
    """The paths to run, in order (``(path, names disabled on top of the report's)``),
    and ``(path, reason)`` for each path of the extension that will not run."""

    runs: tuple[tuple[str, frozenset[str]], ...]
    skipped: tuple[tuple[str, str], ...]


def plan_paths(caps: DeviceCaps, extension: str) -> PathPlan:
    """The paths ``extension`` can take on the device of ``caps``, each with the names
    to disable to reach it (from the report alone: no probe, no device needed)."""
    ext = REGISTRY[extension]
    runs: list[tuple[str, frozenset[str]]] = []
    extra: frozenset[str] = frozenset()
    last_reason = ""
    while True:
        status = caps.with_disabled(extra).status(extension)
        if status.path == "unavailable":  # no path (left): the refusal checks run
            runs.append(("unavailable", extra))
            last_reason = status.reason
            break
        runs.append((status.path, extra))
        if status.tier == "fallback":
            break
        tier = extension if status.tier == "native" else status.path.split(":", 1)[1]
        extra = extra | {tier}
    taken = {path for path, _ in runs}
    candidates = ["native", *(f"khr:{tier}" for tier in ext.khronos), "fallback"]
    skipped = tuple(
        (path, _why_not(caps, extension, path, taken, last_reason))
        for path in candidates
        if path not in taken
    )
    return PathPlan(tuple(runs), skipped)


def _why_not(
    caps: DeviceCaps, extension: str, path: str, taken: set[str], unavailable_reason: str
) -> str:
    ext = REGISTRY[extension]
    if path == "native":
        if not caps.has(extension):
            return "not advertised"
        broken = broken_reason(extension, caps.broken)  # a known bug or a failed trial
        return f"advertised, but {broken or 'disabled by QCOM_EXT_DISABLE'}"
    if path.startswith("khr:"):
        tier = path.split(":", 1)[1]
        available = caps.extensions | caps.platform_extensions
        problem = khronos_problem(
            tier,
            available,
            disabled=caps.disabled,
            limits=dict(caps.limits.items()),
            broken=caps.broken,
        )
        if problem:
            return problem.removeprefix(f"{tier} ")
        return (
            f"not reachable here: {extension} is native, and QCOM_EXT_DISABLE="
            f"{extension} drops its Khronos tiers too (qcom_ext never takes {tier} "
            "on this device)"
        )
    if ext.fallback is None:
        return ext.no_fallback_reason
    return unavailable_reason.split("; ", 1)[-1] or "no portable fallback here"
