"""Every path a device can take for an extension, each forced through ``QCOM_EXT_DISABLE``.

The selftest never picks a path itself: it sets ``QCOM_EXT_DISABLE`` (the user's value
plus the names that force the next path) and lets :func:`qcom_ext.probe`, whose cache
is keyed on that value, decide, exactly as the library does for every call. A native
extension is forced to its fallback by its own name (which also drops its Khronos
tiers, so those are unreachable on that device); a Khronos tier by the tier's name.

>>> import os
>>> before = os.environ.get("QCOM_EXT_DISABLE")
>>> with forced({"cl_qcom_bitreverse"}):
...     "cl_qcom_bitreverse" in os.environ["QCOM_EXT_DISABLE"]
True
>>> os.environ.get("QCOM_EXT_DISABLE") == before
True
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from qcom_ext.device.caps import DISABLE_ENV, DeviceCaps, parse_disabled
from qcom_ext.device.extensions import REGISTRY, khronos_problem
from qcom_ext.device.probe import probe

__all__ = ["PathPlan", "forced", "plan_paths"]


@contextlib.contextmanager
def forced(names: Iterable[str]) -> Iterator[None]:
    """``QCOM_EXT_DISABLE`` = its current value plus ``names`` while the block runs; the
    variable is restored (or removed) afterwards, even on errors."""
    saved = os.environ.get(DISABLE_ENV)
    extra = set(names)
    if extra:
        os.environ[DISABLE_ENV] = ",".join(sorted(parse_disabled(saved) | extra))
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(DISABLE_ENV, None)
        else:
            os.environ[DISABLE_ENV] = saved


@dataclass(frozen=True)
class PathPlan:
    """The paths to run, in order (``(path, names added to QCOM_EXT_DISABLE)``), and
    ``(path, reason)`` for each path of the extension that will not run."""

    runs: tuple[tuple[str, frozenset[str]], ...]
    skipped: tuple[tuple[str, str], ...]


def plan_paths(device: int, extension: str) -> PathPlan:
    """The paths ``extension`` can take on ``device`` under the current environment.

    >>> from qcom_ext import probe
    >>> plan = plan_paths(probe().device_id, "cl_qcom_protected_context")
    >>> plan.runs[-1][0]           # never a fallback: where it is not (or no longer) native
    'unavailable'
    >>> plan_paths(probe().device_id, "cl_qcom_bitreverse").runs[-1][0]
    'fallback'
    """
    ext = REGISTRY[extension]
    base = probe(device)
    runs: list[tuple[str, frozenset[str]]] = []
    extra: frozenset[str] = frozenset()
    last_reason = ""
    while True:
        with forced(extra):
            status = probe(device).status(extension)
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
        (path, _why_not(base, extension, path, taken, last_reason))
        for path in candidates
        if path not in taken
    )
    return PathPlan(tuple(runs), skipped)


def _why_not(
    caps: DeviceCaps, extension: str, path: str, taken: set[str], unavailable_reason: str
) -> str:
    ext = REGISTRY[extension]
    if path == "native":
        if caps.has(extension):
            return "advertised, but disabled by QCOM_EXT_DISABLE"
        return "not advertised"
    if path.startswith("khr:"):
        tier = path.split(":", 1)[1]
        available = caps.extensions | caps.platform_extensions
        problem = khronos_problem(
            tier, available, disabled=caps.disabled, limits=dict(caps.limits.items())
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
