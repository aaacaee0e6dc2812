"""How a child process finds the device its parent means.

Handles do not cross processes. :func:`location` describes a device by what does: its
platform and device index in the enumeration, with the platform name, device name and
driver version found there. :func:`find` looks it up in this process and checks those
strings, so a child never runs on another device than its parent's (another driver
installed in between, another ICD order). The crash trials
(:mod:`qcom_ext.tools.verify`), the isolated compile
(:mod:`qcom_ext.ext.program.isolated`) and the isolated probe use it.

>>> caps = probe()
>>> where = location(caps)
>>> sorted(where)
['device', 'driver', 'name', 'platform', 'platform_name']
>>> find(where) == caps.device_id
True
"""

from __future__ import annotations

from typing import Any

from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import C, handle_int
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.probe import probe
from qcom_ext.errors import QcomExtError

__all__ = ["find", "find_device", "location"]


def location(device: Any) -> dict[str, Any] | None:
    """Where a fresh process finds ``device`` (a :class:`DeviceCaps`, a pyopencl.Device
    or a handle): ``platform`` and ``device`` indices, and the ``platform_name``,
    ``name`` and ``driver`` strings that must match there. None for a report not read
    from a device (``DeviceCaps.from_info``) or a device the enumeration does not list."""
    handle = device.device_id if isinstance(device, DeviceCaps) else handle_int(device)
    if not handle:
        return None
    caps = device if isinstance(device, DeviceCaps) else probe(handle)
    try:
        for p_index, platform in enumerate(_info.platform_ids()):
            for d_index, found in enumerate(_info.device_ids(platform)):
                if found == handle:
                    return {
                        "platform": p_index,
                        "device": d_index,
                        "platform_name": caps.platform_name,
                        "name": caps.device_name,
                        "driver": caps.driver_version,
                    }
    except QcomExtError:
        return None
    return None


def find(where: dict[str, Any]) -> int:
    """The handle of the device :func:`location` described, in this process; QcomExtError
    when there is none at those indices or it is another device."""
    platforms = _info.platform_ids()
    devices = []
    if where["platform"] < len(platforms):
        devices = _info.device_ids(platforms[where["platform"]])
    if where["device"] >= len(devices):
        raise QcomExtError(f"no device {where['platform']}:{where['device']} in this process")
    handle = devices[where["device"]]
    found = (
        _info.platform_str(platforms[where["platform"]], C.CL_PLATFORM_NAME),
        _info.device_str(handle, C.CL_DEVICE_NAME),
        _info.device_str(handle, C.CL_DRIVER_VERSION),
    )
    expected = (where["platform_name"], where["name"], where["driver"])
    if found != expected:
        raise QcomExtError(
            f"device {where['platform']}:{where['device']} is {found} here, not {expected}"
        )
    return handle


def find_device(where: dict[str, Any] | None) -> Any:
    """:func:`find`, as a ``pyopencl.Device`` (None for None: a child that needs none)."""
    if where is None:
        return None
    import pyopencl

    return pyopencl.Device.from_int_ptr(find(where))
