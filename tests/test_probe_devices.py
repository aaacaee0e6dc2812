"""probe() on every real OpenCL device here, checked against pyopencl's own view."""

from __future__ import annotations

import json

import numpy as np
import pyopencl as cl
import pytest
from conftest import stable_report

import qcom_ext
from qcom_ext import REGISTRY
from qcom_ext._resources import kernels_dir
from qcom_ext.device.probe import clear_cache, default_device, probe, read_device


def test_probe_matches_pyopencl(device_caps):
    dev = device_caps.device()
    assert device_caps.device_name == dev.name
    assert device_caps.device_version == dev.version
    assert device_caps.driver_version == dev.driver_version
    assert device_caps.opencl_c_version == dev.opencl_c_version
    assert device_caps.vendor_id == dev.vendor_id
    assert device_caps.extensions == frozenset(dev.extensions.split())
    assert device_caps.platform_name == dev.platform.name
    assert device_caps.platform_version == dev.platform.version
    assert device_caps.image_support == bool(dev.image_support)
    assert device_caps.limits.max_mem_alloc_size == dev.max_mem_alloc_size
    if dev.image_support:
        assert device_caps.limits.image2d_max_size == (
            dev.image2d_max_width,
            dev.image2d_max_height,
        )


def test_every_known_extension_has_a_path_with_a_reason(device_caps):
    assert set(device_caps.statuses) == set(REGISTRY)
    for name, status in device_caps.statuses.items():
        assert status.tier in {"native", "khr", "fallback", "unavailable"}, name
        assert status.reason, name
        assert (status.path == "native") == (
            device_caps.has(name) and name not in device_caps.disabled
        )


def test_non_adreno_devices_never_claim_native_or_protection(device_caps):
    if device_caps.is_adreno:
        pytest.skip("an Adreno device may be native")
    assert not any(s.path == "native" for s in device_caps.statuses.values())
    assert device_caps.path("cl_qcom_protected_context") == "unavailable"
    assert device_caps.problems == ()


@pytest.mark.requires_ext("cl_khr_command_buffer")
def test_command_buffer_devices_take_the_khronos_tier(device_caps):
    assert device_caps.path("cl_qcom_recordable_queues") == "khr:cl_khr_command_buffer"
    version = device_caps.extension_versions["cl_khr_command_buffer"]
    assert version.startswith("0.9.")
    assert version in device_caps.status("cl_qcom_recordable_queues").reason
    assert device_caps.limits.command_buffer_capabilities is not None


def test_extension_versions_decode(device_caps):
    if not device_caps.device_version.startswith("OpenCL 3"):
        pytest.skip("CL_DEVICE_EXTENSIONS_WITH_VERSION is OpenCL 3.0")
    dev = device_caps.device()
    expected = {
        nv.name: f"{nv.version >> 22}.{(nv.version >> 12) & 0x3FF}.{nv.version & 0xFFF}"
        for nv in dev.extensions_with_version
    }
    assert dict(device_caps.extension_versions) == expected


def test_probe_is_cached_per_device_and_kill_switch(device_caps, monkeypatch):
    first = probe(device_caps.device_id)
    assert probe(device_caps.device()) is first
    monkeypatch.setenv("QCOM_EXT_DISABLE", "all")
    forced = probe(device_caps.device_id)
    assert forced is not first and forced.disabled == frozenset(REGISTRY)
    assert not any(s.path.startswith("khr:") for s in forced.statuses.values())
    monkeypatch.delenv("QCOM_EXT_DISABLE")
    assert probe(device_caps.device_id) is first


def test_read_device_is_uncached_but_equal(device_caps):
    again = read_device(device_caps.device_id)
    assert again is not device_caps
    assert stable_report(again) == stable_report(device_caps)
    assert again.statuses == device_caps.statuses and again.device_id == device_caps.device_id


def test_report_is_json(device_caps):
    data = json.loads(device_caps.to_json())
    assert data["label"] == device_caps.label
    assert set(data["qcom"]) == set(REGISTRY)


@pytest.mark.parametrize("spec", ["", "0", "0:0", "1:0", "portable", "portable:0", "1:pthread"])
def test_default_device_follows_pyopencl_ctx(monkeypatch, spec):
    platforms = cl.get_platforms()
    try:
        expected = cl.choose_devices(interactive=False, answers=spec.split(":") if spec else [])
    except (RuntimeError, IndexError, cl.Error):
        pytest.skip(
            f"PYOPENCL_CTX={spec!r} selects nothing on this machine's {len(platforms)} platforms"
        )
    monkeypatch.setenv("PYOPENCL_CTX", spec)
    clear_cache()
    assert default_device() == expected[0].int_ptr
    assert probe().device_id == expected[0].int_ptr
    clear_cache()


@pytest.mark.parametrize("spec", ["no-such-platform-name", "0:no-such-device", "0:0:0"])
def test_default_device_bad_spec_is_a_clear_error(monkeypatch, spec):
    monkeypatch.setenv("PYOPENCL_CTX", spec)
    clear_cache()
    with pytest.raises(qcom_ext.QcomExtError, match="PYOPENCL_CTX"):
        default_device()
    clear_cache()


def test_probe_all_covers_every_device():
    reports = qcom_ext.probe_all()
    expected = [d.int_ptr for p in cl.get_platforms() for d in p.get_devices()]
    assert [c.device_id for c in reports] == expected


def test_compat_header_builds_with_the_probed_options(device_caps, kernel_context):
    source = (kernels_dir() / "bitreverse.cl").read_text()
    program = qcom_ext.build_program(kernel_context, source)
    cl_queue = cl.CommandQueue(kernel_context)
    rng = np.random.default_rng(2)
    values = np.concatenate(
        [
            np.array([0x1248EDBF, 0, 1, 0x80000000, 0xFFFFFFFF], np.uint32),
            rng.integers(0, 2**32, 1000, dtype=np.uint32),
        ]
    )
    mf = cl.mem_flags
    src = cl.Buffer(kernel_context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=values)
    dst = cl.Buffer(kernel_context, mf.WRITE_ONLY, values.nbytes)
    program.bitreverse_u32(cl_queue, values.shape, None, src, dst)
    out = np.empty_like(values)
    cl.enqueue_copy(cl_queue, out, dst)
    expected = np.array([int(f"{int(v):032b}"[::-1], 2) for v in values], np.uint32)
    assert out[0] == 0xFDB71248  # the guide's worked example
    np.testing.assert_array_equal(out, expected)


def test_disabled_argument_adds_to_the_kill_switch_and_is_cached(device_caps, monkeypatch):
    """``probe(device, disabled=...)`` derives from the cached report (no new device
    read), merges with QCOM_EXT_DISABLE, and is itself cached until clear_cache()."""
    from qcom_ext.device import probe as probe_module

    device = device_caps.device_id
    base = probe(device)
    reads = []
    real = probe_module.read_device
    monkeypatch.setattr(probe_module, "read_device", lambda d: reads.append(d) or real(d))
    off = probe(device, disabled=["cl_qcom_bitreverse", "cl_khr_command_buffer"])
    assert off.disabled == {"cl_qcom_bitreverse", "cl_khr_command_buffer"}
    assert off.path("cl_qcom_bitreverse") == "fallback"
    assert not off.path("cl_qcom_recordable_queues").startswith("khr:")
    assert probe(device, disabled="cl_khr_command_buffer,cl_qcom_bitreverse") is off
    assert probe(device) is base and probe(device, disabled=()) is base
    assert reads == []
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_perf_hint")
    merged = probe(device, disabled=["cl_qcom_bitreverse"])
    assert reads == [device]  # another QCOM_EXT_DISABLE: its base report is read once
    assert merged.disabled == {"cl_qcom_perf_hint", "cl_qcom_bitreverse"}
    assert merged.path("cl_qcom_perf_hint") == "fallback"
    with pytest.raises(qcom_ext.ConfigError, match="cl_qcom_typo"):
        probe(device, disabled=["cl_qcom_typo"])


def test_disabled_argument_needs_no_device_read(device_caps, monkeypatch):
    from qcom_ext.device import probe as probe_module

    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    device = device_caps.device_id
    probe(device)
    reads = []
    real = probe_module.read_device
    monkeypatch.setattr(probe_module, "read_device", lambda d: reads.append(d) or real(d))
    for name in REGISTRY:
        probe(device, disabled=[name])
    assert reads == []
    clear_cache()
    probe(device, disabled=["cl_qcom_bitreverse"])
    assert reads == [device]  # the base report, read once after clear_cache()
