"""The declaration files of ``cdefs/``: their load order, text, hash and parse."""

from __future__ import annotations

import hashlib
from pathlib import Path

import cffi

from qcom_ext._resources import cdefs_dir

_CORE = "cl_core.h"
_HOST_PTR_BASE = "cl_qcom_ext_host_ptr.h"


def cdef_files() -> list[Path]:
    """The cdef files in load order: core, Khronos/EXT/Intel tiers, host-pointer base, the rest.

    >>> [p.name for p in cdef_files()][:2]
    ['cl_core.h', 'cl_ext_image_requirements_info.h']
    """
    directory = cdefs_dir()
    names = sorted(p.name for p in directory.glob("*.h"))
    tiers = [n for n in names if n.startswith(("cl_khr_", "cl_ext_", "cl_intel_"))]
    rest = [n for n in names if n not in tiers and n not in (_CORE, _HOST_PTR_BASE)]
    return [directory / n for n in (_CORE, *tiers, _HOST_PTR_BASE, *rest)]


def cdef_texts() -> list[tuple[str, str]]:
    """(file name, text) of every cdef file, in load order."""
    return [(p.name, p.read_text(encoding="utf-8")) for p in cdef_files()]


def cdefs_hash(texts: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for name, text in texts:
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


def parse(texts: list[tuple[str, str]]) -> cffi.FFI:
    """A fresh in-line FFI holding every declaration."""
    ffi = cffi.FFI()
    for name, text in texts:
        try:
            ffi.cdef(text)
        except cffi.CDefError as exc:  # name the file: cffi's message does not
            raise cffi.CDefError(f"{name}: {exc}") from exc
    return ffi
