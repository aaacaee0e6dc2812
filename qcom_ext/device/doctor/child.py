"""The doctor's driver calls, each made in a child process (a crashing driver is a
finding, not the end of the command): ``python -m qcom_ext.device.doctor.child``.

Two requests, through :mod:`qcom_ext._isolation` (``run_child`` / ``serve``):

* ``{"what": "python"}``: what a Python started with the given environment reaches:
  pyopencl (importable? its version), the OpenCL library it actually calls (the file
  that holds the ``clGetPlatformIDs`` its module resolves), the platforms it lists, the
  library qcom_ext's binding opens, and the OpenCL-looking libraries mapped at the end;
* ``{"what": "library", "path": ...}``: one library loaded by path with ``ctypes``
  (its own directory first on ``LD_LIBRARY_PATH``, as a fix would put it), the
  platforms it shows, and whether it answers the ICD entry point.

The child reports raw strings; the parent reads them (driver kinds and the verdict).
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

from qcom_ext._isolation import ChildRun, module_command, run_child, serve

__all__ = ["CHILD_MODULE", "child_env", "run_library", "run_python"]

CHILD_MODULE = "qcom_ext.device.doctor.child"
_MAPPED = re.compile(r"(opencl|ocl|pocl|adreno|kgsl)", re.IGNORECASE)
_PLATFORM_NAME, _PLATFORM_VERSION, _PLATFORM_VENDOR = 0x0902, 0x0901, 0x0903
_DEVICE_NAME, _DEVICE_VERSION, _DRIVER_VERSION, _VENDOR_ID = 0x102B, 0x102F, 0x102D, 0x1001
_ALL_DEVICES = 0xFFFFFFFF
_MAX_PLATFORMS = 16


# ---- the parent's side ------------------------------------------------------------------


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a child that imports this qcom_ext: ``env``'s own ``PYTHONPATH``
    first (what a Python started with it would import), then this process's path."""
    out = dict(env)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    paths += [p for p in sys.path if p]
    out["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    out["PYTHONUNBUFFERED"] = "1"
    return out


def _outcome(run: ChildRun) -> dict[str, Any]:
    if run.result is not None and run.result.get("outcome") == "ok":
        return dict(run.result)
    if run.result is not None:  # an exception in the child: a finding too
        return {"outcome": "error", "error": str(run.result.get("message"))}
    return {
        "outcome": "timeout" if run.timed_out else "crash",
        "signal": run.signal,
        "stage": run.stage,
        "log": run.log[-400:],
    }


def run_python(env: Mapping[str, str], timeout: float) -> dict[str, Any]:
    """What a Python started with ``env`` reaches (see the module docstring)."""
    run = run_child(
        module_command(CHILD_MODULE), {"what": "python"}, timeout=timeout, env=child_env(env)
    )
    return _outcome(run)


def run_library(path: str, env: Mapping[str, str], timeout: float) -> dict[str, Any]:
    """The platforms the library at host ``path`` shows, loaded in a child whose
    ``LD_LIBRARY_PATH`` starts with the library's directory."""
    extra = dict(env)
    search = [os.path.dirname(path), *[d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]]
    extra["LD_LIBRARY_PATH"] = ":".join(dict.fromkeys(search))
    request = {"what": "library", "path": path}
    run = run_child(module_command(CHILD_MODULE), request, timeout=timeout, env=child_env(extra))
    return _outcome(run)


# ---- the child's side -------------------------------------------------------------------


def _mapped_libraries() -> list[str]:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    paths = (line.split(None, 5)[5] for line in lines if len(line.split(None, 5)) == 6)
    found = [p for p in paths if p.startswith("/") and ".so" in p]
    return list(dict.fromkeys(p for p in found if _MAPPED.search(os.path.basename(p))))


def _pyopencl_platforms(pyopencl: Any) -> tuple[list[dict[str, Any]], str | None]:
    try:
        platforms = pyopencl.get_platforms()
    except Exception as exc:  # pyopencl.Error (PLATFORM_NOT_FOUND_KHR) or worse
        return [], f"{type(exc).__name__}: {exc}"
    found = []
    for platform in platforms[:_MAX_PLATFORMS]:
        try:
            devices = [
                {
                    "name": d.name,
                    "version": d.version,
                    "driver_version": d.driver_version,
                    "vendor_id": int(d.vendor_id),
                }
                for d in platform.get_devices()
            ]
        except Exception:
            devices = []
        found.append(
            {
                "name": platform.name,
                "vendor": platform.vendor,
                "version": platform.version,
                "devices": devices,
            }
        )
    return found, None


def _python(stage: Callable[[str], None]) -> dict[str, Any]:
    stage("import pyopencl")
    try:
        import pyopencl
        import pyopencl._cl as _cl
    except Exception as exc:
        return {"outcome": "ok", "pyopencl": None, "import_error": f"{type(exc).__name__}: {exc}"}
    from qcom_ext.binding import lib

    stage("clGetPlatformIDs (pyopencl)")
    platforms, error = _pyopencl_platforms(pyopencl)
    result: dict[str, Any] = {
        "outcome": "ok",
        "pyopencl": {"version": pyopencl.VERSION_TEXT, "module": _cl.__file__},
        "library": lib.pyopencl_library(),
        "platforms": platforms,
        "platforms_error": error,
        "pyopencl_home": os.environ.get("PYOPENCL_HOME"),
    }
    stage("qcom_ext's binding opens its OpenCL library")
    try:
        library = lib.driver.library
        result["binding"] = {"path": os.path.realpath(library.path), "origin": library.origin}
    except Exception as exc:
        result["binding"] = {"error": f"{type(exc).__name__}: {exc}"}
    result["mapped"] = _mapped_libraries()
    return result


_P, _U, _SIZE = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t
_PROTOTYPES = {
    "clGetPlatformIDs": (_U, ctypes.POINTER(_P), ctypes.POINTER(_U)),
    "clGetPlatformInfo": (_P, _U, _SIZE, _P, ctypes.POINTER(_SIZE)),
    "clGetDeviceIDs": (_P, ctypes.c_uint64, _U, ctypes.POINTER(_P), ctypes.POINTER(_U)),
    "clGetDeviceInfo": (_P, _U, _SIZE, _P, ctypes.POINTER(_SIZE)),
}


def _entry(library: ctypes.CDLL, name: str) -> Any:
    fn = getattr(library, name, None)
    if fn is not None:
        fn.restype, fn.argtypes = ctypes.c_int32, _PROTOTYPES[name]
    return fn


def _typed(address: int, name: str) -> Any:
    prototype = ctypes.CFUNCTYPE(ctypes.c_int32, *_PROTOTYPES[name])
    return prototype(address)


def _dispatched(platform: int, index: int, name: str) -> Any:
    """Entry ``index`` of the ICD dispatch table every object of an ICD starts with
    (``cl_khr_icd``: 1 clGetPlatformInfo, 2 clGetDeviceIDs, 3 clGetDeviceInfo)."""
    table = ctypes.cast(platform, ctypes.POINTER(ctypes.POINTER(_P)))[0]
    address = table[index]
    return _typed(address, name) if address else None


def _text(get: Any, handle: int, param: int) -> str:
    size = _SIZE()
    if get(handle, param, 0, None, ctypes.byref(size)) != 0:
        return ""
    buffer = ctypes.create_string_buffer(max(1, min(size.value, 1 << 16)))
    if get(handle, param, len(buffer), ctypes.cast(buffer, _P), None) != 0:
        return ""
    return buffer.value.decode("utf-8", errors="replace")


def _handles(call: Callable[..., int], *head: Any) -> list[int]:
    count = _U()
    if call(*head, 0, None, ctypes.byref(count)) != 0 or count.value == 0:
        return []
    n = min(count.value, _MAX_PLATFORMS)
    found = (_P * n)()
    if call(*head, n, found, None) != 0:
        return []
    return [h for h in found if h]


def _library(path: str, stage: Callable[[str], None]) -> dict[str, Any]:
    stage(f"loading {path}")
    try:
        library = ctypes.CDLL(path)
    except OSError as exc:
        return {"outcome": "ok", "loaded": False, "error": str(exc)}
    extension = getattr(library, "clGetExtensionFunctionAddress", None)
    icd_entry = None
    if extension is not None:
        extension.restype, extension.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
        stage("clGetExtensionFunctionAddress(clIcdGetPlatformIDsKHR)")
        icd_entry = bool(extension(b"clIcdGetPlatformIDsKHR"))
    get_ids = _entry(library, "clGetPlatformIDs")
    entries = ("clGetPlatformInfo", "clGetDeviceIDs", "clGetDeviceInfo")
    exported = [_entry(library, n) for n in entries]
    through_icd = get_ids is None
    if through_icd:  # an ICD-only library (pocl): its ICD entry and dispatch table
        address = extension(b"clIcdGetPlatformIDsKHR") if extension is not None else None
        if not address:
            return {"outcome": "ok", "loaded": True, "icd_entry": icd_entry, "platforms": None}
        get_ids = _typed(address, "clGetPlatformIDs")
    stage("clIcdGetPlatformIDsKHR" if through_icd else "clGetPlatformIDs")
    platforms = []
    for handle in _handles(get_ids):
        stage("clGetPlatformInfo / clGetDeviceIDs / clGetDeviceInfo")
        if through_icd or None in exported:
            exported = [_dispatched(handle, i + 1, n) for i, n in enumerate(entries)]
            if None in exported:
                continue
        info, get_devices, device_info = exported
        devices = []
        for device in _handles(get_devices, handle, _ALL_DEVICES):
            vendor = _U()
            device_info(device, _VENDOR_ID, 4, ctypes.cast(ctypes.byref(vendor), _P), None)
            devices.append(
                {
                    "name": _text(device_info, device, _DEVICE_NAME),
                    "version": _text(device_info, device, _DEVICE_VERSION),
                    "driver_version": _text(device_info, device, _DRIVER_VERSION),
                    "vendor_id": vendor.value,
                }
            )
        platforms.append(
            {
                "name": _text(info, handle, _PLATFORM_NAME),
                "vendor": _text(info, handle, _PLATFORM_VENDOR),
                "version": _text(info, handle, _PLATFORM_VERSION),
                "devices": devices,
            }
        )
    result = {"outcome": "ok", "loaded": True, "icd_entry": icd_entry, "platforms": platforms}
    result["through"] = "icd" if through_icd else "exports"
    return result


def _handle(request: dict[str, Any], stage: Callable[[str], None]) -> dict[str, Any]:
    if request.get("what") == "library" and isinstance(request.get("path"), str):
        return _library(request["path"], stage)
    return _python(stage)


def main() -> int:
    """``python -m qcom_ext.device.doctor.child``."""
    return serve(_handle)


if __name__ == "__main__":
    sys.exit(main())
