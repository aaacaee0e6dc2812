"""probe(verify=True) under attack (issue 15, findings 2 and 3).

Finding 2: a cached verdict can only downgrade (a forged or stale ``ok`` skips no trial),
concurrent writers lose no verdict, and a child killed by SIGKILL (the out-of-memory
killer's signal) is not cached as a permanent crash. Finding 3: every wait on a trial child
is bounded by the caller's timeout (before its first line, during a trial, at its exit),
the child's process group is killed on expiry with the verdicts received kept, and
garbage on the report pipe is a typed :class:`TrialProtocolError`.

Crashes and hangs happen in child processes the tests control: trial cases of
tests/_verify_trials.py run by the real child, or a fake child command (``python -c``)
handed to :func:`run_child`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import _verify_trials
import pytest

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import QcomExtError
from qcom_ext.tools.selftest import _registry
from qcom_ext.tools.verify import _process
from qcom_ext.tools.verify import runner as verify
from qcom_ext.tools.verify.runner import TrialProtocolError, Verdict

RECORDING = "cl_qcom_recordable_queues"
posix_only = pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def trials(monkeypatch):
    """An empty registry of checks: only the trial cases the test registers run."""
    monkeypatch.setattr(_registry, "_CASES", {})
    monkeypatch.setattr(_registry, "_UNCHECKED", {})

    def register(extension: str, function: str) -> None:
        _registry.case(
            extension, f"stand-in {function}", trial=f"the trial {function}", needs_device=False
        )(getattr(_verify_trials, function))

    return register


@pytest.fixture
def children(monkeypatch):
    """The extensions each child process was started for (the children still run)."""
    started: list[list[str]] = []
    real = verify._child

    def record(spec, what, timeout):
        started.append([t["extension"] for t in spec["trials"]])
        return real(spec, what, timeout)

    monkeypatch.setattr(verify, "_child", record)
    return started


def report_of(*extensions: str) -> DeviceCaps:
    return DeviceCaps.from_info(extensions=" ".join(extensions), disabled=(), driver_version="d")


def verdict(extension: str, outcome: str, detail: str = "") -> Verdict:
    return Verdict(extension, "the trial call", outcome, detail, "2026-01-02")


# ---- finding 2: a cache only downgrades ---------------------------------------------------


@pytest.mark.slow
def test_a_forged_ok_verdict_does_not_skip_the_trial(cache, trials, children):
    trials(RECORDING, "segfaults")
    caps = report_of(RECORDING)
    forged = {
        "format": 1,
        "identity": verify.identity(caps),
        "verdicts": {RECORDING: verdict(RECORDING, "ok").to_dict()},
    }
    path = verify.cache_path(caps)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(json.dumps(forged))
    path.chmod(0o600)
    assert verify.cached_verdicts(caps)[RECORDING].outcome == "ok"  # read, but grants nothing
    assert RECORDING not in verify.apply_cached(caps).verdicts
    verified = verify.verify(caps)
    assert children == [[RECORDING]]
    assert (verified.verdicts[RECORDING].outcome, verified.path(RECORDING)) == (
        "crashed",
        "fallback",
    )
    assert verify.cached_verdicts(caps)[RECORDING].outcome == "crashed"  # the file is fixed


def test_a_cached_broken_verdict_is_kept_without_a_child(cache, trials, monkeypatch):
    trials(RECORDING, "passes")
    caps = report_of(RECORDING)
    verify.store_verdicts(caps, {RECORDING: verdict(RECORDING, "crashed", "SIGSEGV")})
    monkeypatch.setattr(verify, "_child", lambda *a: pytest.fail("a child process was started"))
    assert verify.verify(caps).path(RECORDING) == "fallback"
    assert verify.apply_cached(caps).path(RECORDING) == "fallback"


_WRITER = """
import sys, time
from qcom_ext import _cache_dir
from qcom_ext.device import verdicts
from qcom_ext.device.caps import DeviceCaps

first, step, start = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
write = _cache_dir.write_atomically

def slow_write(path, data):  # widens the window between the read and the write
    time.sleep(0.03)
    write(path, data)

_cache_dir.write_atomically = slow_write
caps = DeviceCaps.from_info(extensions="", disabled=(), driver_version="d")
time.sleep(max(0.0, start - time.time()))
for index in range(first, 23, step):
    name = f"cl_test_extension_{index}"
    verdicts.store_verdicts(caps, {name: verdicts.Verdict(name, "t", "failed", str(index))})
"""


@posix_only
def test_four_concurrent_writers_keep_all_23_verdicts(cache):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    start = str(time.time() + 1.5)  # the four start together, after their imports
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(i), "4", start], env=env)
        for i in range(4)
    ]
    assert [w.wait(timeout=60) for w in writers] == [0, 0, 0, 0]
    found = verify.cached_verdicts(report_of())
    assert sorted(found) == sorted(f"cl_test_extension_{i}" for i in range(23))
    assert all(v.detail == name.rsplit("_", 1)[1] for name, v in found.items())


@posix_only
@pytest.mark.slow
def test_a_sigkilled_trial_is_inconclusive_and_not_cached(cache, trials, children):
    trials(RECORDING, "killed")
    caps = report_of(RECORDING)
    found = verify.verify(caps).verdicts[RECORDING]
    assert (found.outcome, found.detail) == ("inconclusive", "SIGKILL")
    assert found.broken and "not cached" in found.reason
    assert verify.verify(caps).path(RECORDING) == "fallback"  # not used in this run either
    assert RECORDING not in verify.cached_verdicts(caps)
    assert children == [[RECORDING], [RECORDING]]  # the next verify tries again


# ---- finding 3: bounded waits, typed garbage ------------------------------------------


def fake_child(script: str) -> list[str]:
    """A stand-in for ``python -m qcom_ext.tools.verify.child`` running ``script``."""
    return [sys.executable, "-c", textwrap.dedent(script)]


WHAT = {"cl_a": "the trial a", "cl_b": "the trial b"}
END_OK = 'print("qcom_ext-trial: end cl_a {\\"outcome\\": \\"ok\\", \\"detail\\": \\"\\"}")'


def run_fake(script: str, timeout: float, spec: dict | None = None) -> dict[str, Verdict]:
    command = fake_child(script)
    env = dict(os.environ)
    return _process.run_child(spec or {"trials": []}, WHAT, timeout, env, command=command)


def gone(pid: int, within: float = 5.0) -> bool:
    """Whether process ``pid`` has ended (not running, perhaps a zombie) within a while."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@posix_only
def test_a_child_silent_before_its_first_line_waits_the_callers_timeout(tmp_path):
    """The child (and a grandchild holding its pipe) hang before any line: the wait is
    the caller's 1 s, not 120 s, and the whole process group is killed."""
    pidfile = tmp_path / "grandchild"
    script = f"""
        import subprocess, sys, time
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(15)"])
        open({str(pidfile)!r}, "w").write(str(grandchild.pid))
        time.sleep(15)
    """
    began = time.monotonic()
    with pytest.raises(QcomExtError, match="gave no sign within 1 s"):
        run_fake(script, timeout=1)
    assert time.monotonic() - began < 8
    assert gone(int(pidfile.read_text()))


@posix_only
def test_a_child_that_hangs_after_closing_its_pipe_is_killed_and_its_verdicts_kept(tmp_path):
    script = f"""
        import os, sys, time
        print("qcom_ext-trial: begin cl_a")
        {END_OK}
        sys.stdout.flush()
        os.close(1)
        print(os.getpid(), file=sys.stderr, flush=True)
        time.sleep(15)
    """
    began = time.monotonic()
    found = run_fake(script, timeout=1.5)
    assert time.monotonic() - began < 8
    assert (found["cl_a"].outcome, list(found)) == ("ok", ["cl_a"])


@posix_only
def test_a_child_that_hangs_at_exit_with_its_pipe_open_keeps_its_verdicts():
    script = f"""
        import time
        print("qcom_ext-trial: begin cl_a")
        {END_OK}
        print("qcom_ext-trial: begin cl_b", flush=True)
        time.sleep(15)
    """
    found = run_fake(script, timeout=1)
    assert found["cl_a"].outcome == "ok"
    assert (found["cl_b"].outcome, found["cl_b"].detail) == ("timed_out", "1 s")
    after_all = f"""
        import time
        print("qcom_ext-trial: begin cl_a")
        {END_OK}
        import sys; sys.stdout.flush()
        time.sleep(15)
    """
    began = time.monotonic()
    assert list(run_fake(after_all, timeout=1)) == ["cl_a"]
    assert time.monotonic() - began < 8


@posix_only
def test_a_crash_is_a_crash_while_a_grandchild_holds_the_pipe(tmp_path):
    """The child segfaults in a trial while a process it started keeps the report pipe
    open: no end of file comes, but the exit status still names the crash, and the
    grandchild is killed with the group."""
    pidfile = tmp_path / "grandchild"
    script = f"""
        import os, signal, subprocess, sys
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(15)"])
        open({str(pidfile)!r}, "w").write(str(grandchild.pid))
        print("qcom_ext-trial: begin cl_a", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    """
    found = run_fake(script, timeout=1)["cl_a"]
    assert (found.outcome, found.detail) == ("crashed", "SIGSEGV")
    assert gone(int(pidfile.read_text()))


@posix_only
def test_a_child_that_never_reads_its_spec_cannot_block_the_caller():
    """A spec larger than a pipe's buffer is written without blocking the caller."""
    spec = {"trials": [], "padding": "x" * (1 << 20)}
    began = time.monotonic()
    with pytest.raises(QcomExtError, match="gave no sign within 1 s"):
        run_fake("import time; time.sleep(15)", timeout=1, spec=spec)
    assert time.monotonic() - began < 8


@pytest.mark.slow
def test_a_real_child_hanging_at_exit_does_not_hang_verify(cache, trials):
    """The trial leaves a non-daemon thread behind: the child's report ends, then its
    interpreter waits 15 s for the thread; verify returns after the 2 s timeout."""
    trials(RECORDING, "hangs_at_exit")
    began = time.monotonic()
    found = verify.verify(report_of(RECORDING), timeout=2).verdicts[RECORDING]
    assert time.monotonic() - began < 12
    assert found.outcome == "ok"


GARBAGE = {
    "not JSON": 'print("qcom_ext-trial: end cl_a {not json")',
    "JSON of the wrong shape": 'print("qcom_ext-trial: end cl_a [1, 2]")',
    "missing keys": 'print("qcom_ext-trial: end cl_a {\\"outcome\\": \\"ok\\"}")',
    "an unknown outcome": (
        'print("qcom_ext-trial: end cl_a {\\"outcome\\": \\"great\\", \\"detail\\": \\"\\"}")'
    ),
    "a detail that is no string": (
        'print("qcom_ext-trial: end cl_a {\\"outcome\\": \\"ok\\", \\"detail\\": 7}")'
    ),
    "an end of a trial not begun": (
        'print("qcom_ext-trial: end cl_b {\\"outcome\\": \\"ok\\", \\"detail\\": \\"\\"}")'
    ),
    "an unknown report": 'print("qcom_ext-trial: explode now")',
    "a line outside the protocol": 'print("hello from the child")',
    "a setup error that is not JSON": 'print("qcom_ext-trial: setup-error {oops")',
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_garbage_on_the_pipe_is_a_typed_error_naming_it(case):
    script = f'print("qcom_ext-trial: begin cl_a")\n{GARBAGE[case]}\n'
    with pytest.raises(TrialProtocolError) as caught:
        run_fake(script, timeout=10)
    assert isinstance(caught.value, QcomExtError)
    received = GARBAGE[case].split('print("', 1)[1].rsplit('")', 1)[0].replace('\\"', '"')
    assert repr(received)[1:-1] in str(caught.value) or received in str(caught.value)


def test_long_garbage_is_named_truncated():
    script = (
        'print("qcom_ext-trial: begin cl_a")\nprint("qcom_ext-trial: end cl_a " + "[" * 50000)'
    )
    with pytest.raises(TrialProtocolError, match=r"\[\[\[\[") as caught:
        run_fake(script, timeout=10)
    assert len(str(caught.value)) < 1000


def test_only_broken_verdicts_last():
    """An inconclusive verdict keeps the extension out of this run only; ok is never a
    grant; failed, crashed and timed_out are known broken until the driver changes."""
    inconclusive = verdict(RECORDING, "inconclusive", "SIGKILL")
    assert inconclusive.broken and not inconclusive.lasting
    assert [verdict(RECORDING, o).lasting for o in ("ok", "failed", "crashed", "timed_out")] == [
        False,
        True,
        True,
        True,
    ]
