"""The command line's tables, within the console's width: ``qcom-ext probe``,
``qcom-ext selftest`` and ``qcom-ext bench`` lay out their rows here.

A row is a few short cells (a name, a path, numbers) and a note. Cells are never cut
and never split: each column is as wide as its widest cell. When the rows do not fit
the width, the leading column (the group: an extension, a benchmark group) moves to a
line of its own above its rows, then the next one, until the rest fits. A note stands
at the end of its row when it fits there whole, else on its own lines under the row,
wrapped by words (a word longer than a line keeps its own line).

>>> from rich.console import Console
>>> out = Console(width=40, color_system=None, record=True)
>>> rows = [Row(("cl_qcom_perf_hint", "fallback"), "not advertised; hints do nothing"),
...         Row(("", "native"), "skipped")]
>>> print_table(out, (Column("extension"), Column("path")), rows, header=False)
  cl_qcom_perf_hint  fallback
      not advertised; hints do nothing
                     native    skipped
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

__all__ = [
    "NOTE_INDENT",
    "Column",
    "Row",
    "print_facts",
    "print_table",
    "print_wrapped",
    "wrap_words",
]

#: The least indent of a note under its row (``qcom-ext probe``'s reasons).
NOTE_INDENT = 6
_GAP = 2
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Column:
    """A column's header, and whether its cells are right-aligned (numbers)."""

    header: str
    right: bool = False


@dataclass(frozen=True)
class Row:
    """One row: a cell per column (text or :class:`rich.text.Text`; an empty leading
    cell continues the group above) and its note."""

    cells: Sequence[str | Text]
    note: str | Text = ""


def _text(value: str | Text) -> Text:
    return value if isinstance(value, Text) else Text(value)


def wrap_words(text: str | Text, width: int) -> list[Text]:
    """``text`` in lines of at most ``width`` cells, broken between words only."""
    text = _text(text)
    plain = text.plain
    offsets, start, end = [], 0, 0
    for word in _WORD.finditer(plain):
        if end > start and word.end() - start > width:
            offsets.append(word.start())
            start = word.start()
        end = word.end()
    lines = [line.copy() for line in (text.divide(offsets) if offsets else [text])]
    for line in lines:
        line.rstrip()
    return [line for line in lines if line.plain] or [Text("")]


def _peeled(widths: list[int], width: int) -> int:
    """How many leading columns go on lines of their own so that the rest fits."""
    for peeled in range(len(widths)):
        rest = widths[peeled:]
        if _GAP * (1 + peeled) + sum(rest) + _GAP * (len(rest) - 1) <= width:
            return peeled
    return len(widths) - 1


def _line(indent: int, cells: list[Text], widths: list[int], columns: Sequence[Column]) -> Text:
    line = Text(" " * indent)
    for index, (cell, size, column) in enumerate(zip(cells, widths, columns, strict=True)):
        pad = " " * (size - cell.cell_len)
        line.append_text(Text(pad) + cell if column.right else cell + Text(pad))
        if index < len(cells) - 1:
            line.append(" " * _GAP)
    line.rstrip()
    return line


def _print(console: Console, line: Text) -> None:
    console.print(line, soft_wrap=True, crop=False)  # laid out here: never re-wrapped


def print_table(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Row],
    *,
    header: bool = True,
    note_header: str = "notes",
    notes_below: bool = False,
) -> None:
    """Print ``rows`` within ``console.width`` (see the module's docstring);
    ``notes_below`` puts every note under its row."""
    width = console.width
    cells = [[_text(c) for c in row.cells] for row in rows]
    widths = [
        max([len(column.header) if header else 0] + [row[i].cell_len for row in cells])
        for i, column in enumerate(columns)
    ]
    peeled = _peeled(widths, width)
    indent = _GAP * (1 + peeled)
    rest, rest_columns = widths[peeled:], columns[peeled:]
    note_at = indent + sum(rest) + _GAP * len(rest)
    note_indent = max(NOTE_INDENT, indent + _GAP)
    notes = [_text(row.note) for row in rows]
    inline = [not notes_below and bool(n.plain) and note_at + n.cell_len <= width for n in notes]
    if header:
        heads = [Text(c.header, style="bold") for c in rest_columns]
        line = _line(indent, heads, rest, rest_columns)
        if any(inline):
            line.append(" " * (note_at - line.cell_len))
            line.append(note_header, style="bold")
        _print(console, line)
        _print(console, Text(" " * indent + "─" * (line.cell_len - indent), style="dim"))
    for row, note, at_end in zip(cells, notes, inline, strict=True):
        for level, cell in enumerate(row[:peeled]):
            if cell.plain:
                _print(console, Text(" " * (_GAP * (1 + level))) + cell)
        line = _line(indent, row[peeled:], rest, rest_columns)
        if at_end:
            line.append(" " * (note_at - line.cell_len))
            line.append_text(note)
        if line.plain.strip():
            _print(console, line)
        if note.plain and not at_end:
            for part in wrap_words(note, width - note_indent):
                _print(console, Text(" " * note_indent) + part)


def print_wrapped(console: Console, text: str | Text, hanging: int = 2) -> None:
    """``text`` within the console's width, broken between words; the lines after the
    first indented by ``hanging``."""
    for index, line in enumerate(wrap_words(text, max(console.width - hanging, 1))):
        _print(console, Text(" " * hanging) + line if index else line)


def print_facts(console: Console, facts: Sequence[tuple[str, str]]) -> None:
    """``key  value`` lines, keys right-aligned and dim; a long value wraps by words
    under itself. Values are text, never rich markup (driver strings)."""
    keys = max((len(key) for key, _ in facts), default=0)
    for key, value in facts:
        lines = wrap_words(Text(value), max(console.width - keys - _GAP, 1))
        for index, line in enumerate(lines):
            head = Text(f"{key:>{keys}}" if index == 0 else " " * keys, style="dim")
            _print(console, head + Text(" " * _GAP) + line)
