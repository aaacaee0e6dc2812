"""``qcom-ext doctor`` on simulated Snapdragon layouts with real libraries.

Each layout is a prepared tree (``QCOM_EXT_SYSROOT``): a Termux phone (Android's Adreno
``libOpenCL.so``, not an ICD, next to Termux's ocl-icd), a phone whose driver is split in
two libraries, and Qualcomm Linux boards (KGSL or DRM, the vendor's ``adrenocl.icd`` next
to Mesa's rusticl). The "Qualcomm driver" is a real OpenCL implementation (Debian's pocl,
Oclgrind) behind a library built with ``cc`` to look like Qualcomm's
(``tests/fakes/opencl_shim``); pyopencl is the installed one, or a copy linked with
``libOpenCL.so`` by name as a source build on Termux is.

Every command runs in a child Python started with ``-I`` and an environment without this
process's OpenCL variables: first as the layout leaves it (the doctor's verdict, and no
Qualcomm platform), then with the environment the doctor's own fix prints (the platform
appears, ``qcom-ext probe`` names the Adreno, ``qcom-ext selftest`` passes through it).
Paths in the host environment stand for the device's: ``OCL_ICD_VENDORS`` for a loader's
compiled-in directory, ``LD_LIBRARY_PATH`` for the device's default library directories.
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

from qcom_ext.device.doctor.verdict import EnvSetting, Fix
from qcom_ext.device.sysroot import Sysroot

pytestmark = needs_shim

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "/data/data/com.termux/files/usr"
QUALCOMM = "QUALCOMM Snapdragon(TM)"
_CLI = "from qcom_ext.tools.cli import main\nsys.exit(main(sys.argv[2:]))\n"


def write(root: Path, path: str, data: str | bytes = "") -> Path:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data if isinstance(data, bytes) else data.encode())
    return target


def qcom_ext(
    args: list[str], layout: dict[str, Any], env: dict[str, str], tmp: Path
) -> subprocess.CompletedProcess[str]:
    """``qcom-ext ARGS`` in a child Python: this checkout (after the layout's pyopencl, if
    any) first on its path, ``env`` on top of this process's environment less its
    OpenCL steering."""
    paths = os.pathsep.join(str(p) for p in (*layout["paths"], ROOT))
    base = clean_environment()
    cache = tmp / "cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    child_env = {**base, "PYTHONPATH": paths, "QCOM_EXT_CACHE_DIR": str(cache), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-I", "-c", PREAMBLE + _CLI, paths, *args],
        env={**child_env, **env},
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def doctor(layout: dict[str, Any], env: dict[str, str], tmp: Path) -> dict[str, Any]:
    done = qcom_ext(["doctor", "--json"], layout, env, tmp)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert (done.returncode == 0) == (report["verdict"]["status"] == "ok")
    return report


def fixed(layout: dict[str, Any], report: dict[str, Any]) -> dict[str, str]:
    """The layout's environment with the doctor's fix applied (device paths re-rooted)."""
    fix = report["verdict"]["fix"]
    settings = tuple(EnvSetting(s["name"], tuple(s["paths"]), s["keep"]) for s in fix["env"])
    return Fix(fix["text"], settings).environment(layout["env"], Sysroot(layout["root"]))


def platform_names(report: dict[str, Any]) -> list[str]:
    return [p["name"] for p in report["python"]["platforms"]]


# ---- Android under Termux -----------------------------------------------------------------


def termux_phone(base: Path, *, split: bool = False, icd_file: bool = False) -> dict[str, Any]:
    """Termux's ocl-icd and a pyopencl built against it; the Adreno driver in
    /vendor/lib64, whole or split (libOpenCL.so loading libOpenCL_adreno.so by name)."""
    root = base / "phone"
    vendor = root / "vendor/lib64"
    if split:
        build_shim(
            vendor, ShimSpec("libOpenCL_adreno.so", "libOpenCL_adreno.so", "qualcomm", False)
        )
        spec = ShimSpec(
            "libOpenCL.so", "libOpenCL.so", "none", False, "library:libOpenCL_adreno.so"
        )
        build_shim(vendor, spec)
    else:
        build_shim(vendor, ShimSpec("libOpenCL.so", "libOpenCL.so", "qualcomm", False))
    ocl_icd_copy(root / PREFIX.lstrip("/") / "lib")
    vendors = root / PREFIX.lstrip("/") / "etc/OpenCL/vendors"
    vendors.mkdir(parents=True)
    if icd_file:  # the recipe the README used to give: it cannot work
        (vendors / "adreno.icd").write_text("/vendor/lib64/libOpenCL.so\n")
    write(root, "/dev/kgsl-3d0")
    write(root, "/sys/class/kgsl/kgsl-3d0/gpu_model", "Adreno740v2\n")
    write(root, "/system/build.prop", "ro.product.model=simulated\n")
    env = {
        "QCOM_EXT_SYSROOT": str(root),
        "PREFIX": PREFIX,
        "LD_LIBRARY_PATH": str(root / PREFIX.lstrip("/") / "lib"),
        "OCL_ICD_VENDORS": str(vendors),  # Termux's compiled-in $PREFIX/etc/OpenCL/vendors
    }
    return {"root": root, "env": env, "paths": (source_built_pyopencl(base / "site"),)}


@pytest.fixture(scope="module")
def termux(tmp_path_factory) -> dict[str, Any]:
    return termux_phone(tmp_path_factory.mktemp("termux"))


def test_termux_verdict_is_ld_library_path(termux, tmp_path):
    report = doctor(termux, termux["env"], tmp_path)
    verdict = report["verdict"]
    assert (report["system"], verdict["code"]) == ("termux", "vendor-not-icd"), verdict
    assert platform_names(report) == []  # Termux's ocl-icd alone sees nothing
    assert report["python"]["library"] == f"{PREFIX}/lib/libOpenCL.so"
    assert report["python"]["links"] == "libOpenCL.so"
    (vendor,) = [lib for lib in report["libraries"] if lib["path"] == "/vendor/lib64/libOpenCL.so"]
    assert vendor["elf"]["kind"] == "vendor-library" and not vendor["is_icd"]
    assert [p["name"] for p in vendor["platforms"]] == [QUALCOMM]  # loaded in a child
    assert verdict["fix"]["env"] == [
        {"name": "LD_LIBRARY_PATH", "paths": ["/vendor/lib64", f"{PREFIX}/lib"], "keep": True}
    ]
    assert report["kernel"]["model"] == {"model": "740", "source": "kgsl:gpu_model"}


def test_termux_doctor_table_fits_80_columns(termux, tmp_path):
    done = qcom_ext(["doctor"], termux, {**termux["env"], "COLUMNS": "80"}, tmp_path)
    assert done.returncode == 1, done.stderr  # not ok: there is a fix to apply
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    assert lines[1].split() == ["verdict", "fix", "(vendor-not-icd)"]
    flat = " ".join(done.stdout.split())
    bare = "".join(done.stdout.split())  # rich folds long values anywhere
    keep = '"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
    assert f"shexportLD_LIBRARY_PATH=/vendor/lib64:{PREFIX}/lib{keep}" in bare
    assert "library /vendor/lib64/libOpenCL.so (vendor-library" in flat
    assert "not found" not in flat and " note " not in flat  # nothing else is wrong


def test_termux_env_prints_the_export(termux, tmp_path):
    done = qcom_ext(["env"], termux, termux["env"], tmp_path)
    assert done.returncode == 0, done.stderr
    keep = '"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
    assert f"export LD_LIBRARY_PATH=/vendor/lib64:{PREFIX}/lib{keep}" in done.stdout


def test_termux_with_the_fix_reaches_qualcomm(termux, tmp_path):
    env = fixed(termux, doctor(termux, termux["env"], tmp_path))
    report = doctor(termux, env, tmp_path)
    assert report["verdict"]["code"] == "ok", report["verdict"]
    assert platform_names(report) == [QUALCOMM]
    assert report["python"]["library"] == "/vendor/lib64/libOpenCL.so"
    done = qcom_ext(["probe", "--json"], termux, env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout)
    assert probe["device"]["driver"] == "qualcomm" and probe["adreno"]["model"] == "740"
    assert probe["label"] == "adreno-740-cpu"  # the backend is pocl's CPU device


def test_no_platform_error_names_the_doctors_fix(termux, tmp_path):
    done = qcom_ext(["probe"], termux, termux["env"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no OpenCL platform" in done.stderr and "Traceback" not in done.stderr
    assert "qcom-ext doctor: " in done.stderr
    assert f"LD_LIBRARY_PATH=/vendor/lib64:{PREFIX}/lib" in done.stderr, done.stderr


def test_the_old_icd_file_recipe_is_named_useless(tmp_path):
    phone = termux_phone(tmp_path, icd_file=True)
    report = doctor(phone, phone["env"], tmp_path)
    assert report["verdict"]["code"] == "vendor-not-icd"
    assert platform_names(report) == []  # ocl-icd skips the non-ICD library it names
    assert any("adreno.icd" in n and "not an ICD" in n for n in report["verdict"]["notes"])


def test_split_driver(tmp_path):
    phone = termux_phone(tmp_path, split=True)
    report = doctor(phone, phone["env"], tmp_path)
    assert report["verdict"]["code"] == "vendor-not-icd"
    assert "/vendor/lib64/libOpenCL.so is not an ICD" in report["verdict"]["summary"]
    paths = {lib["path"]: lib for lib in report["libraries"]}
    assert {"/vendor/lib64/libOpenCL.so", "/vendor/lib64/libOpenCL_adreno.so"} <= set(paths)
    assert [p["name"] for p in paths["/vendor/lib64/libOpenCL.so"]["platforms"]] == [QUALCOMM]
    report = doctor(phone, fixed(phone, report), tmp_path)
    assert report["verdict"]["code"] == "ok" and platform_names(report) == [QUALCOMM]


@pytest.mark.parametrize(("kind", "outcome"), [("segfault", "SIGSEGV"), ("hang", "timeout")])
def test_a_crashing_or_hanging_vendor_driver_is_a_finding(tmp_path, kind, outcome):
    """The vendor library is loaded in a child: its crash (or hang, past --timeout) is
    the verdict, and the doctor itself finishes."""
    from _crashing_opencl import build_libraries

    phone = termux_phone(tmp_path)
    built = build_libraries(tmp_path)
    target = phone["root"] / "vendor/lib64/libOpenCL.so"
    target.write_bytes(Path(built[kind]).read_bytes())
    done = qcom_ext(["doctor", "--json", "--timeout", "10"], phone, phone["env"], tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    verdict = json.loads(done.stdout)["verdict"]
    assert (verdict["status"], verdict["code"]) == ("problem", "driver-crash"), verdict
    assert "/vendor/lib64/libOpenCL.so" in verdict["summary"]
    assert "clGetPlatformIDs" in verdict["summary"]
    assert (outcome if kind == "segfault" else "killed at the timeout") in verdict["summary"]


SELFTEST_PARTS = 3  # the whole selftest took 52 CPU-s here: a third of it a test


@pytest.mark.slow
@pytest.mark.parametrize("part", range(SELFTEST_PARTS))
def test_selftest_passes_through_the_fix(termux, tmp_path, part):
    """Every computation on the device qcom_ext takes for Qualcomm's driver (Adreno's
    quirks applied, every cl_qcom_* path a fallback on pocl) agrees with numpy: every
    third extension of the registry a test, the parts together all of it."""
    from qcom_ext import REGISTRY

    names = list(REGISTRY)[part::SELFTEST_PARTS]
    env = fixed(termux, doctor(termux, termux["env"], tmp_path))
    done = qcom_ext(["selftest", "--json", "--only", ",".join(names)], termux, env, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert [e["extension"] for e in report["extensions"]] == names
    assert report["ok"] and report["counts"]["fail"] == 0 and report["counts"]["pass"] > 0
    device = report["device"]
    assert (device["label"], device["platform"], device["adreno_model"]) == (
        "adreno-740-cpu",
        QUALCOMM,
        "740",
    )
    assert "QUALCOMM" in device["driver"]  # the driver version string
    assert "adreno-mad24" in {q["id"] for q in report["quirks"]}  # Adreno's build flags ran


# ---- Qualcomm Linux boards ----------------------------------------------------------------


def linux_board(base: Path, *, drm: bool, read: str = "/etc/OpenCL/vendors") -> dict[str, Any]:
    """Qualcomm's adrenocl ICD in /etc/OpenCL/vendors, Mesa's rusticl ICD in ``read``, the
    directory pyopencl's loader reads (a conda environment's loader reads its own); the
    .icd files name their libraries without a directory; KGSL or DRM; the wheel pyopencl."""
    root = base / "board"
    adreno = ShimSpec("libOpenCL_adreno.so.1", "libOpenCL_adreno.so.1", "qualcomm", True)
    build_shim(root / "usr/lib", adreno)
    rusticl = ShimSpec(
        "libRusticlOpenCL.so.1", "libRusticlOpenCL.so.1", "rusticl", True, "oclgrind"
    )
    build_shim(root / "usr/lib", rusticl)
    write(root, "/etc/OpenCL/vendors/adrenocl.icd", "libOpenCL_adreno.so.1\n")
    write(root, f"{read}/rusticl.icd", "libRusticlOpenCL.so.1\n")
    if drm:
        compatible = b"qcom,adreno-43050a01\0qcom,adreno\0"
        write(root, "/sys/devices/platform/soc@0/3d00000.gpu/of_node/compatible", compatible)
        (root / "sys/class/drm/card0").mkdir(parents=True)
        (root / "sys/class/drm/card0/device").symlink_to("/sys/devices/platform/soc@0/3d00000.gpu")
    else:
        write(root, "/dev/kgsl-3d0")
        write(root, "/sys/class/kgsl/kgsl-3d0/gpu_model", "Adreno740v2\n")
    env = {
        "QCOM_EXT_SYSROOT": str(root),
        "LD_LIBRARY_PATH": str(root / "usr/lib"),  # the board's default library directory
        "OCL_ICD_VENDORS": str(root / read.lstrip("/")),  # the loader's compiled-in one
    }
    return {"root": root, "env": env, "paths": ()}


@needs_oclgrind
@pytest.mark.parametrize("drm", [False, True], ids=["kgsl", "drm"])
def test_board_with_rusticl_reaches_qualcomm_by_default(tmp_path, drm):
    board = linux_board(tmp_path, drm=drm)
    report = doctor(board, board["env"], tmp_path)
    assert report["verdict"]["code"] == "ok", report["verdict"]
    assert {QUALCOMM, "rusticl"} <= set(platform_names(report))
    assert any("rusticl" in n for n in report["verdict"]["notes"])
    assert ("DRM" if drm else "KGSL") in report["kernel"]["described"]
    done = qcom_ext(["probe", "--json"], board, board["env"], tmp_path)
    probe = json.loads(done.stdout)
    assert probe["platform"]["name"] == QUALCOMM and probe["device"]["driver"] == "qualcomm"


@needs_oclgrind
def test_board_icd_in_a_directory_the_loader_does_not_read(tmp_path):
    board = linux_board(tmp_path, drm=True, read="/opt/conda/etc/OpenCL/vendors")
    report = doctor(board, board["env"], tmp_path)
    verdict = report["verdict"]
    assert verdict["code"] == "icd-not-read", verdict
    assert QUALCOMM not in platform_names(report) and "rusticl" in platform_names(report)
    assert verdict["fix"]["env"] == [
        {"name": "OCL_ICD_VENDORS", "paths": ["/etc/OpenCL/vendors"], "keep": False}
    ]
    report = doctor(board, fixed(board, report), tmp_path)
    assert report["verdict"]["code"] == "ok" and QUALCOMM in platform_names(report)


@needs_oclgrind
def test_drm_board_without_qualcomms_driver(tmp_path):
    board = linux_board(tmp_path, drm=True)
    (board["root"] / "etc/OpenCL/vendors/adrenocl.icd").unlink()
    (board["root"] / "usr/lib/libOpenCL_adreno.so.1").unlink()
    report = doctor(board, board["env"], tmp_path)
    verdict = report["verdict"]
    assert verdict["code"] == "no-driver" and "DRM" in verdict["summary"], verdict
    assert "meta-qcom" in verdict["fix"]["text"]
    assert any("rusticl" in n for n in verdict["notes"])
    done = qcom_ext(["probe"], board, board["env"], tmp_path)  # rusticl's report, and:
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no Qualcomm OpenCL platform: run 'qcom-ext doctor'" in done.stdout
