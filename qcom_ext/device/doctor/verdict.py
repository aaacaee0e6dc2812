"""The doctor's verdict: what the facts mean and the exact fix, as values.

:func:`decide` is a pure function of :class:`~.facts.DoctorFacts`: the same facts give
the same verdict, so each rule is tested on facts alone and, end to end, on simulated
device layouts with real libraries (``tests/test_doctor_layouts.py``). A fix is data
(:class:`Fix`): the environment to set before Python starts (:meth:`Fix.exports`, what
``qcom-ext env`` prints) and the commands to run once.

The rules, in order: pyopencl missing; a driver that crashed the child; Qualcomm's
platform reached (ok, unless qcom_ext's binding opened another library); no Qualcomm
library (no driver, or no Adreno at all); a vendor library that is not an ICD (Android:
``LD_LIBRARY_PATH`` puts it in the loader's place); an ICD the loader does not read, or
that is registered nowhere, or whose library is not found (``OCL_ICD_VENDORS``).
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from qcom_ext.device.doctor.facts import DoctorFacts, LibraryFacts
from qcom_ext.device.doctor.libraries import ANDROID_LIBRARIES
from qcom_ext.device.sysroot import Sysroot

__all__ = ["EnvSetting", "Fix", "Verdict", "decide"]

Status = Literal["ok", "fix", "problem"]
_SHIM_DIR = "~/.local/lib/qcom-ext-opencl"
_SAME_LIBRARY = ("pyopencl's ICD loader", "QCOM_EXT_OPENCL_LIBRARY")


@dataclass(frozen=True)
class EnvSetting:
    """A variable to set before Python starts: ``paths`` joined by ``:``, then the
    current value where ``keep``."""

    name: str
    paths: tuple[str, ...]
    keep: bool = True

    def value(self, current: str = "") -> str:
        """The value, ``~/`` expanded (the home directory of this process)."""
        paths = [os.path.expanduser(p) if p.startswith("~/") else p for p in self.paths]
        return ":".join(paths + ([current] if self.keep and current else []))

    def shell(self) -> str:
        """The ``export`` line for a POSIX shell (``qcom-ext env``): every path quoted
        (``eval`` runs it), ``~/`` as ``"$HOME"``.

        >>> EnvSetting("LD_LIBRARY_PATH", ("/vendor/lib64", "~/lib")).shell()
        'export LD_LIBRARY_PATH=/vendor/lib64:"$HOME"/lib"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
        """
        value = ":".join(shell_path(p) for p in self.paths)
        if self.keep:
            value += f'"${{{self.name}:+:${self.name}}}"'
        return f"export {self.name}={value}"


def shell_path(path: str) -> str:
    """``path`` quoted for a POSIX shell, ``~/`` as ``"$HOME"``.

    >>> shell_path("/data/x y"), shell_path("~/.local/lib"), shell_path("/a/$(b)")
    ("'/data/x y'", '"$HOME"/.local/lib', "'/a/$(b)'")
    """
    if path.startswith("~/"):
        return '"$HOME"' + shlex.quote(path[1:])
    return shlex.quote(path)


@dataclass(frozen=True)
class Fix:
    """What to do: ``text`` for people, ``commands`` to run once, ``env`` to set."""

    text: str
    env: tuple[EnvSetting, ...] = ()
    commands: tuple[str, ...] = ()

    def exports(self) -> list[str]:
        """The lines ``eval "$(qcom-ext env)"`` runs."""
        return [setting.shell() for setting in self.env]

    def environment(self, base: Mapping[str, str], root: Sysroot | None = None) -> dict[str, str]:
        """``base`` with the fix applied; device paths re-rooted under ``root`` (a
        simulated tree: the paths exist on this machine there)."""
        env = dict(base)
        for setting in self.env:
            paths = tuple(
                str(root.host_path(p)) if root is not None and p.startswith("/") else p
                for p in setting.paths
            )
            env[setting.name] = EnvSetting(setting.name, paths, setting.keep).value(
                base.get(setting.name, "")
            )
        return env

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "commands": list(self.commands),
            "env": [{"name": s.name, "paths": list(s.paths), "keep": s.keep} for s in self.env],
            "exports": self.exports(),
        }


@dataclass(frozen=True)
class Verdict:
    """``status`` (ok, fix, problem), a stable ``code``, a one-line ``summary``, the
    ``fix`` (None when there is nothing to do) and ``notes``."""

    status: Status
    code: str
    summary: str
    fix: Fix | None = None
    notes: tuple[str, ...] = ()

    def line(self) -> str:
        """The verdict in one line, fix included (what errors quote)."""
        return self.summary if self.fix is None else f"{self.summary}; fix: {self.fix.text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "code": self.code,
            "summary": self.summary,
            "fix": None if self.fix is None else self.fix.to_dict(),
            "notes": list(self.notes),
        }


def _looks_qualcomm(lib: LibraryFacts, facts: DoctorFacts) -> bool:
    """A library not loaded (or not loadable here) that is where Qualcomm's driver is."""
    if lib.elf.kind not in ("vendor-library", "icd"):
        return False
    name = posixpath.basename(lib.path).lower()
    named = any(
        e.found == lib.path and any(k in (e.icd_file or "").lower() for k in ("adreno", "qcom"))
        for s in facts.icd_sources
        for e in s.entries
    )
    return lib.path in ANDROID_LIBRARIES or "adreno" in name or named


def _qualcomm_library(facts: DoctorFacts) -> LibraryFacts | None:
    """The library that is Qualcomm's driver: one that showed its platform, else one
    that looks like it and could not be asked; the entry library before a split part."""
    shown = [lib for lib in facts.libraries if lib.qualcomm]
    unknown = [
        lib for lib in facts.libraries if lib.qualcomm is None and _looks_qualcomm(lib, facts)
    ]
    crashed = [lib for lib in facts.libraries if lib.crash and _looks_qualcomm(lib, facts)]
    for group in (shown, unknown, crashed):
        if group:
            return min(group, key=lambda lib: "adreno" in posixpath.basename(lib.path).lower())
    return None


def _notes(facts: DoctorFacts) -> list[str]:
    notes = []
    for source in facts.icd_sources:
        for entry in source.entries:
            lib = facts.library(entry.found) if entry.found else None
            where = entry.icd_file or source.where
            if entry.found is None:
                notes.append(f"{where} names {entry.library}, which is not on the library path")
            elif lib is not None and not lib.is_icd and lib.elf.kind == "vendor-library":
                notes.append(
                    f"{where} names {entry.library}, which is not an ICD (no "
                    "clIcdGetPlatformIDsKHR): ICD loaders skip it, so that file does nothing"
                )
    others = [p for p in facts.python.platforms if not p.qualcomm]
    if facts.python.qualcomm and others:
        names = ", ".join(sorted({p.name for p in others}))
        notes.append(f"pyopencl also lists {names}; qcom_ext.probe() takes Qualcomm's by default")
    for lib in facts.libraries:
        if lib.crash:
            notes.append(
                f"{lib.path} crashed a child process in {lib.crash.get('stage')} "
                f"({lib.crash.get('signal')})"
            )
    return notes


def _no_pyopencl(facts: DoctorFacts) -> Verdict:
    error = facts.python.import_error or "not importable"
    if facts.system == "termux":
        fix = Fix(
            "build pyopencl from source against Termux's ocl-icd (there is no wheel for Android)",
            commands=(
                "pkg install clang ocl-icd opencl-headers python-numpy",
                "pip install pyopencl",
            ),
        )
    elif facts.system == "windows":
        fix = Fix(
            "pyopencl has no win_arm64 wheel: build it from source with MSVC ARM64, the Khronos "
            "OpenCL headers and ICD loader (as llama.cpp's docs/backend/OPENCL.md builds them)",
            commands=("pip install --no-binary pyopencl pyopencl",),
        )
    else:
        fix = Fix("install pyopencl", commands=("pip install pyopencl",))
    return Verdict("fix", "no-pyopencl", f"pyopencl cannot be imported ({error})", fix)


def _vendor_not_icd(facts: DoctorFacts, lib: LibraryFacts, notes: list[str]) -> Verdict:
    """Android's Adreno driver: the dynamic linker must find it under the loader's name."""
    py = facts.python
    directory = posixpath.dirname(lib.path)
    needed = py.needed_loader or "libOpenCL.so"
    if py.wheel_loader:  # after a source build: the SONAME of the system's loader
        needed = "libOpenCL.so" if facts.system in ("termux", "android") else "libOpenCL.so.1"
    commands: list[str] = []
    paths = [directory]
    if posixpath.basename(lib.path) != needed:
        link = shell_path(f"{_SHIM_DIR}/{needed}")
        commands += [f"mkdir -p {shell_path(_SHIM_DIR)}", f"ln -sf {shell_path(lib.path)} {link}"]
        paths.insert(0, _SHIM_DIR)
    loader_dir = posixpath.dirname(py.library) if py.library and not py.wheel_loader else None
    if loader_dir is None and facts.termux_prefix:
        loader_dir = f"{facts.termux_prefix}/lib"
    if loader_dir and loader_dir not in paths:
        paths.append(loader_dir)
    reached = f"pyopencl calls {py.library}" if py.library else "pyopencl's loader"
    seen = f"sees {len(py.platforms)} platform(s)" if py.checked else "sees no platform"
    summary = (
        f"{reached}, which {seen}; the Adreno driver {lib.path} is not an ICD (no "
        "clIcdGetPlatformIDsKHR), so no .icd file can register it"
    )
    setting = EnvSetting("LD_LIBRARY_PATH", tuple(paths))
    if py.wheel_loader:
        commands.insert(0, "pip install --force-reinstall --no-binary pyopencl pyopencl")
        text = (
            "pyopencl's wheel calls its own bundled loader, which LD_LIBRARY_PATH cannot "
            "replace: rebuild pyopencl from source, then start Python with "
            f"{setting.name}={setting.value()}"
        )
        return Verdict(
            "fix",
            "wheel-loader-hides-vendor",
            summary,
            Fix(text, (setting,), tuple(commands)),
            tuple(notes),
        )
    text = f"start Python with {setting.name}={setting.value()} (that order)"
    return Verdict(
        "fix", "vendor-not-icd", summary, Fix(text, (setting,), tuple(commands)), tuple(notes)
    )


def _icd(facts: DoctorFacts, lib: LibraryFacts, notes: list[str]) -> Verdict:
    """An ICD (Qualcomm Linux's adrenocl): registered where the loader reads it?"""
    py = facts.python
    ocl_icd = py.library_facts is not None and bool(py.library_facts.vendors_dirs)
    single = EnvSetting(
        "OCL_ICD_VENDORS" if ocl_icd or not py.library_facts else "OCL_ICD_FILENAMES",
        (lib.path,),
        keep=False,
    )
    naming = [(s, e) for s in facts.icd_sources for e in s.entries if e.found == lib.path]
    read = [(s, e) for s, e in naming if s.read]
    if read:
        source, entry = read[0]
        summary = (
            f"{lib.path} (registered by {entry.icd_file or source.where}, which pyopencl's "
            "loader reads) shows Qualcomm's platform when loaded alone, but pyopencl does not "
            "list it"
        )
        text = f"load it alone to compare: start Python with {single.name}={single.value()}"
        return Verdict("problem", "icd-not-listed", summary, Fix(text, (single,)), tuple(notes))
    missing = [
        e
        for s in facts.icd_sources
        for e in s.entries
        if e.found is None and posixpath.basename(e.library) == posixpath.basename(lib.path)
    ]
    if missing:
        summary = f"{missing[0].icd_file} names {missing[0].library}, which the loader cannot find"
        setting = EnvSetting("LD_LIBRARY_PATH", (posixpath.dirname(lib.path),))
        return Verdict(
            "fix",
            "icd-target-missing",
            summary,
            Fix(f"start Python with {setting.name}={setting.value()}", (setting,)),
            tuple(notes),
        )
    if naming:
        source, entry = naming[0]
        setting = EnvSetting("OCL_ICD_VENDORS", (source.path,), keep=False)
        reads = ", ".join(s.path for s in facts.icd_sources if s.read) or "nothing"
        summary = (
            f"Qualcomm's ICD {entry.icd_file or lib.path} is in {source.path}, which pyopencl's "
            f"loader does not read (it reads {reads})"
        )
        text = f"start Python with {setting.name}={source.path}"
        return Verdict("fix", "icd-not-read", summary, Fix(text, (setting,)), tuple(notes))
    summary = f"Qualcomm's driver {lib.path} is an ICD that no .icd file registers"
    command = f"echo {shell_path(lib.path)} | sudo tee /etc/OpenCL/vendors/adrenocl.icd"
    text = f"register it ({command}), or start Python with {single.name}={lib.path}"
    return Verdict(
        "fix", "icd-not-registered", summary, Fix(text, (single,), (command,)), tuple(notes)
    )


def _no_qualcomm_library(facts: DoctorFacts, notes: list[str]) -> Verdict:
    py = facts.python
    shown = [p for p in py.platforms if p.adreno]
    if not facts.kernel.adreno_seen and not shown:
        if py.platforms:
            names = ", ".join(p.name for p in py.platforms)
            return Verdict(
                "ok",
                "ok-no-adreno",
                f"no Adreno GPU here; pyopencl lists {names}: qcom_ext runs the portable paths",
                None,
                tuple(notes),
            )
        fix = Fix(
            "install an OpenCL driver; for a CPU one: pip install 'qcom_ext[pocl]'",
            commands=("pip install 'qcom_ext[pocl]'",),
        )
        return Verdict(
            "fix", "no-platform", "no OpenCL platform and no Adreno GPU here", fix, tuple(notes)
        )
    layered = [p for p in py.platforms if p.driver in ("rusticl", "clvk", "openclon12", "other")]
    for p in layered:
        notes.append(
            f"{p.name} ({p.driver}) runs on this Adreno: qcom_ext uses it, every cl_qcom_* "
            "through its fallback"
        )
    where = (
        facts.kernel.describe()
        if facts.kernel.adreno_seen
        else f"{shown[0].name} shows {', '.join(shown[0].devices)}"
    )
    if facts.system in ("termux", "android"):
        text = (
            "this phone's vendor image has no Adreno OpenCL library in /vendor/lib64 or "
            "/system/vendor/lib64"
        )
        fix = Fix("no fix from userspace: the phone's vendor image ships no OpenCL driver")
    elif facts.system == "windows":
        text = "Adreno hardware but no Qualcomm OpenCL platform"
        fix = Fix(
            "install Qualcomm's Adreno GPU driver with OpenCL (OpenCLOn12 is Microsoft's layer "
            "over D3D12, not Qualcomm's driver)"
        )
    else:
        text = "Adreno hardware but no Qualcomm OpenCL library on disk"
        fix = Fix(
            "install the image's Adreno OpenCL driver (meta-qcom's qcom-adreno installs "
            "/etc/OpenCL/vendors/adrenocl.icd)"
        )
    return Verdict("fix", "no-driver", f"{text} ({where})", fix, tuple(notes))


def decide(facts: DoctorFacts) -> Verdict:
    """The verdict of ``facts`` (see the module docstring for the order of the rules)."""
    py = facts.python
    notes = _notes(facts)
    if py.checked and py.crash:
        crash = py.crash
        summary = (
            f"a Python that imports pyopencl died in {crash.get('stage')} ({crash.get('signal')})"
        )
        fix = Fix(
            "the OpenCL driver crashes in that call: update or roll back the GPU driver; "
            "qcom-ext probe --isolated keeps such a crash in a child process"
        )
        return Verdict("problem", "driver-crash", summary, fix, tuple(notes))
    if py.checked and py.pyopencl is None:
        return _no_pyopencl(facts)
    if py.qualcomm:
        if py.binding_origin and py.binding_origin not in _SAME_LIBRARY:
            summary = (
                f"qcom_ext's binding opened {py.binding} ({py.binding_origin}), not the library "
                f"pyopencl calls ({py.library})"
            )
            fix = Fix("unset QCOM_EXT_OPENCL_LIBRARY, or point it at the library pyopencl calls")
            return Verdict("fix", "binding-mismatch", summary, fix, tuple(notes))
        qualcomm = next(p for p in py.platforms if p.qualcomm)
        summary = (
            f"pyopencl reaches Qualcomm's driver through {py.library}: platform {qualcomm.name!r}"
        )
        return Verdict("ok", "ok", summary, None, tuple(notes))
    lib = _qualcomm_library(facts)
    if lib is None:
        return _no_qualcomm_library(facts, notes)
    if lib.crash and lib.qualcomm is None:
        summary = (
            f"Qualcomm's driver {lib.path} crashed a child process in "
            f"{lib.crash.get('stage')} ({lib.crash.get('signal')})"
        )
        fix = Fix(
            "update or roll back the GPU driver; qcom-ext probe --isolated keeps such a crash "
            "in a child process"
        )
        return Verdict("problem", "driver-crash", summary, fix, tuple(notes))
    if lib.is_icd:
        return _icd(facts, lib, notes)
    return _vendor_not_icd(facts, lib, notes)
