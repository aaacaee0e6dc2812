"""cl_qcom_reqd_sub_group_size: the macro on each path, and kernel_sub_group_size.

On devices with sub-groups the host query is checked against ``get_sub_group_size()``
in the kernel; without, it is 1. The native paths are checked through the fake Adreno
driver (clGetKernelSubGroupInfo / clGetKernelSubGroupInfoKHR callbacks) and by
preprocessing the compat header with the native flags.
"""

from __future__ import annotations

import struct

import numpy as np
import pyopencl as cl
import pytest
from compat_helpers import preprocess, whole
from conftest import adreno_strings
from fakes.driver import DEVICE, addr, adreno740_device_info, cstr, fake_driver, platform_info
from hypothesis import given
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import CLError, ConfigError
from qcom_ext.binding.lib import C, ffi
from qcom_ext.device.probe import clear_cache
from qcom_ext.ext.program.subgroups import half_and_full, has_sub_groups, kernel_sub_group_size

NATIVE = ["-DQCOM_EXT_NATIVE_cl_qcom_reqd_sub_group_size"]
INTEL = [
    "-DQCOM_EXT_KHR_cl_qcom_reqd_sub_group_size",
    "-DQCOM_EXT_SUB_GROUP_SIZE_HALF=64",
    "-DQCOM_EXT_SUB_GROUP_SIZE_FULL=128",
]
KERNELS = """
QCOM_REQD_SUB_GROUP_SIZE(half)
__kernel void half_k(__global int *out) { out[get_global_id(0)] = 1; }
QCOM_REQD_SUB_GROUP_SIZE(full)
__kernel void full_k(__global int *out) { out[get_global_id(0)] = 2; }
#pragma OPENCL EXTENSION cl_qcom_reqd_sub_group_size : enable
__attribute__((qcom_reqd_sub_group_size("half")))
__kernel void adreno_k(__global int *out) { out[get_global_id(0)] = 3; }
"""


def test_half_and_full_choices():
    assert half_and_full((8, 16, 32)) == (16, 32)  # Intel SIMD16 / SIMD32
    assert half_and_full((64, 128)) == (64, 128)  # Adreno 7xx half / full wave
    assert half_and_full((32,)) == (32, 32)
    assert half_and_full((256, 512)) == (256, 256)  # nothing <= 128: the smallest
    assert half_and_full(tuple(range(1, 513))) == (64, 128)  # pocl 5.0
    with pytest.raises(ConfigError, match="no sub-group sizes"):
        half_and_full(())


@given(st.lists(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256, 512]), min_size=1))
def test_half_and_full_are_supported_sizes(sizes):
    half, full = half_and_full(sizes)
    assert half in sizes and full in sizes and half <= full
    assert half * 2 <= full or half == full


def test_macro_expands_per_path():
    both = "QCOM_REQD_SUB_GROUP_SIZE(half) QCOM_REQD_SUB_GROUP_SIZE(full) k"
    assert preprocess(both, NATIVE) == whole(
        '__attribute__((qcom_reqd_sub_group_size("half"))) '
        '__attribute__((qcom_reqd_sub_group_size("full"))) k'
    )
    assert preprocess(both, INTEL) == whole(
        "__attribute__((intel_reqd_sub_group_size(64))) "
        "__attribute__((intel_reqd_sub_group_size(128))) k"
    )
    assert preprocess(both) == "k"


def test_adreno_attribute_spelling_per_path():
    adreno = '__attribute__((qcom_reqd_sub_group_size("full"))) k'
    assert preprocess(adreno, NATIVE) == whole(adreno)  # untouched: the compiler knows it
    assert preprocess(adreno, INTEL) == "__attribute__(()) k"  # dropped (see the header)
    assert preprocess(adreno) == "__attribute__(()) k"


def test_only_the_native_path_enables_the_pragma():
    pragma = "#pragma OPENCL EXTENSION cl_qcom_reqd_sub_group_size : enable"
    assert pragma in preprocess("", NATIVE, header=True)
    assert pragma not in preprocess("", INTEL, header=True)
    assert pragma not in preprocess("", header=True)


def test_intel_path_without_sizes_is_a_clear_error():
    with pytest.raises(AssertionError, match="QCOM_EXT_SUB_GROUP_SIZE_HALF=n"):
        preprocess("", ["-DQCOM_EXT_KHR_cl_qcom_reqd_sub_group_size"])


def run_kernel(context, built, name: str, n: int = 64) -> np.ndarray:
    queue = cl.CommandQueue(context)
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 4 * n)
    getattr(built, name)(queue, (n,), None, out)
    host = np.zeros(n, np.int32)
    cl.enqueue_copy(queue, host, out)
    return host


def test_attribute_kernels_build_and_run(device_caps, kernel_context):
    built = qcom_ext.build_program(kernel_context, KERNELS)
    for name, value in (("half_k", 1), ("full_k", 2), ("adreno_k", 3)):
        assert (run_kernel(kernel_context, built, name) == value).all(), name


def test_intel_spelling_compiles_where_the_attribute_is_known(device_caps, kernel_context):
    """The Intel expansion is valid OpenCL C for this compiler (pocl 3.x and NVIDIA parse
    the attribute and ignore it; devices advertising it take this path anyway)."""
    if device_caps.has("cl_intel_required_subgroup_size"):
        half, full = half_and_full(device_caps.limits.sub_group_sizes or (1,))
    else:
        half, full = 8, 16
    flags = [
        "-DQCOM_EXT_KHR_cl_qcom_reqd_sub_group_size",
        f"-DQCOM_EXT_SUB_GROUP_SIZE_HALF={half}",
        f"-DQCOM_EXT_SUB_GROUP_SIZE_FULL={full}",
    ]
    built = qcom_ext.build_program(kernel_context, KERNELS, flags)
    assert (run_kernel(kernel_context, built, "full_k", full * 2) == 2).all()


def test_a_bad_mode_is_a_build_error(device_caps, kernel_context):
    source = "QCOM_REQD_SUB_GROUP_SIZE(middle) __kernel void k() {}"
    with pytest.raises(qcom_ext.BuildError, match="middle"):
        qcom_ext.build_program(kernel_context, source)


def test_kernel_sub_group_size_is_one_without_sub_groups(device_caps, kernel_context):
    device = device_caps.device()
    if has_sub_groups(device):
        pytest.skip(f"{device_caps.label} has sub-groups")
    built = qcom_ext.build_program(kernel_context, KERNELS)
    kernel = cl.Kernel(built, "full_k")
    for lws in (1, (64,), (8, 4), (2, 2, 2)):
        assert qcom_ext.kernel_sub_group_size(kernel, device, lws) == 1


SUB_GROUP_PROBE = """
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
QCOM_REQD_SUB_GROUP_SIZE(full)
__kernel void sizes(__global uint *out) { out[get_global_id(0)] = get_sub_group_size(); }
"""


def test_kernel_sub_group_size_agrees_with_the_kernel(device_caps, kernel_context):
    device = device_caps.device()
    if not has_sub_groups(device):
        pytest.skip(
            f"{device_caps.label} has no sub-groups (no cl_khr_subgroups, "
            "CL_DEVICE_MAX_NUM_SUB_GROUPS 0)"
        )
    built = qcom_ext.build_program(kernel_context, SUB_GROUP_PROBE)
    lws = min(
        64, built.sizes.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
    )
    reported = qcom_ext.kernel_sub_group_size(built.sizes, device, (lws,))
    queue = cl.CommandQueue(kernel_context)
    out = cl.Buffer(kernel_context, cl.mem_flags.WRITE_ONLY, 4 * lws * 4)
    built.sizes(queue, (lws * 4,), (lws,), out)
    seen = np.zeros(lws * 4, np.uint32)
    cl.enqueue_copy(queue, seen, out)
    assert 1 <= reported <= lws
    assert int(seen.max()) == reported


@pytest.mark.parametrize("bad", [0, (), (64, 0), (1, 2, 3, 4), (8.0,), "64"])
def test_bad_local_size(bad):
    with pytest.raises(ConfigError, match="local_size"):
        kernel_sub_group_size(0x1, 0x1, bad)


# ---- native marshalling on the fake Adreno driver --------------------------------------


KERNEL = 0x4000


@pytest.fixture
def fresh_probe(monkeypatch):
    clear_cache()
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    yield
    clear_cache()


def sub_group_info(calls: list, answer: int = 64, status: int = 0):
    def serve(kernel, device, param, in_size, in_value, size, value, size_ret):
        count = in_size // ffi.sizeof("size_t")
        given = list(ffi.cast("size_t *", in_value)[0:count])
        calls.append((addr(kernel), addr(device), param, in_size, given, size))
        if status:
            return status
        ffi.cast("size_t *", value)[0] = answer
        if size_ret != ffi.NULL:
            size_ret[0] = ffi.sizeof("size_t")
        return 0

    return serve


@pytest.mark.skipif(ffi.sizeof("void *") != 8, reason="LP64 layouts")
def test_native_query_on_adreno_740(fresh_probe):
    calls: list = []
    with fake_driver(
        adreno740_device_info(),
        platform_info(),
        [],
        clGetKernelSubGroupInfo=sub_group_info(calls, 128),
    ):
        assert has_sub_groups(DEVICE)
        assert kernel_sub_group_size(KERNEL, DEVICE, (32, 4)) == 128
    assert calls == [
        (
            KERNEL,
            DEVICE,
            C.CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
            2 * ffi.sizeof("size_t"),
            [32, 4],
            ffi.sizeof("size_t"),
        )
    ]


@pytest.mark.skipif(ffi.sizeof("void *") != 8, reason="LP64 layouts")
def test_khr_query_on_an_opencl_2_0_adreno(fresh_probe):
    info = adreno740_device_info()
    info[0x1030] = cstr(adreno_strings()["adreno650-cl2.0"])
    info[0x102F] = cstr("OpenCL 2.0 Adreno(TM) 650")
    calls, lookups = [], []

    def lookup(platform, name):
        lookups.append((addr(platform), ffi.string(name)))
        return ffi.NULL

    with fake_driver(
        info,
        platform_info("OpenCL 2.0"),
        [],
        clGetKernelSubGroupInfoKHR=sub_group_info(calls, 64),
        clGetExtensionFunctionAddressForPlatform=lookup,
    ):
        assert kernel_sub_group_size(KERNEL, DEVICE, 64) == 64
    assert calls[0][2:5] == (C.CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, 8, [64])
    assert not lookups  # the substitute answered; no core entry point was tried


@pytest.mark.skipif(ffi.sizeof("void *") != 8, reason="LP64 layouts")
def test_driver_refusal_is_a_cl_error(fresh_probe):
    calls: list = []
    refusing = sub_group_info(calls, status=C.CL_INVALID_VALUE)
    with (
        fake_driver(
            adreno740_device_info(), platform_info(), [], clGetKernelSubGroupInfo=refusing
        ),
        pytest.raises(CLError, match="clGetKernelSubGroupInfo failed: CL_INVALID_VALUE"),
    ):
        kernel_sub_group_size(KERNEL, DEVICE, (4096,))


@pytest.mark.skipif(ffi.sizeof("void *") != 8, reason="LP64 layouts")
def test_no_sub_groups_on_an_opencl_3_0_device_without_them(fresh_probe):
    info = adreno740_device_info()
    info[0x1030] = cstr("cl_khr_fp16")
    info[0x105C] = struct.pack("<I", 0)
    with fake_driver(info, platform_info(), []):
        assert not has_sub_groups(DEVICE)
        assert kernel_sub_group_size(KERNEL, DEVICE, (64,)) == 1


EMULATED_PROBE = """
__kernel void sizes(__global uint *out) {
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    out[get_global_id(0)] = get_sub_group_size();
}
"""


@pytest.mark.parametrize("size", [None, 4])
def test_kernel_sub_group_size_reports_the_emulated_size(
    device_caps, kernel_context, monkeypatch, size
):
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_subgroup_shuffle")
    defines = {"QCOM_EXT_EMULATED_SUB_GROUP_SIZE": size} if size else None
    built = qcom_ext.build_program(kernel_context, EMULATED_PROBE, defines=defines)
    reported = qcom_ext.kernel_sub_group_size(built.sizes, device_caps.device(), (16,))
    queue = cl.CommandQueue(kernel_context)
    out = cl.Buffer(kernel_context, cl.mem_flags.WRITE_ONLY, 4 * 32)
    built.sizes(queue, (32,), (16,), out)
    seen = np.zeros(32, np.uint32)
    cl.enqueue_copy(queue, seen, out)
    assert reported == (size or 1) == int(seen.max())
