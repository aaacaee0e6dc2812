"""What an OpenCL library is, from its ELF dynamic section (qcom_ext/device/doctor/elf.py):
real libraries of this machine, and hostile files that must give facts, not exceptions."""

from __future__ import annotations

import glob
import shutil
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qcom_ext.device.doctor.elf import host_machine, read_elf

OCL_ICD = "/usr/lib/x86_64-linux-gnu/libOpenCL.so.1"
POCL = "/usr/lib/x86_64-linux-gnu/libpocl.so.2"
OCLGRIND_RT = "/usr/lib/oclgrind/liboclgrind-rt.so"


def need(path):
    if not glob.glob(path):
        pytest.skip(f"{path} is not installed (Debian's ocl-icd-libopencl1 / pocl / oclgrind)")
    return path


def test_ocl_icd_is_a_loader_with_its_vendors_directory():
    facts = read_elf(need(OCL_ICD))
    assert facts.kind == "icd-loader" and facts.soname == "libOpenCL.so.1"
    assert facts.vendors_dirs == ("/etc/OpenCL/vendors",)
    assert facts.runs_here and facts.machine == host_machine()


def test_pocl_is_an_icd_through_its_extension_lookup():
    """Debian's pocl exports only clGetExtensionFunctionAddress (and no platform list)."""
    facts = read_elf(need(POCL))
    assert facts.kind == "icd" and facts.is_icd and "clGetPlatformIDs" not in facts.defines


def test_oclgrind_runtime_exports_the_api_and_the_icd_entry():
    facts = read_elf(need(OCLGRIND_RT))
    assert facts.kind == "icd" and {"clGetPlatformIDs", "clIcdGetPlatformIDsKHR"} <= facts.defines


def test_pyopencl_module_names_its_loader():
    import pyopencl._cl as cl

    facts = read_elf(cl.__file__)
    assert facts.kind == "other"
    assert any(n.startswith("libOpenCL") for n in facts.needed)


@pytest.mark.parametrize(
    "data",
    [b"", b"\x7fELF", b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\xff" * 48, b"#!/bin/sh\n"],
    ids=["empty", "magic-only", "garbage-header", "script"],
)
def test_hostile_files_give_an_error_not_an_exception(tmp_path, data):
    path = tmp_path / "libOpenCL.so"
    path.write_bytes(data)
    facts = read_elf(path, "/vendor/lib64/libOpenCL.so")
    assert (
        facts.kind == "unreadable" and facts.error and facts.path == "/vendor/lib64/libOpenCL.so"
    )


def test_a_truncated_library_gives_an_error(tmp_path):
    source = need(OCL_ICD)
    with open(source, "rb") as stream:
        data = stream.read()
    for cut in (64, 1024, len(data) // 2, len(data) - 100):
        (tmp_path / "cut.so").write_bytes(data[:cut])
        facts = read_elf(tmp_path / "cut.so")
        assert facts.kind == "unreadable" and facts.error, cut


@settings(max_examples=60, deadline=None)
@given(tail=st.binary(max_size=400))
def test_any_bytes_after_an_elf_header_never_raise(tmp_path_factory, tail):
    path = tmp_path_factory.mktemp("elf") / "lib.so"
    path.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 9 + tail)
    facts = read_elf(path)
    assert facts.kind in ("unreadable", "other")


def test_the_interpreter_is_not_opencl():
    assert read_elf(shutil.which("python3") or sys.executable).kind == "other"
