"""One child process running trials, and the verdicts its reports (or its death) give.

The child (``python -m qcom_ext.tools.verify.child``) reads the spec on stdin and reports
on stdout, ``qcom_ext-trial: begin <ext>`` before a trial and ``qcom_ext-trial: end <ext>
<json>`` after it; its stderr is kept (the end becomes a verdict's ``log``). A ``begin``
without its ``end`` is the trial that killed the child (the exit status names the
signal) or hung (killed after the time limit).

>>> signal_name(-11), signal_name(3), signal_name(0xC0000005)
('SIGSEGV', 'exit status 3', 'exit status 0xc0000005')
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from qcom_ext.device.verdicts import Verdict
from qcom_ext.errors import QcomExtError

__all__ = ["DEFAULT_TIMEOUT", "PROTOCOL", "STARTUP_TIMEOUT", "run_child", "signal_name"]

DEFAULT_TIMEOUT = 60.0  # seconds per trial
STARTUP_TIMEOUT = 120.0  # seconds for the child to import qcom_ext and find the device
PROTOCOL = "qcom_ext-trial:"
_LOG_TAIL = 4000


def signal_name(status: int) -> str:
    """How a child's exit status reads in a verdict."""
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


class _Child:
    """The child process, its report lines (a queue) and the tail of its stderr."""

    def __init__(self, what: Mapping[str, str], timeout: float, env: dict[str, str]) -> None:
        self.what, self.timeout = what, timeout
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "qcom_ext.tools.verify.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: collections.deque[str] = collections.deque(maxlen=200)
        self.readers = [
            threading.Thread(target=_pump, args=(self.proc.stdout, self.lines.put), daemon=True),
            threading.Thread(target=_pump, args=(self.proc.stderr, self._stderr), daemon=True),
        ]
        for reader in self.readers:
            reader.start()
        self.verdicts: dict[str, Verdict] = {}
        self.current: str | None = None  # the trial begun and not ended

    def _stderr(self, line: str | None) -> None:
        if line is not None:
            self.errors.append(line)

    def log(self) -> str:
        return "\n".join(self.errors)[-_LOG_TAIL:]

    def verdict(self, name: str, outcome: str, detail: str, text: str = "") -> Verdict:
        return Verdict(name, self.what[name], outcome, detail, _today(), text or self.log())

    def send(self, spec: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # a child that died at once: reported later
            self.proc.stdin.write(json.dumps(spec).encode())  # type: ignore[union-attr]
            self.proc.stdin.close()  # type: ignore[union-attr]

    def read(self) -> dict[str, Verdict]:
        """Follow the reports until the child ends, or a trial outlives its time."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return self._hung()
            if line is None:
                return self._ended()
            if line.startswith(PROTOCOL) and self._report(line[len(PROTOCOL) :].strip()):
                deadline = time.monotonic() + self.timeout

    def _report(self, text: str) -> bool:
        """Take one report line; True when a trial began or ended (its clock restarts)."""
        kind, _, rest = text.partition(" ")
        if kind == "begin":
            self.current = rest.strip()
        elif kind == "end":
            name, _, payload = rest.partition(" ")
            result = json.loads(payload)
            self.verdicts[name] = self.verdict(
                name, result["outcome"], result["detail"], result.get("log", "")
            )
            self.current = None
        elif kind == "setup-error":
            self.proc.wait()
            raise QcomExtError(
                f"the trial child process could not start the trials: {json.loads(rest)}"
            )
        return kind in ("begin", "end")

    def _hung(self) -> dict[str, Verdict]:
        self.proc.kill()
        self.proc.wait()
        if self.current is None:
            raise QcomExtError(
                f"the trial child process gave no sign within {STARTUP_TIMEOUT:g} s "
                f"(stderr: {self.log()[-500:]!r})"
            )
        self.verdicts[self.current] = self.verdict(
            self.current, "timed_out", f"{self.timeout:g} s"
        )
        return self.verdicts

    def _ended(self) -> dict[str, Verdict]:
        status = self.proc.wait()
        for reader in self.readers:
            reader.join(timeout=5)
        if self.current is not None:
            self.verdicts[self.current] = self.verdict(
                self.current, "crashed", signal_name(status)
            )
        elif not self.verdicts:
            raise QcomExtError(
                f"the trial child process ended ({signal_name(status)}) "
                f"before any trial; stderr: {self.log()[-500:]!r}"
            )
        return self.verdicts

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]


def run_child(
    spec: dict[str, Any], what: Mapping[str, str], timeout: float, env: dict[str, str]
) -> dict[str, Verdict]:
    """Start a child on ``spec`` (``what``: extension -> the trial's name in reasons) and
    return the verdicts it gave: every trial's, up to the one that crashed or hung."""
    child = _Child(what, timeout, env)
    try:
        child.send(spec)
        return child.read()
    finally:
        child.close()
