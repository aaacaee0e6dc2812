"""kernel_info: the per-kernel facts against pyopencl's own answers on every device, the
CL_KERNEL_WAVE_SIZE_QCOM query through a substitute for clGetKernelWorkGroupInfo, and
the register-spill warnings of tune and verify."""

from __future__ import annotations

import json
import os
import sys
import warnings

import pyopencl as cl
import pytest
from conftest import building_device
from fakes.claiming import claiming, real
from fakes.driver import addr, answer_info, u32, u64

import qcom_ext
from qcom_ext import KernelInfo, RegisterSpillWarning, kernel_info
from qcom_ext.binding.lib import C, ffi
from qcom_ext.errors import CLError
from qcom_ext.ext.program.kernel_info import SPILL_RULE, WAVE_QUERIES, spills
from qcom_ext.ops.tuning import tune_report
from qcom_ext.tools.verify import _process, runner
from qcom_ext.tools.verify import child as trial_child

info = cl.kernel_work_group_info
SOURCE = """
__attribute__((reqd_work_group_size(8, 4, 1)))
__kernel void tiled(__global float *a) {
    __local float tile[32];
    size_t i = get_local_id(1) * 8 + get_local_id(0);
    tile[i] = a[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    a[get_global_id(0)] = tile[31 - i];
}
__kernel void plain(__global float *a) { a[get_global_id(0)] *= 2.0f; }
__kernel void scratch(__global float *a, int k) {
    float t[64];
    for (int i = 0; i < 64; i++) t[i] = a[i] * (float)i;
    a[get_global_id(0)] = t[(get_global_id(0) + k) % 64];
}
"""
WAVE = C.CL_KERNEL_WAVE_SIZE_QCOM
GPU_ADRENO = {C.CL_DEVICE_VENDOR_ID: u32(0x5143), C.CL_DEVICE_TYPE: u64(C.CL_DEVICE_TYPE_GPU)}


def program(context):
    return qcom_ext.build_program(context, SOURCE)


@pytest.mark.parametrize("name", ["tiled", "plain", "scratch"])
def test_facts_equal_pyopencl_answers(device_caps, kernel_context, name):
    device = kernel_context.devices[0]
    kernel = cl.Kernel(program(kernel_context), name)
    found = kernel_info(kernel, device)
    assert isinstance(found, KernelInfo)
    assert (found.kernel, found.device, found.device_type) == (
        name,
        device_caps.label,
        device_caps.device_type,
    )
    assert found.max_work_group_size == kernel.get_work_group_info(info.WORK_GROUP_SIZE, device)
    assert found.private_mem_size == kernel.get_work_group_info(info.PRIVATE_MEM_SIZE, device)
    assert found.local_mem_size == kernel.get_work_group_info(info.LOCAL_MEM_SIZE, device)
    compiled = tuple(kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, device))
    assert found.compile_work_group_size == compiled
    if found.wave_size_from == WAVE_QUERIES[1]:
        multiple = info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE
        assert found.wave_size == kernel.get_work_group_info(multiple, device)
    if not device_caps.is_adreno:
        assert found.wave_size_from == WAVE_QUERIES[1]
    assert found.spills == spills(device_caps.device_type, found.private_mem_size)
    if name == "tiled":
        assert compiled == (8, 4, 1) and found.local_mem_size >= 32 * 4


def test_spill_rule():
    assert SPILL_RULE.startswith("a GPU device")
    assert spills("gpu", 1) and not spills("gpu", 0)
    assert not spills("cpu", 1 << 20) and not spills("accelerator", 64)


# ---- CL_KERNEL_WAVE_SIZE_QCOM through a substitute ----------------------------------------


class WorkGroupInfo:
    """clGetKernelWorkGroupInfo: records every call; answers the params of ``table``
    (bytes, or a status to fail with), the real driver answers the others."""

    def __init__(self, table: dict):
        self.table, self.calls = table, []
        self._real = real("clGetKernelWorkGroupInfo")

    def __call__(self, kernel, device, param, size, value, size_ret):
        self.calls.append((addr(kernel), addr(device), int(param), int(size), value == ffi.NULL))
        if param not in self.table:
            return self._real(kernel, device, param, size, value, size_ret)
        answer = self.table[param]
        if isinstance(answer, int):
            return answer
        return answer_info(answer, size, value, size_ret)


@pytest.fixture
def device():
    return building_device()


@pytest.fixture
def plain_kernel(device):
    context = cl.Context([device.device()])
    return cl.Kernel(program(context), "plain"), device.device()


@pytest.mark.parametrize("answer", [u64(64), u32(128)])
def test_wave_size_query_on_adreno(plain_kernel, answer):
    kernel, dev = plain_kernel
    fake = WorkGroupInfo({WAVE: answer})
    with claiming(dev.int_ptr, info=GPU_ADRENO, clGetKernelWorkGroupInfo=fake):
        found = kernel_info(kernel, dev)
    assert (found.wave_size, found.wave_size_from) == (
        int.from_bytes(answer, "little"),
        "CL_KERNEL_WAVE_SIZE_QCOM",
    )
    waves = [c for c in fake.calls if c[2] == 0xAA02]
    # the size first (no value), then the value in a buffer of that size
    assert [(w[3], w[4]) for w in waves] == [(0, True), (len(answer), False)]
    assert all(w[:2] == (kernel.int_ptr, dev.int_ptr) for w in waves)


def test_refused_wave_query_falls_back_to_the_preferred_multiple(plain_kernel):
    kernel, dev = plain_kernel
    fake = WorkGroupInfo({WAVE: C.CL_INVALID_VALUE})
    with claiming(dev.int_ptr, info=GPU_ADRENO, clGetKernelWorkGroupInfo=fake):
        found = kernel_info(kernel, dev)
    multiple = kernel.get_work_group_info(info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, dev)
    assert (found.wave_size, found.wave_size_from) == (multiple, WAVE_QUERIES[1])
    assert [c[2] for c in fake.calls].count(0xAA02) == 1


def test_no_wave_query_off_adreno(device_caps, kernel_context):
    if device_caps.is_adreno:
        pytest.skip("an Adreno device is asked for CL_KERNEL_WAVE_SIZE_QCOM")
    kernel = cl.Kernel(program(kernel_context), "plain")
    fake = WorkGroupInfo({})
    with claiming(device_caps.device_id, clGetKernelWorkGroupInfo=fake):
        found = kernel_info(kernel, kernel_context.devices[0])
    assert found.wave_size_from == WAVE_QUERIES[1]
    assert 0xAA02 not in [c[2] for c in fake.calls]


def test_a_failing_query_is_a_clerror_naming_it(plain_kernel):
    kernel, dev = plain_kernel
    fake = WorkGroupInfo({C.CL_KERNEL_PRIVATE_MEM_SIZE: C.CL_INVALID_KERNEL})
    with claiming(dev.int_ptr, clGetKernelWorkGroupInfo=fake), pytest.raises(CLError) as caught:
        kernel_info(kernel, dev)
    assert caught.value.routine == "clGetKernelWorkGroupInfo(0x11b4)"


# ---- register spills: tune and verify warn ------------------------------------------------


def spilling(bytes_: int = 96) -> dict:
    """A GPU (claimed) whose every kernel reports ``bytes_`` of private memory."""
    return {
        "info": {C.CL_DEVICE_TYPE: u64(C.CL_DEVICE_TYPE_GPU)},
        "clGetKernelWorkGroupInfo": WorkGroupInfo({C.CL_KERNEL_PRIVATE_MEM_SIZE: u64(bytes_)}),
    }


def test_a_claimed_gpu_with_private_memory_spills(plain_kernel):
    kernel, dev = plain_kernel
    with claiming(dev.int_ptr, **spilling()):
        found = kernel_info(kernel, dev)
    assert (found.device_type, found.private_mem_size, found.spills) == ("gpu", 96, True)
    assert found.describe().endswith("spills: 96 bytes of private memory per work-item")


def test_tune_warns_when_the_kernel_spills(plain_kernel):
    kernel, dev = plain_kernel
    buffer = cl.Buffer(kernel.context, cl.mem_flags.READ_WRITE, 256 * 4)
    for claims, expected in ((spilling(), 1), ({}, 0)):
        with claiming(dev.int_ptr, **claims), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            tune_report(kernel, (256,), [buffer], candidates=[(32,)], budget_s=1, use_cache=False)
        found = [str(w.message) for w in seen if issubclass(w.category, RegisterSpillWarning)]
        assert len(found) == expected
        assert all(m.startswith("kernel plain on ") and "96 bytes" in m for m in found)


def test_tune_cli_prints_a_line_for_a_spilling_kernel(capsys):
    from rich.console import Console

    from qcom_ext.tools import tune_cli

    console = Console(width=200)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with tune_cli._spill_lines(console, "layer_3"):
            warnings.warn("kernel k on x spills: 96 bytes", RegisterSpillWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)
    out = capsys.readouterr().out
    assert "layer_3: register spill: kernel k on x spills: 96 bytes" in out
    assert "something else" not in out
    assert [w.category for w in seen] == [RegisterSpillWarning, UserWarning]  # passed on


def test_verify_child_reports_the_kernels_that_spill(device):
    """A trial's kernels that spill come back in its end report (here the large-buffer
    case on its fallback, on a device claimed to be a GPU whose kernels use private
    memory), named in the detail of a trial that passed."""
    from qcom_ext.tools.selftest import _registry

    case = _registry.trial_case("cl_qcom_large_buffer")
    item = {
        "extension": "cl_qcom_large_buffer",
        "function": _registry.function_name(case.run),
        "subject": "cl_qcom_large_buffer",
        "path": "fallback",
    }
    with claiming(device.device_id, **spilling(48)):
        outcome = trial_child.trial_outcome(item, device.device())
    with claiming(device.device_id):
        clean = trial_child.trial_outcome(item, device.device())
    assert outcome["outcome"] == "ok", outcome
    assert outcome["spills"] == [["affine", 48], ["fill_pattern", 48]]
    assert "register spill" in outcome["detail"] and "affine (48 B)" in outcome["detail"]
    payload = json.dumps(outcome)
    assert _process.end_spills(payload) == (("affine", 48), ("fill_pattern", 48))
    assert _process.end_fields(payload)[0] == "ok"
    assert clean == {"outcome": "ok", "detail": "", "log": ""}  # a CPU: private is no spill


def test_verify_parent_warns_for_each_spilling_kernel(tmp_path):
    outcome = {"outcome": "ok", "detail": "register spill", "spills": [["k", 32], ["bad"]]}
    script = tmp_path / "child.py"
    script.write_text(
        "import json, sys\n"
        "json.load(sys.stdin)\n"
        f"print({_process.PROTOCOL!r}, 'begin', 'cl_qcom_bitreverse', flush=True)\n"
        f"print({_process.PROTOCOL!r}, 'end', 'cl_qcom_bitreverse', {json.dumps(outcome)!r})\n"
    )
    spills: dict = {}
    verdicts = _process.run_child(
        {"trials": []},
        {"cl_qcom_bitreverse": "the trial"},
        30,
        dict(os.environ),
        command=[sys.executable, str(script)],
        spills=spills,
    )
    assert verdicts["cl_qcom_bitreverse"].outcome == "ok"
    assert verdicts["cl_qcom_bitreverse"].detail == "register spill"
    assert spills == {"cl_qcom_bitreverse": (("k", 32),)}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        runner.warn_spills(spills)
    assert [str(w.message) for w in seen] == [
        "the trial of cl_qcom_bitreverse: kernel k spills: 32 bytes of private memory per "
        "work-item"
    ]
    assert all(w.category is RegisterSpillWarning for w in seen)
