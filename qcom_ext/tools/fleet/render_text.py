"""``qcom-ext compat``'s markdown and JSON outputs of a :class:`~.matrix.Merged`.

Every string in them comes from untrusted reports: a markdown cell has its ``|`` and
line breaks escaped and its HTML characters escaped (a published page renders none).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from typing import Any

from qcom_ext.tools._output import terminal_safe
from qcom_ext.tools.fleet.matrix import MATRIX_COLUMNS

__all__ = [
    "CONTRADICTION_HEADERS",
    "MATRIX_HEADERS",
    "cell",
    "contradiction_cells",
    "matrix_cells",
    "render_json",
    "render_markdown",
    "summary",
]

#: The matrix's columns as shown: the model (or device), driver and compiler, then the
#: rest of :data:`~.matrix.MATRIX_COLUMNS` as they are.
MATRIX_HEADERS = ("model", "driver", "compiler", *MATRIX_COLUMNS[4:])
CONTRADICTION_HEADERS = ("device", "driver", "check", "verdicts", "reports")
#: Reports a contradiction's cell names before "... and N more".
SHOWN_REPORTS = 6


def cell(value: Any) -> str:
    """One markdown table cell: ``|`` and line breaks escaped, HTML's characters too,
    control characters replaced (``terminal_safe``).

    >>> cell("a|b\\n<i>")
    'a\\\\|b &lt;i&gt;'
    """
    text = "" if value is None else str(value)
    text = terminal_safe(" ".join(text.split()))  # breaks and tabs: a space; controls: U+FFFD
    return html.escape(text, quote=False).replace("|", "\\|")


def summary(merged: Any) -> str:
    """The one-paragraph count of what was read, merged and skipped."""
    intake = merged.intake
    return (
        f"{intake.read} reports read, {intake.merged} merged, {len(intake.skipped)} "
        f"skipped; {merged.identities} identities: {merged.current} current reports (the "
        f"newest of each identity) and {merged.history} older ones (history); "
        f"{len(merged.contradictions)} contradictions, {len(merged.proposals)} quirk "
        "proposals."
    )


def matrix_cells(row: dict[str, Any]) -> list[Any]:
    """A matrix row's cells, in :data:`MATRIX_HEADERS`' order (raw values)."""
    model = row["adreno_model"]
    return [
        f"Adreno {model}" if model is not None else row["device_name"],
        row["driver_version"],
        row["compiler_version"] or "",
        row["extension"],
        row["path"],
        *(row[k] for k in MATRIX_HEADERS[5:]),
    ]


def contradiction_cells(row: dict[str, Any]) -> list[Any]:
    """A contradiction's cells, in ``CONTRADICTION_HEADERS``' order (raw values)."""
    reports = list(row["reports"])
    shown = ", ".join(reports[:SHOWN_REPORTS])
    if len(reports) > SHOWN_REPORTS:
        shown += f", ... and {len(reports) - SHOWN_REPORTS} more"
    return [
        row["device_name"],
        row["driver_version"],
        row["check_id"],
        "/".join(row["verdicts"]),
        shown,
    ]


def _backticks(text: str) -> int:
    """The longest run of backticks in ``text`` (a code fence must be longer)."""
    return max((len(run) for run in re.findall("`+", text)), default=0)


def _table(headers: Iterable[str], rows: Iterable[list[Any]]) -> list[str]:
    headers = list(headers)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def render_markdown(merged: Any) -> str:
    """The whole merge as markdown: summary, matrix, contradictions, quirk proposals
    (as ``qcom_ext/device/quirks.py`` entries) and the skipped inputs."""
    lines = ["# Fleet compatibility matrix", "", cell(summary(merged)), ""]
    lines += ["## Matrix", ""]
    lines += _table(MATRIX_HEADERS, (matrix_cells(r) for r in merged.matrix))
    lines += ["", f"## Contradictions ({len(merged.contradictions)})", ""]
    if merged.contradictions:
        lines += _table(
            CONTRADICTION_HEADERS, (contradiction_cells(r) for r in merged.contradictions)
        )
    lines += ["", f"## Quirk proposals ({len(merged.proposals)})", ""]
    if merged.proposals:
        entries = [p.entry() for p in merged.proposals]
        fence = "`" * max(3, *(_backticks(e) + 1 for e in entries))
        lines += ["For `QUIRKS` in `qcom_ext/device/quirks.py`:", "", fence + "python"]
        lines += [*entries, fence]
    lines += ["", f"## Skipped inputs ({len(merged.intake.skipped)})", ""]
    lines += [f"- {cell(str(s))}" for s in merged.intake.skipped]
    return "\n".join(lines) + "\n"


def render_json(merged: Any) -> str:
    """The whole merge as JSON (``Merged.to_dict``)."""
    return json.dumps(merged.to_dict(), indent=2) + "\n"
