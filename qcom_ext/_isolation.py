"""Run OpenCL driver calls in a child process, so that a crash there is a typed error here.

One mechanism for the isolated probe (:mod:`qcom_ext.device.isolated`) and the isolated
compile (:mod:`qcom_ext.ext.program.isolated`); the crash trials of
:mod:`qcom_ext.tools.verify` start their children with the same environment
(:func:`child_environment`).

Every child starts through :func:`start_child` (also the verify trials'), so that none
imports from the current directory (:func:`module_command`, ``PYTHONSAFEPATH``).
The parent, :func:`run_child`, starts the child in a session of its own, writes the
request (JSON) on its stdin and reads its report pipe (the child's stdout; what the
driver prints goes to stderr): ``qcom_ext-isolated: stage <json text>`` before each risky
call, ``qcom_ext-isolated: result <json object>`` once at the end. The child side is
:func:`serve`. The whole run is bounded by ``timeout``: on expiry the child's process
group is killed. :class:`ChildRun` says how it went: the result, or the last stage begun
and the exit status (a signal when the driver crashed), or that it timed out; its
:meth:`~ChildRun.raise_failure` turns a death into :class:`~qcom_ext.errors.DriverCrashError`
or :class:`~qcom_ext.errors.DriverTimeoutError`.

>>> import sys
>>> child = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
>>> run = run_child([sys.executable, "-c", child], {}, timeout=60)
>>> run.result, run.signal, run.stage
(None, 'SIGSEGV', 'starting the child process')
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qcom_ext.errors import (
    ConfigError,
    DriverCrashError,
    DriverTimeoutError,
    OpenCLUnavailable,
    QcomExtError,
    signal_name,
)

__all__ = [
    "PROTOCOL",
    "ChildRun",
    "child_environment",
    "module_command",
    "no_core_dumps",
    "run_child",
    "serve",
    "start_child",
]

PROTOCOL = "qcom_ext-isolated:"
FIRST_STAGE = "starting the child process"
_LOG_TAIL = 2000  # characters of the child's stderr an error quotes
_REAP = 5.0  # seconds to collect a killed child's pipes
_POSIX = os.name == "posix"
#: Errors a child's result may name that the parent raises as themselves (message only).
_RAISED_AS = (ConfigError, OpenCLUnavailable)


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment for a child that imports the same qcom_ext (and the
    same test modules): this process's import path goes into ``PYTHONPATH``, as
    multiprocessing's spawn does, less its ``''`` entries (the current directory,
    whatever it is when the child starts); ``extra`` on top. ``PYTHONSAFEPATH`` is
    set, so that a child started with ``-c`` or ``-m`` (Python 3.11+) puts no
    current directory first on its path either."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p]
    if env.get("PYTHONPATH"):
        paths.extend(p for p in env["PYTHONPATH"].split(os.pathsep) if p)
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONSAFEPATH"] = "1"
    env.update(extra or {})
    return env


#: Python 3.10 has no ``-P``: ``-c`` runs this, which takes the current directory's
#: ``''`` off the path before anything is imported, then runs the module as ``-m`` does.
_SAFE_MAIN = (
    "import sys; sys.path[:] = [p for p in sys.path if p]; "
    "module = sys.argv.pop(1); import runpy; "
    "runpy.run_module(module, run_name='__main__', alter_sys=True)"
)


def module_command(module: str) -> list[str]:
    """``python -m module`` with this interpreter, with no current directory on the
    child's import path: ``-P`` (Python 3.11+), else a ``-c`` prologue that drops it.
    A file planted in the working directory (a ``json.py``) is never imported."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", module]
    return [sys.executable, "-c", _SAFE_MAIN, module]


def start_child(command: Sequence[str], env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    """The one place qcom_ext starts a child process: ``command`` in a session (process
    group) of its own, its three streams piped, in ``env`` (default
    :func:`child_environment`), ``PYTHONSAFEPATH`` always set and ``''`` entries
    dropped from its ``PYTHONPATH`` (what a caller's ``env`` says notwithstanding)."""
    group: dict[str, Any] = (
        {"start_new_session": True}
        if _POSIX
        else {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    )
    environment = dict(env) if env is not None else child_environment()
    environment["PYTHONSAFEPATH"] = "1"
    if "PYTHONPATH" in environment:
        parts = environment["PYTHONPATH"].split(os.pathsep)
        environment["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
        **group,
    )


def no_core_dumps() -> None:
    """A crash is an expected outcome in a child: leave no core file behind."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass


@dataclass(frozen=True)
class ChildRun:
    """How one child ran: its ``result`` (None if it died or hung first), the last
    ``stage`` it began, its exit ``status`` (None when the timeout killed it), the end
    of its stderr (``log``) and the ``timeout`` it ran under."""

    result: dict[str, Any] | None
    stage: str
    status: int | None
    log: str
    timeout: float

    @property
    def timed_out(self) -> bool:
        return self.status is None

    @property
    def signal(self) -> str:
        """The exit status as :func:`~qcom_ext.errors.signal_name` reads it."""
        return "killed at the timeout" if self.status is None else signal_name(self.status)

    def raise_failure(self) -> dict[str, Any]:
        """The result; else :class:`DriverTimeoutError` (it hung) or
        :class:`DriverCrashError` (it died) naming the stage. A result that reports an
        error raised in the child is raised here: ConfigError and OpenCLUnavailable as
        themselves, anything else as a QcomExtError naming its type."""
        if self.status is None:
            raise DriverTimeoutError(self.stage, self.timeout, self.log)
        if self.result is None:
            raise DriverCrashError(self.stage, self.status, self.log)
        if self.result.get("outcome") == "error":
            kinds, message = self.result.get("kinds", []), str(self.result.get("message"))
            for kind in _RAISED_AS:
                if kind.__name__ in kinds:
                    raise kind(message)
            raise QcomExtError(f"{kinds[0] if kinds else 'error'} in a child process: {message}")
        return self.result


def _report_lines(out: bytes) -> tuple[str, dict[str, Any] | None]:
    """The last stage and the result on the report pipe; QcomExtError for anything else."""
    stage, result = FIRST_STAGE, None
    for line in out.decode("utf-8", errors="replace").splitlines():
        kind, _, payload = line[len(PROTOCOL) :].strip().partition(" ")
        try:
            value = json.loads(payload) if line.startswith(PROTOCOL) else None
        except (ValueError, RecursionError):
            value = None
        if kind == "stage" and isinstance(value, str) and result is None:
            stage = value
        elif kind == "result" and isinstance(value, dict) and result is None:
            result = value
        else:
            shown = line if len(line) <= 200 else line[:200] + "..."
            raise QcomExtError(
                f"a qcom_ext child process sent {shown!r} on its report pipe: not "
                f"'{PROTOCOL} stage <json text>' or '{PROTOCOL} result <json object>'"
            )
    return stage, result


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        if _POSIX:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()


def run_child(
    command: Sequence[str],
    request: Mapping[str, Any],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> ChildRun:
    """Run ``command`` (a child that :func:`serve`\\ s) on ``request``, for ``timeout``
    seconds at most (then its process group is killed). ``env``: default
    :func:`child_environment`."""
    if not timeout > 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    proc = start_child(command, env)
    status: int | None
    try:
        out, err = proc.communicate(json.dumps(request).encode(), timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        status = proc.poll()  # ended, but something of its group holds the pipes: died
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=_REAP)
        except subprocess.TimeoutExpired:  # a process outside the group holds them
            proc.kill()
            out, err = b"", b""
    finally:
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait(timeout=_REAP)
    stage, result = _report_lines(out)
    log = err.decode("utf-8", errors="replace").strip()[-_LOG_TAIL:]
    return ChildRun(result, stage, status, log, timeout)


def serve(handler: Callable[[dict[str, Any], Callable[[str], None]], dict[str, Any]]) -> int:
    """The child's side: read the request on stdin, call ``handler(request, stage)``
    (``stage(text)`` announces the next risky call) and report its result. Whatever
    the driver prints goes to stderr. An exception in ``handler`` is reported as the
    result ``{"outcome": "error", "kinds": [its classes], "message": ...}``."""
    no_core_dumps()
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # driver output goes to stderr, never into the report
    sys.stdout = sys.stderr

    def emit(kind: str, payload: Any) -> None:
        report.write(f"{PROTOCOL} {kind} {json.dumps(payload)}\n")
        report.flush()

    with report:
        try:
            result = handler(json.load(sys.stdin), lambda text: emit("stage", text))
        except Exception as exc:
            kinds = [k.__name__ for k in type(exc).__mro__ if k.__module__ == "qcom_ext.errors"]
            result = {
                "outcome": "error",
                "kinds": kinds or [type(exc).__name__],
                "message": str(exc),
            }
        emit("result", result)
    return 0
