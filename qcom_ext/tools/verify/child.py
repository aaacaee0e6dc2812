"""The child process of :mod:`qcom_ext.verify`: ``python -m qcom_ext.tools.verify.child``.

Reads the spec (JSON) on stdin: the device's platform and device index with the strings
that must match there, the verdicts the parent already holds (applied to this process's
``probe()``), and the trials to run in order. Reports on its own copy of stdout, one
line each, ``qcom_ext-trial: begin <ext>`` before a trial and ``qcom_ext-trial: end <ext>
<json>`` after it; whatever the driver or a kernel prints goes to stderr. A trial that
kills the process leaves a ``begin`` without its ``end``: the parent names the signal.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, TextIO

from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import C
from qcom_ext.errors import BuildError, CLError, QcomExtError
from qcom_ext.tools.verify import runner as verify

_DETAIL = 400


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _DETAIL else line[: _DETAIL - 3] + "..."


def _find(where: dict[str, Any] | None) -> Any:
    if where is None:
        return None
    import pyopencl

    platforms = _info.platform_ids()
    devices = []
    if where["platform"] < len(platforms):
        devices = _info.device_ids(platforms[where["platform"]])
    if where["device"] >= len(devices):
        raise QcomExtError(f"no device {where['platform']}:{where['device']} in this process")
    handle = devices[where["device"]]
    found = (
        _info.device_str(handle, C.CL_DEVICE_NAME),
        _info.device_str(handle, C.CL_DRIVER_VERSION),
    )
    if found != (where["name"], where["driver"]):
        raise QcomExtError(
            f"device {where['platform']}:{where['device']} is {found} here, "
            f"not {(where['name'], where['driver'])}"
        )
    return pyopencl.Device.from_int_ptr(handle)


def _outcome(item: dict[str, str], device: Any) -> dict[str, str]:
    trial = verify.Trial(item["extension"], item["what"], item["function"])
    target = verify.TrialTarget(item["extension"], item["subject"], item["path"], device)
    try:
        trial.load()(target)
    except (CLError, BuildError) as exc:
        return {"outcome": "failed", "detail": _one_line(str(exc)), "log": str(exc)[-4000:]}
    except Exception as exc:
        text = traceback.format_exc()
        detail = _one_line(f"{type(exc).__name__}: {exc}")
        return {"outcome": "failed", "detail": detail, "log": text[-4000:]}
    finally:
        target.release()
    return {"outcome": "ok", "detail": "", "log": ""}


def run(spec: dict[str, Any], report: TextIO) -> int:
    def emit(*parts: str) -> None:
        report.write(" ".join((verify.PROTOCOL, *parts)) + "\n")
        report.flush()

    try:
        verify._enter_child(verify.Verdict.from_dict(v) for v in spec["verdicts"])
        device = _find(spec["device"])
    except Exception as exc:
        emit("setup-error", json.dumps(f"{type(exc).__name__}: {exc}"))
        return 2
    for item in spec["trials"]:
        emit("begin", item["extension"])
        emit("end", item["extension"], json.dumps(_outcome(item, device)))
    return 0


def _no_core_dumps() -> None:
    """A crash is an expected outcome here: leave no core file behind."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass


def main() -> int:
    _no_core_dumps()
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # driver and kernel output goes to stderr, never into the report
    sys.stdout = sys.stderr
    return run(json.load(sys.stdin), report)


if __name__ == "__main__":
    sys.exit(main())
