"""Fake vendor OpenCL drivers that are real OpenCL implementations, built to look like
Qualcomm's (or Mesa rusticl's): the Snapdragon layouts of ``qcom-ext doctor``, simulated.

:func:`build_shim` compiles ``shim.c`` (next to this file) with ``cc`` into a library that
exports every ``cl*`` entry point of the system ICD loader (ocl-icd) as a trampoline to a
real implementation (see shim.c): a private copy of ocl-icd that sees one vendor ICD,
Debian's pocl or Oclgrind, or another shim opened by bare name (the split driver of some
phones). Its ``look`` changes the platform and device strings only, for every caller
(these exports and any ICD loader dispatching through the objects); its extension string
stays the backend's, so every ``cl_qcom_*`` path is a portable fallback.

:func:`ocl_icd_copy` is Termux's ocl-icd (SONAME ``libOpenCL.so``);
:func:`source_built_pyopencl` is pyopencl built from source against it (its ``_cl`` links
``libOpenCL.so`` by name). :func:`missing_tools` names what a machine lacks for all this.

The builds live in one ``tempfile.mkdtemp`` directory per process (removed at exit), one
build per spec and source; the libraries they make refer to files there, so children
that load them must run before this process exits.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

__all__ = [
    "BACKENDS",
    "PREAMBLE",
    "STEERING",
    "ShimSpec",
    "build_shim",
    "clean_environment",
    "missing_tools",
    "needs_oclgrind",
    "needs_shim",
    "ocl_icd_copy",
    "source_built_pyopencl",
]

SOURCE = Path(__file__).with_name("shim.c")
_MULTIARCH = sysconfig.get_config_var("MULTIARCH") or f"{platform.machine()}-linux-gnu"
_LIBDIR = Path("/usr/lib") / _MULTIARCH
#: The system ICD loader (ocl-icd), the source of the entry point list and of the copies.
SYSTEM_LOADER = _LIBDIR / "libOpenCL.so.1"
#: The vendor ICDs a shim may forward to through its private loader.
BACKENDS = {
    "pocl": _LIBDIR / "libpocl.so.2",
    "oclgrind": Path("/usr/lib/oclgrind/liboclgrind-rt-icd.so"),
}
_HEADERS = Path("/usr/include/CL")
_LIBRARY = "library:"
# Written in C by shim.c itself (the ICD entry, hidden where the shim is no ICD).
_HAND_WRITTEN = frozenset(
    {
        "clGetExtensionFunctionAddress",
        "clGetExtensionFunctionAddressForPlatform",
        "clIcdGetPlatformIDsKHR",
    }
)
_LOOKS = {"none": 0, "qualcomm": 1, "rusticl": 2}


@dataclass(frozen=True)
class ShimSpec:
    """One fake driver library.

    ``filename`` is the file :func:`build_shim` writes, ``soname`` its ``DT_SONAME``;
    ``look`` the strings its platforms and devices report (``"qualcomm"``: an Adreno 740
    under Qualcomm's driver, ``"rusticl"``: FD643 under Mesa rusticl, ``"none"``: the
    backend's own); ``icd`` whether it is an ICD (exports and answers
    ``clIcdGetPlatformIDsKHR``); ``backend`` what it forwards to: ``"pocl"``,
    ``"oclgrind"`` or ``"library:<bare name>"`` (another library, found through
    ``LD_LIBRARY_PATH`` when the shim loads).
    """

    filename: str
    soname: str
    look: Literal["qualcomm", "rusticl", "none"]
    icd: bool
    backend: str = "pocl"

    def __post_init__(self) -> None:
        for field, value in (("filename", self.filename), ("soname", self.soname)):
            if not value or "/" in value or value in (".", ".."):
                raise ValueError(f"ShimSpec.{field} {value!r}: expected a bare file name")
        if self.look not in _LOOKS:
            raise ValueError(f"ShimSpec.look {self.look!r}: expected one of {sorted(_LOOKS)}")
        name = self.backend.removeprefix(_LIBRARY)
        if self.backend.startswith(_LIBRARY):
            if not name or "/" in name or not name.isascii() or '"' in name or "\\" in name:
                raise ValueError(f"ShimSpec.backend {self.backend!r}: expected library:<name>")
        elif self.backend not in BACKENDS:
            raise ValueError(
                f"ShimSpec.backend {self.backend!r}: expected one of {sorted(BACKENDS)} "
                "or library:<bare name>"
            )


def missing_tools(backends: Iterable[str] = ("pocl",)) -> str | None:
    """Why shims cannot be built and used here (the missing tools, headers, the ICD
    loader and the ``backends``' libraries), or None when nothing is missing."""
    missing = [tool for tool in ("cc", "nm", "patchelf") if shutil.which(tool) is None]
    if not (_HEADERS / "cl_icd.h").is_file():
        missing.append(f"the OpenCL headers ({_HEADERS}/cl_icd.h: ocl-icd-opencl-dev)")
    if not SYSTEM_LOADER.is_file():
        missing.append(f"ocl-icd ({SYSTEM_LOADER}: ocl-icd-libopencl1)")
    for backend in backends:
        if not BACKENDS[backend].is_file():
            missing.append(f"{backend} ({BACKENDS[backend]})")
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        missing.append("Linux on x86-64 or aarch64 (the trampolines' assembly)")
    return "opencl shim needs: " + ", ".join(missing) if missing else None


#: What an environment may carry that steers a child's OpenCL (left out of children).
STEERING = (
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "OCL_ICD_VENDORS",
    "OCL_ICD_FILENAMES",
    "OPENCL_VENDOR_PATH",
    "PYOPENCL_CTX",
    "PYOPENCL_HOME",
    "QCOM_EXT_OPENCL_LIBRARY",
    "QCOM_EXT_DISABLE",
    "QCOM_EXT_SYSROOT",
    "PYTHONPATH",
    "PREFIX",
)
#: The start of a ``python -I -c`` child's code: its import path comes from argv[1]
#: (``-I`` leaves PYTHONPATH out).
PREAMBLE = "import os, sys\nsys.path[:0] = [p for p in sys.argv[1].split(os.pathsep) if p]\n"


def clean_environment() -> dict[str, str]:
    """This process's environment less what steers OpenCL (:data:`STEERING`)."""
    return {k: v for k, v in os.environ.items() if k not in STEERING}


#: Skips a test where shims cannot be built (naming what is missing).
needs_shim = pytest.mark.skipif(
    missing_tools() is not None, reason=missing_tools() or "opencl shim tools present"
)
#: Skips a test where the Oclgrind-backed shim cannot be built.
needs_oclgrind = pytest.mark.skipif(
    missing_tools(("pocl", "oclgrind")) is not None,
    reason=missing_tools(("pocl", "oclgrind")) or "oclgrind present",
)


def _run(*command: str | Path) -> str:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed: {done.stderr.strip()}")
    return done.stdout


@functools.cache
def _build_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="qcom-ext-opencl-shim-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


@functools.cache
def loader_entry_points() -> tuple[str, ...]:
    """The ``cl*`` functions the system ICD loader exports (its dynamic symbols)."""
    out = _run("nm", "-D", "--defined-only", SYSTEM_LOADER)
    names = {
        parts[2].split("@")[0]  # ocl-icd versions its symbols: clFinish@@OPENCL_1.0
        for parts in (line.split() for line in out.splitlines())
        if len(parts) == 3 and parts[1] in "TW" and parts[2].startswith("cl")
    }
    if not names:
        raise RuntimeError(f"{SYSTEM_LOADER} exports no cl* function")
    return tuple(sorted(names))


def _set_soname(path: Path, soname: str) -> None:
    _run("patchelf", "--set-soname", soname, path)


def _c_string(text: str) -> str:
    if not text.isascii():
        raise ValueError(f"{text!r}: the shim's paths and names must be ASCII")
    return json.dumps(text)  # an ASCII JSON string is a C string literal


def _private_backend(build: Path, backend: str) -> tuple[str, str]:
    """(the private loader copy, its vendors dir) for a ``backend`` ICD."""
    token = build.name.replace("-", "_")
    loader = build / f"libqcomext_shim_loader_{token}.so"
    shutil.copyfile(SYSTEM_LOADER, loader)
    _set_soname(loader, loader.name)
    vendors = build / "vendors"
    vendors.mkdir()
    (vendors / f"{backend}.icd").write_text(f"{BACKENDS[backend]}\n")
    return str(loader), str(vendors)


@functools.cache
def _built(spec: ShimSpec, source_digest: str) -> Path:
    """Compile ``spec`` once per source (``source_digest`` keys the cache)."""
    del source_digest
    build = Path(tempfile.mkdtemp(prefix="build-", dir=_build_root()))
    if spec.backend.startswith(_LIBRARY):
        backend, vendors = spec.backend.removeprefix(_LIBRARY), ""
    else:
        backend, vendors = _private_backend(build, spec.backend)
    entries = [n for n in loader_entry_points() if n not in _HAND_WRITTEN]
    config = [
        f"#define SHIM_LOOK {_LOOKS[spec.look]}",
        f"#define SHIM_ICD {int(spec.icd)}",
        f"#define SHIM_BACKEND {_c_string(backend)}",
        f"#define SHIM_VENDORS {_c_string(vendors)}",
        "#define SHIM_ENTRIES(X) \\",
        *(f"    X({name}) \\" for name in entries),
        "",
        "",
    ]
    (build / "shim_config.h").write_text("\n".join(config))
    output = build / spec.filename
    _run(
        "cc", "-shared", "-fPIC", "-O1", "-Wall", "-Wno-deprecated-declarations",
        f"-I{build}", f"-Wl,-soname,{spec.soname}", "-o", output, SOURCE, "-ldl",
    )  # fmt: skip
    return output


def _install(source: Path, directory: Path, filename: str, soname: str | None = None) -> Path:
    """``source`` copied to ``directory / filename`` through a mkstemp file renamed over
    it (a process mapping an older copy keeps its own), its SONAME set when given."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".opencl-shim-", dir=directory)
    os.close(fd)
    try:
        shutil.copyfile(source, name)
        os.chmod(name, 0o755)
        if soname is not None:
            _set_soname(Path(name), soname)
        os.replace(name, directory / filename)
    except BaseException:
        os.unlink(name)
        raise
    return directory / filename


def build_shim(directory: Path, spec: ShimSpec) -> Path:
    """The fake driver ``spec`` describes, as ``directory / spec.filename`` (a copy of a
    build shared by every call with the same spec and source)."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    return _install(_built(spec, digest), directory, spec.filename)


def ocl_icd_copy(
    directory: Path, filename: str = "libOpenCL.so", soname: str = "libOpenCL.so"
) -> Path:
    """Termux's ocl-icd: a copy of the system loader as ``directory / filename`` whose
    SONAME is ``soname``. It reads ``OCL_ICD_VENDORS`` (Termux's compiled-in
    ``$PREFIX/etc/OpenCL/vendors`` in the simulations)."""
    return _install(SYSTEM_LOADER, directory, filename, soname)


def source_built_pyopencl(directory: Path) -> Path:
    """A copy of the installed pyopencl (a wheel: ``_cl`` links a hashed bundled loader
    through ``RPATH $ORIGIN/.libs``) under ``directory`` whose ``_cl`` links
    ``libOpenCL.so`` by name and has no RPATH, the bundled libraries left out, as pyopencl
    built from source against Termux's ocl-icd. Returns the directory to put first on
    ``PYTHONPATH`` (``directory`` itself; a ``pyopencl`` already there is an error)."""
    found = importlib.util.find_spec("pyopencl")
    if found is None or not found.submodule_search_locations:
        raise RuntimeError("pyopencl is not installed")
    source = Path(next(iter(found.submodule_search_locations)))
    directory = Path(directory)
    target = directory / "pyopencl"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".libs", "__pycache__"))
    extensions = sorted(target.glob("_cl*.so"))
    if len(extensions) != 1:
        raise RuntimeError(f"{source}: expected one _cl extension, found {extensions}")
    (extension,) = extensions
    loaders = [n for n in _run("patchelf", "--print-needed", extension).split() if "OpenCL" in n]
    if len(loaders) != 1:
        raise RuntimeError(f"{extension}: expected one OpenCL library in NEEDED: {loaders}")
    _run("patchelf", "--replace-needed", loaders[0], "libOpenCL.so", extension)
    _run("patchelf", "--remove-rpath", extension)
    return directory
