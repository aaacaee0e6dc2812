"""Who a report's device is, and what ran it: the identity and environment blocks.

The identity holds the six keys gpuinfo.org files its OpenCL reports under (device name,
device version, driver version, OS name, OS version, architecture), plus the Adreno
model and compiler the probe reads from the driver strings. ``identity_key`` is the
sha256 of its canonical JSON (sorted keys, no spaces): two reports of the same device,
driver and system share it.

>>> ident = {"device_name": "QUALCOMM Adreno(TM)", "adreno_model": "730"}
>>> identity_key(ident) == identity_key(dict(reversed(ident.items())))
True
>>> len(identity_key(ident))
64
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from qcom_ext._version import __version__
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.compiler_version import CompilerVersion

__all__ = ["OsFacts", "compiler_key", "environment", "identity", "identity_key", "os_facts"]

#: (OS name, OS version, architecture), as gpuinfo.org names them.
OsFacts = tuple[str, str, str]


def _android_release() -> str | None:
    """The Android release where Python runs on Android (Termux included), else None."""
    android_ver = getattr(platform, "android_ver", None)  # Python 3.13+
    if android_ver is not None:
        release = android_ver().release
        if release:
            return str(release)
    if hasattr(sys, "getandroidapilevel"):
        return f"API {sys.getandroidapilevel()}"
    return None


def os_facts() -> OsFacts:
    """This system's OS name, version and architecture: ``("Android", "14", "aarch64")``,
    ``("Debian GNU/Linux", "12", "x86_64")``, ``("Windows", "10.0.22631", "AMD64")``,
    ``("macOS", "14.5", "arm64")``."""
    machine = platform.machine()
    android = _android_release()
    if android is not None:
        return "Android", android, machine
    system = platform.system()
    if system == "Linux":
        try:
            release = platform.freedesktop_os_release()
        except OSError:
            return "Linux", platform.release(), machine
        return release.get("NAME", "Linux"), release.get("VERSION_ID", ""), machine
    if system == "Darwin":
        return "macOS", platform.mac_ver()[0], machine
    return system, platform.version(), machine


def compiler_key(version: CompilerVersion | None) -> list[int] | None:
    """The Adreno compiler as an ordered list of ints (:meth:`CompilerVersion.sort_key`)."""
    return None if version is None else list(version.sort_key())


def identity(caps: DeviceCaps, os: OsFacts | None = None) -> dict[str, Any]:
    """The identity block of ``caps``'s device on the OS ``os`` (this one by default)."""
    os_name, os_version, architecture = os_facts() if os is None else os
    return {
        "device_name": caps.device_name.strip(),
        "device_version": caps.device_version.strip(),
        "driver_version": caps.driver_version.strip(),
        "os_name": os_name,
        "os_version": os_version,
        "architecture": architecture,
        "adreno_model": caps.adreno_model,
        "compiler_version": caps.adreno_compiler,
        "compiler_key": compiler_key(caps.compiler_version),
    }


def identity_key(ident: Mapping[str, Any]) -> str:
    """The sha256 (hex) of the canonical JSON of ``ident``: sorted keys, no spaces, ASCII
    (non-ASCII characters as ``\\u`` escapes, so the bytes hashed are the same everywhere)."""
    canonical = json.dumps(ident, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _pyopencl_version() -> str | None:
    try:
        return metadata.version("pyopencl")
    except metadata.PackageNotFoundError:
        return None


def environment(caps: DeviceCaps) -> dict[str, Any]:
    """The environment block: Python, pyopencl and qcom_ext versions, the platform."""
    return {
        "python": platform.python_version(),
        "pyopencl": _pyopencl_version(),
        "qcom_ext": __version__,
        "platform_name": caps.platform_name.strip(),
        "platform_version": caps.platform_version.strip(),
    }
