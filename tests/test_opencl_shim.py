"""The fake vendor drivers of tests/fakes/opencl_shim, in the Snapdragon layouts they
simulate: Android's non-ICD libOpenCL.so under Termux (with and without the
``LD_LIBRARY_PATH`` fix), a split driver, a Qualcomm Linux board with adrenocl and rusticl
ICDs. Each check runs in a child process started with ``-I`` (no import from the current
directory, no inherited ``PYTHON*`` variables) and an environment with no OpenCL variable
of this process, the ones each layout needs set explicitly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.opencl_shim import (
    PREAMBLE,
    ShimSpec,
    build_shim,
    clean_environment,
    needs_oclgrind,
    needs_shim,
    ocl_icd_copy,
    source_built_pyopencl,
)

pytestmark = needs_shim

QUALCOMM_PLATFORM = "QUALCOMM Snapdragon(TM)"
# A child's report: the platforms it sees and the OpenCL libraries mapped into it.
_PLATFORMS = """
import json
import pyopencl as cl
try:
    platforms = cl.get_platforms()
    error = None
except cl.Error as exc:
    platforms, error = [], str(exc)
with open("/proc/self/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if "libOpenCL" in line})
print(json.dumps({
    "pyopencl": cl.__file__,
    "error": error,
    "mapped": mapped,
    "platforms": [
        {"name": p.name, "vendor": p.vendor,
         "devices": [[d.name, d.version, d.driver_version, d.vendor_id]
                     for d in p.get_devices()]}
        for p in platforms
    ],
}))
"""


def run_child(
    code: str,
    tmp: Path,
    *,
    paths: tuple[Path, ...] = (),
    args: tuple[str | Path, ...] = (),
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python with ``paths`` first on its import path, ``args``
    as ``sys.argv[2:]`` and ``env`` on top of this process's environment less its
    OpenCL steering."""
    base = clean_environment()
    path = os.pathsep.join(str(p) for p in paths)
    child_env = {
        **base,
        "PYTHONPATH": path,  # for the grandchildren qcom_ext may start
        "QCOM_EXT_CACHE_DIR": str(tmp / "cache"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-I", "-c", PREAMBLE + code, path, *map(str, args)],
        env=child_env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def qualcomm_shim(directory: Path, *, icd: bool, filename: str = "libOpenCL.so") -> Path:
    return build_shim(directory, ShimSpec(filename, filename, "qualcomm", icd))


@pytest.mark.parametrize("icd", [False, True], ids=["android", "icd"])
def test_shim_loaded_by_path_looks_like_qualcomm(tmp_path, icd):
    """Loaded by path, the shim is a working OpenCL library with one Qualcomm platform
    (backed by pocl, whatever the caller's OCL_ICD_VENDORS, which it leaves as it was);
    only the ICD variant exports and answers clIcdGetPlatformIDsKHR."""
    shim = qualcomm_shim(tmp_path / "lib", icd=icd)
    code = """
import ctypes, json
lib = ctypes.CDLL(sys.argv[2])
count = ctypes.c_uint()
status = lib.clGetPlatformIDs(0, None, ctypes.byref(count))
platforms = (ctypes.c_void_p * max(count.value, 1))()
lib.clGetPlatformIDs(count.value, platforms, None)
name = ctypes.create_string_buffer(256)
lib.clGetPlatformInfo(ctypes.c_void_p(platforms[0]), 0x0902, 256, name, None)
lib.clGetExtensionFunctionAddress.restype = ctypes.c_void_p
lib.clGetExtensionFunctionAddressForPlatform.restype = ctypes.c_void_p
key = b"clIcdGetPlatformIDsKHR"
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
print(json.dumps({
    "environment": {k: libc.getenv(k.encode()) and libc.getenv(k.encode()).decode()
                    for k in ("OCL_ICD_VENDORS", "OCL_ICD_FILENAMES")},
    "status": status, "count": count.value, "name": name.value.decode(),
    "exported": hasattr(lib, "clIcdGetPlatformIDsKHR"),
    "address": bool(lib.clGetExtensionFunctionAddress(key)),
    "for_platform": bool(lib.clGetExtensionFunctionAddressForPlatform(
        ctypes.c_void_p(platforms[0]), key)),
}))
"""
    callers = str(tmp_path / "callers-vendors")
    got = report(run_child(code, tmp_path, args=(shim,), OCL_ICD_VENDORS=callers))
    assert (got["status"], got["count"], got["name"]) == (0, 1, QUALCOMM_PLATFORM)
    # The private loader's OCL_ICD_VENDORS was set for its initialisation only.
    assert got["environment"] == {"OCL_ICD_VENDORS": callers, "OCL_ICD_FILENAMES": None}
    assert got["exported"] is icd
    assert got["address"] is icd and got["for_platform"] is icd


@pytest.fixture(scope="module")
def termux(tmp_path_factory) -> Path:
    """A Termux install on a phone: ``prefix/lib/libOpenCL.so`` (ocl-icd), an empty
    ``prefix/etc/OpenCL/vendors``, ``vendor/lib64/libOpenCL.so`` (Qualcomm's non-ICD
    driver) and ``site/pyopencl`` built from source against ocl-icd."""
    root = tmp_path_factory.mktemp("termux")
    ocl_icd_copy(root / "prefix/lib")
    (root / "prefix/etc/OpenCL/vendors").mkdir(parents=True)
    qualcomm_shim(root / "vendor/lib64", icd=False)
    source_built_pyopencl(root / "site")
    return root


@pytest.mark.parametrize("icd_file", [False, True], ids=["no-icd-file", "adreno-icd-file"])
def test_termux_without_the_fix_sees_no_platform(termux, tmp_path, icd_file):
    """Through Termux's ocl-icd, pyopencl built from source sees no platform, even with
    a hand-made adreno.icd naming the vendor library: ocl-icd loads it (it is mapped)
    and drops it, since it is no ICD."""
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    if icd_file:
        (vendors / "adreno.icd").write_text(f"{termux / 'vendor/lib64/libOpenCL.so'}\n")
    got = report(
        run_child(
            _PLATFORMS,
            tmp_path,
            paths=(termux / "site",),
            LD_LIBRARY_PATH=str(termux / "prefix/lib"),
            OCL_ICD_VENDORS=str(vendors),
        )
    )
    assert got["pyopencl"].startswith(str(termux / "site"))
    assert got["platforms"] == [] and got["error"]
    mapped = {str(termux / "prefix/lib/libOpenCL.so")}
    if icd_file:
        mapped.add(str(termux / "vendor/lib64/libOpenCL.so"))
    assert set(got["mapped"]) >= mapped, got["mapped"]


def termux_fix_env(termux: Path) -> dict[str, str]:
    """The recipe users report: the vendor directory first on ``LD_LIBRARY_PATH``."""
    return {
        "LD_LIBRARY_PATH": f"{termux / 'vendor/lib64'}{os.pathsep}{termux / 'prefix/lib'}",
        "OCL_ICD_VENDORS": str(termux / "prefix/etc/OpenCL/vendors"),
    }


def test_termux_with_the_fix_reaches_qualcomm(termux, tmp_path):
    """With ``LD_LIBRARY_PATH=vendor/lib64:prefix/lib`` pyopencl's ``libOpenCL.so`` is
    the vendor library: the Qualcomm platform, and qcom_ext's probe says so."""
    code = _PLATFORMS.replace("print(json.dumps({", "caps = __import__('qcom_ext').probe()\n"
                              "print(json.dumps({'driver': caps.driver, "
                              "'model': caps.adreno_model,", 1)  # fmt: skip
    got = report(run_child(code, tmp_path, paths=(termux / "site",), **termux_fix_env(termux)))
    assert [p["name"] for p in got["platforms"]] == [QUALCOMM_PLATFORM]
    (device,) = got["platforms"][0]["devices"]
    assert device[:2] == ["QUALCOMM Adreno(TM) 740", "OpenCL 3.0 Adreno(TM) 740"]
    assert device[3] == 0x5143
    assert got["mapped"] == [str(termux / "vendor/lib64/libOpenCL.so")]
    assert (got["driver"], got["model"]) == ("qualcomm", "740")


@pytest.mark.parametrize("on_path", [True, False], ids=["found", "not-found"])
def test_split_driver_needs_its_directory_on_the_library_path(tmp_path, on_path):
    """``libOpenCL.so`` opening ``libOpenCL_adreno.so`` by bare name works only where
    that directory is on ``LD_LIBRARY_PATH``."""
    lib64 = tmp_path / "vendor/lib64"
    spec = ShimSpec("libOpenCL.so", "libOpenCL.so", "none", False, "library:libOpenCL_adreno.so")
    front = build_shim(lib64, spec)
    qualcomm_shim(lib64, icd=False, filename="libOpenCL_adreno.so")
    code = """
import ctypes, json
lib = ctypes.CDLL(sys.argv[2])
count = ctypes.c_uint()
status = lib.clGetPlatformIDs(0, None, ctypes.byref(count))
name = ctypes.create_string_buffer(256)
if count.value:
    platforms = (ctypes.c_void_p * count.value)()
    lib.clGetPlatformIDs(count.value, platforms, None)
    lib.clGetPlatformInfo(ctypes.c_void_p(platforms[0]), 0x0902, 256, name, None)
print(json.dumps({"status": status, "count": count.value, "name": name.value.decode()}))
"""
    env = {"LD_LIBRARY_PATH": str(lib64)} if on_path else {}
    done = run_child(code, tmp_path, args=(front,), **env)
    got = report(done)
    if on_path:
        assert got == {"status": 0, "count": 1, "name": QUALCOMM_PLATFORM}
    else:
        assert got == {"status": -1001, "count": 0, "name": ""}  # CL_PLATFORM_NOT_FOUND_KHR
        assert "libOpenCL_adreno.so" in done.stderr


_RUN_KERNEL = """
import numpy as np
results = {}
for platform in cl.get_platforms():
    ctx = cl.Context(platform.get_devices())
    queue = cl.CommandQueue(ctx)
    data = np.arange(16, dtype=np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
    program = cl.Program(ctx, "kernel void inc(global int *a) { a[get_global_id(0)] += 1; }")
    program.build().inc(queue, data.shape, None, buf)
    cl.enqueue_copy(queue, data, buf)
    results[platform.name] = data.tolist()
"""


@needs_oclgrind
def test_qualcomm_linux_board_lists_both_icds_with_their_looks(tmp_path):
    """A Qualcomm Linux board: adrenocl.icd (Qualcomm's ICD) and rusticl.icd. The wheel's
    pyopencl (its own bundled ocl-icd) lists both platforms with their looks, which the
    objects' dispatch tables give through the outer loader, and runs a kernel on each."""
    lib = tmp_path / "usr/lib"
    adrenocl = build_shim(lib, ShimSpec("libadrenocl.so", "libadrenocl.so", "qualcomm", True))
    rusticl = build_shim(
        lib,
        ShimSpec("libRusticlOpenCL.so.1", "libRusticlOpenCL.so.1", "rusticl", True, "oclgrind"),
    )
    vendors = tmp_path / "etc/OpenCL/vendors"
    vendors.mkdir(parents=True)
    (vendors / "adrenocl.icd").write_text(f"{adrenocl}\n")
    (vendors / "rusticl.icd").write_text(f"{rusticl}\n")
    code = _PLATFORMS.replace(
        "print(json.dumps({", _RUN_KERNEL + "print(json.dumps({'ran': results,", 1
    )
    got = report(run_child(code, tmp_path, OCL_ICD_VENDORS=str(vendors)))
    assert "/.libs/" in got["mapped"][0], got["mapped"]  # the wheel's own loader
    looks = {p["name"]: (p["vendor"], p["devices"]) for p in got["platforms"]}
    # The wheel's loader also reads the pocl.icd it bundles (its own pocl, in .libs).
    assert sorted(looks) == ["Portable Computing Language", QUALCOMM_PLATFORM, "rusticl"]
    assert looks[QUALCOMM_PLATFORM][0] == "QUALCOMM"
    assert looks[QUALCOMM_PLATFORM][1][0][:2] == [
        "QUALCOMM Adreno(TM) 740",
        "OpenCL 3.0 Adreno(TM) 740",
    ]
    assert looks["rusticl"][0] == "Mesa/X.org"
    assert looks["rusticl"][1] == [["FD643", "OpenCL 1.2 ", "25.0.7", 0x5143]]
    assert got["ran"] == {name: list(range(1, 17)) for name in looks}


def test_missing_tools_names_what_is_missing(monkeypatch):
    import fakes.opencl_shim as shim

    real = shim.shutil.which
    monkeypatch.setattr(shim.shutil, "which", lambda t: None if t == "patchelf" else real(t))
    assert shim.missing_tools() == "opencl shim needs: patchelf"
    monkeypatch.setitem(shim.BACKENDS, "oclgrind", Path("/nonexistent/liboclgrind-rt-icd.so"))
    assert "oclgrind (/nonexistent/" in (shim.missing_tools(("oclgrind",)) or "")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("filename", "lib/libOpenCL.so"),
        ("soname", ""),
        ("look", "adreno"),
        ("backend", "rocm"),
        ("backend", "library:/vendor/lib64/libOpenCL_adreno.so"),
    ],
)
def test_a_bad_spec_is_a_value_error_naming_it(field, value):
    fields = {"filename": "libOpenCL.so", "soname": "libOpenCL.so", "look": "none", "icd": False}
    with pytest.raises(ValueError, match=f"ShimSpec.{field} {value!r}"):
        ShimSpec(**{**fields, field: value})
