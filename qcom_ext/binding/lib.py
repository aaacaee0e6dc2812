"""The one cffi ``FFI``, the OpenCL library it talks to, and the entry points.

* ``ffi`` holds every declaration of ``cdefs/`` (ABI mode: nothing is compiled).
* ``C`` reads the ``#define`` constants (``C.CL_PERF_HINT_HIGH_QCOM``) without any
  OpenCL library being present.
* ``driver`` resolves entry points: core ones by symbol lookup in the library
  pyopencl itself uses, extension ones through
  ``clGetExtensionFunctionAddressForPlatform`` first and symbol lookup second.
  ``driver.substitute(...)`` stands cffi callbacks in for entry points, which is how
  the tests check what reaches a driver we do not have.

The library is opened lazily, on the first entry point resolved, through this cascade:

1. ``QCOM_EXT_OPENCL_LIBRARY`` if set (and nothing else): an absolute path or a bare
   library name; a relative path would be resolved against the current directory, where
   a planted library would run (ConfigError naming the value);
2. the ICD loader pyopencl is linked with (``pyopencl._cl``; importing pyopencl first
   also sets ``PYOPENCL_HOME``, without which the wheel's loader crashes);
3. on Android, the vendor library (``/vendor/lib64/libOpenCL.so`` ...), if the
   loader above sees no platform;
4. ``ctypes.util.find_library("OpenCL")``.

A library that is not the one pyopencl talks to may not know pyopencl's handles: where
``clGetDeviceInfo`` / ``clGetPlatformInfo`` answer ``CL_INVALID_DEVICE`` /
``CL_INVALID_PLATFORM`` for a device or platform pyopencl gave, the call raises
:class:`~qcom_ext.errors.LibraryMismatch` naming both libraries (pyopencl's found with
``dladdr``) instead of a CLError that names neither.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import numbers
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from qcom_ext.binding.cdefs import cdef_texts, cdefs_hash, parse
from qcom_ext.errors import (
    CLError,
    ConfigError,
    EntryPointMissing,
    LibraryMismatch,
    LibraryNotFound,
    QcomExtWarning,
    register_error_names,
)

ENV_LIBRARY = "QCOM_EXT_OPENCL_LIBRARY"
PYOPENCL_LOADER = "pyopencl's ICD loader"
# entry point taking a handle first -> what a library answers for a handle it does not know
_FOREIGN_STATUS = {
    "clGetDeviceInfo": "CL_INVALID_DEVICE",
    "clGetPlatformInfo": "CL_INVALID_PLATFORM",
}
ANDROID_VENDOR_LIBRARIES = (
    "/vendor/lib64/libOpenCL.so",
    "/system/vendor/lib64/libOpenCL.so",
    "/vendor/lib/libOpenCL.so",
    "/system/vendor/lib/libOpenCL.so",
)
_DEFINE = re.compile(r"^\s*#define\s+(\w+)\s+(\S+)", re.MULTILINE)
# Entry points whose prototype is another's under a different name (no typedef of their own).
_SAME_PROTOTYPE = {"clGetKernelSubGroupInfoKHR": "clGetKernelSubGroupInfo"}


def fn_type(name: str) -> str:
    """The cffi function-pointer type of entry point ``name``.

    >>> fn_type("clGetKernelSubGroupInfoKHR")
    'clGetKernelSubGroupInfo_fn'
    """
    return f"{_SAME_PROTOTYPE.get(name, name)}_fn"


def _load_ffi() -> tuple[Any, list[str]]:
    """The generated out-of-line FFI, or an in-line parse when cdefs/ changed since."""
    texts = cdef_texts()
    names = [m.group(1) for _, text in texts for m in _DEFINE.finditer(text)]
    try:
        from qcom_ext.binding import _cl_ffi
    except ImportError:  # a checkout where it was never generated
        _cl_ffi = None
    if _cl_ffi is not None and cdefs_hash(texts) == _cl_ffi.CDEFS_SHA256:
        return _cl_ffi.ffi, names
    warnings.warn(
        "qcom_ext/binding/_cl_ffi.py does not match cdefs/; parsing the cdefs at import "
        "(slow). Regenerate it with: python -m qcom_ext.binding.ffi_build",
        QcomExtWarning,
        stacklevel=2,
    )
    return parse(texts), names


ffi, _CONSTANT_NAMES = _load_ffi()


def _constants_library() -> Any:
    # #define constants are held by the FFI itself; any opened library exposes them.
    try:
        return ffi.dlopen(None)
    except (OSError, TypeError):  # Windows cannot dlopen(None) on Python 3
        return ffi.dlopen(ctypes.util.find_library("c") or "msvcrt")


C = _constants_library()


def constant_names() -> list[str]:
    """Every ``#define`` name of ``cdefs/``, in load order."""
    return list(_CONSTANT_NAMES)


@cache
def error_codes() -> dict[int, str]:
    """Status code -> name, from the negative constants of ``cdefs/`` (first name wins).

    >>> error_codes()[-1001]
    'CL_PLATFORM_NOT_FOUND_KHR'
    """
    table = {0: "CL_SUCCESS"}
    for name in _CONSTANT_NAMES:
        value = getattr(C, name)
        if value < 0:
            table.setdefault(value, name)
    return table


register_error_names(error_codes())  # CLError names its status from now on


def check(status: int, routine: str) -> None:
    """Raise :class:`CLError` unless ``status`` is ``CL_SUCCESS``."""
    if status != 0:
        raise CLError(routine, status)


def check_handle(
    handle: Any,
    err: Any,
    routine: str,
    detail: str | None = None,
    release: Callable[[Any], Any] | None = None,
) -> int:
    """The integer value of the handle a ``clCreate*``-style call returned, or CLError.

    ``err`` is the ``cl_int *`` passed as ``errcode_ret``. A NULL handle with
    ``CL_SUCCESS`` is an error too (CL_INVALID_VALUE; the message says what happened),
    and a handle returned together with an error is given back through ``release`` (the
    entry point that frees it) before the error is raised: nothing is left half-built.

    >>> check_handle(ffi.NULL, ffi.new("cl_int *", 0), "clCreateBuffer", "size 64")
    Traceback (most recent call last):
    ...
    qcom_ext.errors.CLError: clCreateBuffer failed: CL_INVALID_VALUE (-30): the driver ...
    """
    status = int(err[0])
    if status == 0 and handle != ffi.NULL:
        return int(ffi.cast("intptr_t", handle))
    if handle != ffi.NULL and release is not None:
        release(handle)  # its own status is moot: the call's error is what is reported
    if status == 0:
        note = "the driver returned a NULL handle with CL_SUCCESS"
        detail = f"{note}; {detail}" if detail else note
    raise CLError(routine, status or C.CL_INVALID_VALUE, detail)


def handle_int(handle: Any) -> int:
    """The integer value of a cffi handle, a pyopencl object (``.int_ptr``) or an int.

    Anything else is a :class:`~qcom_ext.ConfigError`: cffi would turn a one-character
    string or a float into a small integer, a "handle" the driver then dereferences.

    >>> handle_int("a")
    Traceback (most recent call last):
    ...
    qcom_ext.errors.ConfigError: expected an OpenCL object (a pyopencl object, a cffi \
pointer or an int handle), got 'a'
    """
    if isinstance(handle, int) and not isinstance(handle, bool):
        return handle
    if hasattr(handle, "int_ptr"):
        return int(handle.int_ptr)
    if isinstance(handle, ffi.CData) and ffi.typeof(handle).kind in ("pointer", "array"):
        return int(ffi.cast("intptr_t", handle))
    if isinstance(handle, numbers.Integral) and not isinstance(handle, bool):  # numpy ints
        return int(handle)
    raise ConfigError(
        "expected an OpenCL object (a pyopencl object, a cffi pointer or an int handle), "
        f"got {handle!r}"
    )


@dataclass(frozen=True)
class OpenCLLibrary:
    """An opened OpenCL library: where it came from and its symbol table."""

    path: str
    origin: str
    handle: ctypes.CDLL

    def address(self, name: str) -> int | None:
        """The address of an exported symbol, or None when it is not exported."""
        try:
            return ctypes.cast(getattr(self.handle, name), ctypes.c_void_p).value
        except AttributeError:
            return None


def _count_platforms(library: OpenCLLibrary) -> int:
    address = library.address("clGetPlatformIDs")
    if address is None:
        raise OSError(f"{library.path} does not export clGetPlatformIDs")
    count = ffi.new("cl_uint *")
    status = ffi.cast("clGetPlatformIDs_fn", address)(0, ffi.NULL, count)
    return count[0] if status == 0 else 0


def _pyopencl_library() -> str:
    import pyopencl  # noqa: F401  (sets PYOPENCL_HOME before the loader is used)
    import pyopencl._cl as _cl

    if sys.platform == "win32":  # a .pyd does not re-export its imports; use OpenCL.dll
        return ctypes.util.find_library("OpenCL") or "OpenCL.dll"
    return _cl.__file__


def checked_override(value: str) -> str:
    """``value`` of ``QCOM_EXT_OPENCL_LIBRARY`` unless it is a relative path, which the
    dynamic loader would resolve against the current directory (ConfigError naming it).
    A bare library name (``libOpenCL.so.1``) is searched on the loader's path, never the
    current directory, as the cascade's ``find_library`` names are.

    >>> checked_override("./libOpenCL.so")
    Traceback (most recent call last):
    ...
    qcom_ext.errors.ConfigError: QCOM_EXT_OPENCL_LIBRARY='./libOpenCL.so' is a relative path: ...
    """
    separators = {os.sep, os.altsep or os.sep, "/"}
    if not os.path.isabs(value) and any(sep in value for sep in separators):
        raise ConfigError(
            f"{ENV_LIBRARY}={value!r} is a relative path: it would be resolved against the "
            "current directory, where a planted library would run; give an absolute path "
            "(or a bare library name, searched on the dynamic loader's path)"
        )
    return value


def _candidates() -> Iterator[tuple[str, Callable[[], str]]]:
    override = os.environ.get(ENV_LIBRARY)
    if override:
        path = checked_override(override)
        yield ENV_LIBRARY, lambda: path
        return
    yield PYOPENCL_LOADER, _pyopencl_library
    for path in ANDROID_VENDOR_LIBRARIES:
        if os.path.exists(path):
            yield "Android vendor library", lambda path=path: path
    system = ctypes.util.find_library("OpenCL")
    if system:
        yield "system libOpenCL", lambda: system


class _DlInfo(ctypes.Structure):
    _fields_ = (
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    )


def defining_file(address: int) -> str | None:
    """The file of the loaded library holding ``address`` (``dladdr``); None where that
    cannot be determined (no ``dladdr``, as on Windows)."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except (AttributeError, OSError, TypeError):
        return None
    dladdr.argtypes = (ctypes.c_void_p, ctypes.POINTER(_DlInfo))
    dladdr.restype = ctypes.c_int
    info = _DlInfo()
    if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(os.fsdecode(info.dli_fname))


def pyopencl_library() -> str:
    """The OpenCL library pyopencl calls: the file holding the ``clGetPlatformIDs`` its
    module resolves (its ICD loader), else the module itself."""
    path = _pyopencl_library()
    try:
        address = OpenCLLibrary(path, PYOPENCL_LOADER, ctypes.CDLL(path)).address(
            "clGetPlatformIDs"
        )
    except OSError:
        return path
    return (defining_file(address) if address else None) or path


def _pyopencl_objects() -> dict[int, str]:
    """handle -> description of every platform and device pyopencl sees ({} if none)."""
    import pyopencl

    found: dict[int, str] = {}
    try:
        for platform in pyopencl.get_platforms():
            found[platform.int_ptr] = f"platform {platform.name.strip()!r}"
            for device in platform.get_devices():
                found[device.int_ptr] = f"device {device.name.strip()!r}"
    except pyopencl.Error:
        pass  # what pyopencl cannot list, it cannot have handed over either
    return found


def open_library() -> OpenCLLibrary:
    """Open the OpenCL library through the cascade in the module docstring."""
    tried: list[tuple[str, str]] = []
    fallback: OpenCLLibrary | None = None
    for origin, locate in _candidates():
        try:
            path = locate()
            library = OpenCLLibrary(path, origin, ctypes.CDLL(path))
            platforms = _count_platforms(library)
        except (OSError, ImportError) as exc:
            tried.append((origin, f"{exc}"))
            continue
        if platforms or origin == ENV_LIBRARY:
            return library
        tried.append((origin, f"{path} loads but reports no OpenCL platform"))
        fallback = fallback or library
    if fallback is not None:  # a loader without drivers: callers report NoPlatformError
        return fallback
    raise LibraryNotFound(tried)


class Driver:
    """Resolves OpenCL entry points, with substitutes for tests.

    Core entry points are attributes (``driver.clGetDeviceInfo(...)``); extension entry
    points come from :meth:`extension_function`, which returns None when absent.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._library: OpenCLLibrary | None = None
        self._core: dict[str, Any] = {}
        self._extension: dict[tuple[int, str], Any] = {}
        self._substitutes: dict[str, Any] = {}

    @property
    def library(self) -> OpenCLLibrary:
        """The opened library (opened on first use)."""
        with self._lock:
            if self._library is None:
                self._library = open_library()
            return self._library

    def function(self, name: str) -> Any:
        """A core entry point as a callable cffi function pointer."""
        substitute = self._substitutes.get(name)
        if substitute is not None:
            return substitute
        fn = self._core.get(name)
        if fn is None:
            address = self.library.address(name)
            if address is None:
                raise EntryPointMissing(f"{self.library.path} does not export {name}")
            fn = self._core[name] = self._guarded(name, ffi.cast(f"{name}_fn", address))
        return fn

    def _guarded(self, name: str, fn: Any) -> Any:
        """``fn``, which raises LibraryMismatch when the library (not pyopencl's) answers
        that it does not know a handle pyopencl gave (see the module docstring)."""
        status_name = _FOREIGN_STATUS.get(name)
        if status_name is None or self.library.origin == PYOPENCL_LOADER:
            return fn
        unknown = getattr(C, status_name)

        def call(handle: Any, *args: Any) -> int:
            status = fn(handle, *args)
            if status == unknown:
                self._refuse_foreign(handle, status_name)
            return status

        return call

    def _refuse_foreign(self, handle: Any, status_name: str) -> None:
        what = _pyopencl_objects().get(int(ffi.cast("intptr_t", handle)))
        if what is None:
            return  # not pyopencl's handle: the caller reports the status as it is
        library = self.library
        detail = f"it answers {status_name} for pyopencl's {what}"
        raise LibraryMismatch(library.path, library.origin, pyopencl_library(), detail)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("cl"):
            return self.function(name)
        raise AttributeError(name)

    def extension_function(self, platform: Any, name: str) -> Any | None:
        """An extension entry point for ``platform``, or None when the driver lacks it.

        ``clGetExtensionFunctionAddressForPlatform`` is asked first; some drivers return
        NULL there for functions they do export, so the library's symbols come second.
        """
        substitute = self._substitutes.get(name)
        if substitute is not None:
            return substitute
        key = (handle_int(platform), name)
        with self._lock:
            if key in self._extension:
                return self._extension[key]
            get_address = self.function("clGetExtensionFunctionAddressForPlatform")
            pointer = get_address(ffi.cast("cl_platform_id", key[0]), name.encode())
            address = int(ffi.cast("uintptr_t", pointer)) or self.library.address(name)
            fn = ffi.cast(fn_type(name), address) if address else None
            self._extension[key] = fn
            return fn

    @contextmanager
    def substitute(self, **implementations: Callable[..., Any]) -> Iterator[list[BaseException]]:
        """Stand Python callables in for entry points while the block runs.

        Each callable becomes a cffi callback of the entry point's ``_fn`` type, so the
        arguments it sees are exactly what a driver would receive. An exception inside a
        callable is re-raised when the block ends (the call itself returns -9999).

        >>> with driver.substitute(clSetPerfHintQCOM=lambda ctx, hint: 0):
        ...     driver.extension_function(0, "clSetPerfHintQCOM")(ffi.NULL, 0x40C3)
        0
        """
        errors: list[BaseException] = []
        callbacks = {name: _callback(name, impl, errors) for name, impl in implementations.items()}
        with self._lock:
            saved = dict(self._substitutes)
            self._substitutes.update(callbacks)
            self._extension.clear()
        try:
            yield errors
        finally:
            with self._lock:
                self._substitutes = saved
                self._extension.clear()
        if errors:
            raise errors[0]


def _callback(name: str, impl: Callable[..., Any], errors: list[BaseException]) -> Any:
    prototype = ffi.typeof(fn_type(name))
    result = prototype.result
    failure = -9999 if result.kind == "primitive" else None

    def on_error(exc_type: type, value: BaseException, tb: Any) -> None:
        errors.append(value)

    if failure is None:
        return ffi.callback(prototype, impl, onerror=on_error)
    return ffi.callback(prototype, impl, error=failure, onerror=on_error)


driver = Driver()
