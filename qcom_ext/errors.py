"""Exceptions and warnings raised by qcom_ext.

Every failure of an OpenCL entry point becomes a :class:`CLError` whose message
reads like pyopencl's::

    >>> from qcom_ext.errors import CLError
    >>> str(CLError("clNewRecordingQCOM", -36))
    'clNewRecordingQCOM failed: CL_INVALID_COMMAND_QUEUE (-36)'
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BuildError",
    "CLError",
    "ConfigError",
    "DriverAnswerError",
    "EntryPointMissing",
    "ExtensionUnavailable",
    "LibraryNotFound",
    "NoPlatformError",
    "OpenCLUnavailable",
    "QcomExtError",
    "QcomExtWarning",
    "RecordingStateError",
    "UnknownExtension",
    "error_name",
]


class QcomExtError(Exception):
    """Base class of every error qcom_ext raises."""


class QcomExtWarning(UserWarning):
    """A requested feature took a weaker path than asked for (for example a no-op hint)."""


def error_name(code: int) -> str:
    """The ``CL_*`` name of an OpenCL status code, from the constants in ``cdefs/``.

    >>> error_name(-30)
    'CL_INVALID_VALUE'
    >>> error_name(-9999)
    'UNKNOWN_ERROR'
    """
    from qcom_ext.binding.lib import (
        error_codes,  # the table is built from the cdefs, so import late
    )

    return error_codes().get(code, "UNKNOWN_ERROR")


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

    def __init__(self, library: str, detail: str = "") -> None:
        self.library = library
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"no OpenCL platform found through {library}{extra}. Install an OpenCL driver "
            "(for a CPU one: pip install 'qcom_ext[pocl]'), check OCL_ICD_VENDORS, "
            "or point QCOM_EXT_OPENCL_LIBRARY at the vendor libOpenCL.so."
        )
