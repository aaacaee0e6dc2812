"""``cl_mem_flags`` checks shared by the memory-object helpers.

The rules are the core ones (one device-access bit, one host-access bit) plus what
each caller forbids, most often the host-pointer bits:

>>> check_flags(C.CL_MEM_READ_WRITE | C.CL_MEM_HOST_NO_ACCESS, "flags")
513
>>> check_flags(C.CL_MEM_READ_ONLY | C.CL_MEM_COPY_HOST_PTR, "flags")
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: flags=CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR: CL_MEM_COPY_HOST_PTR \
is not accepted here (no host pointer is passed)
>>> flag_names(0x21)
'CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR'

Functions that make their own host pointers take :func:`access_flags`: a name or the
access bits, READ_WRITE where none is given.

>>> flag_names(access_flags("read_only") | C.CL_MEM_USE_HOST_PTR | C.CL_MEM_EXT_HOST_PTR_QCOM)
'CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR | CL_MEM_EXT_HOST_PTR_QCOM'
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from qcom_ext.binding.lib import C
from qcom_ext.errors import ConfigError

_NAMES = (
    "CL_MEM_READ_WRITE",
    "CL_MEM_WRITE_ONLY",
    "CL_MEM_READ_ONLY",
    "CL_MEM_USE_HOST_PTR",
    "CL_MEM_ALLOC_HOST_PTR",
    "CL_MEM_COPY_HOST_PTR",
    "CL_MEM_HOST_WRITE_ONLY",
    "CL_MEM_HOST_READ_ONLY",
    "CL_MEM_HOST_NO_ACCESS",
    "CL_MEM_KERNEL_READ_AND_WRITE",
    "CL_MEM_EXT_HOST_PTR_QCOM",
    "CL_MEM_OTHER_IMAGE_QCOM",
    "CL_MEM_COMPRESSED_IMAGE_QCOM",
    "CL_MEM_COMPRESSED_YUV_IMAGE_QCOM",
)
ACCESS = C.CL_MEM_READ_WRITE | C.CL_MEM_WRITE_ONLY | C.CL_MEM_READ_ONLY
HOST_ACCESS = C.CL_MEM_HOST_WRITE_ONLY | C.CL_MEM_HOST_READ_ONLY | C.CL_MEM_HOST_NO_ACCESS
HOST_POINTER = C.CL_MEM_USE_HOST_PTR | C.CL_MEM_ALLOC_HOST_PTR | C.CL_MEM_COPY_HOST_PTR
ACCESS_NAMES = {
    "read_write": C.CL_MEM_READ_WRITE,
    "read_only": C.CL_MEM_READ_ONLY,
    "write_only": C.CL_MEM_WRITE_ONLY,
}


def flag_names(flags: int) -> str:
    """``"CL_MEM_READ_WRITE | ..."`` for a bitfield; unknown bits are shown in hex."""
    names, rest = [], flags
    for name in _NAMES:
        bit = getattr(C, name)
        if flags & bit:
            names.append(name)
            rest &= ~bit
    if rest:
        names.append(hex(rest))
    return " | ".join(names) or "0"


def check_flags(
    flags: Any,
    what: str,
    *,
    allowed: int = ACCESS | HOST_ACCESS,
    reason: str = "no host pointer is passed",
) -> int:
    """``flags`` as an int, or ConfigError: bits outside ``allowed`` (the host-pointer
    bits get ``reason``), or more than one device- or host-access bit."""
    if type(flags) is not int and (isinstance(flags, bool) or not isinstance(flags, Integral)):
        raise ConfigError(f"{what} must be a cl_mem_flags bitfield (int >= 0), got {flags!r}")
    flags = int(flags)
    if flags < 0:
        raise ConfigError(f"{what} must be a cl_mem_flags bitfield (int >= 0), got {flags!r}")
    if flags & ~allowed:
        shown = f"{what}={flag_names(flags)}"
        pointer = flags & HOST_POINTER & ~allowed
        if pointer:
            raise ConfigError(f"{shown}: {flag_names(pointer)} is not accepted here ({reason})")
        raise ConfigError(
            f"{shown}: {flag_names(flags & ~allowed)} not accepted; "
            f"expected a combination of {flag_names(allowed)}"
        )
    for group, kind in ((ACCESS, "device-access"), (HOST_ACCESS, "host-access")):
        bits = flags & group
        if bits & (bits - 1):  # more than one bit set
            raise ConfigError(
                f"{what}={flag_names(flags)}: at most one {kind} flag ({flag_names(group)})"
            )
    return flags


def inherited(parent_flags: int) -> int:
    """The access bits a child object inherits from its parent (READ_WRITE when none)."""
    access = parent_flags & ACCESS or C.CL_MEM_READ_WRITE
    return access | (parent_flags & HOST_ACCESS)


def check_compatible(child: int, parent: int, what: str, parent_what: str) -> None:
    """ConfigError when ``child`` asks for access its parent does not grant (the
    sub-buffer rules of clCreateSubBuffer, which buffer-from-image follows)."""
    parent_access = parent & ACCESS or C.CL_MEM_READ_WRITE
    child_access = child & ACCESS
    if child_access and parent_access != C.CL_MEM_READ_WRITE and child_access != parent_access:
        raise ConfigError(
            f"{what}={flag_names(child)} asks for {flag_names(child_access)} but "
            f"{parent_what} is {flag_names(parent_access)}; the access must be compatible"
        )
    parent_host, child_host = parent & HOST_ACCESS, child & HOST_ACCESS
    if child_host and parent_host and child_host != parent_host:
        raise ConfigError(
            f"{what}={flag_names(child)} asks for {flag_names(child_host)} but "
            f"{parent_what} is {flag_names(parent_host)}; the host access must be compatible"
        )


def access_flags(flags: Any, what: str = "flags") -> int:
    """``"read_write" | "read_only" | "write_only"`` (or those ``cl_mem_flags``, with
    optional ``CL_MEM_HOST_*`` bits) as flags, READ_WRITE when no device access is
    given; host-pointer bits are refused because qcom_ext sets them itself.

    >>> access_flags("read-only") == C.CL_MEM_READ_ONLY, access_flags(C.CL_MEM_HOST_NO_ACCESS)
    (True, 513)
    """
    if isinstance(flags, str):
        key = flags.strip().lower().replace("-", "_")
        if key not in ACCESS_NAMES:
            raise ConfigError(f"{what} {flags!r}: expected one of {', '.join(ACCESS_NAMES)}")
        return ACCESS_NAMES[key]
    if isinstance(flags, bool) or not isinstance(flags, Integral):
        raise ConfigError(
            f"{what} must be a name ({', '.join(ACCESS_NAMES)}) or cl_mem_flags, got {flags!r}"
        )
    reason = (
        "it is set by qcom_ext itself: external memory and host buffers use CL_MEM_USE_HOST_PTR"
    )
    flags = check_flags(flags, what, reason=reason)
    return flags if flags & ACCESS else flags | C.CL_MEM_READ_WRITE
