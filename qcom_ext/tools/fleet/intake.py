"""Reading fleet reports for ``qcom-ext compat``: every input checked before it is merged.

An input is a ``.json`` file (one report), a ``.ndjson`` / ``.jsonl`` file (one report a
line) or a directory (those files under it, in name order). Every report is untrusted:
it passes, in order, a size cap (:data:`MAX_REPORT_BYTES`), a nesting-depth cap
(:data:`MAX_DEPTH`, counted over the raw text's brackets before ``json.loads`` sees
it), the JSON parse, the schema's name and version (a later version is skipped as
"future schema N") and the structural check of :mod:`.check`. A report that fails is
skipped with a one-line reason (``file:line: reason``) and counted; one that passes is
written, slimmed to what the aggregation reads, to one newline-delimited file that
DuckDB reads (:mod:`.matrix`). Nothing is held in memory but the report being read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from qcom_ext.tools.fleet.check import ReportError, check_report

__all__ = ["MAX_DEPTH", "MAX_REPORT_BYTES", "Intake", "Skipped", "read_reports", "slim"]

#: The largest report (a file, or a line of a newline-delimited file) read, in bytes: a
#: real report of every extension's checks is about 20 KB.
MAX_REPORT_BYTES = 1 << 20
#: The deepest nesting of arrays and objects read (a report's own shape is 4 deep).
#: Brackets inside strings count too: the scan is over the raw bytes, before parsing.
MAX_DEPTH = 32
#: The file names read from a directory, and how each is split into reports.
NDJSON_SUFFIXES = (".ndjson", ".jsonl")
JSON_SUFFIXES = (".json",)

# bytes.translate table: '[' and '{' to +1, ']' and '}' to -1 (int8), all else deleted.
_OPEN, _CLOSE = b"[{", b"]}"
_DEPTH_TABLE = bytes(1 if i in _OPEN else 255 if i in _CLOSE else 0 for i in range(256))
_NOT_BRACKETS = bytes(i for i in range(256) if i not in _OPEN + _CLOSE)


@dataclass(frozen=True)
class Skipped:
    """An input not merged: where (``file`` or ``file:line``) and why, in one line."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class Intake:
    """What reading the inputs gave: how many reports were read and merged, and the
    skipped ones with their reasons."""

    read: int = 0
    merged: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "merged": self.merged,
            "skipped": len(self.skipped),
            "skipped_inputs": [{"where": s.where, "reason": s.reason} for s in self.skipped],
        }


def depth(raw: bytes) -> int:
    """The deepest bracket nesting of ``raw`` (brackets inside strings count too).

    >>> depth(b'{"a": [1, {"b": []}]}'), depth(b"[]]]"), depth(b"7")
    (4, 1, 0)
    """
    steps = raw.translate(_DEPTH_TABLE, _NOT_BRACKETS)
    if not steps:
        return 0
    return int(np.cumsum(np.frombuffer(steps, dtype=np.int8), dtype=np.int64).max())


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(raw: bytes) -> dict[str, Any]:
    """One report's checked content, from its raw bytes; :class:`ReportError` names what
    is wrong with it."""
    if len(raw) > MAX_REPORT_BYTES:
        raise ReportError(f"report over {MAX_REPORT_BYTES} bytes")
    nesting = depth(raw)
    if nesting > MAX_DEPTH:
        raise ReportError(f"nested deeper than {MAX_DEPTH} (at least {nesting})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportError(f"not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # RecursionError: cannot pass the cap
        raise ReportError(f"not JSON ({str(exc).splitlines()[0][:80]})") from None
    return check_report(value)


def slim(report: dict[str, Any], source: str) -> dict[str, Any]:
    """What the aggregation (``aggregate.sql``) reads of a checked report, in the
    report's own shape, with ``source`` (``file:line``) added."""
    return {
        "source": source,
        "created": report["created"],
        "identity_key": report["identity_key"],
        "identity": report["identity"],
        "checks": [
            {k: c[k] for k in ("id", "extension", "path", "verdict")} for c in report["checks"]
        ],
    }


def _files(inputs: Iterable[str | os.PathLike[str]], intake: Intake) -> Iterator[Path]:
    suffixes = NDJSON_SUFFIXES + JSON_SUFFIXES
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in suffixes and p.is_file())
        elif path.is_file():
            yield path
        else:
            intake.skipped.append(Skipped(str(path), "no such file or directory"))


def _lines(stream: IO[bytes]) -> Iterator[bytes | None]:
    """The lines of ``stream``, None for one over the cap (read past in chunks)."""
    while True:
        line = stream.readline(MAX_REPORT_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_REPORT_BYTES and not line.endswith(b"\n"):
            while (rest := stream.readline(MAX_REPORT_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield None
        else:
            yield line


def _raw_reports(path: Path) -> Iterator[tuple[str, bytes | None]]:
    """(where, raw bytes) of each report in ``path``; None where it is over the cap."""
    with path.open("rb") as stream:
        if path.suffix not in NDJSON_SUFFIXES:
            raw = stream.read(MAX_REPORT_BYTES + 1)
            yield str(path), raw if len(raw) <= MAX_REPORT_BYTES else None
            return
        for number, line in enumerate(_lines(stream), 1):
            if line is None or line.strip():
                yield f"{path}:{number}", line


def read_reports(inputs: Iterable[str | os.PathLike[str]], out: IO[str]) -> Intake:
    """Check every report of ``inputs`` and write each one that passes, slimmed
    (:func:`slim`), as a line of ``out``; the counts and the skipped ones."""
    intake = Intake()
    for path in _files(inputs, intake):
        try:
            for where, raw in _raw_reports(path):
                intake.read += 1
                try:
                    if raw is None:
                        raise ReportError(f"report over {MAX_REPORT_BYTES} bytes")
                    report = parse(raw)
                except ReportError as exc:
                    intake.skipped.append(Skipped(where, str(exc)))
                    continue
                out.write(json.dumps(slim(report, where), separators=(",", ":")) + "\n")
                intake.merged += 1
        except OSError as exc:
            intake.skipped.append(Skipped(str(path), f"unreadable ({exc.strerror or exc})"))
    return intake
