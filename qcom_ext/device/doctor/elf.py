"""What an OpenCL library is, read from its ELF dynamic section without loading it.

Loading a vendor driver runs its code (and may crash); its dynamic symbols tell most of
what ``qcom-ext doctor`` needs, read with pyelftools:

* an **ICD driver** defines ``clIcdGetPlatformIDsKHR`` (``cl_khr_icd``), or only
  ``clGetExtensionFunctionAddress``, through which a loader asks for it (pocl): an ICD
  loader can load it from a ``.icd`` file;
* an **ICD loader** (ocl-icd, the Khronos loader) defines ``clGetPlatformIDs`` and its
  read-only data names it (ocl-icd's ``ocl_icd_loader`` and ``OCL_ICD_PLATFORM_SORT``,
  ``Khronos OpenCL ICD Loader``), as it holds its compiled-in vendors directory;
* a **vendor library, not an ICD** defines ``clGetPlatformIDs`` but not the ICD entry
  point (Android's Adreno ``libOpenCL.so``): only the dynamic linker can put it in a
  loader's place.

Any file that is missing or not a readable ELF object gives facts with ``error`` set,
never an exception.

>>> import sys
>>> facts = read_elf(sys.executable)
>>> facts.error is None and facts.kind
'other'
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ICD_ENTRY", "ElfFacts", "host_machine", "read_elf"]

ICD_ENTRY = "clIcdGetPlatformIDsKHR"
EXTENSION_ENTRY = "clGetExtensionFunctionAddress"
_WATCHED = frozenset({"clGetPlatformIDs", ICD_ENTRY, EXTENSION_ENTRY})
# Strings only an ICD loader's read-only data holds: ocl-icd's source file and variable
# names, the Khronos loader's name (what clGetICDLoaderInfoOCLICDP answers).
_LOADER_MARKS = (b"ocl_icd_loader", b"OCL_ICD_PLATFORM_SORT\x00", b"Khronos OpenCL ICD Loader")
_VENDORS_DIR = re.compile(rb"(/[\x21-\x7e]{0,200}/OpenCL/vendors)/?\x00")
_MACHINES = {"x86_64": "EM_X86_64", "amd64": "EM_X86_64", "aarch64": "EM_AARCH64",
             "arm64": "EM_AARCH64", "i686": "EM_386", "i386": "EM_386"}  # fmt: skip
_READ_ONLY_LIMIT = 16 << 20  # bytes of .rodata searched for a vendors directory at most


@dataclass(frozen=True)
class ElfFacts:
    """The facts of one library (``error`` says why there are none)."""

    path: str
    machine: str | None = None
    soname: str | None = None
    needed: tuple[str, ...] = ()
    defines: frozenset[str] = frozenset()
    loader: bool = False
    vendors_dirs: tuple[str, ...] = ()
    error: str | None = None

    @property
    def is_icd(self) -> bool:
        """Whether its symbols make it an ICD: the ICD entry point, or the extension
        lookup without the platform list (an ICD-only build)."""
        if ICD_ENTRY in self.defines:
            return True
        return EXTENSION_ENTRY in self.defines and "clGetPlatformIDs" not in self.defines

    @property
    def is_loader(self) -> bool:
        return self.loader

    @property
    def kind(self) -> str:
        """``icd-loader``, ``icd``, ``vendor-library`` (OpenCL, not an ICD), ``other``
        or ``unreadable``."""
        if self.error is not None:
            return "unreadable"
        if self.is_loader:
            return "icd-loader"
        if self.is_icd:
            return "icd"
        return "vendor-library" if "clGetPlatformIDs" in self.defines else "other"

    @property
    def runs_here(self) -> bool:
        """Whether this machine's processes can load it (same machine type)."""
        return self.machine is not None and self.machine == host_machine()

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "kind": self.kind,
            "machine": self.machine,
            "soname": self.soname,
            "needed": list(self.needed),
            "exports": sorted(self.defines),
            "vendors_dirs": list(self.vendors_dirs),
            "error": self.error,
        }


def host_machine() -> str | None:
    """This machine's ELF machine name (``EM_X86_64``, ``EM_AARCH64``), or None."""
    return _MACHINES.get(platform.machine().lower())


def _defined(elf: object) -> frozenset[str]:
    from elftools.elf.dynamic import DynamicSegment
    from elftools.elf.sections import SymbolTableSection

    tables = [s for s in elf.iter_sections() if isinstance(s, SymbolTableSection)]  # type: ignore[attr-defined]
    dynsym = [s for s in tables if s.name == ".dynsym"]
    if dynsym:
        symbols = dynsym[0].iter_symbols()
    else:  # no section headers (stripped hard): the dynamic segment's table
        segments = [s for s in elf.iter_segments() if isinstance(s, DynamicSegment)]  # type: ignore[attr-defined]
        symbols = segments[0].iter_symbols() if segments else iter(())
    found = set()
    for symbol in symbols:
        if symbol.name in _WATCHED and symbol["st_shndx"] != "SHN_UNDEF":
            found.add(symbol.name)
    return frozenset(found)


def _dynamic(elf: object) -> tuple[str | None, tuple[str, ...]]:
    from elftools.elf.dynamic import DynamicSection

    soname, needed = None, []
    for section in elf.iter_sections():  # type: ignore[attr-defined]
        if isinstance(section, DynamicSection):
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_SONAME":
                    soname = str(tag.soname)
                elif tag.entry.d_tag == "DT_NEEDED":
                    needed.append(str(tag.needed))
            break
    return soname, tuple(needed)


def _loader_strings(elf: object) -> tuple[bool, tuple[str, ...]]:
    """Whether the read-only data holds a loader's marks, and the vendors directories it
    names."""
    section = elf.get_section_by_name(".rodata")  # type: ignore[attr-defined]
    if section is None or section.data_size > _READ_ONLY_LIMIT:
        return False, ()
    data = section.data()
    found = _VENDORS_DIR.findall(data)
    return any(m in data for m in _LOADER_MARKS), tuple(
        dict.fromkeys(d.decode("ascii") for d in found)
    )


def read_elf(path: str | Path, shown: str | None = None) -> ElfFacts:
    """The facts of the ELF file at ``path`` (a host path); ``shown`` is the path the
    facts name (the device's, under a sysroot)."""
    name = shown or str(path)
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
    except ImportError:  # pragma: no cover - a dependency of qcom_ext
        return ElfFacts(name, error="pyelftools is not installed")
    try:
        with open(path, "rb") as stream:
            elf = ELFFile(stream)
            defines = _defined(elf)
            soname, needed = _dynamic(elf)
            loader, dirs = _loader_strings(elf) if "clGetPlatformIDs" in defines else (False, ())
            machine = elf["e_machine"]
            return ElfFacts(name, machine, soname, needed, defines, loader, dirs)
    except (OSError, ELFError) as exc:
        return ElfFacts(name, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a malformed file may trip any part of the parser
        return ElfFacts(name, error=f"not a readable ELF file ({type(exc).__name__})")
