"""``qcom-ext compat --format html``: one static page a maintainer can publish.

Self-contained: inline CSS and a few lines of inline JavaScript that sort a table by the
column clicked; no network, no external asset (the page's Content-Security-Policy
forbids both). Every string from a report goes through ``html.escape``, its control
characters replaced (``terminal_safe``).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from qcom_ext.tools._output import terminal_safe
from qcom_ext.tools.fleet.render_text import (
    CONTRADICTION_HEADERS,
    MATRIX_HEADERS,
    contradiction_cells,
    matrix_cells,
    summary,
)

__all__ = ["render_html"]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #eee; cursor: pointer; user-select: none; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.bad { background: #fdd; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
"""
# Click a header: sort its table by that column (numbers as numbers); again: reversed.
_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th, _, all) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var up = th.dataset.order !== "up"; th.dataset.order = up ? "up" : "down";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].textContent, y = b.cells[col].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return up ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""
_BAD = {"fail", "crash"}


def _e(value: Any) -> str:
    return html.escape(terminal_safe("" if value is None else str(value)))


def _table(headers: Iterable[str], rows: Iterable[list[Any]]) -> list[str]:
    headers = list(headers)
    out = ['<table class="sortable"><thead><tr>']
    out += [f"<th>{_e(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = []
        for header, value in zip(headers, row, strict=True):
            classes = []
            if isinstance(value, int):
                classes.append("n")
                if header in _BAD and value:
                    classes.append("bad")
            attr = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{attr}>{_e(value)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return out


def render_html(merged: Any) -> str:
    """The whole merge as one static HTML page."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        "<title>qcom_ext fleet compatibility matrix</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Fleet compatibility matrix</h1>",
        f"<p>{_e(summary(merged))} Click a column's header to sort by it.</p>",
        "<h2>Matrix</h2>",
        *_table(MATRIX_HEADERS, (matrix_cells(r) for r in merged.matrix)),
        f"<h2>Contradictions ({len(merged.contradictions)})</h2>",
    ]
    if merged.contradictions:
        rows = (contradiction_cells(r) for r in merged.contradictions)
        parts += _table(CONTRADICTION_HEADERS, rows)
    parts.append(f"<h2>Quirk proposals ({len(merged.proposals)})</h2>")
    if merged.proposals:
        parts.append("<p>For <code>QUIRKS</code> in <code>qcom_ext/device/quirks.py</code>:</p>")
        entries = "\n".join(p.entry() for p in merged.proposals)
        parts.append(f"<pre><code>{_e(entries)}</code></pre>")
    parts.append(f"<h2>Skipped inputs ({len(merged.intake.skipped)})</h2>")
    if merged.intake.skipped:
        parts.append("<ul>")
        parts += [
            f"<li><code>{_e(s.where)}</code>: {_e(s.reason)}</li>" for s in merged.intake.skipped
        ]
        parts.append("</ul>")
    parts += [f"<script>{_SCRIPT}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"
