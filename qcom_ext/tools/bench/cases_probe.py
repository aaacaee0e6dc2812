"""What probing costs: cold and cached ``probe()``, and qcom_ext's share of start-up.

Targets (from the issue): beyond the driver's platform start-up, a cold ``probe()``
costs under 100 ms and a cached one under 1 ms.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import qcom_ext
from qcom_ext import DeviceCaps
from qcom_ext.tools.bench._case import Case, Target

# ``qcom_ext.probe`` is the function (the package re-exports it); this is the module.
_probe = importlib.import_module("qcom_ext.device.probe")
# the directory holding the qcom_ext package (a checkout or site-packages), so children
# import this very copy
_ROOT = Path(qcom_ext.__file__).resolve().parents[1]

_QCOM_STARTUP = "import qcom_ext; qcom_ext.probe_all()"
_PYOPENCL_STARTUP = "import pyopencl; [p.get_devices() for p in pyopencl.get_platforms()]"


def _handle(caps: DeviceCaps) -> int:
    return caps.device_id


def _cold(handle: int) -> None:
    _probe.clear_cache()
    _probe.probe(handle)


def _warm_setup(caps: DeviceCaps) -> int:
    _probe.probe(caps.device_id)  # fill the cache
    return caps.device_id


def _script(code: str) -> Any:
    def setup(caps: DeviceCaps) -> list[str]:
        return [sys.executable, "-c", code]

    return setup


def _child(argv: list[str]) -> None:
    subprocess.run(argv, check=True, cwd=_ROOT, stdout=subprocess.DEVNULL)


CASES = [
    Case(
        "probe_cold",
        "probe",
        _handle,
        _cold,
        baseline=True,
        note="clear_cache() + probe(device): the whole report through cffi",
        target=Target(0.100),
    ),
    Case(
        "probe_warm",
        "probe",
        _warm_setup,
        _probe.probe,
        note="probe(device) from the cache",
        target=Target(0.001),
    ),
    Case(
        "read_device",
        "probe",
        _handle,
        _probe.read_device,
        note="read_device(handle): uncached, no cache bookkeeping",
    ),
    Case(
        "pyopencl_platforms",
        "startup",
        _script(_PYOPENCL_STARTUP),
        _child,
        baseline=True,
        note="fresh python: import pyopencl, get_devices() of every platform",
        max_rounds=8,
    ),
    Case(
        "import_and_platforms",
        "startup",
        _script(_QCOM_STARTUP),
        _child,
        note="fresh python: import qcom_ext; probe_all() (every device)",
        max_rounds=8,
        target=Target(0.100, over_baseline=True),
    ),
]
