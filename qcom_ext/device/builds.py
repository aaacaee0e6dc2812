"""Whether a device builds OpenCL programs at all.

Some drivers enumerate a device whose compiler cannot build anything on this host: the
PyPI pocl 3.0 (LLVM 14) on newer CPUs fails every build with ``unknown target CPU
'generic'``. :func:`build_problem` builds one trivial kernel on the device, the first
time anyone asks, and remembers the answer per device (``probe()`` never pays for it):
None when it built, else the first line of the build log. ``DeviceCaps.builds_programs``
and ``DeviceCaps.build_problem`` read it; the pytest plugin's ``kernel_context`` and the
selftest go through it, so such a device is reported once, not once per kernel.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["build_problem", "forget"]

#: The kernel the check builds: nothing a working compiler could refuse.
TRIAL_SOURCE = "__kernel void qcom_ext_build_check(__global int *a) { a[0] = 1; }"

_problems: dict[tuple[int, str], str | None] = {}
_lock = threading.Lock()


def build_problem(caps: Any) -> str | None:
    """None when the device of ``caps`` (a probed :class:`~qcom_ext.DeviceCaps`) builds
    a trivial program, else why not: the build log's first line (or the error's, when the
    log is empty). Built once per device and driver in this process, on first ask."""
    key = (caps.device_id, caps.driver_version)
    with _lock:
        if key in _problems:
            return _problems[key]
    problem = _try_build(caps.device())
    with _lock:
        return _problems.setdefault(key, problem)


def forget() -> None:
    """Drop every remembered answer (tests)."""
    with _lock:
        _problems.clear()


def _try_build(device: Any) -> str | None:
    import pyopencl as cl

    try:
        context = cl.Context([device])
    except cl.Error as exc:
        return _first_line(str(exc)) or type(exc).__name__
    program = cl.Program(context, TRIAL_SOURCE)
    try:
        program.build()
    except cl.Error as exc:
        try:
            log = program.get_build_info(device, cl.program_build_info.LOG)
        except cl.Error:
            log = ""
        return _first_line(log) or _first_line(str(exc)) or type(exc).__name__
    return None


def _first_line(text: str) -> str:
    """The first line of ``text`` with something in it, stripped ("" for none).

    >>> _first_line("\\n  error: unknown target CPU 'generic'\\nnote: ...")
    "error: unknown target CPU 'generic'"
    """
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
