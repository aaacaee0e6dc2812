"""Reading fleet reports for ``qcom-ext compat``: every input checked before it is merged.

An input is a ``.json`` file (one report), a ``.ndjson`` / ``.jsonl`` file (one report a
line) or a directory (those files under it, in name order). Every report is untrusted:
it passes, in order, a size cap (:data:`MAX_REPORT_BYTES`), a nesting-depth cap
(:data:`MAX_DEPTH`, counted over the raw text's brackets before the parser sees it),
the JSON parse (orjson: RFC 8259, so no NaN or Infinity), the
schema's name and version (a later version is skipped as "future schema N") and the
structural check of :mod:`.check`. A report that fails is skipped with a one-line
reason (``file:line: reason``) and counted; one that passes is written, slimmed to what
the aggregation reads, to one newline-delimited file that DuckDB reads (:mod:`.matrix`).
Nothing is held in memory but the report being read.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from qcom_ext.tools.fleet.check import ReportError, check_report

__all__ = [
    "MAX_DEPTH",
    "MAX_REPORT_BYTES",
    "PARALLEL_BYTES",
    "Intake",
    "Skipped",
    "read_reports",
    "read_reports_into",
    "slim",
]

#: The largest report (a file, or a line of a newline-delimited file) read, in bytes: a
#: real report of every extension's checks is about 30 KB.
MAX_REPORT_BYTES = 1 << 20
#: The deepest nesting of arrays and objects read (a report's own shape is 4 deep).
#: Brackets inside strings count too: the scan is over the raw bytes, before parsing.
MAX_DEPTH = 32
#: The file names read from a directory, and how each is split into reports.
NDJSON_SUFFIXES = (".ndjson", ".jsonl")
JSON_SUFFIXES = (".json",)
#: Inputs of this many bytes or more are read by several processes (one a CPU).
PARALLEL_BYTES = 64 << 20
#: Where the intake forks its worker processes (a forked child imports nothing).
_FORKING = ("linux", "android")

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

    def add(self, other: Intake) -> None:
        """Count ``other``'s reports and skips too."""
        self.read += other.read
        self.merged += other.merged
        self.skipped.extend(other.skipped)

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


def _orjson() -> Any:
    """orjson (the fleet extra): 1.4 times as fast as ``json.loads`` on a report and 5
    times on the slimmed one written back, the most of the intake's time; it also keeps
    to RFC 8259 (no NaN or Infinity)."""
    import orjson

    return orjson


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
    orjson = _orjson()
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ReportError(f"not JSON ({str(exc).splitlines()[0][:80]})") from None
    return check_report(value)


def slim(report: dict[str, Any], source: str) -> dict[str, Any]:
    """What the aggregation (``aggregate.sql``) reads of a checked report, in the
    report's own shape, with ``source`` (``file:line``) added: of a check, its id (which
    names its extension and path: :mod:`.check` made sure) and verdict."""
    return {
        "source": source,
        "created": report["created"],
        "identity_key": report["identity_key"],
        "identity": report["identity"],
        "checks": [{"id": c["id"], "verdict": c["verdict"]} for c in report["checks"]],
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


def _read_files(files: Iterable[Path], out: IO[str]) -> Intake:
    """Check every report of ``files``, write the ones that pass to ``out`` (slimmed)."""
    dumps = _orjson().dumps
    intake = Intake()
    for path in files:
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
                out.write(dumps(slim(report, where)).decode() + "\n")
                intake.merged += 1
        except OSError as exc:
            intake.skipped.append(Skipped(str(path), f"unreadable ({exc.strerror or exc})"))
    return intake


def read_reports(inputs: Iterable[str | os.PathLike[str]], out: IO[str]) -> Intake:
    """Check every report of ``inputs`` and write each one that passes, slimmed
    (:func:`slim`), as a line of ``out``; the counts and the skipped ones."""
    intake = Intake()
    intake.add(_read_files(list(_files(inputs, intake)), out))
    return intake


def _worker(job: tuple[list[Path], str]) -> tuple[str, Intake]:
    """One process's share: its files read into a new file of the folder ``job[1]``."""
    files, folder = job
    fd, name = tempfile.mkstemp(suffix=".ndjson", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        return name, _read_files(files, out)


def _shares(files: list[Path], workers: int) -> list[list[Path]]:
    """``files`` in at most ``workers`` runs of about equal bytes, in their order."""
    sizes = [p.stat().st_size for p in files]
    target = sum(sizes) / max(1, workers)
    shares: list[list[Path]] = [[]]
    total = 0.0
    for path, size in zip(files, sizes, strict=True):
        if shares[-1] and total >= target * len(shares) and len(shares) < workers:
            shares.append([])
        shares[-1].append(path)
        total += size
    return shares


def read_reports_into(
    inputs: Iterable[str | os.PathLike[str]], folder: str, workers: int | None = None
) -> tuple[list[str], Intake]:
    """Check every report of ``inputs`` and write the ones that pass, slimmed, to new
    newline-delimited files in ``folder``; those files and the intake. The input files
    are shared out between up to ``workers`` processes (the CPUs by default) where they
    add up to :data:`PARALLEL_BYTES` or more and the platform forks (Linux, Android: a
    forked child imports nothing); else one process reads them all."""
    intake = Intake()
    files = list(_files(inputs, intake))
    workers = workers or os.cpu_count() or 1
    forks = "fork" in multiprocessing.get_all_start_methods() and sys.platform in _FORKING
    big = len(files) > 1 and sum(p.stat().st_size for p in files) >= PARALLEL_BYTES
    shares = _shares(files, workers) if forks and big and workers > 1 else [files]
    jobs = [(share, folder) for share in shares]
    if len(jobs) > 1:
        with multiprocessing.get_context("fork").Pool(len(jobs)) as pool:
            results = pool.map(_worker, jobs)
    else:
        results = [_worker(jobs[0])]
    for _, part in results:
        intake.add(part)
    return [name for name, _ in results], intake
