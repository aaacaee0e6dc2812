"""One child process running trials, and the verdicts its reports (or its death) give.

The child (``python -m qcom_ext.tools.verify.child``) reads the spec on stdin and reports
on stdout, ``qcom_ext-trial: begin <ext>`` before a trial and ``qcom_ext-trial: end <ext>
<json>`` after it; its stderr is kept (the end becomes a verdict's ``log``). A ``begin``
without its ``end`` is the trial that killed the child (the exit status names the
signal; ``SIGKILL``, the out-of-memory killer's signal, is ``inconclusive``, not a
crash) or hung.

The child runs on :class:`qcom_ext._isolation.Child`, the one parent's side of a child
process (a session of its own, no current directory on its import path, the stdin
written in a thread, stdout read line by line, the process group killed). Every wait is
bounded by the caller's ``timeout``: for the first line, from each line to the next,
and for the exit once the report pipe closes. On expiry the child's process group is
killed and the verdicts already received are kept; the trial begun and not ended is
``timed_out``. Anything on the report pipe that is not the protocol is a
:class:`TrialProtocolError` naming it.

>>> signal_name(-11), signal_name(3), signal_name(0xC0000005)
('SIGSEGV', 'exit status 3', 'exit status 0xc0000005')
>>> end_fields('{"outcome": "failed", "detail": "CL_INVALID_VALUE"}')
('failed', 'CL_INVALID_VALUE', '')
>>> end_fields('{"outcome": "ok"}') is None  # no detail: not an end report
True
"""

from __future__ import annotations

import datetime
import json
import os
import queue
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from qcom_ext._isolation import Child, module_command
from qcom_ext.device.verdicts import Verdict
from qcom_ext.errors import QcomExtError, signal_name

__all__ = [
    "CHILD_COMMAND",
    "DEFAULT_TIMEOUT",
    "PROTOCOL",
    "TrialProtocolError",
    "end_fields",
    "end_spills",
    "run_child",
    "signal_name",
]

DEFAULT_TIMEOUT = 60.0  # seconds: for the child's first line, each trial and its exit
PROTOCOL = "qcom_ext-trial:"
CHILD_COMMAND = tuple(module_command("qcom_ext.tools.verify.child"))
_REPORTED = ("ok", "failed")  # what a child may report; it cannot judge its own death
_LOG_TAIL = 4000
_SHOWN = 200  # characters of a garbage line an error quotes
_MAX_LINE = 1 << 20  # bytes read per line: a longer one is cut (and its rest is garbage)
_POSIX = os.name == "posix"


class TrialProtocolError(QcomExtError):
    """The trial child's report pipe carried something else than the protocol (not
    JSON, JSON of the wrong shape, missing keys, an end without its begin): the message
    quotes what came, truncated. The child is killed; it is no verdict on any
    extension."""


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def end_fields(payload: str) -> tuple[str, str, str] | None:
    """``(outcome, detail, log)`` of an end report's JSON, None when it is not one: an
    object with ``outcome`` ``"ok"`` or ``"failed"``, a string ``detail`` and perhaps a
    string ``log``."""
    try:
        result = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(result, dict):
        return None
    outcome, detail, log = result.get("outcome"), result.get("detail"), result.get("log", "")
    if outcome not in _REPORTED or not (isinstance(detail, str) and isinstance(log, str)):
        return None
    return outcome, detail, log


def end_spills(payload: str) -> tuple[tuple[str, int], ...]:
    """The ``spills`` of an end report's JSON: ``(kernel, private bytes per work-item)``
    pairs; entries of another shape are left out (they are advice, not the verdict).

    >>> end_spills('{"outcome": "ok", "detail": "", "spills": [["k", 96], ["bad"]]}')
    (('k', 96),)
    """
    try:
        found = json.loads(payload).get("spills", [])
    except (ValueError, RecursionError, AttributeError):
        return ()
    if not isinstance(found, list):
        return ()
    return tuple(
        (item[0], item[1])
        for item in found
        if isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], str)
        and type(item[1]) is int
    )


def _json_string(text: str) -> str | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


class _Trials:
    """The verdicts one trial child (:class:`~qcom_ext._isolation.Child`) gives: its
    report lines followed, its death or hang judged."""

    def __init__(self, child: Child, what: Mapping[str, str], timeout: float) -> None:
        self.child, self.proc = child, child.proc
        self.what, self.timeout = what, timeout
        self.verdicts: dict[str, Verdict] = {}
        self.spills: dict[str, tuple[tuple[str, int], ...]] = {}
        self.current: str | None = None  # the trial begun and not ended

    def log(self) -> str:
        return self.child.log(_LOG_TAIL)

    def verdict(self, name: str, outcome: str, detail: str, text: str = "") -> Verdict:
        return Verdict(name, self.what[name], outcome, detail, _today(), text or self.log())

    def read(self) -> dict[str, Verdict]:
        """Follow the reports until the child ends, or no line comes within the timeout."""
        while True:
            try:
                line = self.child.line(self.timeout)
            except queue.Empty:
                return self._hung()
            if line is None:
                return self._ended()
            self._report(line)

    def _report(self, line: str) -> None:
        """Take one report line: a trial begun, a trial's end, or the child's setup
        error; anything else is a :class:`TrialProtocolError`."""
        text = line[len(PROTOCOL) :].strip() if line.startswith(PROTOCOL) else ""
        kind, _, rest = text.partition(" ")
        if kind == "begin" and self.current is None and rest in self.what:
            self.current = rest
            return
        if kind == "end" and self.current is not None:
            name, _, payload = rest.partition(" ")
            fields = end_fields(payload) if name == self.current else None
            if fields is not None:
                self.verdicts[name] = self.verdict(name, *fields)
                if end_spills(payload):
                    self.spills[name] = end_spills(payload)
                self.current = None
                return
        if kind == "setup-error" and _json_string(rest) is not None:
            raise QcomExtError(
                f"the trial child process could not start the trials: {_json_string(rest)}"
            )
        raise TrialProtocolError(
            f"the trial child process sent {_shown(line)} on its report pipe: not the "
            f"protocol ('{PROTOCOL} begin <ext>', then 'end <ext> <json>'); "
            f"stderr: {self.log()[-200:]!r}"
        )

    def _timed_out(self) -> dict[str, Verdict]:
        """The timeout passed: the child's group is killed, the trial begun timed out and
        the verdicts received stand (none at all: a QcomExtError)."""
        self.child.kill()
        if self.current is not None:
            self.verdicts[self.current] = self.verdict(
                self.current, "timed_out", f"{self.timeout:g} s"
            )
        elif not self.verdicts:
            raise QcomExtError(
                f"the trial child process gave no sign within {self.timeout:g} s "
                f"(stderr: {self.log()[-500:]!r})"
            )
        return self.verdicts

    def _hung(self) -> dict[str, Verdict]:
        """No line within the timeout. A child that has ended (another process still
        holds its pipe) died; else it hangs."""
        if self.proc.poll() is not None:
            self.child.kill()  # whatever holds the pipe in its group
            return self._died(self.proc.returncode)
        return self._timed_out()

    def _ended(self) -> dict[str, Verdict]:
        """The report pipe closed: the child's exit, waited on for the timeout at most,
        names a crash."""
        try:
            status = self.child.wait(self.timeout)
        except subprocess.TimeoutExpired:  # hangs at exit
            return self._timed_out()
        return self._died(status)

    def _died(self, status: int) -> dict[str, Verdict]:
        if self.current is not None:
            killed = _POSIX and status == -signal.SIGKILL  # the out-of-memory killer's
            outcome = "inconclusive" if killed else "crashed"
            self.verdicts[self.current] = self.verdict(self.current, outcome, signal_name(status))
        elif not self.verdicts:
            raise QcomExtError(
                f"the trial child process ended ({signal_name(status)}) "
                f"before any trial; stderr: {self.log()[-500:]!r}"
            )
        return self.verdicts


def run_child(
    spec: dict[str, Any],
    what: Mapping[str, str],
    timeout: float,
    env: dict[str, str],
    *,
    command: Sequence[str] = CHILD_COMMAND,
    spills: dict[str, tuple[tuple[str, int], ...]] | None = None,
) -> dict[str, Verdict]:
    """Start a child (``command``: the trial child; tests pass stand-ins) on ``spec``
    (``what``: extension -> the trial's name in reasons) and return the verdicts it gave:
    every trial's, up to the one that crashed or hung. Raises :class:`QcomExtError` when
    it gave none (:class:`TrialProtocolError` for garbage on its pipe). ``spills``, when
    given, receives each trial's kernels that spill (:func:`end_spills`)."""
    with Child(command, env, max_line=_MAX_LINE) as child:
        trials = _Trials(child, what, timeout)
        try:
            child.send(json.dumps(spec).encode())
            return trials.read()
        finally:
            if spills is not None:
                spills.update(trials.spills)
