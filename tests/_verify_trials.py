"""Trial stand-ins the tests of qcom_ext.verify register as selftest cases with
``trial=...``: the child process imports this module by name (the parent's import path
travels with it), so each runs there. Each takes the case's ``Env``."""

from __future__ import annotations

import os
import signal
import time

from qcom_ext import CLError
from qcom_ext.binding.lib import C


def passes(env) -> None:
    """Nothing native: the trial passes."""


def aborts(env) -> None:
    os.abort()


def segfaults(env) -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def cl_error(env) -> None:
    raise CLError("clNewRecordingQCOM", C.CL_INVALID_OPERATION)


def hangs(env) -> None:
    time.sleep(120)


def reports_its_target(env) -> None:
    """Fails with what the child was given, so the parent can check it."""
    raise RuntimeError(f"{env.tested} {env.extension} {env.path}")


def aborts_natively(env) -> None:
    """Natively the driver "crashes"; on the Khronos tier it reports its target."""
    if env.path == "native":
        aborts(env)
    reports_its_target(env)


def killed(env) -> None:
    """Dies as the out-of-memory killer ends a process."""
    os.kill(os.getpid(), signal.SIGKILL)


def hangs_at_exit(env) -> None:
    """Passes, but leaves a non-daemon thread: the interpreter waits for it at exit."""
    import threading

    threading.Thread(target=time.sleep, args=(15,)).start()
