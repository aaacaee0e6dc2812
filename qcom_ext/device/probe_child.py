"""The child side of the isolated probe: ``python -m qcom_ext.device.probe_child``.

It reads :func:`~qcom_ext.device.isolated.probe_isolated`'s request on stdin
(:func:`qcom_ext._isolation.serve`), announces each driver call before it makes it, and
reports the devices as :meth:`~qcom_ext.device.caps.DeviceCaps.to_dict` gives them. The
parent side (:mod:`qcom_ext.device.isolated`) never imports this module: it needs the
runner only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from qcom_ext._isolation import serve
from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import driver
from qcom_ext.device.choice import device_from_spec
from qcom_ext.device.probe import default_device, no_platform_error, probe

__all__ = ["main"]


def _reports(request: dict[str, Any], stage: Callable[[str], None]) -> dict[str, Any]:
    """The child's work: each call announced before it is made."""
    how = {"verify": bool(request["verify"]), "disabled": request["disabled"]}
    stage("clGetPlatformIDs")
    driver.library  # noqa: B018  (opening the library calls clGetPlatformIDs too)
    platforms = _info.platform_ids()
    if not platforms:
        raise no_platform_error()
    if not request["all"]:
        spec = request["spec"]
        stage(f"choosing the device {spec!r}" if spec else "choosing the default device")
        handle = device_from_spec(spec) if spec else default_device()
        stage("the queries of the device (clGetDeviceInfo)")
        return {"outcome": "ok", "reports": [probe(handle, **how).to_dict()]}
    found = []
    for p, platform in enumerate(platforms):
        stage(f"clGetDeviceIDs (platform {p})")
        for d, handle in enumerate(_info.device_ids(platform)):
            stage(f"the queries of device {p}:{d} (clGetDeviceInfo)")
            found.append(probe(handle, **how))
    return {"outcome": "ok", "reports": [c.to_dict() for c in found]}


def main() -> int:
    """``python -m qcom_ext.device.probe_child``: the child (:func:`qcom_ext._isolation.serve`)."""
    return serve(_reports)


if __name__ == "__main__":
    sys.exit(main())
