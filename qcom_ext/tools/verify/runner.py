"""Trials of the risky native calls, in a child process, and the verdicts ``probe()`` applies.

An Adreno driver that advertises an extension may still kill the process the first time
it is used: a kernel compile with the ``cl_qcom_*`` pragma, the first recording, the
first weight image (``anchors-usage.md`` 4.4-4.5). ``probe(device, verify=True)`` runs
one *trial* per extension the device would use (native, or the Khronos tier standing in
for it) in a child Python process, so a SIGSEGV or SIGABRT there marks that extension
broken instead of ending the caller. Each trial ends in a :class:`Verdict`:

``ok``
    the calls succeeded (and the result, where there is one, was right);
``failed``
    a call returned an OpenCL error, a build failed or the result was wrong;
``crashed``
    the child died (the signal is named: ``SIGSEGV``, ``SIGABRT`` ...);
``timed_out``
    the trial did not finish within the time limit (the child is killed).

Verdicts are cached as JSON under the cache root (``verify/``), keyed by platform,
device name, driver version and qcom_ext version, so a new driver is tried again. A
plain ``probe()`` reads that file when it exists (no child process) and applies it: an
extension whose trial did not pass takes the path it would take without it
(:meth:`DeviceCaps.with_verdicts`), with the reason, e.g. ``cl_qcom_recordable_queues
advertised, but the trial recording crashed (SIGSEGV) in a child process (verified
2026-05-04)``. A protected context never falls back: it becomes ``unavailable``.

The trials are the table :data:`TRIALS` (extension -> :class:`Trial`); a trial is a
function of one :class:`TrialTarget`, named ``"module:function"`` so the child can
import it. :func:`register_trial` adds one (tests inject crashing trials this way).

>>> caps = DeviceCaps.from_info(extensions="cl_qcom_bitreverse cl_khr_command_buffer",
...                             disabled=())
>>> [trial.extension for trial, _, _ in trials_needed(caps)]
['cl_qcom_bitreverse', 'cl_khr_command_buffer']
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import hashlib
import importlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qcom_ext import _cache_dir
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import ConfigError, QcomExtError

__all__ = [
    "CACHE_NAME",
    "DEFAULT_TIMEOUT",
    "OUTCOMES",
    "TRIALS",
    "Trial",
    "TrialTarget",
    "Verdict",
    "apply_cached",
    "cache_path",
    "cached_verdicts",
    "register_trial",
    "trials_needed",
    "verify",
]

CACHE_NAME = "verify"
FORMAT = 1
DEFAULT_TIMEOUT = 60.0  # seconds per trial
STARTUP_TIMEOUT = 120.0  # seconds for the child to import qcom_ext and find the device
OUTCOMES = ("ok", "failed", "crashed", "timed_out")
PROTOCOL = "qcom_ext-trial:"
_LOG_TAIL = 4000


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
    def reason(self) -> str:
        """One line for ``ExtensionStatus.reason`` (after ``"<ext> advertised, but "``)."""
        when = f" (verified {self.verified})" if self.verified else ""
        if self.outcome == "ok":
            return f"{self.trial} passed in a child process{when}"
        if self.outcome == "crashed":
            return f"{self.trial} crashed ({self.detail}) in a child process{when}"
        if self.outcome == "timed_out":
            return f"{self.trial} did not finish within {self.detail} in a child process{when}"
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


@dataclass(frozen=True)
class Trial:
    """One trial: ``function`` (``"module:qualname"``) is called with a :class:`TrialTarget`
    in a child process; returning is ``ok``, raising is ``failed``. ``what`` names the
    trial in reasons (``"the trial recording"``). ``needs_device=False`` for trials that
    run without an OpenCL device (tests)."""

    extension: str
    what: str
    function: str
    needs_device: bool = True

    def load(self) -> Callable[[TrialTarget], Any]:
        """The function, imported (in the child)."""
        module, _, name = self.function.partition(":")
        target: Any = importlib.import_module(module)
        for part in name.split("."):
            target = getattr(target, part)
        return target


def _function_name(function: str | Callable[..., Any]) -> str:
    if isinstance(function, str):
        name = function
    else:
        name = f"{function.__module__}:{function.__qualname__}"
    module, _, qualname = name.partition(":")
    if not module or not qualname or "<" in qualname or module == "__main__":
        raise ConfigError(
            f"trial function {name!r}: expected a module-level function of an importable "
            "module ('package.module:function'), which the child process imports"
        )
    return name


_K = "the trial kernel with the {ext} pragma ({builtin}), compiled and run"
_T = "the trial kernel with {ext} ({builtin}), compiled and run"
_BUILTIN_TRIALS: tuple[tuple[str, str, str], ...] = (
    (
        "cl_qcom_recordable_queues",
        "the trial recording (clNewRecordingQCOM, clEndRecordingQCOM, clEnqueueRecordingQCOM)",
        "recording",
    ),
    ("cl_khr_command_buffer", "the trial command buffer (record, finalize, enqueue)", "recording"),
    (
        "cl_qcom_accelerated_image_ops",
        "the trial weight image (CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM) and qcom_convolve_imagef kernel",
        "weight_image",
    ),
    (
        "cl_qcom_create_buffer_from_image",
        "the trial buffer from an image (clCreateBufferFromImageQCOM)",
        "image_buffer",
    ),
    ("cl_khr_image2d_from_buffer", "the trial image over a buffer", "image_buffer"),
    (
        "cl_qcom_onchip_global_memory",
        "the trial on-chip buffer (CL_MEM_ONCHIP_GLOBAL_QCOM)",
        "onchip",
    ),
    ("cl_qcom_perf_hint", "the trial context with CL_CONTEXT_PERF_HINT_QCOM", "perf_hint"),
    ("cl_khr_throttle_hints", "the trial queue with CL_QUEUE_THROTTLE_KHR", "perf_hint"),
    (
        "cl_qcom_priority_hint",
        "the trial context with CL_CONTEXT_PRIORITY_HINT_QCOM",
        "priority_hint",
    ),
    ("cl_khr_priority_hints", "the trial queue with CL_QUEUE_PRIORITY_KHR", "priority_hint"),
    (
        "cl_qcom_protected_context",
        "the trial protected context (CL_CONTEXT_PROTECTED_QCOM)",
        "protected_context",
    ),
    ("cl_qcom_extended_query_image_info", "the trial clQueryImageInfoQCOM query", "image_info"),
    (
        "cl_qcom_filter_bicubic",
        "the trial bicubic sampler (CL_FILTER_BICUBIC_QCOM) and kernel",
        "bicubic",
    ),
    (
        "cl_qcom_bitreverse",
        _K.format(ext="cl_qcom_bitreverse", builtin="qcom_bitreverse"),
        "bitreverse",
    ),
    (
        "cl_khr_extended_bit_ops",
        _T.format(ext="cl_khr_extended_bit_ops", builtin="bit_reverse"),
        "bitreverse",
    ),
    (
        "cl_qcom_dot_product8",
        _K.format(ext="cl_qcom_dot_product8", builtin="qcom_udot8_acc, qcom_dot8_acc"),
        "dot_product8",
    ),
    (
        "cl_khr_integer_dot_product",
        _T.format(ext="cl_khr_integer_dot_product", builtin="dot_4x8packed"),
        "dot_product8",
    ),
    (
        "cl_qcom_subgroup_shuffle",
        _K.format(ext="cl_qcom_subgroup_shuffle", builtin="qcom_sub_group_shuffle_xor"),
        "subgroup_shuffle",
    ),
    (
        "cl_khr_subgroup_shuffle",
        _T.format(ext="cl_khr_subgroup_shuffle", builtin="sub_group_shuffle"),
        "subgroup_shuffle",
    ),
    (
        "cl_qcom_reqd_sub_group_size",
        _K.format(ext="cl_qcom_reqd_sub_group_size", builtin='qcom_reqd_sub_group_size("half")'),
        "reqd_sub_group_size",
    ),
    (
        "cl_intel_required_subgroup_size",
        _T.format(ext="cl_intel_required_subgroup_size", builtin="intel_reqd_sub_group_size"),
        "reqd_sub_group_size",
    ),
    (
        "cl_qcom_bfloat16_product",
        _K.format(ext="cl_qcom_bfloat16_product", builtin="qcom_mad32_bf16"),
        "bfloat16_product",
    ),
    (
        "cl_qcom_vector_image_ops",
        _K.format(ext="cl_qcom_vector_image_ops", builtin="qcom_read_imagef_2x2, _4x1"),
        "vector_image_ops",
    ),
)

#: Extension (``cl_qcom_*`` for its native path, or a Khronos tier) -> its trial.
TRIALS: dict[str, Trial] = {
    ext: Trial(ext, what, f"qcom_ext.tools.verify.trials:{name}")
    for ext, what, name in _BUILTIN_TRIALS
}


def register_trial(
    extension: str, what: str, function: str | Callable[..., Any], *, needs_device: bool = True
) -> Trial:
    """Add (or replace) the trial of ``extension``; ``function`` is a module-level function
    of an importable module, or its ``"module:qualname"``.

    >>> saved = TRIALS["cl_qcom_bitreverse"]
    >>> register_trial("cl_qcom_bitreverse", "the trial kernel",
    ...                "qcom_ext.tools.verify.trials:bitreverse").function
    'qcom_ext.tools.verify.trials:bitreverse'
    >>> TRIALS["cl_qcom_bitreverse"] = saved
    """
    from qcom_ext.device.extensions import REGISTRY, khronos_names

    if extension not in REGISTRY and extension not in khronos_names():
        raise ConfigError(
            f"register_trial: {extension!r} is neither a cl_qcom_* extension "
            "qcom_ext knows nor one of their Khronos tiers"
        )
    trial = Trial(extension, what, _function_name(function), needs_device)
    TRIALS[extension] = trial
    return trial


def trials_needed(caps: DeviceCaps) -> list[tuple[Trial, str, str]]:
    """``(trial, subject, path)`` for every path ``caps`` would use that has a trial:
    ``subject`` is the ``cl_qcom_*`` extension, ``path`` ``native`` or ``khr:<tier>``
    (whose trial is the tier's). Fallback and unavailable paths call nothing native."""
    found: dict[str, tuple[Trial, str, str]] = {}
    for name, status in sorted(caps.statuses.items()):
        if status.tier == "native":
            key = name
        elif status.tier == "khr":
            key = status.path.split(":", 1)[1]
        else:
            continue
        trial = TRIALS.get(key)
        if trial is not None and key not in found:
            found[key] = (trial, name, status.path)
    return list(found.values())


# ---- the cache -------------------------------------------------------------------------


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


def cached_verdicts(caps: DeviceCaps) -> dict[str, Verdict]:
    """The cached verdicts of this device and driver; ``{}`` when there are none, the
    cache is off, or the file is unreadable, corrupt or for another device."""
    if not _cache_dir.cache_enabled():
        return {}
    try:
        data = json.loads(_cache_dir.read_entry(cache_path(caps)).decode("utf-8"))
        if data.get("format") != FORMAT or data.get("identity") != identity(caps):
            return {}
        verdicts = {name: Verdict.from_dict(v) for name, v in data["verdicts"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}
    return {name: v for name, v in verdicts.items() if v.extension == name}


def _store(caps: DeviceCaps, verdicts: Mapping[str, Verdict]) -> None:
    if not _cache_dir.cache_enabled():
        return
    path = cache_path(caps)
    merged = {**cached_verdicts(caps), **verdicts}
    payload = {
        "format": FORMAT,
        "identity": identity(caps),
        "verdicts": {n: v.to_dict() for n, v in sorted(merged.items())},
    }
    try:
        _cache_dir.write_atomically(path, json.dumps(payload, indent=1).encode())
    except OSError as exc:
        _cache_dir.unwritable("trial verdict", path, exc)


# ---- applying verdicts -----------------------------------------------------------------

#: In a trial child: the verdicts the parent passed (the cache is not read there).
_child_verdicts: dict[str, Verdict] | None = None


def apply_cached(caps: DeviceCaps) -> DeviceCaps:
    """``caps`` with the cached verdicts applied (what a plain ``probe()`` returns)."""
    verdicts = _child_verdicts if _child_verdicts is not None else cached_verdicts(caps)
    return caps.with_verdicts(verdicts) if verdicts else caps


def verify(
    caps: DeviceCaps, *, force: bool = False, timeout: float = DEFAULT_TIMEOUT
) -> DeviceCaps:
    """Run, in child processes, the trials of every path ``caps`` would use that has no
    cached verdict (all of them with ``force``), cache the verdicts and return ``caps``
    with them applied. A downgrade can bring a Khronos tier into use; its trial runs too.

    Raises :class:`~qcom_ext.ConfigError` when a trial needs the device but the report
    was not read from one a child process can find (``DeviceCaps.from_info``).
    """
    if not timeout > 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    verdicts = {} if force else cached_verdicts(caps)
    current = caps.with_verdicts(verdicts)
    while True:
        needed = [item for item in trials_needed(current) if item[0].extension not in verdicts]
        if not needed:
            return current
        new = _run(current, needed, timeout)
        verdicts.update(new)
        _store(caps, new)
        current = caps.with_verdicts(verdicts)


# ---- running trials in a child process -------------------------------------------------


def _locate(caps: DeviceCaps) -> dict[str, Any] | None:
    """Where a fresh process finds the device: platform and device index, and the
    strings that must match there."""
    if not caps.device_id:
        return None
    from qcom_ext.binding import info as _info

    try:
        for p_index, platform in enumerate(_info.platform_ids()):
            for d_index, device in enumerate(_info.device_ids(platform)):
                if device == caps.device_id:
                    return {
                        "platform": p_index,
                        "device": d_index,
                        "name": caps.device_name,
                        "driver": caps.driver_version,
                    }
    except QcomExtError:
        return None
    return None


def _child_environment() -> dict[str, str]:
    """The parent's environment, with its import path (the child imports the same
    qcom_ext and the trial modules, as multiprocessing's spawn does)."""
    env = dict(os.environ)
    paths = [p or os.getcwd() for p in sys.path]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(
    caps: DeviceCaps, needed: list[tuple[Trial, str, str]], timeout: float
) -> dict[str, Verdict]:
    device = _locate(caps)
    if device is None:
        need = [t.extension for t, _, _ in needed if t.needs_device]
        if need:
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
        got = _child(spec, {t.extension: t for t, _, _ in pending}, timeout)
        verdicts.update(got)
        pending = [item for item in pending if item[0].extension not in verdicts]
    return verdicts


def _signal_name(status: int) -> str:
    if status < 0:
        try:
            return signal.Signals(-status).name
        except ValueError:
            return f"signal {-status}"
    if status > 0xFFFF:  # a Windows exception code (0xC0000005: access violation)
        return f"exit status {status:#x}"
    return f"exit status {status}"


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def _pump(stream: Any, sink: Callable[[str | None], None]) -> None:
    for raw in iter(stream.readline, b""):
        sink(raw.decode("utf-8", errors="replace").rstrip("\n"))
    sink(None)


def _child(
    spec: dict[str, Any], trials: Mapping[str, Trial], timeout: float
) -> dict[str, Verdict]:
    command = [sys.executable, "-m", "qcom_ext.tools.verify.child"]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_environment(),
    )
    lines: queue.Queue[str | None] = queue.Queue()
    errors: collections.deque[str] = collections.deque(maxlen=200)
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, lines.put), daemon=True),
        threading.Thread(
            target=_pump, args=(proc.stderr, lambda s: s is None or errors.append(s)), daemon=True
        ),
    ]
    for reader in readers:
        reader.start()
    verdicts: dict[str, Verdict] = {}
    current: str | None = None

    def log() -> str:
        return "\n".join(errors)[-_LOG_TAIL:]

    def verdict(name: str, outcome: str, detail: str, text: str = "") -> Verdict:
        return Verdict(name, trials[name].what, outcome, detail, _today(), text or log())

    try:
        with contextlib.suppress(OSError):  # a child that died at once: reported below
            proc.stdin.write(json.dumps(spec).encode())  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                proc.kill()
                proc.wait()
                if current is None:
                    raise QcomExtError(
                        f"the trial child process gave no sign within {STARTUP_TIMEOUT:g} s "
                        f"(stderr: {log()[-500:]!r})"
                    ) from None
                verdicts[current] = verdict(current, "timed_out", f"{timeout:g} s")
                return verdicts
            if line is None:
                break
            if not line.startswith(PROTOCOL):
                continue
            kind, _, rest = line[len(PROTOCOL) :].strip().partition(" ")
            if kind == "begin":
                current = rest.strip()
                deadline = time.monotonic() + timeout
            elif kind == "end":
                name, _, payload = rest.partition(" ")
                result = json.loads(payload)
                verdicts[name] = verdict(
                    name, result["outcome"], result["detail"], result.get("log", "")
                )
                current = None
                deadline = time.monotonic() + timeout
            elif kind == "setup-error":
                proc.wait()
                raise QcomExtError(
                    f"the trial child process could not start the trials: {json.loads(rest)}"
                )
        status = proc.wait()
        for reader in readers:
            reader.join(timeout=5)
        if current is not None:
            verdicts[current] = verdict(current, "crashed", _signal_name(status))
        elif not verdicts:
            raise QcomExtError(
                f"the trial child process ended ({_signal_name(status)}) "
                f"before any trial; stderr: {log()[-500:]!r}"
            )
        return verdicts
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]


# ---- what a trial function gets --------------------------------------------------------


class TrialTarget:
    """What a trial function is given: the device and the path under trial.

    ``extension`` is the extension the trial checks (``cl_qcom_*`` or a Khronos tier),
    ``subject`` the ``cl_qcom_*`` extension whose path that is, ``path`` that path
    (``native`` or ``khr:<tier>``; ``fallback`` when a trial is called directly).
    ``device``, ``caps``, ``context`` and ``queue`` are made on first use.
    """

    def __init__(self, extension: str, subject: str, path: str, device: Any = None) -> None:
        self.extension, self.subject, self.path = extension, subject, path
        self._device = device
        self._context: Any = None
        self._queue: Any = None

    @property
    def device(self) -> Any:
        if self._device is None:
            raise ConfigError(
                f"the trial of {self.extension} needs a device, and none was found for it"
            )
        return self._device

    @property
    def caps(self) -> DeviceCaps:
        from qcom_ext.device.probe import probe

        return probe(self.device)

    @property
    def context(self) -> Any:
        if self._context is None:
            import pyopencl

            self._context = pyopencl.Context([self.device])
        return self._context

    @property
    def queue(self) -> Any:
        if self._queue is None:
            import pyopencl

            self._queue = pyopencl.CommandQueue(self.context, self.device)
        return self._queue

    def options(self) -> list[str]:
        """Build options that take this path for ``subject`` and the portable code for
        every other extension (so one broken builtin cannot fail another's trial)."""
        from qcom_ext._resources import kernels_dir

        keep = [
            o
            for o in self.caps.compiler_options()
            if not o.startswith(
                ("-DQCOM_EXT_NATIVE_", "-DQCOM_EXT_KHR_", "-DQCOM_EXT_SUB_GROUP_SIZE_")
            )
        ]
        tier = self.path.split(":", 1)[0]
        if tier in ("native", "khr"):
            keep.append(f"-DQCOM_EXT_{tier.upper()}_{self.subject}")
        if self.path == "khr:cl_intel_required_subgroup_size":
            from qcom_ext.ext.program.subgroups import half_and_full

            half, full = half_and_full(self.caps.limits.sub_group_sizes or ())
            keep += [
                f"-DQCOM_EXT_SUB_GROUP_SIZE_HALF={half}",
                f"-DQCOM_EXT_SUB_GROUP_SIZE_FULL={full}",
            ]
        return ["-I", str(kernels_dir()), *keep]

    def build(self, source: str, extra: Iterable[str] = ()) -> Any:
        """``source`` (after the compat header) compiled for this path (``extra``: more
        options), never from the program cache: the compile itself is on trial."""
        import pyopencl

        from qcom_ext.ext.program.build import PRELUDE

        options = [*self.options(), *extra]
        return pyopencl.Program(self.context, PRELUDE + source).build(options)

    def expect_path(self, taken: str, *, aliases: Mapping[str, str] | None = None) -> None:
        """Fail unless the public API took the path under trial (``aliases`` maps a
        ``DeviceCaps`` path to the API's name for it)."""
        expected = (aliases or {}).get(self.path, self.path)
        if taken != expected:
            raise QcomExtError(f"{self.subject} took the {taken!r} path, not {expected!r}")

    def release(self) -> None:
        self._queue = self._context = None


def _enter_child(verdicts: Iterable[Verdict]) -> None:
    """Make ``probe()`` of this (child) process apply the parent's verdicts, not the cache."""
    global _child_verdicts
    _child_verdicts = {v.extension: v for v in verdicts}
