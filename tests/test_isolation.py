"""Isolation: compiles (``build_program(..., isolate=True)``) and the probe
(``probe_all(isolated=True)``) in child processes, so that a driver crash is a typed error.

Crashes are real: the compile's child is the real child with clBuildProgram (or
clCreateContext) substituted by a call that kills the process (tests/_isolation_children.py);
the probe's child loads, through ``QCOM_EXT_OPENCL_LIBRARY``, a tiny OpenCL library built
here with the system C compiler whose entry points segfault, abort or hang.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import _isolation_children as children
import numpy as np
import pyopencl as cl
import pytest
from _crashing_opencl import build_libraries
from conftest import adreno_strings, stable_report

import qcom_ext
from qcom_ext import _isolation
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.isolated import probe_isolated, report_from_dict
from qcom_ext.device.verdicts import Verdict
from qcom_ext.errors import (
    BuildError,
    CompilerCrashError,
    ConfigError,
    DriverCrashError,
    DriverTimeoutError,
    OpenCLUnavailable,
    QcomExtError,
)
from qcom_ext.ext.program import build as program
from qcom_ext.ext.program import cache as program_cache
from qcom_ext.ext.program import isolated

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "__kernel void k(__global uint *v) { v[0] = qcom_bitreverse(v[0]) ^ (uint)SALT; }"
BROKEN = "__kernel void k(__global uint *v) { v[0] = undeclared_name; }"


def run_kernel(context, built) -> int:
    queue = cl.CommandQueue(context)
    data = np.array([0x1248EDBF], np.uint32)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
    built.k(queue, (1,), None, buffer)
    cl.enqueue_copy(queue, data, buffer)
    return int(data[0])


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """A fresh persistent program cache for this test."""
    monkeypatch.setenv(program_cache.DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(program_cache.DISABLE_ENV, raising=False)
    return tmp_path / "cache" / "programs"


@pytest.fixture
def no_parent_compile(monkeypatch):
    """Fails the test if this process compiles source: the child must."""

    def refuse(*args):
        raise AssertionError("the parent compiled the source itself")

    monkeypatch.setattr(program, "_build_from_source", refuse)


def substitute_child(monkeypatch, name: str, *args: str) -> None:
    monkeypatch.setattr(isolated, "CHILD_COMMAND", children.command(name, *args))


# ---- the isolated compile ------------------------------------------------------------


def expected(salt: int) -> int:
    return int(f"{0x1248EDBF:032b}"[::-1], 2) ^ salt


def test_isolated_build_gives_the_in_process_result(kernel_context, cache_dir, monkeypatch):
    with monkeypatch.context() as patch:  # compiled here, nothing cached
        patch.setenv(program_cache.DISABLE_ENV, "1")
        here = qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 78})
    with monkeypatch.context() as patch:
        patch.setattr(program, "_build_from_source", lambda *a: pytest.fail("compiled here"))
        there = qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 78}, isolate=True)
    assert run_kernel(kernel_context, there) == run_kernel(kernel_context, here) == expected(78)
    assert sorted(there.kernel_names.split(";")) == sorted(here.kernel_names.split(";"))
    assert len(program_cache.ProgramCache(cache_dir).entries()) == 1  # the child's entry
    with monkeypatch.context() as patch:  # which the next build, in-process, loads
        patch.setattr(program, "_build_from_source", lambda *a: pytest.fail("not a cache hit"))
        again = qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 78})
    assert run_kernel(kernel_context, again) == expected(78)


def test_isolated_build_with_the_cache_off_hands_over_privately(
    kernel_context, tmp_path, monkeypatch, no_parent_compile
):
    monkeypatch.setenv(program_cache.DISABLE_ENV, "1")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    built = qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 1}, isolate=True)
    assert run_kernel(kernel_context, built) == expected(1)
    assert list(tmp_path.iterdir()) == []  # the hand-over directory is gone


def test_an_untrusted_cache_is_not_written_by_the_child(
    kernel_context, tmp_path, monkeypatch, no_parent_compile
):
    """A cache directory others can write is used by neither process: the hand-over
    goes through a private directory, and nothing lands in the shared one."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv(program_cache.DIR_ENV, str(shared))
    monkeypatch.delenv(program_cache.DISABLE_ENV, raising=False)
    with pytest.warns(qcom_ext.QcomExtWarning, match="writable by group or others"):
        built = qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 8}, isolate=True)
    assert run_kernel(kernel_context, built) == expected(8)
    assert list(shared.rglob("*")) == []


@pytest.mark.usefixtures("program_binaries_stored")
def test_a_cached_binary_needs_no_child(kernel_context, cache_dir, monkeypatch):
    qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 5})
    monkeypatch.setattr(isolated, "run_child", lambda *a, **k: pytest.fail("a child started"))
    built = qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 5}, isolate=True)
    assert run_kernel(kernel_context, built) == expected(5)


@pytest.mark.parametrize(
    ("child", "signal"), [("compiler_segfaults", "SIGSEGV"), ("compiler_aborts", "SIGABRT")]
)
def test_a_compiler_crash_is_a_typed_error(
    kernel_context, device_caps, cache_dir, monkeypatch, no_parent_compile, child, signal
):
    substitute_child(monkeypatch, child)
    with pytest.raises(CompilerCrashError) as caught:
        qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 9}, isolate=True)
    error = caught.value
    assert error.signal == signal and error.device == device_caps.label
    assert "-DSALT=9" in error.options
    message = str(error)
    assert signal in message and device_caps.label in message and "-DSALT=9" in message
    assert program_cache.ProgramCache(cache_dir).entries() == []


def test_a_crash_before_the_compile_names_its_step(
    kernel_context, cache_dir, monkeypatch, no_parent_compile
):
    substitute_child(monkeypatch, "context_segfaults")
    with pytest.raises(DriverCrashError) as caught:
        qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 3}, isolate=True)
    assert not isinstance(caught.value, CompilerCrashError)
    assert caught.value.stage == "clCreateContext" and caught.value.signal == "SIGSEGV"


def _normalized(error: BuildError) -> tuple[tuple[str, ...], str]:
    """Options and log, with the compiler's temporary file names (pocl's kcache) out."""
    return error.options, re.sub(r"tempfile_\w+", "tempfile", error.log)


def test_a_build_error_is_the_in_process_build_error(kernel_context, cache_dir, monkeypatch):
    with pytest.raises(BuildError) as here:
        qcom_ext.build_program(kernel_context, BROKEN, defines={"SALT": 1})
    monkeypatch.setattr(program, "_build_from_source", lambda *a: pytest.fail("compiled here"))
    with pytest.raises(BuildError) as there:
        qcom_ext.build_program(kernel_context, BROKEN, defines={"SALT": 1}, isolate=True)
    assert "undeclared_name" in there.value.log
    assert _normalized(there.value) == _normalized(here.value)
    assert type(there.value) is BuildError


def test_a_hung_compile_is_killed_at_the_timeout(
    kernel_context, device_caps, tmp_path, cache_dir, monkeypatch
):
    pid_file = tmp_path / "pid"
    substitute_child(monkeypatch, "compiler_hangs", str(pid_file))
    with pytest.raises(DriverTimeoutError) as caught:
        qcom_ext.build_program(
            kernel_context, SOURCE, defines={"SALT": 4}, isolate=True, isolate_timeout=6
        )
    assert caught.value.timeout == 6
    assert caught.value.stage.startswith(f"the compile for {device_caps.label} with options")
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(pid_file.read_text()), 0)


def test_a_binary_changed_in_the_cache_is_never_loaded(
    kernel_context, cache_dir, monkeypatch, no_parent_compile
):
    """The parent reads the child's binaries only through the cache's checked reader:
    an entry that changed after the child stored it fails its HMAC and is refused."""
    substitute_child(monkeypatch, "entry_corrupted")
    with pytest.raises(QcomExtError, match="does not give back"):
        qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": 6}, isolate=True)
    assert program_cache.ProgramCache(cache_dir).entries() == []  # the rejected entry removed


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_a_timeout_must_be_positive(kernel_context, timeout):
    with pytest.raises(ConfigError, match="timeout must be a positive number"):
        qcom_ext.build_program(
            kernel_context, SOURCE, defines={"SALT": 2}, isolate=True, isolate_timeout=timeout
        )


# ---- the isolated probe --------------------------------------------------------------


def test_the_isolated_probe_is_the_probe(device_caps):
    here = qcom_ext.probe_all()
    there = qcom_ext.probe_all(isolated=True)
    assert [stable_report(c) for c in there] == [stable_report(c) for c in here]
    assert all(c.device_id == 0 for c in there)  # handles stay in the child
    (alone,) = probe_isolated(device_caps.label)
    assert stable_report(alone) == stable_report(device_caps)
    assert alone.limits.max_mem_alloc_size > 0 and alone.label == device_caps.label


@pytest.mark.parametrize("name", sorted(adreno_strings()))
def test_reports_read_back_from_json_are_the_same(name):
    verdict = Verdict("cl_qcom_recordable_queues", "the trial", "crashed", "SIGSEGV", "2026-01-02")
    caps = DeviceCaps.from_info(
        extensions=adreno_strings()[name],
        device_version="OpenCL 3.0 Adreno(TM) 740",
        driver_version="OpenCL 3.0 QUALCOMM build: commit #16c1863 Compiler E031.42.02.00",
        device_name="QUALCOMM Adreno(TM)",
        platform_name="QUALCOMM Snapdragon(TM)",
        platform_extensions="cl_khr_icd",
        vendor_id=0x5143,
        disabled=("cl_qcom_perf_hint",),
        problems=("a query failed",),
    ).with_verdicts({verdict.extension: verdict})
    back = report_from_dict(json.loads(caps.to_json()))
    assert back == caps and back.to_dict() == caps.to_dict()
    assert back.verdicts == caps.verdicts


@pytest.mark.parametrize("broken", [{}, {"device": {}}, {"label": "x", "platform": 3}])
def test_a_report_that_is_not_one_is_refused(device_caps, broken):
    data = {**device_caps.to_dict(), **broken} if broken else {}
    with pytest.raises(QcomExtError, match="not a DeviceCaps report"):
        report_from_dict(data)


@pytest.fixture(scope="module")
def libraries(tmp_path_factory) -> dict[str, str]:
    return build_libraries(tmp_path_factory.mktemp("crashing-opencl"))


def test_a_driver_crash_in_clGetPlatformIDs_is_a_typed_error(libraries, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_OPENCL_LIBRARY", libraries["segfault"])
    with pytest.raises(DriverCrashError) as caught:
        qcom_ext.probe_all(isolated=True)
    assert (caught.value.stage, caught.value.signal) == ("clGetPlatformIDs", "SIGSEGV")
    assert str(caught.value).startswith(
        "the OpenCL driver crashed in clGetPlatformIDs (SIGSEGV) in a child process"
    )


def test_the_crash_names_the_call_it_came_in(libraries, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_OPENCL_LIBRARY", libraries["one_platform"])
    with pytest.raises(DriverCrashError) as caught:
        probe_isolated(all_devices=True)
    assert (caught.value.stage, caught.value.signal) == ("clGetDeviceIDs (platform 0)", "SIGABRT")


def test_a_hung_driver_is_killed_at_the_timeout(libraries, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_OPENCL_LIBRARY", libraries["hang"])
    with pytest.raises(DriverTimeoutError) as caught:
        probe_isolated(timeout=5)
    assert (caught.value.stage, caught.value.timeout) == ("clGetPlatformIDs", 5)


def test_no_platform_in_the_child_is_the_probe_s_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path / "none"))
    monkeypatch.setenv("QCOM_EXT_OPENCL_LIBRARY", cl._cl.__file__)
    with pytest.raises(OpenCLUnavailable, match="no OpenCL platform"):
        probe_isolated()


def test_a_bad_device_in_the_child_is_the_config_error(device_caps):
    with pytest.raises(ConfigError, match=r"--device 'no-such' names no device.*"):
        probe_isolated("no-such")


def test_selftest_isolated_probes_in_a_child_first(device_caps, libraries, monkeypatch):
    from qcom_ext.tools.selftest import run_selftest

    report = run_selftest(device_caps.label, only=["bitreverse"], isolated=True)
    assert report.device.label == device_caps.label
    monkeypatch.setenv("QCOM_EXT_OPENCL_LIBRARY", libraries["segfault"])
    with pytest.raises(DriverCrashError, match="clGetPlatformIDs"):
        run_selftest(device_caps.label, only=["bitreverse"], isolated=True)


# ---- the child-process mechanism -----------------------------------------------------


def test_garbage_on_the_report_pipe_is_an_error():
    noisy = [sys.executable, "-c", "print('hello from a driver')"]
    with pytest.raises(QcomExtError, match="hello from a driver"):
        _isolation.run_child(noisy, {}, timeout=30)


def test_an_exit_without_a_result_is_a_crash_with_its_status():
    run = _isolation.run_child([sys.executable, "-c", "import os; os._exit(3)"], {}, timeout=30)
    with pytest.raises(DriverCrashError, match=r"starting the child process \(exit status 3\)"):
        run.raise_failure()
