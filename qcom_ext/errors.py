"""Exceptions and warnings raised by qcom_ext.

Every failure of an OpenCL entry point becomes a :class:`CLError` whose message
reads like pyopencl's::

    >>> import qcom_ext.binding.lib  # loads the cdefs: the status codes get their names
    >>> from qcom_ext.errors import CLError
    >>> str(CLError("clNewRecordingQCOM", -36))
    'clNewRecordingQCOM failed: CL_INVALID_COMMAND_QUEUE (-36)'

This module imports nothing of qcom_ext (it is the bottom of the layers): the names of
the status codes come from the constants of ``cdefs/``, which the binding
(:mod:`qcom_ext.binding.lib`) registers here with :func:`register_error_names` when it
loads. Until then a code is named ``UNKNOWN_ERROR``.
"""

from __future__ import annotations

import signal as _signal
from collections.abc import Mapping, Sequence

__all__ = [
    "BufferTooLargeError",
    "BuildError",
    "CLError",
    "CompilerCrashError",
    "ConfigError",
    "DriverAnswerError",
    "DriverCrashError",
    "DriverTimeoutError",
    "EntryPointMissing",
    "ExtensionUnavailable",
    "LibraryMismatch",
    "LibraryNotFound",
    "NoPlatformError",
    "OpenCLUnavailable",
    "PartialEnqueueError",
    "QcomExtError",
    "QcomExtWarning",
    "RecordingStateError",
    "RegisterSpillWarning",
    "UnknownExtension",
    "error_name",
    "register_error_names",
    "signal_name",
]


class QcomExtError(Exception):
    """Base class of every error qcom_ext raises."""


class QcomExtWarning(UserWarning):
    """A requested feature took a weaker path than asked for (for example a no-op hint);
    the base of qcom_ext's other warnings."""


class RegisterSpillWarning(QcomExtWarning):
    """A kernel that ``qcom-ext tune`` or ``verify`` runs spills: on a GPU it needs
    private memory (``CL_KERNEL_PRIVATE_MEM_SIZE`` > 0), which lives in slow memory
    rather than registers (:func:`qcom_ext.kernel_info` says why ``spills`` is True).

    >>> issubclass(RegisterSpillWarning, QcomExtWarning)
    True
    """


#: Status code -> ``CL_*`` name; filled by the binding (:func:`register_error_names`).
_ERROR_NAMES: dict[int, str] = {}


def register_error_names(names: Mapping[int, str]) -> None:
    """Add ``code -> name`` pairs to the table :func:`error_name` reads (the binding
    registers the negative constants of ``cdefs/`` when it loads)."""
    _ERROR_NAMES.update({int(code): str(name) for code, name in names.items()})


def error_name(code: int) -> str:
    """The ``CL_*`` name of an OpenCL status code, from the constants in ``cdefs/``.

    >>> import qcom_ext.binding.lib  # registers the names
    >>> error_name(-30)
    'CL_INVALID_VALUE'
    >>> error_name(-9999)
    'UNKNOWN_ERROR'
    """
    return _ERROR_NAMES.get(code, "UNKNOWN_ERROR")


class CLError(QcomExtError):
    """An OpenCL entry point returned a status other than ``CL_SUCCESS``.

    Attributes: ``routine`` (the entry point), ``code`` (the status) and ``name``.
    """

    def __init__(self, routine: str, code: int, detail: str | None = None) -> None:
        self.routine = routine
        self.code = int(code)
        self.name = error_name(self.code)
        self.detail = detail
        message = f"{routine} failed: {self.name} ({self.code})"
        if detail:
            message += f": {detail}"
        super().__init__(message)


class PartialEnqueueError(CLError):
    """A sequence of enqueues failed part-way: the first ones are enqueued (and run).

    ``enqueued`` names the steps already enqueued, ``failed`` the one that failed (for a
    replay: dispatch indices; for a planar write: plane names); ``event`` is the last
    enqueued step's event (None if none was). The driver's error is the ``__cause__``.

    >>> import qcom_ext.binding.lib  # registers the status names
    >>> error = PartialEnqueueError("clEnqueueNDRangeKernel", -34, "dispatch", (0, 1), 2)
    >>> print(error)  # doctest: +NORMALIZE_WHITESPACE
    clEnqueueNDRangeKernel failed: CL_INVALID_CONTEXT (-34):
    dispatch 2 failed; enqueued before it (they run): 0, 1
    """

    def __init__(
        self, routine: str, code: int, what: str, enqueued: Sequence, failed: object, event=None
    ) -> None:
        self.enqueued = tuple(enqueued)
        self.failed = failed
        self.event = event
        done = ", ".join(str(step) for step in self.enqueued) or "none"
        super().__init__(
            routine, code, f"{what} {failed} failed; enqueued before it (they run): {done}"
        )


class ExtensionUnavailable(QcomExtError):
    """The extension is absent on the device and has no fallback that keeps its guarantees."""

    def __init__(self, extension: str, device: str, reason: str | None = None) -> None:
        self.extension = extension
        self.device = device
        self.reason = reason
        message = f"{extension} is not available on {device}"
        if reason:
            message += f": {reason}"
        super().__init__(message)


class BuildError(QcomExtError):
    """An OpenCL program failed to build; carries the build log and the options used."""

    def __init__(
        self, log: str, options: Sequence[str] = (), source_path: str | None = None
    ) -> None:
        self.log = log
        self.options = tuple(options)
        self.source_path = source_path
        message = f"build failed with options {' '.join(self.options) or '(none)'}"
        if source_path:
            message += f" (source saved to {source_path})"
        super().__init__(f"{message}:\n{log}")


class ConfigError(QcomExtError, ValueError):
    """A setting (argument or environment variable) has a value qcom_ext does not accept."""


class BufferTooLargeError(ConfigError):
    """A buffer larger than a device can make in one allocation. Attributes: ``size``
    (the bytes asked for), ``limit`` (the device's bound), ``limit_name`` (the query it
    comes from, e.g. ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``) and ``device`` (its label).

    >>> limit = "CL_DEVICE_MAX_MEM_ALLOC_SIZE"
    >>> print(BufferTooLargeError(3 << 30, 1 << 30, limit, "pocl-3.1-cpu"))
    size 3221225472 bytes exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE = 1073741824 of pocl-3.1-cpu
    """

    def __init__(
        self, size: int, limit: int, limit_name: str, device: str, hint: str = ""
    ) -> None:
        self.size, self.limit, self.limit_name, self.device = size, limit, limit_name, device
        message = f"size {size} bytes exceeds {limit_name} = {limit} of {device}"
        super().__init__(f"{message}; {hint}" if hint else message)


class UnknownExtension(QcomExtError, KeyError):
    """A ``cl_qcom_*`` name qcom_ext does not know; the message lists the known ones.

    A ``KeyError`` too (``DeviceCaps.status`` raised a plain KeyError before).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:  # KeyError's str() would show the message's repr
        return self.message


class DriverAnswerError(QcomExtError, ValueError):
    """A driver answered a query with data qcom_ext cannot decode (a scalar of an odd
    width, a list that is not whole entries); the message names the query."""


class RecordingStateError(QcomExtError):
    """A :class:`~qcom_ext.Recording` was used out of order (enqueue outside ``with``,
    replay before recording or after release, recording twice)."""


class EntryPointMissing(QcomExtError, AttributeError):
    """The OpenCL library does not export a core entry point qcom_ext needs."""


class OpenCLUnavailable(QcomExtError):
    """No usable OpenCL implementation: base of the two errors below."""


class LibraryNotFound(OpenCLUnavailable):
    """No OpenCL library could be opened; ``tried`` lists each candidate and what happened."""

    def __init__(self, tried: Sequence[tuple[str, str]]) -> None:
        self.tried = list(tried)
        lines = "\n".join(f"  - {where}: {outcome}" for where, outcome in self.tried)
        super().__init__(
            "no usable OpenCL library was found; tried:\n"
            f"{lines}\n"
            "Install an OpenCL driver (for a CPU one: pip install 'qcom_ext[pocl]'), "
            "or point QCOM_EXT_OPENCL_LIBRARY at libOpenCL.so."
        )


class NoPlatformError(OpenCLUnavailable):
    """The OpenCL library loaded but reports no platform (no driver is installed)."""

    def __init__(self, library: str, detail: str = "", doctor: str | None = None) -> None:
        self.library = library
        self.doctor = doctor
        extra = f" ({detail})" if detail else ""
        advice = (
            doctor
            if doctor
            else "Install an OpenCL driver (for a CPU one: pip install 'qcom_ext[pocl]'), "
            "check OCL_ICD_VENDORS, or run 'qcom-ext doctor'."
        )
        super().__init__(f"no OpenCL platform found through {library}{extra}. {advice}")


class LibraryMismatch(OpenCLUnavailable):
    """The OpenCL library qcom_ext opened does not know the handles pyopencl gives it: it
    is not the library pyopencl talks to. ``library`` and ``pyopencl_library`` name both."""

    def __init__(self, library: str, origin: str, pyopencl_library: str, detail: str) -> None:
        self.library = library
        self.origin = origin
        self.pyopencl_library = pyopencl_library
        super().__init__(
            f"{origin} {library} is not the OpenCL library pyopencl uses ({pyopencl_library}): "
            f"{detail}. Unset QCOM_EXT_OPENCL_LIBRARY, or point it at {pyopencl_library}, "
            "or make pyopencl use the same library (its ICD loader's vendors, OCL_ICD_VENDORS)"
        )


def signal_name(status: int) -> str:
    """How a child process's exit status reads in a message: the signal that killed it
    (``subprocess``'s negative status), else the exit status (a Windows exception code
    in hex).

    >>> signal_name(-11), signal_name(3), signal_name(0xC0000005)
    ('SIGSEGV', 'exit status 3', 'exit status 0xc0000005')
    """
    if status < 0:
        try:
            return _signal.Signals(-status).name
        except ValueError:
            return f"signal {-status}"
    if status > 0xFFFF:  # a Windows exception code (0xC0000005: access violation)
        return f"exit status {status:#x}"
    return f"exit status {status}"


def _death(status: int) -> str:
    """The signal, and what a SIGKILL usually is."""
    name = signal_name(status)
    if name == "SIGKILL":
        return f"{name}, perhaps the out-of-memory killer"
    return name


class DriverCrashError(QcomExtError):
    """The OpenCL driver ended the child process qcom_ext had run it in (an isolated
    probe or compile): the calling process is unharmed. ``stage`` names what the child
    was doing, ``status`` is its exit status and ``signal`` reads it (``"SIGSEGV"``);
    ``log`` is the end of the child's stderr.

    >>> print(DriverCrashError("clGetPlatformIDs", -11))
    the OpenCL driver crashed in clGetPlatformIDs (SIGSEGV) in a child process
    """

    def __init__(self, stage: str, status: int, log: str = "") -> None:
        self.stage = stage
        self.status = int(status)
        self.signal = signal_name(self.status)
        self.log = log
        super().__init__(self._message() + (f"; its stderr ended with:\n{log}" if log else ""))

    def _message(self) -> str:
        return (
            f"the OpenCL driver crashed in {self.stage} ({_death(self.status)}) in a child process"
        )


class CompilerCrashError(DriverCrashError):
    """The OpenCL compiler ended the child process of an isolated build
    (``build_program(..., isolate=True)``): ``device`` is the label of the device it
    compiled for, ``options`` the full option list.

    >>> error = CompilerCrashError("adreno-663-gpu", ["-DTILE=8"], -6)
    >>> error.signal, error.device
    ('SIGABRT', 'adreno-663-gpu')
    >>> print(error)  # doctest: +NORMALIZE_WHITESPACE
    the OpenCL compiler crashed (SIGABRT) compiling for adreno-663-gpu with options -DTILE=8,
    in a child process
    """

    def __init__(self, device: str, options: Sequence[str], status: int, log: str = "") -> None:
        self.device = device
        self.options = tuple(options)
        super().__init__(f"the compile for {device}", status, log)

    def _message(self) -> str:
        return (
            f"the OpenCL compiler crashed ({_death(self.status)}) compiling for {self.device} "
            f"with options {' '.join(self.options) or '(none)'}, in a child process"
        )


class DriverTimeoutError(QcomExtError):
    """A child process running the OpenCL driver for qcom_ext (an isolated probe or
    compile) did not finish in time and was killed: ``stage`` names what it was doing,
    ``timeout`` the limit in seconds.

    >>> print(DriverTimeoutError("clGetPlatformIDs", 30))
    the OpenCL driver did not finish clGetPlatformIDs within 30 s in a child process (killed)
    """

    def __init__(self, stage: str, timeout: float, log: str = "") -> None:
        self.stage = stage
        self.timeout = timeout
        self.log = log
        message = (
            f"the OpenCL driver did not finish {stage} within {timeout:g} s in a child process "
            "(killed)"
        )
        super().__init__(message + (f"; its stderr ended with:\n{log}" if log else ""))
