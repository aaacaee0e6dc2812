"""What a driver's strings say: the OpenCL implementation, the Adreno model and compiler,
the OpenCL versions, and a device's short label.

Every function here takes strings alone (a driver string is untrusted input: the
patterns take linear time on any text), so Adreno behaviour is checked without one.
Each parser follows a format, never a list of known strings.

>>> parse_adreno_model("OpenCL 3.0 Adreno(TM) 740"), parse_adreno_model("Adreno X1-85")
('740', 'X1-85')
>>> find_model(device_name="FD630")
('630', 'device_name')
>>> parse_opencl_version("OpenCL 3.0 "), parse_opencl_c_version("OpenCL C 1.2 ")
((3, 0), (1, 2))
>>> driver_kind(platform_name="rusticl", device_name="FD630", vendor_id=0x5143)
'rusticl'
>>> device_label("Portable Computing Language", "cpu", "3.1+debian", "cpu", None, False)
'pocl-3.1-cpu'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal, get_args

from qcom_ext.device.compiler_version import CompilerVersion

__all__ = [
    "DRIVERS",
    "Driver",
    "device_facts",
    "device_label",
    "driver_kind",
    "find_model",
    "parse_adreno_compiler",
    "parse_adreno_model",
    "parse_opencl_c_version",
    "parse_opencl_version",
    "split_extensions",
    "unknown_qcom",
]

#: The OpenCL implementations ``driver_kind`` tells apart.
Driver = Literal[
    "qualcomm",
    "rusticl",
    "clvk",
    "openclon12",
    "pocl",
    "nvidia",
    "oclgrind",
    "intel",
    "amd",
    "other",
]
DRIVERS: tuple[str, ...] = get_args(Driver)
QUALCOMM_VENDOR_ID = 0x5143  # "QC"
_VENDOR_IDS = {0x10DE: "nvidia", 0x8086: "intel", 0x1002: "amd"}

# No two adjacent parts can match the same characters, and a number starts after a
# non-digit: linear time on any text.
_ADRENO_MODEL = re.compile(r"Adreno\s*(?:\(TM\)\s*)?(X\d+-\d+|\d{3,4}[A-Za-z]?)\b")
# Mesa's freedreno names its devices "FD" and the GPU number (rusticl: "FD630").
_FREEDRENO_NAME = re.compile(r"(?<![A-Za-z0-9])FD(\d{3})(?![A-Za-z0-9])")
# "OpenCL<space><major.minor><space><vendor-specific>" (CL_DEVICE_VERSION,
# CL_PLATFORM_VERSION) and "OpenCL<space>C<space><major.minor>..." (the OpenCL C version).
_OPENCL_VERSION = re.compile(r"\s*OpenCL\s+(\d{1,3})\.(\d{1,3})(?!\d)")
_OPENCL_C_VERSION = re.compile(r"\s*OpenCL\s+C\s+(\d{1,3})\.(\d{1,3})(?!\d)")
_AMD = re.compile(r"\bamd\b|advanced micro devices")
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


def unknown_qcom(advertised: Iterable[str], known: Iterable[str]) -> tuple[str, ...]:
    """The advertised ``cl_qcom_*`` names not in ``known``, sorted.

    >>> unknown_qcom(["cl_qcom_perf_hint", "cl_qcom_extra_vector_types"], ["cl_qcom_perf_hint"])
    ('cl_qcom_extra_vector_types',)
    """
    return tuple(sorted(set(n for n in advertised if n.startswith("cl_qcom_")) - set(known)))


def parse_adreno_model(*texts: str) -> str | None:
    """``"740"`` from ``"OpenCL 3.0 Adreno(TM) 740"``, ``"X1-85"`` from a Windows name."""
    for text in texts:
        match = _ADRENO_MODEL.search(text or "")
        if match:
            return match.group(1)
    return None


def find_model(
    device_version: str = "", device_name: str = "", opencl_c_version: str = ""
) -> tuple[str, str] | None:
    """``(model, field)``: the Adreno model and the OpenCL string that named it, looked
    for in the device version, the device name (``Adreno ...`` or Mesa's ``FD630``),
    then the OpenCL C version; None when no string names one."""
    for field, text in (
        ("device_version", device_version),
        ("device_name", device_name),
        ("opencl_c_version", opencl_c_version),
    ):
        model = parse_adreno_model(text)
        if model is None and field == "device_name":
            match = _FREEDRENO_NAME.search(text or "")
            model = match.group(1) if match else None
        if model is not None:
            return model, field
    return None


def parse_adreno_compiler(*texts: str) -> str | None:
    """``"E031.38.11.12"`` from a driver string ending ``"Compiler E031.38.11.12"``: the
    text of :meth:`CompilerVersion.parse <qcom_ext.device.compiler_version.CompilerVersion.parse>`.

    >>> parse_adreno_compiler("OpenCL 3.0 QUALCOMM build: 0.1 VDX.17.75.00")
    'DX.17.75.00'
    """
    version = CompilerVersion.parse(*texts)
    return None if version is None else version.text


def _numbers(pattern: re.Pattern[str], text: str | None) -> tuple[int, int] | None:
    match = pattern.match(text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_opencl_version(text: str | None) -> tuple[int, int] | None:
    """``(3, 0)`` from ``"OpenCL 3.0 Adreno(TM) 740"`` or ``"OpenCL 3.0 "``; else None."""
    return _numbers(_OPENCL_VERSION, text)


def parse_opencl_c_version(text: str | None) -> tuple[int, int] | None:
    """``(1, 2)`` from ``"OpenCL C 1.2 Adreno(TM) 640"``; else None."""
    return _numbers(_OPENCL_C_VERSION, text)


def driver_kind(
    *,
    platform_name: str = "",
    platform_version: str = "",
    device_name: str = "",
    device_version: str = "",
    driver_version: str = "",
    vendor_id: int = 0,
) -> Driver:
    """Which OpenCL implementation runs the device: one of :data:`DRIVERS`.

    Implementations that run on other vendors' hardware (Oclgrind, pocl, Mesa's rusticl
    and Clover, clvk, Microsoft's OpenCLOn12 over D3D12) are recognised first, by their
    platform; then the hardware vendor's own driver, by vendor id or name. An Adreno
    under Mesa or OpenCLOn12 is never Qualcomm's.

    >>> driver_kind(platform_name="clvk", device_name="Adreno (TM) 740")
    'clvk'
    >>> driver_kind(platform_name="OpenCLOn12", device_name="Qualcomm(R) Adreno(TM) X1-85 GPU")
    'openclon12'
    >>> driver_kind(vendor_id=0x5143, driver_version="OpenCL 3.0 QUALCOMM build: 1")
    'qualcomm'
    """
    platform = f"{platform_name} {platform_version}".lower()
    name = device_name.lower()
    if "oclgrind" in platform or "oclgrind" in name:
        return "oclgrind"
    if "portable computing language" in platform or "pocl" in platform:
        return "pocl"
    for layered in ("rusticl", "clvk"):
        if layered in platform:
            return layered
    if "openclon12" in platform or "d3d12" in platform:  # Microsoft's layer over D3D12
        return "openclon12"
    if "mesa" in platform or "clover" in platform or _FREEDRENO_NAME.search(device_name):
        return "other"
    device = f"{name} {device_version.lower()}"
    if vendor_id == QUALCOMM_VENDOR_ID or "adreno" in device:
        return "qualcomm"
    if "qualcomm" in platform or "qualcomm" in driver_version.lower():
        return "qualcomm"
    if vendor_id in _VENDOR_IDS:
        return _VENDOR_IDS[vendor_id]
    for kind in ("nvidia", "intel"):
        if kind in platform:
            return kind
    return "amd" if _AMD.search(platform) else "other"


def device_facts(
    *,
    device_name: str,
    device_version: str,
    driver_version: str,
    opencl_c_version: str,
    vendor_id: int,
    device_type: str,
    platform_name: str,
    platform_version: str,
    kgsl: Any = None,
) -> dict[str, Any]:
    """The :class:`~qcom_ext.device.caps.DeviceCaps` fields the strings decide.

    ``kgsl`` (the kernel's facts: anything with ``model()``, a
    :class:`~qcom_ext.device.kernel_gpu.KernelGpu`) names the model only for an
    Adreno under Qualcomm's driver whose OpenCL strings name none.
    """
    found = find_model(device_version, device_name, opencl_c_version)
    adreno = (
        vendor_id == QUALCOMM_VENDOR_ID
        or "adreno" in f"{device_name} {device_version} {opencl_c_version}".lower()
        or (found is not None and found[1] == "device_name")  # Mesa's "FD630"
    )
    kind = driver_kind(
        platform_name=platform_name,
        platform_version=platform_version,
        device_name=device_name,
        device_version=device_version,
        driver_version=driver_version,
        vendor_id=vendor_id,
    )
    if found is None and adreno and kind == "qualcomm" and kgsl is not None:
        found = kgsl.model()
    model, source = found if adreno and found else (None, None)
    compiler = CompilerVersion.parse(driver_version, platform_version)
    compiler = compiler if kind == "qualcomm" else None
    return {
        "is_adreno": adreno,
        "adreno_model": model,
        "model_source": source,
        "driver": kind,
        "compiler_version": compiler,
        "adreno_compiler": None if compiler is None else compiler.text,
        "opencl_version": parse_opencl_version(device_version),
        "opencl_c_version_number": parse_opencl_c_version(opencl_c_version),
        "label": device_label(
            platform_name, device_name, driver_version, device_type, model, adreno, kind
        ),
    }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def device_label(
    platform_name: str,
    device_name: str,
    driver: str,
    device_type: str,
    model: str | None,
    is_adreno: bool,
    kind: str = "qualcomm",
) -> str:
    """A short name for reports and test ids: ``adreno-740-gpu``, ``pocl-3.1-cpu``; an
    Adreno under another implementation than Qualcomm's (``kind``) says which:
    ``rusticl-adreno-630-gpu``."""
    if is_adreno:
        label = f"adreno-{(model or 'unknown').lower()}-{device_type}"
        if kind == "qualcomm":
            return label
        prefix = kind if kind != "other" else _slug(platform_name) or "opencl"
        return f"{prefix}-{label}"
    lowered = f"{platform_name} {device_name}".lower()
    short = next((short for needle, short in _SHORT_NAMES if needle in lowered), None)
    if short is None:
        short = _slug(platform_name) or "opencl"
    number = _VERSION_NUMBER.search(driver or "")
    version = f"-{number.group(0)}" if number else ""
    return f"{short}{version}-{device_type}"
