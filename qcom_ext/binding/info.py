"""Platform and device queries through cffi, including ones pyopencl cannot make.

pyopencl's ``get_info`` rejects parameters it does not know (every ``*_QCOM`` query,
``CL_DEVICE_IMAGE_PITCH_ALIGNMENT`` ...), so the probe reads everything here.
Scalars are read into an 8-byte buffer and decoded by the size the driver reports,
since the reference leaves several result types open (``size_t`` vs ``cl_uint``).
"""

from __future__ import annotations

from typing import Any

from qcom_ext.binding.lib import C, check, driver, ffi, handle_int
from qcom_ext.errors import ConfigError, DriverAnswerError


def _as(kind: str, handle: Any) -> Any:
    return ffi.cast(kind, handle_int(handle))


def _read(routine: str, getter: Any, handle: Any, param: int) -> bytes:
    size = ffi.new("size_t *")
    check(getter(handle, param, 0, ffi.NULL, size), routine)
    if size[0] == 0:
        return b""
    buffer = ffi.new("char[]", size[0])
    check(getter(handle, param, size[0], buffer, ffi.NULL), routine)
    return ffi.buffer(buffer, size[0])[:]


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")


def platform_bytes(platform: Any, param: int) -> bytes:
    return _read(
        "clGetPlatformInfo", driver.clGetPlatformInfo, _as("cl_platform_id", platform), param
    )


def device_bytes(device: Any, param: int) -> bytes:
    return _read("clGetDeviceInfo", driver.clGetDeviceInfo, _as("cl_device_id", device), param)


def platform_str(platform: Any, param: int) -> str:
    return _text(platform_bytes(platform, param))


def device_str(device: Any, param: int) -> str:
    return _text(device_bytes(device, param))


def decode_uint(raw: bytes, what: str = "a scalar query") -> int:
    """A little-endian unsigned scalar of 1, 2, 4 or 8 bytes (DriverAnswerError, a
    ValueError, for any other width)."""
    if len(raw) not in (1, 2, 4, 8):
        raise DriverAnswerError(
            f"{what}: expected a 1, 2, 4 or 8 byte scalar, the driver answered {len(raw)} bytes"
        )
    return int.from_bytes(raw, "little")


def _param(param: int) -> str:
    return f"clGetDeviceInfo({param:#06x})"


def device_uint(device: Any, param: int) -> int:
    """An unsigned scalar query, whatever its width (cl_uint, size_t, cl_ulong)."""
    return decode_uint(device_bytes(device, param), _param(param))


def device_sizes(device: Any, param: int) -> tuple[int, ...]:
    """A ``size_t[]`` query (DriverAnswerError when the answer is not whole entries)."""
    raw = device_bytes(device, param)
    width = ffi.sizeof("size_t")
    if len(raw) % width:
        raise DriverAnswerError(
            f"{_param(param)}: a size_t[] answer of {len(raw)} bytes is not whole "
            f"{width}-byte entries"
        )
    return tuple(int.from_bytes(raw[i : i + width], "little") for i in range(0, len(raw), width))


def device_name_versions(device: Any, param: int) -> dict[str, int]:
    """A ``cl_name_version[]`` query as ``{name: packed version}`` (names that are not
    UTF-8 keep their bytes as U+FFFD)."""
    raw = device_bytes(device, param)
    item = ffi.sizeof("cl_name_version")
    count = len(raw) // item
    if not count:
        return {}
    array = ffi.from_buffer("cl_name_version[]", bytearray(raw[: count * item]))
    return {_text(ffi.string(entry.name)): int(entry.version) for entry in array}


def version_string(packed: int) -> str:
    """``CL_MAKE_VERSION`` decoded: major 10 bits, minor 10 bits, patch 12 bits.

    >>> version_string((1 << 22) | (5 << 12) | 3)
    '1.5.3'
    """
    return f"{packed >> 22}.{(packed >> 12) & 0x3FF}.{packed & 0xFFF}"


def platform_ids() -> list[int]:
    """Every platform the library reports (empty when it has none)."""
    count = ffi.new("cl_uint *")
    status = driver.clGetPlatformIDs(0, ffi.NULL, count)
    if status == C.CL_PLATFORM_NOT_FOUND_KHR or count[0] == 0:
        return []
    check(status, "clGetPlatformIDs")
    ids = ffi.new("cl_platform_id[]", count[0])
    check(driver.clGetPlatformIDs(count[0], ids, ffi.NULL), "clGetPlatformIDs")
    return [handle_int(p) for p in ids]


def device_ids(platform: Any) -> list[int]:
    """Every device of a platform (empty when it has none)."""
    handle = _as("cl_platform_id", platform)
    count = ffi.new("cl_uint *")
    status = driver.clGetDeviceIDs(handle, C.CL_DEVICE_TYPE_ALL, 0, ffi.NULL, count)
    if status == C.CL_DEVICE_NOT_FOUND or count[0] == 0:
        return []
    check(status, "clGetDeviceIDs")
    ids = ffi.new("cl_device_id[]", count[0])
    check(
        driver.clGetDeviceIDs(handle, C.CL_DEVICE_TYPE_ALL, count[0], ids, ffi.NULL),
        "clGetDeviceIDs",
    )
    return [handle_int(d) for d in ids]


def listed_devices() -> list[int]:
    """Every device of every platform the library reports, in enumeration order."""
    return [device for platform in platform_ids() for device in device_ids(platform)]


def known_device(device: Any) -> int:
    """The ``cl_device_id`` of ``device``: a pyopencl.Device (an object with ``int_ptr``)
    as it is; a raw handle (an int, a numpy integer, a cffi pointer) only when it is one
    of :func:`listed_devices`, checked before any other driver call: the driver would
    take any other value for a handle and read through it (a crash). The one check of
    every public entry point that takes a device.

    >>> known_device(1)
    Traceback (most recent call last):
    ...
    qcom_ext.errors.ConfigError: device 1 (0x1) is not a device handle: expected a \
pyopencl.Device or a cl_device_id handle that clGetDeviceIDs lists (...)
    """
    if hasattr(device, "int_ptr"):
        handle = handle_int(device)
        if handle > 0:
            return handle
        raise ConfigError(f"device {device!r} has no handle (int_ptr {handle}): released?")
    try:
        handle = handle_int(device)
    except ConfigError:
        raise ConfigError(
            f"expected a pyopencl.Device or a cl_device_id handle (int), got {device!r}"
        ) from None
    listed = listed_devices()
    if handle in listed:
        return handle
    shown = ", ".join(f"{d:#x}" for d in listed) or "none"
    raise ConfigError(
        f"device {handle} ({handle:#x}) is not a device handle: expected a pyopencl.Device "
        f"or a cl_device_id handle that clGetDeviceIDs lists ({shown})"
    )
