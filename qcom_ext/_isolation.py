"""Run OpenCL driver calls in a child process, so that a crash there is a typed error here.

One mechanism for the isolated probe (:mod:`qcom_ext.device.isolated`) and the isolated
compile (:mod:`qcom_ext.ext.program.isolated`); the crash trials of
:mod:`qcom_ext.tools.verify` start their children with the same environment
(:func:`child_environment`).

Every child starts through :func:`start_child`, so that none imports from the current
directory (:func:`module_command`, ``PYTHONSAFEPATH``), in a session (process group) of
its own. :class:`Child` is the one parent's side: the stdin written in a thread, the
report pipe read line by line with a bounded wait, the tail of stderr kept, the whole
process group killed (:meth:`Child.kill`). :func:`run_child` runs a child on it for
one request and one result; the crash trials (:mod:`qcom_ext.tools.verify`) follow its
lines as they come. :func:`run_child` writes the request (JSON) on the child's stdin and
reads its report pipe (the child's stdout; what the
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

import collections
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
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
    "Child",
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
_STDERR_LINES = 200  # lines of the child's stderr kept
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


def _pump(stream: Any, sink: Callable[[str | None], None], max_line: int) -> None:
    """Each line of ``stream`` (``max_line`` bytes at most: a longer one comes in parts)
    to ``sink``, then None."""
    for raw in iter(lambda: stream.readline(max_line), b""):
        sink(raw.decode("utf-8", errors="replace").rstrip("\n"))
    sink(None)


def _send(stream: Any, data: bytes) -> None:
    """Write ``data`` and close the child's stdin (a dead or stuck child: nothing)."""
    try:
        with contextlib.suppress(OSError, ValueError):
            stream.write(data)
    finally:
        with contextlib.suppress(OSError, ValueError):
            stream.close()


class Child:
    """A child process (:func:`start_child`: a session of its own, no current directory
    on its import path) seen from the parent: its stdout as lines (:meth:`line`, a
    bounded wait), the last lines of its stderr (:meth:`log`), its stdin written in a
    thread (:meth:`send`: a child that never reads cannot block the parent), and
    :meth:`kill`, which kills its whole process group. Use it as a context manager
    (:meth:`close` on exit: the group killed if the child still runs, the pipes closed).

    >>> with Child([sys.executable, "-c", "print(input()[::-1])"], None) as child:
    ...     child.send(b"olleh\\n")
    ...     child.line(timeout=60), child.line(timeout=60), child.wait(timeout=60)
    ('hello', None, 0)
    """

    def __init__(
        self, command: Sequence[str], env: Mapping[str, str] | None, *, max_line: int = -1
    ) -> None:
        self.proc = start_child(command, env)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._errors: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._readers = [
            threading.Thread(
                target=_pump, args=(self.proc.stdout, self._lines.put, max_line), daemon=True
            ),
            threading.Thread(
                target=_pump, args=(self.proc.stderr, self._stderr, max_line), daemon=True
            ),
        ]
        for reader in self._readers:
            reader.start()

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stderr(self, line: str | None) -> None:
        if line is not None:
            self._errors.append(line)

    def send(self, data: bytes) -> None:
        """Write ``data`` on the child's stdin, then close it, in a thread."""
        threading.Thread(target=_send, args=(self.proc.stdin, data), daemon=True).start()

    def line(self, timeout: float) -> str | None:
        """The next line of the child's stdout; None once it is closed (the child ended,
        or closed it); :class:`queue.Empty` when none came within ``timeout`` seconds."""
        return self._lines.get(timeout=max(timeout, 0.0))

    def rest(self) -> list[str]:
        """The lines already read and not yet taken (after :meth:`kill`: what the child
        wrote before it died), stderr's reader given :data:`_REAP` seconds to finish."""
        for reader in self._readers:
            reader.join(timeout=_REAP)
        found = []
        with contextlib.suppress(queue.Empty):
            while (line := self._lines.get_nowait()) is not None:
                found.append(line)
        return found

    def log(self, tail: int) -> str:
        """The last ``tail`` characters of the child's stderr (once its reader ended)."""
        self._readers[1].join(timeout=1)
        return "\n".join(self._errors).strip()[-tail:]

    def wait(self, timeout: float) -> int:
        """The child's exit status; :class:`subprocess.TimeoutExpired` if it runs on."""
        return self.proc.wait(timeout=max(timeout, 0.0))

    def kill(self) -> None:
        """Kill the child's process group (on Windows the child) and reap the child."""
        with contextlib.suppress(OSError):
            if _POSIX:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=_REAP)

    def close(self) -> None:
        """Kill the group of a child not reaped yet (what it started may outlive it);
        close the pipes whose reader ended (closing one under a blocked reader would
        block here)."""
        if self.proc.returncode is None:
            self.kill()
        streams = (self.proc.stdout, self.proc.stderr)
        for reader, stream in zip(self._readers, streams, strict=True):
            reader.join(timeout=1)
            if not reader.is_alive():
                with contextlib.suppress(OSError):
                    stream.close()  # type: ignore[union-attr]


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
    deadline = time.monotonic() + timeout
    out: list[str] = []
    status: int | None = None
    with Child(command, env) as child:
        child.send(json.dumps(request).encode())
        while True:
            try:
                line = child.line(deadline - time.monotonic())
            except queue.Empty:
                status = child.proc.poll()  # ended, but its group holds the pipe: died
                child.kill()
                out.extend(child.rest())
                break
            if line is None:
                try:
                    status = child.wait(deadline - time.monotonic())
                except subprocess.TimeoutExpired:  # hangs at exit
                    child.kill()
                break
            out.append(line)
        log = child.log(_LOG_TAIL)
    stage, result = _report_lines("\n".join(out).encode())
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
