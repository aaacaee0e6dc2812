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


def only_an_aborting_khr_trial(device_caps, monkeypatch, tmp_path) -> tuple[str, str]:
    """Make cl_qcom_recordable_queues' only trial one that aborts the child on the native
    and Khronos paths (every other case's trial dropped), with a fresh cache in
    ``tmp_path``; the extension and its Khronos tier. Skips where the device does not
    take that tier. The caller clears the probe's cache when done."""
    import dataclasses

    import pytest

    from qcom_ext.device.probe import clear_cache
    from qcom_ext.tools.selftest import _registry

    extension, tier = "cl_qcom_recordable_queues", "cl_khr_command_buffer"
    if device_caps.path(extension) != f"khr:{tier}":
        pytest.skip(f"{device_caps.label}: {extension} does not take the {tier} tier")
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    cases = {
        name: [dataclasses.replace(c, trial="") for c in found]
        for name, found in _registry._CASES.items()
    }
    monkeypatch.setattr(_registry, "_CASES", cases)
    _registry.case(extension, "stand-in", tiers=("native", "khr"), trial="the trial aborts")(
        aborts
    )
    clear_cache()
    return extension, tier
