"""The doctor's rules (qcom_ext/device/doctor/verdict.py) on facts alone: each verdict
code, its fix as data and as shell lines. The same verdicts on simulated device layouts
with real libraries: tests/test_doctor_layouts.py."""

from __future__ import annotations

import os

import pytest

from qcom_ext.device.doctor.elf import ElfFacts
from qcom_ext.device.doctor.facts import DoctorFacts, LibraryFacts, Platform, PythonSide
from qcom_ext.device.doctor.libraries import IcdEntry, IcdSource
from qcom_ext.device.doctor.verdict import EnvSetting, Fix, decide
from qcom_ext.device.drm import DrmFacts, DrmGpu
from qcom_ext.device.kernel_gpu import KernelGpu
from qcom_ext.device.sysroot import Sysroot

PREFIX = "/data/data/com.termux/files/usr"
KGSL = KernelGpu(kgsl_device=True)
DRM = KernelGpu(
    drm=DrmFacts((DrmGpu("/sys/class/drm/card0/device", "msm", ("qcom,adreno-43050a01",)),))
)
NO_GPU = KernelGpu()
QUALCOMM = Platform("QUALCOMM Snapdragon(TM)", "QUALCOMM", "OpenCL 3.0 QUALCOMM build", "qualcomm")
RUSTICL = Platform("rusticl", "Mesa/X.org", "OpenCL 3.0", "rusticl", ("FD643",))
POCL = Platform("Portable Computing Language", "The pocl project", "OpenCL 3.0 PoCL", "pocl")
ON12 = Platform("OpenCLOn12", "Microsoft", "OpenCL 3.0 D3D12 Implementation", "openclon12")


def elf(path, kind, soname=None, vendors=()):
    defines = {
        "vendor-library": {"clGetPlatformIDs", "clGetExtensionFunctionAddress"},
        "icd": {"clIcdGetPlatformIDsKHR", "clGetExtensionFunctionAddress"},
        "icd-loader": {"clGetPlatformIDs", "clGetExtensionFunctionAddress"},
    }[kind]
    return ElfFacts(
        path, "EM_AARCH64", soname, (), frozenset(defines), kind == "icd-loader", tuple(vendors)
    )


def termux_loader():
    path = f"{PREFIX}/lib/libOpenCL.so"
    return path, elf(path, "icd-loader", "libOpenCL.so", (f"{PREFIX}/etc/OpenCL/vendors",))


def module(needed):
    return ElfFacts("/site/pyopencl/_cl.so", "EM_AARCH64", None, (needed, "libc.so"))


def python(platforms=(), needed="libOpenCL.so", library=None, library_facts=None, **kw):
    if library is None:
        library, library_facts = termux_loader()
    return PythonSide(
        pyopencl="2026.1",
        module=module(needed),
        library=library,
        library_facts=library_facts,
        platforms=tuple(platforms),
        binding=library,
        binding_origin="pyopencl's ICD loader",
        **kw,
    )


def facts(python_side, kernel=KGSL, libraries=(), sources=(), system="termux", prefix=PREFIX):
    return DoctorFacts(
        "/", system, prefix, {}, kernel, python_side, tuple(libraries), tuple(sources)
    )


def vendor(path="/vendor/lib64/libOpenCL.so", platforms=(QUALCOMM,), loaded=True):
    return LibraryFacts(
        path, elf(path, "vendor-library", "libOpenCL.so"), loaded, tuple(platforms)
    )


# ---- Android / Termux ---------------------------------------------------------------------


def test_termux_vendor_library_is_not_an_icd_fix_is_ld_library_path():
    verdict = decide(facts(python(), libraries=[vendor()]))
    assert (verdict.status, verdict.code) == ("fix", "vendor-not-icd")
    assert "/vendor/lib64/libOpenCL.so is not an ICD" in verdict.summary
    assert verdict.fix.env == (
        EnvSetting("LD_LIBRARY_PATH", ("/vendor/lib64", f"{PREFIX}/lib")),
    )  # the order users report working: the vendor directory first
    keep = '"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
    assert verdict.fix.exports() == [f"export LD_LIBRARY_PATH=/vendor/lib64:{PREFIX}/lib{keep}"]
    assert verdict.fix.commands == ()
    assert f"LD_LIBRARY_PATH=/vendor/lib64:{PREFIX}/lib" in verdict.line()


def test_a_hand_made_icd_file_for_the_vendor_library_is_named_as_useless():
    """The README's old recipe (an adreno.icd) cannot work: the doctor says so."""
    source = IcdSource(
        "compiled-in",
        f"{PREFIX}/etc/OpenCL/vendors",
        True,
        (
            IcdEntry(
                f"{PREFIX}/etc/OpenCL/vendors/adreno.icd",
                "/vendor/lib64/libOpenCL.so",
                "/vendor/lib64/libOpenCL.so",
            ),
        ),
    )
    verdict = decide(facts(python(), libraries=[vendor()], sources=[source]))
    assert verdict.code == "vendor-not-icd"
    assert any("adreno.icd" in n and "not an ICD" in n for n in verdict.notes)


def test_split_driver_takes_the_entry_library_and_its_directory():
    split = [
        vendor("/vendor/lib64/libOpenCL_adreno.so"),
        vendor("/vendor/lib64/libOpenCL.so"),
    ]
    verdict = decide(facts(python(), libraries=split))
    assert verdict.code == "vendor-not-icd"
    assert "/vendor/lib64/libOpenCL.so is not an ICD" in verdict.summary
    assert verdict.fix.env[0].paths[0] == "/vendor/lib64"


def test_a_loader_linked_by_another_name_gets_a_link_directory():
    """pyopencl linked with libOpenCL.so.1 (a distribution's build): the vendor directory
    holds only libOpenCL.so, so the fix makes a directory with the name it needs."""
    verdict = decide(facts(python(needed="libOpenCL.so.1"), libraries=[vendor()]))
    assert verdict.fix.commands == (
        'mkdir -p "$HOME"/.local/lib/qcom-ext-opencl',
        'ln -sf /vendor/lib64/libOpenCL.so "$HOME"/.local/lib/qcom-ext-opencl/libOpenCL.so.1',
    )
    assert verdict.fix.env[0].paths[:2] == ("~/.local/lib/qcom-ext-opencl", "/vendor/lib64")


def test_a_wheel_loader_cannot_be_replaced_by_ld_library_path():
    wheel = "/site/pyopencl/.libs/libOpenCL-5519dec5.so.1.0.0"
    side = python(
        needed="libOpenCL-5519dec5.so.1.0.0",
        library=wheel,
        library_facts=elf(wheel, "icd-loader", vendors=("/etc/OpenCL/vendors",)),
    )
    verdict = decide(facts(side, libraries=[vendor()], system="android", prefix=None))
    assert verdict.code == "wheel-loader-hides-vendor"
    assert verdict.fix.commands[0] == "pip install --force-reinstall --no-binary pyopencl pyopencl"
    assert verdict.fix.env[0].paths == ("/vendor/lib64",)  # not the wheel's own directory


def test_an_unloaded_vendor_library_still_gives_the_fix():
    """The error's one-line hint reads files only: a vendor library not loaded counts."""
    side = PythonSide(
        pyopencl="unknown",
        library=termux_loader()[0],
        library_facts=termux_loader()[1],
        checked=False,
    )
    lib = LibraryFacts(
        "/vendor/lib64/libOpenCL.so", elf("/vendor/lib64/libOpenCL.so", "vendor-library")
    )
    verdict = decide(facts(side, libraries=[lib]))
    assert verdict.code == "vendor-not-icd"
    assert "sees no platform" in verdict.summary


def test_a_phone_without_an_opencl_library():
    verdict = decide(facts(python(), libraries=[]))
    assert (verdict.status, verdict.code) == ("fix", "no-driver")
    assert "KGSL" in verdict.summary


# ---- pyopencl itself ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("system", "command"),
    [
        ("termux", "pkg install clang ocl-icd opencl-headers python-numpy"),
        ("windows", "pip install --no-binary pyopencl pyopencl"),
        ("linux", "pip install pyopencl"),
    ],
)
def test_no_pyopencl_says_how_to_get_it(system, command):
    side = PythonSide(import_error="ModuleNotFoundError: No module named 'pyopencl'")
    verdict = decide(facts(side, system=system))
    assert verdict.code == "no-pyopencl"
    assert verdict.fix.commands[0] == command
    assert "No module named 'pyopencl'" in verdict.summary


def test_a_crashing_driver_is_a_finding():
    side = PythonSide(
        crash={"outcome": "crash", "signal": "SIGSEGV", "stage": "clGetPlatformIDs (pyopencl)"}
    )
    verdict = decide(facts(side, system="windows"))
    assert (verdict.status, verdict.code) == ("problem", "driver-crash")
    assert "clGetPlatformIDs (pyopencl)" in verdict.summary and "SIGSEGV" in verdict.summary


def test_a_vendor_library_that_crashes_its_child():
    lib = LibraryFacts(
        "/vendor/lib64/libOpenCL.so",
        elf("/vendor/lib64/libOpenCL.so", "vendor-library"),
        crash={"signal": "SIGABRT", "stage": "clGetPlatformIDs"},
    )
    verdict = decide(facts(python(), libraries=[lib]))
    assert verdict.code == "driver-crash"
    assert "SIGABRT" in verdict.summary


# ---- reached ------------------------------------------------------------------------------


def test_qualcomm_reached_is_ok_and_rusticl_is_noted():
    verdict = decide(facts(python(platforms=[RUSTICL, QUALCOMM]), kernel=DRM, system="linux"))
    assert (verdict.status, verdict.code, verdict.fix) == ("ok", "ok", None)
    assert any("rusticl" in n and "Qualcomm's by default" in n for n in verdict.notes)


def test_binding_on_another_library_than_pyopencl():
    side = python(platforms=[QUALCOMM])
    side = PythonSide(
        **{
            **side.__dict__,
            "binding": "/vendor/lib64/libOpenCL.so",
            "binding_origin": "Android vendor library",
        }
    )
    verdict = decide(facts(side))
    assert verdict.code == "binding-mismatch"


def test_no_adreno_and_platforms_is_ok():
    verdict = decide(facts(python(platforms=[POCL]), kernel=NO_GPU, system="linux"))
    assert (verdict.status, verdict.code) == ("ok", "ok-no-adreno")


def test_no_adreno_and_no_platform():
    verdict = decide(facts(python(), kernel=NO_GPU, system="linux"))
    assert verdict.code == "no-platform"
    assert "qcom_ext[pocl]" in verdict.fix.commands[0]


# ---- Qualcomm Linux: an ICD ---------------------------------------------------------------

ADRENOCL = "/usr/lib/libOpenCL_adreno.so.1"


def board(sources, platforms=(RUSTICL,), adreno_platforms=(QUALCOMM,)):
    loader = "/usr/lib/aarch64-linux-gnu/libOpenCL.so.1"
    side = python(
        platforms=platforms,
        needed="libOpenCL.so.1",
        library=loader,
        library_facts=elf(loader, "icd-loader", "libOpenCL.so.1", ("/etc/OpenCL/vendors",)),
    )
    lib = LibraryFacts(ADRENOCL, elf(ADRENOCL, "icd"), True, tuple(adreno_platforms))
    return facts(side, kernel=DRM, libraries=[lib], sources=sources, system="linux", prefix=None)


def test_an_icd_in_a_directory_the_loader_does_not_read():
    sources = [
        IcdSource("OCL_ICD_VENDORS", "/opt/other", True, ()),
        IcdSource(
            "compiled-in",
            "/etc/OpenCL/vendors",
            False,
            (IcdEntry("/etc/OpenCL/vendors/adrenocl.icd", ADRENOCL, ADRENOCL),),
        ),
    ]
    verdict = decide(board(sources))
    assert verdict.code == "icd-not-read"
    assert verdict.fix.env == (
        EnvSetting("OCL_ICD_VENDORS", ("/etc/OpenCL/vendors",), keep=False),
    )
    assert verdict.fix.exports() == ["export OCL_ICD_VENDORS=/etc/OpenCL/vendors"]


def test_an_icd_registered_nowhere():
    verdict = decide(board([IcdSource("compiled-in", "/etc/OpenCL/vendors", True, ())]))
    assert verdict.code == "icd-not-registered"
    assert verdict.fix.commands == (
        f"echo {ADRENOCL} | sudo tee /etc/OpenCL/vendors/adrenocl.icd",
    )
    assert verdict.fix.env[0] == EnvSetting("OCL_ICD_VENDORS", (ADRENOCL,), keep=False)


def test_an_icd_whose_library_is_not_found():
    entry = IcdEntry("/etc/OpenCL/vendors/adrenocl.icd", "libOpenCL_adreno.so.1", None)
    verdict = decide(board([IcdSource("compiled-in", "/etc/OpenCL/vendors", True, (entry,))]))
    assert verdict.code == "icd-target-missing"
    assert verdict.fix.env[0].paths == ("/usr/lib",)


def test_an_icd_read_but_not_listed():
    entry = IcdEntry("/etc/OpenCL/vendors/adrenocl.icd", ADRENOCL, ADRENOCL)
    verdict = decide(board([IcdSource("compiled-in", "/etc/OpenCL/vendors", True, (entry,))]))
    assert (verdict.status, verdict.code) == ("problem", "icd-not-listed")


def test_adreno_under_rusticl_only_is_no_driver_with_a_note():
    verdict = decide(facts(python(platforms=[RUSTICL]), kernel=DRM, system="linux", prefix=None))
    assert verdict.code == "no-driver"
    assert "meta-qcom" in verdict.fix.text
    assert any("rusticl" in n for n in verdict.notes)
    assert "drm:" not in verdict.summary and "DRM" in verdict.summary


def test_windows_with_openclon12_only():
    """No kernel facts on Windows: OpenCLOn12's Adreno device shows the hardware."""
    on12 = Platform(*ON12.__dict__.values())
    on12 = Platform(
        on12.name, on12.vendor, on12.version, on12.driver, ("Qualcomm(R) Adreno(TM) X1-85 GPU",)
    )
    verdict = decide(facts(python(platforms=[on12]), system="windows", prefix=None, kernel=NO_GPU))
    assert verdict.code == "no-driver"
    assert "OpenCLOn12 is Microsoft's layer" in verdict.fix.text
    assert "X1-85" in verdict.summary
    assert any("openclon12" in n for n in verdict.notes)
    plain = decide(facts(python(platforms=[ON12]), system="windows", prefix=None, kernel=NO_GPU))
    assert plain.code == "ok-no-adreno"  # OpenCLOn12 over another GPU: nothing to fix


# ---- the fix as data ----------------------------------------------------------------------


def test_fix_environment_reroots_device_paths(tmp_path):
    fix = Fix("x", (EnvSetting("LD_LIBRARY_PATH", ("/vendor/lib64", "~/lib")),))
    env = fix.environment({"LD_LIBRARY_PATH": "/old"}, Sysroot(tmp_path))
    home = os.path.expanduser("~")
    assert env["LD_LIBRARY_PATH"] == f"{tmp_path}/vendor/lib64:{home}/lib:/old"
    assert fix.environment({})["LD_LIBRARY_PATH"] == f"/vendor/lib64:{home}/lib"


def test_verdict_dict_is_json_ready():
    import json

    verdict = decide(facts(python(), libraries=[vendor()]))
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["code"] == "vendor-not-icd" and data["fix"]["env"][0]["name"] == "LD_LIBRARY_PATH"


# ---- Windows: the Khronos loader's registry ------------------------------------------------


def test_windows_registry_icds(monkeypatch, tmp_path):
    """The value names of HKLM\\SOFTWARE\\Khronos\\OpenCL\\Vendors are the ICDs (data 0:
    enabled); read through winreg, here a stand-in with the same calls."""
    import sys
    import types

    from qcom_ext.device.doctor.libraries import WINDOWS_VENDORS_KEY, windows_icds

    dll = tmp_path / "qcom_adreno_cl.dll"
    dll.write_bytes(b"MZ")
    values = [(str(dll), 0, 4), ("C:\\Windows\\System32\\OpenCLOn12.dll", 0, 4), ("off.dll", 1, 4)]

    class Key:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def open_key(root, name):
        assert (root, name) == ("HKLM", WINDOWS_VENDORS_KEY)
        return Key()

    def enum_value(key, index):
        if index >= len(values):
            raise OSError("no more data")
        return values[index]

    fake = types.SimpleNamespace(HKEY_LOCAL_MACHINE="HKLM", OpenKey=open_key, EnumValue=enum_value)
    monkeypatch.setitem(sys.modules, "winreg", fake)
    source = windows_icds()
    assert source.where == "registry" and source.read
    assert [(e.library, e.found) for e in source.entries] == [
        (str(dll), str(dll)),
        ("C:\\Windows\\System32\\OpenCLOn12.dll", None),
    ]


def test_exports_are_safe_to_eval(tmp_path):
    """``eval "$(qcom-ext env)"`` runs the lines: a path with spaces, quotes or a command
    substitution is a path, nothing runs, and the current value is kept after it."""
    import shutil
    import subprocess

    if shutil.which("sh") is None:
        pytest.skip("no POSIX shell")
    odd = f"{tmp_path}/a b'c\"$(touch {tmp_path}/pwned)`touch {tmp_path}/pwned2`"
    fix = Fix("x", (EnvSetting("LD_LIBRARY_PATH", (odd, "~/lib")),))
    script = "\n".join(fix.exports()) + '\nprintf %s "$LD_LIBRARY_PATH"'
    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/someone", "LD_LIBRARY_PATH": "/old"}
    done = subprocess.run(["sh", "-c", f"eval \"$(cat <<'EOF'\n{script}\nEOF\n)\""],
                          capture_output=True, text=True, env=env, check=True)  # fmt: skip
    assert done.stdout == f"{odd}:/home/someone/lib:/old"
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


# ---- hostile ICD files and options --------------------------------------------------------


def test_hostile_icd_files_are_misses(tmp_path):
    """An ICD directory is input from whoever could write it: a FIFO (would block), a
    binary or oversized file, a directory named .icd, a link loop; none is an entry and
    nothing raises. A sane file next to them still counts."""
    from qcom_ext.device.doctor.libraries import icd_sources

    vendors = tmp_path / "etc/OpenCL/vendors"
    vendors.mkdir(parents=True)
    os.mkfifo(vendors / "fifo.icd")
    (vendors / "binary.icd").write_bytes(b"\x00\xff\x1b[2J")
    (vendors / "huge.icd").write_text("x" * 5000)
    (vendors / "dir.icd").mkdir()
    (vendors / "loop.icd").symlink_to("/etc/OpenCL/vendors/loop.icd")
    (vendors / "ok.icd").write_text("/usr/lib/libOpenCL_adreno.so\n")
    (tmp_path / "usr/lib").mkdir(parents=True)
    (tmp_path / "usr/lib/libOpenCL_adreno.so").write_bytes(b"\x7fELF")
    (source,) = [s for s in icd_sources(None, Sysroot(tmp_path), {}, "linux") if s.read]
    assert [(e.icd_file, e.found) for e in source.entries] == [
        ("/etc/OpenCL/vendors/ok.icd", "/usr/lib/libOpenCL_adreno.so")
    ]


def test_a_bad_timeout_is_a_typed_error():
    from qcom_ext.device.doctor import doctor
    from qcom_ext.errors import ConfigError

    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ConfigError, match="timeout must be a positive number"):
            doctor(timeout=bad)
