"""The OpenCL libraries on disk and the ICD files a loader reads, read as files only.

Everything here reads through :class:`~qcom_ext.device.sysroot.Sysroot` and loads
nothing: which system this is (:func:`system_kind`), where Termux's prefix is, the vendor
libraries present (:func:`vendor_libraries`), the ICD sources the loaded loader reads and
the other known ones it does not (:func:`icd_sources`), and where the dynamic linker
would find a library named without a directory (:func:`find_library`).

ICD loaders read (ocl-icd 2.3, the loader of Linux, Termux and pyopencl's Linux wheels):
``OCL_ICD_VENDORS`` when set (a directory to scan, one ``.icd`` file, or a library to load
as an ICD), else the directory compiled into the loader (``/etc/OpenCL/vendors``;
Termux: ``$PREFIX/etc/OpenCL/vendors``); pyopencl's wheel loader also loads the ICDs
bundled in the wheel (``$PYOPENCL_HOME/.libs``). The Khronos loader also reads
``OCL_ICD_FILENAMES`` (libraries, ``:``-separated).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from qcom_ext.device.doctor.elf import ElfFacts, read_elf
from qcom_ext.device.sysroot import Sysroot

__all__ = [
    "ANDROID_LIBRARIES",
    "TERMUX_PREFIX",
    "IcdEntry",
    "IcdSource",
    "find_library",
    "icd_sources",
    "library_facts",
    "system_kind",
    "termux_prefix",
    "vendor_libraries",
]

TERMUX_PREFIX = "/data/data/com.termux/files/usr"
DEFAULT_VENDORS = "/etc/OpenCL/vendors"
#: Where Android phones keep the Adreno driver (some split it: ``libOpenCL_adreno.so``).
ANDROID_LIBRARIES = (
    "/vendor/lib64/libOpenCL.so",
    "/vendor/lib64/libOpenCL_adreno.so",
    "/system/vendor/lib64/libOpenCL.so",
    "/system/vendor/lib64/libOpenCL_adreno.so",
)
#: Where Linux distributions and Qualcomm Linux images put OpenCL libraries.
LINUX_PATTERNS = (
    "/usr/lib/libOpenCL*.so*",
    "/usr/lib/*/libOpenCL*.so*",
    "/usr/lib64/libOpenCL*.so*",
    "/usr/lib/*/libadreno*.so*",
    "/usr/lib/libadreno*.so*",
)
_DEFAULT_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")
_ANDROID_DIRS = ("/system/lib64",)
_MAX_ICDS = 64
_ICD_NAME = re.compile(r"[^\0\n]{1,1024}")


def system_kind(root: Sysroot, env: Mapping[str, str]) -> str:
    """``termux``, ``android``, ``windows`` or ``linux``."""
    if os.name == "nt" and root.is_host:
        return "windows"
    if termux_prefix(root, env):
        return "termux"
    if root.exists("/system/build.prop") or root.is_dir("/vendor/lib64"):
        return "android"
    return "linux"


def termux_prefix(root: Sysroot, env: Mapping[str, str]) -> str | None:
    """Termux's ``$PREFIX`` where this is Termux, else None."""
    prefix = env.get("PREFIX", "")
    if "com.termux" in prefix and root.is_dir(prefix):
        return posixpath.normpath(prefix)
    return TERMUX_PREFIX if root.is_dir(TERMUX_PREFIX) else None


def _ld_conf_dirs(root: Sysroot) -> list[str]:
    dirs: list[str] = []
    files = ["/etc/ld.so.conf", *root.glob("/etc/ld.so.conf.d/*.conf")]
    for name in files:
        data = root.read_bytes(name) or b""
        for line in data.decode("ascii", errors="replace").splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("/") and not line.startswith("include"):
                dirs.append(posixpath.normpath(line))
    return dirs


def search_dirs(root: Sysroot, env: Mapping[str, str], kind: str) -> list[str]:
    """The directories the dynamic linker searches for a bare library name, in order
    (``LD_LIBRARY_PATH``, the configured and default ones)."""
    # a host path inside a prepared root (a simulation's environment) is the device's
    dirs = [root.device_path(d) for d in env.get("LD_LIBRARY_PATH", "").split(":") if d[:1] == "/"]
    if kind in ("termux", "android"):
        dirs += list(_ANDROID_DIRS)
    else:
        dirs += _ld_conf_dirs(root) + list(_DEFAULT_DIRS)
    return list(dict.fromkeys(posixpath.normpath(d) for d in dirs))


def find_library(name: str, root: Sysroot, env: Mapping[str, str], kind: str) -> str | None:
    """The device path the dynamic linker would open for ``name`` (a path is taken as
    it is), or None when no searched directory holds it."""
    if "/" in name:
        return posixpath.normpath(name) if root.is_file(name) else None
    for directory in search_dirs(root, env, kind):
        candidate = posixpath.join(directory, name)
        if root.is_file(candidate):
            return candidate
    return None


def library_facts(path: str, root: Sysroot) -> ElfFacts:
    """The ELF facts of the device's ``path`` (its links followed inside the root)."""
    real = root.real_path(path)
    if real is None:
        return ElfFacts(path, error="no such file")
    return read_elf(real, shown=path)


def vendor_libraries(root: Sysroot, env: Mapping[str, str], kind: str) -> list[str]:
    """The OpenCL libraries on disk: Android's vendor paths, Termux's prefix, the
    distribution's library directories (device paths, links resolved, no duplicates)."""
    found = [p for p in ANDROID_LIBRARIES if root.is_file(p)]
    prefix = termux_prefix(root, env)
    if prefix:
        found += root.glob(f"{prefix}/lib/libOpenCL*.so*")
    for pattern in LINUX_PATTERNS:
        found += root.glob(pattern)
    unique: dict[str, str] = {}
    for path in found:
        resolved = root.resolve(path)
        if resolved is not None and root.is_file(resolved):
            unique.setdefault(resolved, path)
    return list(unique.values())


@dataclass(frozen=True)
class IcdEntry:
    """One ICD a source names: the ``.icd`` file (None for a library named directly),
    the library it names, and where that library is found (None: nowhere)."""

    icd_file: str | None
    library: str
    found: str | None

    def to_dict(self) -> dict[str, object]:
        return {"icd_file": self.icd_file, "library": self.library, "found": self.found}


@dataclass(frozen=True)
class IcdSource:
    """One place ICDs are registered: ``where`` says which (``OCL_ICD_VENDORS``,
    ``compiled-in``, ``pyopencl wheel``, ``OCL_ICD_FILENAMES``, ``known``), ``read``
    whether the loaded loader reads it."""

    where: str
    path: str
    read: bool
    entries: tuple[IcdEntry, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "where": self.where,
            "path": self.path,
            "read": self.read,
            "entries": [e.to_dict() for e in self.entries],
        }


def _icd_file(path: str, root: Sysroot, env: Mapping[str, str], kind: str) -> IcdEntry | None:
    text = root.read_text(path, limit=1024)
    if text is None or not _ICD_NAME.fullmatch(text):
        return None
    return IcdEntry(path, text, find_library(text, root, env, kind))


def _entries(
    path: str, root: Sysroot, env: Mapping[str, str], kind: str, value: bool = False
) -> tuple[IcdEntry, ...]:
    """What a vendors directory holds: its ``.icd`` files; for ``OCL_ICD_VENDORS``'s
    ``value``, also one ``.icd`` file, or (ocl-icd) a library."""
    if not value and not root.is_dir(path):
        return ()
    if root.is_dir(path):
        names = [n for n in root.listdir(path) if n.endswith(".icd")][:_MAX_ICDS]
        found = (_icd_file(posixpath.join(path, n), root, env, kind) for n in names)
        return tuple(e for e in found if e is not None)
    if path.endswith(".icd"):
        entry = _icd_file(path, root, env, kind)
        return (entry,) if entry else ()
    return (IcdEntry(None, path, find_library(path, root, env, kind)),)


def icd_sources(
    loader: ElfFacts | None,
    root: Sysroot,
    env: Mapping[str, str],
    kind: str,
    bundled_dir: str | None = None,
) -> list[IcdSource]:
    """The ICD sources ``loader`` reads, then the known ones it does not read.
    ``bundled_dir``: a pyopencl wheel's own ICD directory (its loader reads it too)."""
    sources: list[IcdSource] = []
    vendors = env.get("OCL_ICD_VENDORS", "")
    vendors = root.device_path(vendors) if vendors.startswith("/") else vendors
    compiled = list(loader.vendors_dirs) if loader and loader.vendors_dirs else []
    if not compiled and kind == "termux":
        compiled = [f"{termux_prefix(root, env)}/etc/OpenCL/vendors"]
    compiled = compiled or [DEFAULT_VENDORS]
    if vendors:
        sources.append(
            IcdSource(
                "OCL_ICD_VENDORS", vendors, True, _entries(vendors, root, env, kind, value=True)
            )
        )
    for directory in compiled:
        sources.append(
            IcdSource("compiled-in", directory, not vendors, _entries(directory, root, env, kind))
        )
    filenames = [root.device_path(f) for f in env.get("OCL_ICD_FILENAMES", "").split(":") if f]
    if filenames and loader is not None and not loader.vendors_dirs:
        # ocl-icd (whose directory is readable in its data) has no OCL_ICD_FILENAMES
        entries = tuple(IcdEntry(None, f, find_library(f, root, env, kind)) for f in filenames)
        sources.append(IcdSource("OCL_ICD_FILENAMES", ":".join(filenames), True, entries))
    if bundled_dir:
        sources.append(IcdSource("pyopencl wheel", bundled_dir, True, _bundled(bundled_dir)))
    if kind == "windows":
        registry = windows_icds()
        sources += [registry] if registry is not None else []
        return sources
    known = [DEFAULT_VENDORS]
    prefix = termux_prefix(root, env)
    if prefix:
        known.append(f"{prefix}/etc/OpenCL/vendors")
    listed = {s.path for s in sources}
    for directory in known:
        if directory not in listed and root.is_dir(directory):
            sources.append(
                IcdSource("known", directory, False, _entries(directory, root, env, kind))
            )
    return sources


#: Where the Khronos loader on Windows finds ICDs: the value names of this key are DLLs.
WINDOWS_VENDORS_KEY = r"SOFTWARE\Khronos\OpenCL\Vendors"


def windows_icds() -> IcdSource | None:
    """The ICDs registered for the Khronos loader on Windows (``HKLM\\SOFTWARE\\Khronos\\
    OpenCL\\Vendors``: each value's name a DLL, its data 0 when enabled); None elsewhere
    or when the key cannot be read."""
    try:
        import winreg  # type: ignore[import-not-found]
    except ImportError:
        return None
    entries = []
    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, WINDOWS_VENDORS_KEY) as key:
            for index in range(_MAX_ICDS):
                try:
                    name, value, _ = winreg.EnumValue(key, index)
                except OSError:
                    break
                if value == 0:  # a non-zero DWORD disables the entry
                    entries.append(IcdEntry(None, name, name if os.path.isfile(name) else None))
    except OSError:
        return None
    return IcdSource("registry", f"HKLM\\{WINDOWS_VENDORS_KEY}", True, tuple(entries))


def _bundled(directory: str) -> tuple[IcdEntry, ...]:
    """The ICDs bundled in a pyopencl wheel (a host directory: the wheel is installed
    here, whatever the sysroot)."""
    host = Sysroot()
    entries = []
    for name in [n for n in host.listdir(directory) if n.endswith(".icd")][:_MAX_ICDS]:
        text = host.read_text(posixpath.join(directory, name), limit=1024)
        if text and _ICD_NAME.fullmatch(text):
            path = text if text.startswith("/") else posixpath.join(directory, text)
            entries.append(
                IcdEntry(
                    posixpath.join(directory, name), text, path if host.is_file(path) else None
                )
            )
    return tuple(entries)
