"""The trials of the risky native calls, run in child processes (``probe(verify=True)``).

An Adreno driver that advertises an extension may still kill the process the first time
it is used: a kernel compile with the ``cl_qcom_*`` pragma, the first recording, the
first weight image (``anchors-usage.md`` 4.4-4.5). :func:`verify` runs one *trial* per
extension the device would use (natively, or the Khronos tier standing in for it) in a
child Python process, so a SIGSEGV or SIGABRT there marks that extension broken instead
of ending the caller. Each trial ends in a :class:`~qcom_ext.device.verdicts.Verdict`,
cached and applied by the device layer (:mod:`qcom_ext.device.verdicts`, re-exported
here).

The trials are selftest cases: the case of an extension registered with ``trial="..."``
(:func:`qcom_ext.tools.selftest._registry.case`) runs in the child on the path under
trial, with its kernels compiled for that path alone; an exception, a wrong result or
another path taken is ``failed``.

>>> caps = DeviceCaps.from_info(extensions="cl_qcom_bitreverse cl_khr_command_buffer",
...                             disabled=())
>>> [trial.extension for trial, _, _ in trials_needed(caps)]
['cl_qcom_bitreverse', 'cl_khr_command_buffer']
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from qcom_ext._isolation import child_environment
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.location import location as _locate
from qcom_ext.device.verdicts import (
    CACHE_NAME,
    FORMAT,
    OUTCOMES,
    Verdict,
    apply_cached,
    cache_path,
    cached_verdicts,
    identity,
    store_verdicts,
)
from qcom_ext.errors import ConfigError, QcomExtError, RegisterSpillWarning
from qcom_ext.tools.selftest import _registry
from qcom_ext.tools.verify._process import DEFAULT_TIMEOUT, TrialProtocolError, run_child

__all__ = [
    "CACHE_NAME",
    "DEFAULT_TIMEOUT",
    "FORMAT",
    "OUTCOMES",
    "Trial",
    "TrialProtocolError",
    "Verdict",
    "apply_cached",
    "cache_path",
    "cached_verdicts",
    "identity",
    "store_verdicts",
    "trials_needed",
    "verify",
    "warn_spills",
]


@dataclass(frozen=True)
class Trial:
    """One trial to run: ``extension`` is what its verdict is for (the ``cl_qcom_*``
    extension natively, the Khronos tier on ``khr:<tier>``), ``what`` names it in reasons,
    ``function`` (``"module:qualname"``) is the selftest case the child runs."""

    extension: str
    what: str
    function: str
    needs_device: bool = True


def trials_needed(caps: DeviceCaps) -> list[tuple[Trial, str, str]]:
    """``(trial, subject, path)`` for every path ``caps`` would use that has a trial:
    ``subject`` is the ``cl_qcom_*`` extension, ``path`` ``native`` or ``khr:<tier>``
    (whose verdict is the tier's). Fallback and unavailable paths call nothing native."""
    found: dict[str, tuple[Trial, str, str]] = {}
    for name, status in sorted(caps.statuses.items()):
        if status.tier not in ("native", "khr"):
            continue
        key = name if status.tier == "native" else status.path.split(":", 1)[1]
        case = _registry.trial_case(name)
        if case is None or key in found or not case.applies(status.path):
            continue
        trial = Trial(key, case.trial, _registry.function_name(case.run), case.needs_device)
        found[key] = (trial, name, status.path)
    return list(found.values())


def verify(
    caps: DeviceCaps, *, force: bool = False, timeout: float = DEFAULT_TIMEOUT
) -> DeviceCaps:
    """Run, in child processes, the trial of every path ``caps`` would use that is not
    already known broken (every one with ``force``), cache the verdicts and return
    ``caps`` with them applied. A cache only downgrades: a cached ``failed``, ``crashed``
    or ``timed_out`` spares its trial, a cached ``ok`` never does. A downgrade can bring
    a Khronos tier into use; its trial runs too. ``timeout`` bounds every wait on a
    child: for its first report, for each trial, and for its exit.

    Raises :class:`~qcom_ext.ConfigError` when a trial needs the device but the report
    was not read from one a child process can find (``DeviceCaps.from_info``), and
    :class:`TrialProtocolError` when a child's report pipe carries anything else than
    the protocol.
    """
    if not timeout > 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    cached = {} if force else cached_verdicts(caps)
    verdicts = {name: v for name, v in cached.items() if v.lasting}
    current = caps.with_verdicts(verdicts)
    while True:
        needed = [item for item in trials_needed(current) if item[0].extension not in verdicts]
        if not needed:
            return current
        new = _run(current, needed, timeout)
        verdicts.update(new)
        store_verdicts(caps, new)
        current = caps.with_verdicts(verdicts)


def _child_environment() -> dict[str, str]:
    """The environment of every child (:func:`qcom_ext._isolation.child_environment`),
    with the program cache off there: the compile itself is on trial."""
    return child_environment({"QCOM_EXT_NO_CACHE": "1"})


def _run(
    caps: DeviceCaps, needed: list[tuple[Trial, str, str]], timeout: float
) -> dict[str, Verdict]:
    need = [t.extension for t, _, _ in needed if t.needs_device]
    device = _locate(caps) if need else None  # trials that need no device never look
    if device is None and need:
        raise ConfigError(
            f"{caps.label}: the trials of {', '.join(need)} need the device, but a child "
            "process cannot find it (a report from DeviceCaps.from_info or a device "
            "qcom_ext's platforms do not list); probe a real device to verify it"
        )
    passed = [v.to_dict() for v in caps.verdicts.values()]
    pending = list(needed)
    verdicts: dict[str, Verdict] = {}
    while pending:  # one child runs them all, a fresh one resumes after a crash
        spec = {
            "device": device,
            "verdicts": passed,
            "trials": [
                {
                    "extension": t.extension,
                    "what": t.what,
                    "function": t.function,
                    "subject": subject,
                    "path": path,
                }
                for t, subject, path in pending
            ],
        }
        what = {t.extension: t.what for t, _, _ in pending}
        got = _child(spec, what, timeout)
        if not got:  # no progress: a fresh child would do the same
            raise QcomExtError(f"a trial child process ended without a verdict on {list(what)}")
        verdicts.update(got)
        pending = [item for item in pending if item[0].extension not in verdicts]
    return verdicts


def _child(spec: dict[str, Any], what: dict[str, str], timeout: float) -> dict[str, Verdict]:
    """The verdicts of one child process running ``spec``'s trials (until one ends it);
    a kernel a trial ran that spills registers is a :class:`RegisterSpillWarning`."""
    spills: dict[str, tuple[tuple[str, int], ...]] = {}
    try:
        return run_child(spec, what, timeout, _child_environment(), spills=spills)
    finally:
        warn_spills(spills)


def warn_spills(spills: dict[str, tuple[tuple[str, int], ...]]) -> None:
    """One :class:`RegisterSpillWarning` per kernel of ``spills`` (trial -> ``(kernel,
    private bytes per work-item)``), as :func:`_child` collects them.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn_spills({"cl_qcom_bitreverse": (("reverse", 64),)})
    >>> print(seen[0].message)
    the trial of cl_qcom_bitreverse: kernel reverse spills: 64 bytes of private memory per \
work-item
    """
    for extension, kernels in sorted(spills.items()):
        for name, size in kernels:
            warnings.warn(
                f"the trial of {extension}: kernel {name} spills: {size} bytes of private "
                "memory per work-item",
                RegisterSpillWarning,
                stacklevel=3,
            )
