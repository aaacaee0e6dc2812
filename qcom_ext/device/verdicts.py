"""The verdicts of the child-process trials, their cache, and how ``probe()`` applies them.

An Adreno driver that advertises an extension may still kill the process the first time
it is used. ``probe(device, verify=True)`` tries each risky native call in a child
process first (:mod:`qcom_ext.tools.verify.runner`); each trial ends in a
:class:`Verdict`:

``ok``
    the calls succeeded (and the result, where there is one, was right);
``failed``
    a call returned an OpenCL error, a build failed or the result was wrong;
``crashed``
    the child died (the signal is named: ``SIGSEGV``, ``SIGABRT`` ...);
``timed_out``
    the trial did not finish within the time limit (the child is killed);
``inconclusive``
    the child was killed by ``SIGKILL``, the out-of-memory killer's signal: the
    extension is not used in this process, but the verdict is not cached (the next
    ``verify=True`` tries again), since memory pressure says nothing about the driver.

Verdicts are cached as JSON under the cache root (``verify/``), keyed by platform,
device name, driver version and qcom_ext version, so a new driver is tried again. A
plain ``probe()`` reads that file when it exists (no child process) and applies it
(:func:`apply_cached`): an extension whose trial did not pass takes the path it would
take without it (:meth:`DeviceCaps.with_verdicts`), with the reason. The file is
untrusted input: anything unreadable is no verdict, and a cache can only downgrade: a
cached ``ok`` is neither applied nor a reason to skip a trial (:meth:`Verdict.lasting`).
Writers hold a lock on ``<file>.lock`` over the read-merge-write (:func:`store_verdicts`),
so concurrent processes keep each other's verdicts.

>>> Verdict("cl_qcom_bitreverse", "the trial kernel", "crashed", "SIGSEGV").reason
'the trial kernel crashed (SIGSEGV) in a child process'
>>> killed = Verdict("cl_qcom_bitreverse", "the trial kernel", "inconclusive", "SIGKILL")
>>> killed.broken, killed.lasting  # not used in this process, not cached
(True, False)
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qcom_ext import _cache_dir
from qcom_ext.device.caps import DeviceCaps

__all__ = [
    "CACHE_NAME",
    "FORMAT",
    "LASTING",
    "LOCK_TIMEOUT",
    "OUTCOMES",
    "Verdict",
    "apply_cached",
    "cache_path",
    "cached_verdicts",
    "identity",
    "store_verdicts",
    "use_verdicts_of_parent",
]

CACHE_NAME = "verify"
FORMAT = 1
OUTCOMES = ("ok", "failed", "crashed", "timed_out", "inconclusive")
#: The outcomes that mark an extension broken until its driver or qcom_ext changes.
LASTING = ("failed", "crashed", "timed_out")
LOCK_TIMEOUT = 10.0  # seconds to wait for another writer of the same verdict file


@dataclass(frozen=True)
class Verdict:
    """How the trial of one extension ended.

    ``trial`` says what was tried (``"the trial recording"``), ``detail`` the signal, the
    error or the time limit, ``verified`` the date (ISO) and ``log`` the end of what the
    child wrote to stderr.

    >>> Verdict("cl_qcom_bitreverse", "the trial kernel", "failed",
    ...         "clBuildProgram failed", "2026-01-02").reason
    'the trial kernel failed in a child process: clBuildProgram failed (verified 2026-01-02)'
    """

    extension: str
    trial: str
    outcome: str
    detail: str = ""
    verified: str = ""
    log: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"verdict outcome {self.outcome!r}; expected one of {OUTCOMES}")

    @property
    def broken(self) -> bool:
        """True unless the trial passed: the extension is not to be used."""
        return self.outcome != "ok"

    @property
    def lasting(self) -> bool:
        """True for a verdict that is cached and spares later trials: a known breakage
        (``failed``, ``crashed``, ``timed_out``). An ``ok`` never grants a path and an
        ``inconclusive`` holds for this process only."""
        return self.outcome in LASTING

    @property
    def reason(self) -> str:
        """One line for ``ExtensionStatus.reason`` (after ``"<ext> advertised, but "``)."""
        when = f" (verified {self.verified})" if self.verified else ""
        if self.outcome == "ok":
            return f"{self.trial} passed in a child process{when}"
        if self.outcome == "crashed":
            return f"{self.trial} crashed ({self.detail}) in a child process{when}"
        if self.outcome == "timed_out":
            return f"{self.trial} did not finish within {self.detail} in a child process{when}"
        if self.outcome == "inconclusive":
            return (
                f"{self.trial} was killed ({self.detail}, the out-of-memory killer's signal) "
                f"in a child process{when}: inconclusive, not cached"
            )
        return f"{self.trial} failed in a child process: {self.detail}{when}"

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """A verdict from :meth:`to_dict`'s form; ValueError for anything else."""
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(data, Mapping) or not all(
            isinstance(data.get(n, ""), str) for n in names
        ):
            raise ValueError(f"not a verdict: {data!r}")
        return cls(**{n: data.get(n, "") for n in names})


def identity(caps: DeviceCaps) -> dict[str, str]:
    """What a cached verdict is valid for: another driver or qcom_ext is tried again."""
    from qcom_ext._version import __version__

    return {
        "platform": caps.platform_name,
        "device": caps.device_name.strip(),
        "driver": caps.driver_version,
        "qcom_ext": __version__,
    }


def cache_path(caps: DeviceCaps) -> Path:
    """The JSON file holding the verdicts of ``caps``'s device and driver."""
    blob = json.dumps(identity(caps), sort_keys=True).encode()
    return _cache_dir.cache_subdir(CACHE_NAME) / f"{hashlib.sha256(blob).hexdigest()[:24]}.json"


def _well_formed(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and "format" in data
        and isinstance(data.get("verdicts"), dict)
        and all(isinstance(v, dict) for v in data["verdicts"].values())
    )


def cached_verdicts(caps: DeviceCaps) -> dict[str, Verdict]:
    """The cached verdicts of this device and driver; ``{}`` when there are none, the
    cache is off, or the file is unreadable, corrupt or for another device."""
    if not _cache_dir.cache_enabled():
        return {}
    data = _cache_dir.read_json(cache_path(caps), max_bytes=1 << 20, validate=_well_formed)
    if data is None or data["format"] != FORMAT or data.get("identity") != identity(caps):
        return {}
    try:
        verdicts = {name: Verdict.from_dict(v) for name, v in data["verdicts"].items()}
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}
    return {name: v for name, v in verdicts.items() if v.extension == name}


def _try_lock(handle: int) -> bool:
    """One attempt at an exclusive lock on the open file ``handle``: True when taken."""
    try:
        import fcntl
    except ImportError:  # Windows: a byte-range lock on the file's first byte
        import msvcrt

        try:
            msvcrt.locking(handle, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the writers' lock of verdict file ``path`` (``<path>.lock``, mode 0o600, in
    the trusted cache directory): OSError when it cannot be made or is held by another
    writer for over :data:`LOCK_TIMEOUT` s. Released when the block ends (or the
    process dies: the lock is the open file's)."""
    _cache_dir.check_dir(path.parent, create=True)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    handle = os.open(path.with_suffix(".lock"), flags, 0o600)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while not _try_lock(handle):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    errno.ETIMEDOUT, f"another writer held the lock over {LOCK_TIMEOUT:g} s"
                )
            time.sleep(0.005)
        yield
    finally:
        os.close(handle)


def store_verdicts(caps: DeviceCaps, verdicts: Mapping[str, Verdict]) -> None:
    """Add ``verdicts`` to the cached ones of ``caps``'s device and driver; an
    ``inconclusive`` one is not stored. The read-merge-write holds the file's lock, so
    concurrent writers keep each other's verdicts; the file is replaced atomically, so
    readers see a whole one. An unwritable cache warns once and stores nothing."""
    kept = {n: v for n, v in verdicts.items() if v.outcome != "inconclusive"}
    if not kept or not _cache_dir.cache_enabled():
        return
    path = cache_path(caps)
    try:
        with _locked(path):
            merged = {**cached_verdicts(caps), **kept}
            payload = {
                "format": FORMAT,
                "identity": identity(caps),
                "verdicts": {n: v.to_dict() for n, v in sorted(merged.items())},
            }
            _cache_dir.write_atomically(path, json.dumps(payload, indent=1).encode())
    except OSError as exc:
        _cache_dir.unwritable("trial verdict", path, exc)


#: In a trial child: the verdicts the parent passed (the cache is not read there).
_parent_verdicts: dict[str, Verdict] | None = None


def apply_cached(caps: DeviceCaps) -> DeviceCaps:
    """``caps`` with the cached verdicts that mark an extension broken applied (what a
    plain ``probe()`` returns): a cache can only downgrade, so a cached ``ok`` (stale or
    forged) is not applied. In a trial child: the parent's verdicts, as they are."""
    if _parent_verdicts is not None:
        verdicts = _parent_verdicts
    else:
        verdicts = {n: v for n, v in cached_verdicts(caps).items() if v.lasting}
    return caps.with_verdicts(verdicts) if verdicts else caps


def use_verdicts_of_parent(verdicts: Iterable[Verdict]) -> None:
    """In a trial child process: ``probe()`` applies these verdicts (the parent's), not the
    cache, so the public API takes exactly the path under trial."""
    global _parent_verdicts
    _parent_verdicts = {v.extension: v for v in verdicts}
