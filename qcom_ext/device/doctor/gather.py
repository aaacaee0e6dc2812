"""Gather the doctor's facts and judge them: :func:`doctor` (children included) and
:func:`hint` (files only, for an error message)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qcom_ext.device.doctor import child as _child
from qcom_ext.device.doctor.elf import ElfFacts, read_elf
from qcom_ext.device.doctor.facts import DoctorFacts, LibraryFacts, PythonSide, platforms_from
from qcom_ext.device.doctor.libraries import (
    icd_sources,
    library_facts,
    system_kind,
    termux_prefix,
    vendor_libraries,
)
from qcom_ext.device.doctor.verdict import Verdict, decide
from qcom_ext.device.kernel_gpu import read_kernel_gpu
from qcom_ext.device.sysroot import Sysroot

__all__ = ["DEFAULT_TIMEOUT", "STEERING", "DoctorReport", "doctor", "hint"]

#: Seconds each child process may take (importing pyopencl, loading one library).
DEFAULT_TIMEOUT = 60.0
#: The variables that steer which OpenCL library a process reaches.
STEERING = (
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "OCL_ICD_VENDORS",
    "OCL_ICD_FILENAMES",
    "QCOM_EXT_OPENCL_LIBRARY",
    "PYOPENCL_CTX",
    "PREFIX",
)


@dataclass(frozen=True)
class DoctorReport:
    """The facts and the verdict; :meth:`to_dict` is ``qcom-ext doctor --json``.

    >>> report = doctor()
    >>> data = report.to_dict()
    >>> data["schema"], data["verdict"]["code"] == report.verdict.code
    ('qcom_ext.doctor/1', True)
    """

    facts: DoctorFacts
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        f = self.facts
        kernel = f.kernel
        model = kernel.model()
        return {
            "schema": "qcom_ext.doctor/1",
            "verdict": self.verdict.to_dict(),
            "system": f.system,
            "sysroot": f.sysroot,
            "termux_prefix": f.termux_prefix,
            "env": dict(f.env),
            "kernel": {
                "adreno": kernel.adreno_seen,
                "described": kernel.describe(),
                "kgsl_device": kernel.kgsl_device,
                "kgsl_sysfs": kernel.kgsl_sysfs,
                "drm": [
                    {"node": g.node, "driver": g.driver, "compatible": list(g.compatible)}
                    for g in kernel.drm.gpus
                ],
                "model": None if model is None else {"model": model[0], "source": model[1]},
            },
            "python": f.python.to_dict(),
            "icd_sources": [s.to_dict() for s in f.icd_sources],
            "libraries": [lib.to_dict() for lib in f.libraries],
        }


def _shown(host: str | None, root: Sysroot) -> str | None:
    """The device path of a host path under ``root`` (a path outside it unchanged)."""
    return None if host is None else root.device_path(host)


def _python_side(raw: dict[str, Any], root: Sysroot) -> PythonSide:
    if raw.get("outcome") != "ok":
        crash = {k: raw.get(k) for k in ("outcome", "signal", "stage", "log", "error")}
        return PythonSide(crash=crash)
    info = raw.get("pyopencl")
    if not isinstance(info, dict):
        return PythonSide(import_error=str(raw.get("import_error") or "not importable"))
    library = raw.get("library") if isinstance(raw.get("library"), str) else None
    binding = raw.get("binding") if isinstance(raw.get("binding"), dict) else {}
    home = raw.get("pyopencl_home")
    bundled = posixpath.join(home, ".libs") if isinstance(home, str) else None
    module = str(info.get("module", ""))
    return PythonSide(
        pyopencl=str(info.get("version")),
        module=read_elf(module) if module else None,
        library=_shown(library, root),
        library_facts=read_elf(library, _shown(library, root)) if library else None,
        platforms=platforms_from(raw.get("platforms")),
        platforms_error=raw.get("platforms_error"),
        binding=_shown(binding.get("path"), root),
        binding_origin=binding.get("origin"),
        bundled_icds=bundled if bundled and os.path.isdir(bundled) else None,
        mapped=tuple(str(m) for m in raw.get("mapped") or []),
    )


def _loaded(
    path: str, elf: ElfFacts, root: Sysroot, env: Mapping[str, str], timeout: float
) -> LibraryFacts:
    if not elf.runs_here:
        why = f"built for {elf.machine or 'an unknown machine'}, this machine runs another"
        return LibraryFacts(path, elf, skipped=why if elf.error is None else elf.error)
    real = root.real_path(path)
    raw = _child.run_library(str(real), env, timeout)
    if raw.get("outcome") != "ok":
        crash = {k: raw.get(k) for k in ("outcome", "signal", "stage", "error")}
        return LibraryFacts(path, elf, crash=crash)
    return LibraryFacts(
        path,
        elf,
        loaded=bool(raw.get("loaded")),
        platforms=platforms_from(raw.get("platforms")),
        icd_entry=raw.get("icd_entry"),
        error=raw.get("error"),
    )


def _libraries(
    root: Sysroot,
    env: Mapping[str, str],
    kind: str,
    sources: list[Any],
    load: bool,
    timeout: float,
) -> tuple[LibraryFacts, ...]:
    paths = vendor_libraries(root, env, kind)  # links resolved, no duplicates
    seen = {root.resolve(p) for p in paths}
    for source in sources:
        for entry in source.entries:
            if entry.found and source.where != "pyopencl wheel":
                resolved = root.resolve(entry.found)
                if resolved and resolved not in seen:
                    seen.add(resolved)
                    paths.append(entry.found)
    found = []
    for path in paths:
        elf = library_facts(path, root)
        worth = elf.kind in ("vendor-library", "icd")
        if load and worth:
            found.append(_loaded(path, elf, root, env, timeout))
        else:
            found.append(
                LibraryFacts(path, elf, skipped=None if worth else f"{elf.kind}: not loaded")
            )
    return tuple(found)


def _facts(
    env: Mapping[str, str], root: Sysroot, python: PythonSide, load: bool, timeout: float
) -> DoctorFacts:
    kind = system_kind(root, env)
    sources = icd_sources(python.library_facts, root, env, kind, python.bundled_icds)
    return DoctorFacts(
        sysroot=str(root.root),
        system=kind,
        termux_prefix=termux_prefix(root, env),
        env={k: env[k] for k in STEERING if env.get(k)},
        kernel=read_kernel_gpu(root),
        python=python,
        libraries=_libraries(root, env, kind, sources, load, timeout),
        icd_sources=tuple(sources),
    )


def doctor(
    *,
    env: Mapping[str, str] | None = None,
    sysroot: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> DoctorReport:
    """What a Python started with ``env`` (default: this process's environment) reaches,
    the OpenCL libraries and ICD files under ``sysroot`` (default ``QCOM_EXT_SYSROOT``,
    else ``/``), the kernel's GPU, and the verdict with its fix. Every driver call runs
    in a child process (``timeout`` seconds each): a crash is a finding.

    >>> report = doctor()
    >>> report.verdict.status in ("ok", "fix", "problem")
    True
    """
    env = dict(os.environ if env is None else env)
    root = Sysroot.from_env() if sysroot is None else Sysroot(os.fspath(sysroot))  # type: ignore[arg-type]
    python = _python_side(_child.run_python(env, timeout), root)
    facts = _facts(env, root, python, load=True, timeout=timeout)
    return DoctorReport(facts, decide(facts))


def hint(library: str, platforms: int = 0, *, env: Mapping[str, str] | None = None) -> str | None:
    """The doctor's verdict in one line, from files alone (no child, nothing loaded), for
    an error on a machine whose kernel shows Adreno hardware; None on any other machine.
    ``library`` is the OpenCL library that was asked and ``platforms`` what it listed."""
    env = dict(os.environ if env is None else env)
    root = Sysroot.from_env()
    if not read_kernel_gpu(root).adreno_seen:
        return None
    loader = read_elf(library, _shown(library, root)) if os.path.isfile(library) else None
    python = PythonSide(
        pyopencl="unknown",
        library=_shown(library, root),
        library_facts=loader,
        checked=False,
    )
    facts = _facts(env, root, python, load=False, timeout=DEFAULT_TIMEOUT)
    verdict = decide(facts)
    return f"qcom-ext doctor: {verdict.line()}"
