"""What a driver's strings say: the Adreno model and compiler, and a device's short label.

Every function here takes strings alone (a driver string is untrusted input: the
patterns take linear time on any text), so Adreno behaviour is checked without one.

>>> parse_adreno_model("OpenCL 3.0 Adreno(TM) 740"), parse_adreno_model("Adreno X1-85")
('740', 'X1-85')
>>> device_label("Portable Computing Language", "cpu", "3.1+debian", "cpu", None, False)
'pocl-3.1-cpu'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["device_label", "parse_adreno_compiler", "parse_adreno_model", "split_extensions"]

# No two adjacent parts can match the same characters, and a number starts after a
# non-digit: linear time on any text.
_ADRENO_MODEL = re.compile(r"Adreno\s*(?:\(TM\)\s*)?(X\d+-\d+|\d{3,4}[A-Za-z]?)\b")
_ADRENO_COMPILER = re.compile(r"Compiler\s+([A-Z]+\d*(?:\.[0-9A-Za-z]+)+)")
_VERSION_NUMBER = re.compile(r"(?<!\d)\d+(?:\.\d+)+")
_SHORT_NAMES = (
    ("portable computing", "pocl"),
    ("pocl", "pocl"),
    ("oclgrind", "oclgrind"),
    ("nvidia", "nvidia"),
    ("intel", "intel"),
    ("rusticl", "rusticl"),
    ("amd", "amd"),
)


def split_extensions(extensions: str | Iterable[str]) -> frozenset[str]:
    """The names of an extension string (or of several strings).

    Whitespace split, never substring search: cl_qcom_ext_host_ptr is a prefix of
    cl_qcom_ext_host_ptr_iocoherent.

    >>> sorted(split_extensions("cl_qcom_ext_host_ptr_iocoherent  cl_khr_fp16"))
    ['cl_khr_fp16', 'cl_qcom_ext_host_ptr_iocoherent']
    """
    if isinstance(extensions, str):
        return frozenset(extensions.split())
    return frozenset(e for item in extensions for e in str(item).split())


def parse_adreno_model(*texts: str) -> str | None:
    """``"740"`` from ``"OpenCL 3.0 Adreno(TM) 740"``, ``"X1-85"`` from a Windows name."""
    for text in texts:
        match = _ADRENO_MODEL.search(text or "")
        if match:
            return match.group(1)
    return None


def parse_adreno_compiler(*texts: str) -> str | None:
    """``"E031.38.11.12"`` from a driver string ending ``"Compiler E031.38.11.12"``."""
    for text in texts:
        match = _ADRENO_COMPILER.search(text or "")
        if match:
            return match.group(1)
    return None


def device_label(
    platform_name: str,
    device_name: str,
    driver: str,
    device_type: str,
    model: str | None,
    is_adreno: bool,
) -> str:
    """A short name for reports and test ids: ``adreno-740-gpu``, ``pocl-3.1-cpu``."""
    if is_adreno:
        return f"adreno-{(model or 'unknown').lower()}-{device_type}"
    lowered = f"{platform_name} {device_name}".lower()
    short = next((short for needle, short in _SHORT_NAMES if needle in lowered), None)
    if short is None:
        short = re.sub(r"[^a-z0-9]+", "-", platform_name.lower()).strip("-") or "opencl"
    number = _VERSION_NUMBER.search(driver or "")
    version = f"-{number.group(0)}" if number else ""
    return f"{short}{version}-{device_type}"
