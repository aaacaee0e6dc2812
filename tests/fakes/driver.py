"""The fake Adreno driver (see tests/fakes/__init__.py for the vocabulary).

:func:`fake_driver` installs substitutes that serve ``clGetDeviceInfo`` /
``clGetPlatformInfo`` from tables (the real Adreno 740 extension string and
per-extension limits, in the widths a driver may use) and record every query; ``extra``
adds further substitutes (``clCreateContext`` ...) to the same block. Handles are the
small integers DEVICE and PLATFORM, never real ones. The byte helpers every fake driver
uses live here too.
"""

from __future__ import annotations

import struct

from conftest import adreno_strings

from qcom_ext.binding.lib import C, driver, ffi

PLATFORM, DEVICE = 0x2000, 0x1000


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def u32(value: int) -> bytes:
    return struct.pack("<I", value)


def u64(value: int) -> bytes:
    return struct.pack("<Q", value)


def addr(cdata) -> int:
    """The address a cffi pointer or handle holds, as an int."""
    return int(ffi.cast("uintptr_t", cdata))


def raw(pointer, size: int) -> bytes:
    """``size`` bytes at ``pointer``, as a driver would read them."""
    return ffi.buffer(ffi.cast("char *", pointer), size)[:] if size else b""


def mem_properties(pointer) -> tuple[int, ...]:
    """A zero-terminated ``cl_mem_properties`` list as a driver reads it: the pairs, then
    the terminating 0 (``()`` for NULL)."""
    if pointer == ffi.NULL:
        return ()
    words, count = ffi.cast("cl_mem_properties *", pointer), 0
    while words[count] != 0:
        count += 2
    return tuple(int(words[i]) for i in range(count + 1))


def answer_info(data: bytes, size: int, value, size_ret) -> int:
    """What a clGet*Info entry point does with the answer ``data``: the size to
    ``size_ret``, the bytes to ``value`` (CL_INVALID_VALUE when ``size`` is too small)."""
    if size_ret != ffi.NULL:
        size_ret[0] = len(data)
    if value != ffi.NULL:
        if size < len(data):
            return C.CL_INVALID_VALUE
        ffi.memmove(value, data, len(data))
    return 0


def name_versions(entries: dict[str, tuple[int, int, int]]) -> bytes:
    out = b""
    for name, (major, minor, patch) in entries.items():
        out += struct.pack("<I64s", (major << 22) | (minor << 12) | patch, name.encode())
    return out


#: CLML interface versions the fake driver reports (cl_qcom_ml_ops is in the 740 string).
ML_VERSIONS = ((2, 0), (3, 0))


def ml_versions_query(versions=ML_VERSIONS, status: int = 0, calls: list | None = None):
    """A clQueryMLInterfaceVersionsQCOM that reports ``versions`` (or fails with ``status``)."""

    def query(majors, minors, capacity, count):
        if calls is not None:
            calls.append((majors == ffi.NULL, minors == ffi.NULL, capacity, count == ffi.NULL))
        if status:
            return status
        if count != ffi.NULL:
            count[0] = len(versions)
        for i, (major, minor) in enumerate(versions[:capacity]):
            majors[i], minors[i] = major, minor
        return 0

    return query


def fake_driver(
    device_info: dict[int, bytes], platform_info: dict[int, bytes], asked: list, **extra
):
    """Substitutes for the info queries (and ``extra``); the CLML version query answers
    :data:`ML_VERSIONS` unless ``extra`` replaces it."""
    extra.setdefault("clQueryMLInterfaceVersionsQCOM", ml_versions_query())
    extra = {name: fn for name, fn in extra.items() if fn is not None}  # None: no substitute

    def serve(table, handle, expected, param, size, value, size_ret):
        asked.append(param)
        if addr(handle) != expected or param not in table:
            return C.CL_INVALID_VALUE
        return answer_info(table[param], size, value, size_ret)

    return driver.substitute(
        clGetDeviceInfo=lambda h, p, s, v, r: serve(device_info, h, DEVICE, p, s, v, r),
        clGetPlatformInfo=lambda h, p, s, v, r: serve(platform_info, h, PLATFORM, p, s, v, r),
        **{**enumerating(), **extra},
    )


def _listing(handles: list[int], kind: str, count: int, ids, found) -> int:
    """What clGetPlatformIDs / clGetDeviceIDs do with the list ``handles``."""
    if found != ffi.NULL:
        found[0] = len(handles)
    for i, handle in enumerate(handles[: count if ids != ffi.NULL else 0]):
        ids[i] = ffi.cast(kind, handle)
    return 0


def enumerating(platform: int = PLATFORM, device: int = DEVICE) -> dict:
    """Substitutes for clGetPlatformIDs / clGetDeviceIDs that list the fake ``platform``
    (after the real ones) with its one ``device``: the enumeration a raw device handle is
    checked against (``qcom_ext.binding.info.known_device``) knows the fake device."""
    real_platforms = driver.function("clGetPlatformIDs")
    real_devices = driver.function("clGetDeviceIDs")

    def platform_ids(count, ids, found):
        number = ffi.new("cl_uint *")
        listed: list[int] = []
        if real_platforms(0, ffi.NULL, number) == 0 and number[0]:
            real = ffi.new("cl_platform_id[]", number[0])
            if real_platforms(number[0], real, ffi.NULL) == 0:
                listed = [addr(real[i]) for i in range(number[0])]
        return _listing([*listed, platform], "cl_platform_id", count, ids, found)

    def device_ids(handle, kind, count, ids, found):
        if addr(handle) == platform:
            return _listing([device], "cl_device_id", count, ids, found)
        return real_devices(handle, kind, count, ids, found)

    return {"clGetPlatformIDs": platform_ids, "clGetDeviceIDs": device_ids}


def adreno740_device_info() -> dict[int, bytes]:
    return {
        0x1031: u64(PLATFORM),  # CL_DEVICE_PLATFORM
        0x1030: cstr(adreno_strings()["adreno740-cl3.0"]),
        0x102F: cstr("OpenCL 3.0 Adreno(TM) 740"),
        0x102D: cstr("OpenCL 3.0 QUALCOMM build: commit unknown Compiler E031.42.02.00"),
        0x102B: cstr("QUALCOMM Adreno(TM)"),
        0x1001: u32(0x5143),
        0x103D: cstr("OpenCL C 3.0 Adreno(TM) 740"),
        0x1000: u64(4),  # CL_DEVICE_TYPE_GPU
        0x1016: u32(1),
        0x1060: name_versions(
            {"cl_qcom_recordable_queues": (1, 0, 1), "cl_qcom_perf_hint": (1, 0, 4)}
        ),
        0x1010: u64(1 << 30),  # CL_DEVICE_MAX_MEM_ALLOC_SIZE
        0x101F: u64(8 << 30),  # CL_DEVICE_GLOBAL_MEM_SIZE (cl_qcom_large_buffer's bound)
        0x1019: u32(1024),  # CL_DEVICE_MEM_BASE_ADDR_ALIGN, bits
        0x1011: u64(16384),
        0x1012: u64(16384),
        0x104A: u32(64),  # CL_DEVICE_IMAGE_PITCH_ALIGNMENT
        0x104B: u32(64),
        0x40A1: u64(4096),  # CL_DEVICE_PAGE_SIZE_QCOM, as size_t
        0x40A0: u64(0),  # CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM
        0x41DE: u32(64),  # CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE, as cl_uint
        0x41A4: u64(3 << 20),  # CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM
        0x4111: u32(16),  # HOF max phases
        0x4112: u32(16),  # HOF max filter x
        0x4113: u32(8),  # HOF max filter y
        0x4114: u32(32),  # block matching region x
        0x4115: u32(24),  # block matching region y
        0x105C: u32(1),  # CL_DEVICE_MAX_NUM_SUB_GROUPS (cl_khr_subgroups)
        0x1073: u64(3),  # integer dot product capabilities
    }


def platform_info(version: str = "OpenCL 3.0", extensions: str = "cl_khr_icd") -> dict[int, bytes]:
    return {
        0x0902: cstr("QUALCOMM Snapdragon(TM)"),
        0x0901: cstr(f"{version} QUALCOMM build: commit unknown Compiler E031.42.02.00"),
        0x0904: cstr(extensions),
    }


class FakeCLObject:
    """What a pyopencl wrapper returns for a fake handle (pyopencl never sees one)."""

    def __init__(self, handle: int, devices=None) -> None:
        self.int_ptr = handle
        self.devices = devices
