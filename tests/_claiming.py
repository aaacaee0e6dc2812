"""A real device that claims Adreno extensions, for native-path tests that need real objects.

``claiming(device, extensions=[...], info={param: bytes}, **entry_points)`` substitutes
``clGetDeviceInfo``: the device's extension string gets the claimed names appended and
the ``info`` table answers its parameters; every other query reaches the real driver.
The probe cache is cleared on entry and exit, so the probe sees the claims exactly
while the block runs. Further keyword arguments substitute entry points (the native
``*QCOM`` functions); ``real(name)`` gives the driver's own entry point, for callbacks
that record what they were given and then create a real object to hand back.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterable, Iterator

from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import C, driver, ffi
from qcom_ext.device.probe import clear_cache


def u32(value: int) -> bytes:
    return struct.pack("<I", value)


def u64(value: int) -> bytes:
    return struct.pack("<Q", value)


def addr(cdata) -> int:
    return int(ffi.cast("uintptr_t", cdata))


def real(name: str):
    """The driver's entry point ``name`` (resolve it outside any substitution)."""
    return driver.function(name)


@contextlib.contextmanager
def claiming(
    device: int,
    *,
    extensions: Iterable[str] = (),
    info: dict[int, bytes] | None = None,
    **entry_points,
) -> Iterator[list]:
    get_info = real("clGetDeviceInfo")
    own = _info.device_str(device, C.CL_DEVICE_EXTENSIONS)
    table = {C.CL_DEVICE_EXTENSIONS: (" ".join([own, *extensions])).encode() + b"\0"}
    table.update(info or {})

    def device_info(handle, param, size, value, size_ret):
        if addr(handle) != device or param not in table:
            return get_info(handle, param, size, value, size_ret)
        data = table[param]
        if size_ret != ffi.NULL:
            size_ret[0] = len(data)
        if value != ffi.NULL:
            if size < len(data):
                return C.CL_INVALID_VALUE
            ffi.memmove(value, data, len(data))
        return 0

    clear_cache()
    try:
        with driver.substitute(clGetDeviceInfo=device_info, **entry_points) as errors:
            yield errors
    finally:
        clear_cache()
