"""The facts ``qcom-ext doctor`` reads, as values (made by :mod:`.gather`, judged by
:mod:`.verdict`, printed by ``qcom-ext doctor``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from qcom_ext.device.doctor.elf import ElfFacts
from qcom_ext.device.doctor.libraries import IcdSource
from qcom_ext.device.driver_strings import driver_kind, find_model
from qcom_ext.device.kernel_gpu import KernelGpu

__all__ = ["DoctorFacts", "LibraryFacts", "Platform", "PythonSide", "platforms_from"]

#: A loader that a wheel bundles, renamed by auditwheel with a hash.
_HASHED = re.compile(r"libOpenCL-[0-9a-f]{8}\.so")


@dataclass(frozen=True)
class Platform:
    """One platform a library showed, with the implementation its strings name."""

    name: str
    vendor: str
    version: str
    driver: str
    devices: tuple[str, ...] = ()

    @property
    def qualcomm(self) -> bool:
        return self.driver == "qualcomm"

    @property
    def adreno(self) -> bool:
        """Whether a device of it is an Adreno (whichever implementation runs it)."""
        return any("adreno" in d.lower() or find_model(device_name=d) for d in self.devices)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "vendor": self.vendor,
            "version": self.version,
            "driver": self.driver,
            "devices": list(self.devices),
        }


def platforms_from(raw: Any) -> tuple[Platform, ...]:
    """The platforms of a child's report (malformed entries are left out)."""
    found = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        devices = [d for d in item.get("devices") or [] if isinstance(d, dict)]
        first = devices[0] if devices else {}
        kind = driver_kind(
            platform_name=str(item.get("name", "")),
            platform_version=str(item.get("version", "")),
            device_name=str(first.get("name", "")),
            device_version=str(first.get("version", "")),
            driver_version=str(first.get("driver_version", "")),
            vendor_id=int(first.get("vendor_id", 0) or 0),
        )
        names = tuple(str(d.get("name", "")).strip() for d in devices)
        found.append(
            Platform(
                str(item.get("name", "")).strip(),
                str(item.get("vendor", "")).strip(),
                str(item.get("version", "")).strip(),
                kind,
                names,
            )
        )
    return tuple(found)


@dataclass(frozen=True)
class PythonSide:
    """What a Python started with the environment reaches (None where not learnt)."""

    pyopencl: str | None = None  # its version; None: not importable
    import_error: str | None = None
    module: ElfFacts | None = None  # pyopencl's extension module
    library: str | None = None  # the OpenCL library pyopencl calls (device path)
    library_facts: ElfFacts | None = None
    platforms: tuple[Platform, ...] = ()
    platforms_error: str | None = None
    binding: str | None = None  # the library qcom_ext's binding opens
    binding_origin: str | None = None
    bundled_icds: str | None = None  # a wheel's own ICD directory
    crash: dict[str, Any] | None = None  # the child died: signal, stage
    mapped: tuple[str, ...] = ()
    checked: bool = True  # False: no child was run (files only)

    @property
    def needed_loader(self) -> str | None:
        """The OpenCL library name pyopencl's module is linked with (``libOpenCL.so.1``,
        a wheel's hashed name), None when unknown."""
        if self.module is None:
            return None
        return next((n for n in self.module.needed if n.startswith("libOpenCL")), None)

    @property
    def wheel_loader(self) -> bool:
        """Whether pyopencl calls a loader bundled in its wheel (``LD_LIBRARY_PATH``
        cannot replace it)."""
        needed = self.needed_loader or ""
        return bool(_HASHED.fullmatch(needed) or _HASHED.search(self.library or ""))

    @property
    def qualcomm(self) -> bool:
        return any(p.qualcomm for p in self.platforms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "pyopencl": self.pyopencl,
            "import_error": self.import_error,
            "module": None if self.module is None else self.module.path,
            "links": self.needed_loader,
            "library": self.library,
            "library_kind": (
                "wheel-loader"
                if self.wheel_loader
                else (self.library_facts.kind if self.library_facts else None)
            ),
            "platforms": [p.to_dict() for p in self.platforms],
            "platforms_error": self.platforms_error,
            "binding": {"library": self.binding, "origin": self.binding_origin},
            "bundled_icds": self.bundled_icds,
            "crash": self.crash,
            "mapped": list(self.mapped),
        }


@dataclass(frozen=True)
class LibraryFacts:
    """One OpenCL library on disk: its ELF facts and, where it was loaded in a child,
    what it showed (``loaded`` None: not loaded, ``skipped`` says why)."""

    path: str
    elf: ElfFacts
    loaded: bool | None = None
    platforms: tuple[Platform, ...] = ()
    icd_entry: bool | None = None
    error: str | None = None
    crash: dict[str, Any] | None = None
    skipped: str | None = None

    @property
    def is_icd(self) -> bool:
        """An ICD by its symbols, or by its answer to the ICD entry point."""
        return self.elf.is_icd or bool(self.icd_entry)

    @property
    def qualcomm(self) -> bool | None:
        """True: it showed Qualcomm's platform; False: it showed none; None: unknown."""
        if self.platforms:
            return any(p.qualcomm for p in self.platforms)
        return None if self.loaded is None else False

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "elf": self.elf.to_dict(),
            "is_icd": self.is_icd,
            "loaded": self.loaded,
            "platforms": [p.to_dict() for p in self.platforms],
            "icd_entry": self.icd_entry,
            "error": self.error,
            "crash": self.crash,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class DoctorFacts:
    """Everything read: the system, its kernel GPU, Python's side, the libraries on
    disk and the ICD sources (``env``: the variables that steer loading)."""

    sysroot: str
    system: str
    termux_prefix: str | None
    env: dict[str, str]
    kernel: KernelGpu
    python: PythonSide
    libraries: tuple[LibraryFacts, ...] = ()
    icd_sources: tuple[IcdSource, ...] = field(default_factory=tuple)

    def library(self, path: str) -> LibraryFacts | None:
        return next((lib for lib in self.libraries if lib.path == path), None)
