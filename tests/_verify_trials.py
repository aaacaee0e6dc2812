"""Trial functions the tests of qcom_ext.verify register: the child process imports this
module by name (the parent's import path travels with it), so each runs there."""

from __future__ import annotations

import os
import signal
import time

from qcom_ext import CLError
from qcom_ext.binding.lib import C


def passes(target) -> None:
    """Nothing native: the trial passes."""


def aborts(target) -> None:
    os.abort()


def segfaults(target) -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def cl_error(target) -> None:
    raise CLError("clNewRecordingQCOM", C.CL_INVALID_OPERATION)


def hangs(target) -> None:
    time.sleep(120)


def reports_its_target(target) -> None:
    """Fails with what the child was given, so the parent can check it."""
    raise RuntimeError(f"{target.extension} {target.subject} {target.path}")
