"""probe() of an Adreno device we do not have: cffi callbacks answer the info queries.

The callbacks serve the real Adreno 740 extension string and per-extension limits in
the widths a driver may use (cl_uint or size_t), and record every query, so the test
checks both what the probe asks (exact reference tokens) and how it decodes answers.
"""

from __future__ import annotations

import pytest
from conftest import adreno_strings
from fakes.driver import DEVICE, adreno740_device_info, cstr, fake_driver, platform_info

from qcom_ext import REGISTRY
from qcom_ext.device.probe import read_device


def test_fake_adreno740_probe():
    asked: list[int] = []
    with fake_driver(adreno740_device_info(), platform_info(), asked):
        caps = read_device(DEVICE)
    assert (caps.is_adreno, caps.adreno_model, caps.adreno_compiler) == (
        True,
        "740",
        "E031.42.02.00",
    )
    assert caps.label == "adreno-740-gpu"
    assert (caps.driver, caps.model_source, caps.opencl_version) == (
        "qualcomm",
        "device_version",
        (3, 0),
    )
    assert caps.opencl_c_version_number == (3, 0) and caps.unknown_qcom == ()
    assert caps.extension_versions == {
        "cl_qcom_recordable_queues": "1.0.1",
        "cl_qcom_perf_hint": "1.0.4",
    }
    limits = caps.limits
    assert limits.page_size == 4096 and limits.ext_mem_padding == 0
    assert limits.recordable_queue_max_size == 64
    assert limits.onchip_global_mem_size == 3 << 20
    assert limits.hof_max_num_phases == 16
    assert limits.hof_max_filter_size == (16, 8)
    assert limits.block_matching_max_region == (32, 24)
    assert limits.image_pitch_alignment == 64
    assert limits.integer_dot_product_capabilities == 3
    assert limits.ml_interface_versions == ((2, 0), (3, 0))  # cl_qcom_ml_ops, fakes.driver
    assert caps.problems == ()
    advertised = set(adreno_strings()["adreno740-cl3.0"].split())
    for name in REGISTRY:
        assert (caps.path(name) == "native") == (name in advertised), name
    qcom_queries = {p for p in asked if 0x4000 <= p < 0x4200}
    assert qcom_queries == {0x40A0, 0x40A1, 0x41DE, 0x41A4, 0x4111, 0x4112, 0x4113, 0x4114, 0x4115}


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


def qcs8550_device_info() -> dict[int, bytes]:
    """The QCS8550 Linux board (tests/data/README.md): no OpenCL string names the model.
    (Its OpenCL C version string was not captured; here it names no model either.)"""
    info = adreno740_device_info()
    info[0x102B] = cstr("QUALCOMM ")  # CL_DEVICE_NAME
    info[0x102F] = cstr("OpenCL 3.0 ")  # CL_DEVICE_VERSION
    info[0x103D] = cstr("OpenCL C 3.0 ")  # CL_DEVICE_OPENCL_C_VERSION
    info[0x102D] = cstr("OpenCL 3.0 QUALCOMM build: commit unknown Compiler E031.42.20.00")
    return info


def test_model_the_strings_do_not_name_comes_from_the_kernel_driver(tmp_path, monkeypatch):
    root = tmp_path / "sys/class/kgsl/kgsl-3d0"  # under QCOM_EXT_SYSROOT, as on the board
    root.mkdir(parents=True)
    (root / "gpu_model").write_text("Adreno740v2\n")
    monkeypatch.setenv("QCOM_EXT_SYSROOT", str(tmp_path))
    with fake_driver(qcs8550_device_info(), platform_info(), []):
        caps = read_device(DEVICE)
    assert (caps.adreno_model, caps.model_source, caps.label) == (
        "740",
        "kgsl:gpu_model",
        "adreno-740-gpu",
    )
    assert caps.driver == "qualcomm" and caps.opencl_version == (3, 0)
    assert caps.compiler_version.text == "E031.42.20.00"
    (root / "gpu_model").unlink()  # no kernel facts: the report says so
    with fake_driver(qcs8550_device_info(), platform_info(), []):
        caps = read_device(DEVICE)
    assert (caps.adreno_model, caps.model_source, caps.label) == (
        None,
        None,
        "adreno-unknown-gpu",
    )


def test_kernel_driver_is_not_read_when_the_strings_name_the_model(monkeypatch):
    def read_kernel_gpu(root=None):
        raise AssertionError("read the kernel driver's files")

    monkeypatch.setattr("qcom_ext.device.kernel_gpu.read_kernel_gpu", read_kernel_gpu)
    with fake_driver(adreno740_device_info(), platform_info(), []):
        caps = read_device(DEVICE)
    assert (caps.adreno_model, caps.model_source) == ("740", "device_version")
    other = qcs8550_device_info()
    other[0x1001] = (0x10DE).to_bytes(4, "little")  # not a Qualcomm device: never read
    with fake_driver(other, platform_info(), []):
        caps = read_device(DEVICE)
    assert caps.adreno_model is None
