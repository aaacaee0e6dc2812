"""probe() of an Adreno device we do not have: cffi callbacks answer the info queries.

The callbacks serve the real Adreno 740 extension string and per-extension limits in
the widths a driver may use (cl_uint or size_t), and record every query, so the test
checks both what the probe asks (exact reference tokens) and how it decodes answers.
"""

from __future__ import annotations

import struct

import pytest
from conftest import adreno_strings

from qcom_ext import REGISTRY
from qcom_ext._lib import C, driver, ffi
from qcom_ext.probe import read_device

PLATFORM, DEVICE = 0x2000, 0x1000


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def name_versions(entries: dict[str, tuple[int, int, int]]) -> bytes:
    out = b""
    for name, (major, minor, patch) in entries.items():
        out += struct.pack("<I64s", (major << 22) | (minor << 12) | patch, name.encode())
    return out


def fake_driver(device_info: dict[int, bytes], platform_info: dict[int, bytes], asked: list):
    def serve(table, handle, expected, param, size, value, size_ret):
        asked.append(param)
        if int(ffi.cast("uintptr_t", handle)) != expected or param not in table:
            return C.CL_INVALID_VALUE
        data = table[param]
        if size_ret != ffi.NULL:
            size_ret[0] = len(data)
        if value != ffi.NULL:
            if size < len(data):
                return C.CL_INVALID_VALUE
            ffi.memmove(value, data, len(data))
        return 0

    return driver.substitute(
        clGetDeviceInfo=lambda h, p, s, v, r: serve(device_info, h, DEVICE, p, s, v, r),
        clGetPlatformInfo=lambda h, p, s, v, r: serve(platform_info, h, PLATFORM, p, s, v, r),
    )


def adreno740_device_info() -> dict[int, bytes]:
    u32, u64 = (lambda v: struct.pack("<I", v)), (lambda v: struct.pack("<Q", v))
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
        0x1010: u64(1 << 30),
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


def platform_info() -> dict[int, bytes]:
    return {
        0x0902: cstr("QUALCOMM Snapdragon(TM)"),
        0x0901: cstr("OpenCL 3.0 QUALCOMM build: commit unknown Compiler E031.42.02.00"),
        0x0904: cstr("cl_khr_icd"),
    }


def test_fake_adreno740_probe():
    asked: list[int] = []
    with fake_driver(adreno740_device_info(), platform_info(), asked):
        caps = read_device(DEVICE)
    assert (caps.is_adreno, caps.adreno_model, caps.adreno_compiler) == (
        True, "740", "E031.42.02.00"
    )  # fmt: skip
    assert caps.label == "adreno-740-gpu"
    assert caps.extension_versions == {"cl_qcom_recordable_queues": "1.0.1",
                                       "cl_qcom_perf_hint": "1.0.4"}  # fmt: skip
    limits = caps.limits
    assert limits.page_size == 4096 and limits.ext_mem_padding == 0
    assert limits.recordable_queue_max_size == 64
    assert limits.onchip_global_mem_size == 3 << 20
    assert limits.hof_max_num_phases == 16
    assert limits.hof_max_filter_size == (16, 8)
    assert limits.block_matching_max_region == (32, 24)
    assert limits.image_pitch_alignment == 64
    assert limits.integer_dot_product_capabilities == 3
    assert caps.problems == ()
    advertised = set(adreno_strings()["adreno740-cl3.0"].split())
    for name in REGISTRY:
        assert (caps.path(name) == "native") == (name in advertised), name
    qcom_queries = {p for p in asked if 0x4000 <= p < 0x4200}
    assert qcom_queries == {0x40A0, 0x40A1, 0x41DE, 0x41A4, 0x4111, 0x4112, 0x4113, 0x4114,
                            0x4115}  # fmt: skip


def test_queries_of_absent_extensions_are_never_made():
    info = adreno740_device_info()
    info[0x1030] = cstr("cl_khr_fp16 cl_qcom_perf_hint")
    asked: list[int] = []
    with fake_driver(info, platform_info(), asked):
        caps = read_device(DEVICE)
    assert not {p for p in asked if 0x4000 <= p < 0x4200}
    assert caps.limits.page_size is None and caps.limits.recordable_queue_max_size is None


def test_advertised_but_failing_query_is_reported_not_fatal():
    info = adreno740_device_info()
    del info[0x41DE]  # the driver answers CL_INVALID_VALUE for the recording limit
    asked: list[int] = []
    with fake_driver(info, platform_info(), asked):
        caps = read_device(DEVICE)
    assert caps.limits.recordable_queue_max_size is None
    assert len(caps.problems) == 1
    problem = caps.problems[0]
    assert "cl_qcom_recordable_queues" in problem
    assert "CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE" in problem and "CL_INVALID_VALUE (-30)" in problem


def test_failing_required_query_raises_a_typed_error():
    info = adreno740_device_info()
    del info[0x102F]  # CL_DEVICE_VERSION
    from qcom_ext import CLError

    expected = r"clGetDeviceInfo failed: CL_INVALID_VALUE \(-30\)"
    with pytest.raises(CLError, match=expected), fake_driver(info, platform_info(), []):
        read_device(DEVICE)
