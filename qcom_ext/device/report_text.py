"""A :class:`~qcom_ext.device.caps.DeviceCaps` report as text for people: the facts the
strings and the kernel driver gave, one row per extension, and what it leaves unused.

``str(caps)`` is :func:`as_text`, which fits :data:`TEXT_WIDTH` columns without cutting
an extension name: each reason goes on its own indented lines (``qcom-ext probe`` lays
out the same rows with colours, at the terminal's width).

>>> from qcom_ext.device.caps import DeviceCaps
>>> caps = DeviceCaps.from_info(extensions="cl_qcom_perf_hint cl_qcom_extra_vector_types",
...     device_name="FD630", platform_name="rusticl", vendor_id=0x5143, disabled=())
>>> print(as_text(caps).splitlines()[1])
  driver rusticl; Adreno 630 (model from device_name)
>>> unknown_line(caps)
'also advertised, not handled by qcom_ext: cl_qcom_extra_vector_types'
"""

from __future__ import annotations

import textwrap
from typing import Any

__all__ = ["TEXT_WIDTH", "adreno_fact", "as_text", "facts_line", "head_lines", "unknown_line"]

#: The width ``str(caps)`` fits.
TEXT_WIDTH = 80
#: How far a reason is indented under its extension.
REASON_INDENT = 6


def _version(numbers: tuple[int, ...] | None) -> str | None:
    return None if numbers is None else ".".join(str(n) for n in numbers)


def adreno_fact(caps: Any) -> str | None:
    """``"740 (model from kgsl:gpu_model), compiler E031.42.20.00"``; None off Adreno."""
    if not caps.is_adreno:
        return None
    model = caps.adreno_model or "unknown"
    source = f" (model from {caps.model_source})" if caps.model_source else ""
    compiler = f", compiler {caps.compiler_version}" if caps.compiler_version else ""
    return f"{model}{source}{compiler}"


def facts_line(caps: Any) -> str:
    """The driver, the OpenCL versions and the Adreno facts, on one line."""
    parts = [f"driver {caps.driver}"]
    for what, numbers in (
        ("OpenCL", caps.opencl_version),
        ("OpenCL C", caps.opencl_c_version_number),
    ):
        if numbers is not None:
            parts.append(f"{what} {_version(numbers)}")
    adreno = adreno_fact(caps)
    if adreno:
        parts.append(f"Adreno {adreno}")
    return "; ".join(parts)


def unknown_line(caps: Any) -> str | None:
    """The advertised ``cl_qcom_*`` names qcom_ext does not handle; None when none."""
    if not caps.unknown_qcom:
        return None
    return f"also advertised, not handled by qcom_ext: {', '.join(caps.unknown_qcom)}"


def head_lines(name: str, path: str, name_width: int, width: int = TEXT_WIDTH) -> list[str]:
    """An extension's name and path: on one line when they fit ``width``, else the path
    on its own indented line. Names are never cut.

    >>> head_lines("cl_qcom_perf_hint", "fallback", 20)
    ['  cl_qcom_perf_hint     fallback']
    >>> head_lines("cl_qcom_perf_hint", "khr:cl_khr_a_long_tier_name", 20, width=40)
    ['  cl_qcom_perf_hint', '      khr:cl_khr_a_long_tier_name']
    """
    for line in (f"  {name:<{name_width}}  {path}", f"  {name}  {path}"):
        if len(line) <= width:
            return [line]
    return [f"  {name}", f"{' ' * REASON_INDENT}{path}"]


def _wrap(text: str, indent: int, width: int, first: int | None = None) -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=" " * (indent if first is None else first),
        subsequent_indent=" " * indent,
        break_long_words=False,  # an extension name is never cut
        break_on_hyphens=False,
    )


def as_text(caps: Any, width: int = TEXT_WIDTH) -> str:
    """The whole report within ``width`` columns (a word longer than a line, which no
    real extension name is, keeps its own line)."""
    lines = _wrap(caps.summary(), 2, width, first=0)
    lines += _wrap(facts_line(caps), 2, width)
    name_width = max(len(n) for n in caps.statuses)
    for name, status in sorted(caps.statuses.items()):
        lines += head_lines(name, status.path, name_width, width)
        lines += _wrap(status.reason, REASON_INDENT, width)
    unknown = unknown_line(caps)
    if unknown:
        lines += _wrap(unknown, 2, width)
    return "\n".join(lines)
