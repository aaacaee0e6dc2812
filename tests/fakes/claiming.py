"""A real device that claims Adreno extensions, for native-path tests that need real objects.

``claiming(device, extensions=[...], info={param: bytes}, **substitutes)`` installs a
substitute for ``clGetDeviceInfo``: the device's extension string gets the claimed names
appended and the ``info`` table answers its parameters; every other query reaches the
real driver. The probe cache is cleared on entry and exit, so the probe sees the claims
exactly while the block runs. Further keyword arguments are substitutes for other entry
points (the native ``*QCOM`` functions); ``real(name)`` gives the driver's own entry
point, for substitutes that record what they were given and then create a real object
to hand back. (The vocabulary: tests/fakes/__init__.py.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import C, driver
from qcom_ext.device.probe import clear_cache

from .driver import addr, answer_info


def real(name: str):
    """The driver's entry point ``name`` (resolve it outside any substitution)."""
    return driver.function(name)


@contextlib.contextmanager
def claiming(
    device: int,
    *,
    extensions: Iterable[str] = (),
    info: dict[int, bytes] | None = None,
    **substitutes,
) -> Iterator[list]:
    get_info = real("clGetDeviceInfo")
    own = _info.device_str(device, C.CL_DEVICE_EXTENSIONS)
    table = {C.CL_DEVICE_EXTENSIONS: (" ".join([own, *extensions])).encode() + b"\0"}
    table.update(info or {})

    def device_info(handle, param, size, value, size_ret):
        if addr(handle) != device or param not in table:
            return get_info(handle, param, size, value, size_ret)
        return answer_info(table[param], size, value, size_ret)

    clear_cache()
    try:
        with driver.substitute(clGetDeviceInfo=device_info, **substitutes) as errors:
            yield errors
    finally:
        clear_cache()
