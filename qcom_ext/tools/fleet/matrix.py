"""The compatibility matrix: fleet reports merged through DuckDB (``aggregate.sql``).

``pip install 'qcom_ext[fleet]'`` adds DuckDB and orjson (the intake's parser); they are
imported on the first merge, so ``qcom_ext`` and ``qcom-ext compat --help`` work without
them, and a merge without them is a :class:`FleetUnavailable` naming the install command.

:func:`merge` checks every input (:mod:`.intake`), writes the reports that pass to a
temporary newline-delimited file and runs the statements of ``aggregate.sql`` over it;
:func:`aggregate` runs the same statements over files that are already checked (a
partitioned directory, object storage: docs/fleet.md).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from qcom_ext.errors import QcomExtError
from qcom_ext.tools.fleet.intake import Intake, read_reports_into
from qcom_ext.tools.fleet.quirk_proposals import Proposal, propose

__all__ = [
    "SQL_PATH",
    "FleetUnavailable",
    "MergeError",
    "Merged",
    "aggregate",
    "merge",
    "statements",
]

SQL_PATH = Path(__file__).with_name("aggregate.sql")
_NAME = re.compile(r"^-- name: (\w+)\n", re.MULTILINE)
#: DuckDB's memory ceiling for a merge: past it, it spills to its temporary directory.
MEMORY_LIMIT = "256MB"
MATRIX_COLUMNS = (
    "adreno_model",
    "device_name",
    "driver_version",
    "compiler_version",
    "extension",
    "path",
    "identities",
    "pass",
    "fail",
    "crash",
    "skip",
    "unchecked",
)


class MergeError(QcomExtError):
    """DuckDB failed to merge reports (out of memory or disk, or, for :func:`aggregate`'s
    unchecked files, a value of the wrong type); the message is DuckDB's first line."""


class FleetUnavailable(QcomExtError, ImportError):
    """DuckDB or orjson, which ``qcom-ext compat`` merges and reads with, is not
    installed: ``pip install 'qcom_ext[fleet]'``."""


@dataclass
class Merged:
    """A merge's result: the intake's counts and skips, the matrix rows (dicts of
    :data:`MATRIX_COLUMNS`), the contradictions and the quirk proposals."""

    intake: Intake
    current: int
    history: int
    identities: int
    matrix: list[dict[str, Any]]
    contradictions: list[dict[str, Any]]
    proposals: list[Proposal] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "intake": self.intake.to_dict(),
            "reports": {
                "current": self.current,
                "history": self.history,
                "identities": self.identities,
            },
            "matrix": self.matrix,
            "contradictions": self.contradictions,
            "quirk_proposals": [p.to_dict() for p in self.proposals],
        }


def _duckdb() -> Any:
    """DuckDB, once orjson (the intake's parser) is known to be there too."""
    try:
        import duckdb
        import orjson  # noqa: F401
    except ImportError as exc:
        raise FleetUnavailable(
            f"qcom-ext compat reads reports with orjson and merges them with DuckDB ({exc}): "
            "pip install 'qcom_ext[fleet]'"
        ) from None
    return duckdb


@cache
def statements() -> dict[str, str]:
    """``aggregate.sql``'s statements by name, in the file's order."""
    parts = _NAME.split(SQL_PATH.read_text(encoding="utf-8"))
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def _sql_list(paths: Sequence[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def _rows(connection: Any, sql: str) -> list[dict[str, Any]]:
    cursor = connection.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def aggregate(
    paths: Sequence[str], intake: Intake | None = None, scratch: str | None = None
) -> Merged:
    """Run ``aggregate.sql`` over newline-delimited reports at ``paths`` (files or
    globs, hive-partitioned directories welcome), trusted as already checked. DuckDB
    works in a database file under ``scratch`` (a folder; the system's temporary one by
    default) and spills there past :data:`MEMORY_LIMIT`, so memory stays bounded
    whatever the fleet's size; its failures are :class:`MergeError`."""
    duckdb = _duckdb()
    config = {
        "memory_limit": MEMORY_LIMIT,
        "threads": os.cpu_count() or 1,
        "preserve_insertion_order": False,
    }
    with tempfile.TemporaryDirectory(prefix="qcom-ext-compat-", dir=scratch) as work:
        try:
            connection = duckdb.connect(
                os.path.join(work, "fleet.duckdb"), config={**config, "temp_directory": work}
            )
            try:
                connection.execute("SET enable_progress_bar = false")
                return _run(connection, paths, intake)
            finally:
                connection.close()
        except duckdb.Error as exc:
            reason = " ".join(str(exc).split("\n\n")[0].split())
            raise MergeError(f"DuckDB could not merge the reports: {reason}") from None


def _run(connection: Any, paths: Sequence[str], intake: Intake | None) -> Merged:
    """The statements of ``aggregate.sql``, in order, on ``connection``."""
    sql = statements()
    connection.execute(sql["reports"].replace("{paths}", _sql_list(paths)))
    connection.execute(sql["loaded"])
    connection.execute(sql["ranked"])
    current, history, identities = connection.execute(sql["totals"]).fetchone()
    merged = Merged(
        intake or Intake(),
        current,
        history,
        identities,
        _rows(connection, sql["matrix"]),
        _rows(connection, sql["contradictions"]),
    )
    merged.proposals = propose(_rows(connection, sql["outcomes"]))
    return merged


def merge(inputs: Iterable[str | os.PathLike[str]], workers: int | None = None) -> Merged:
    """Check every report of ``inputs`` (files, directories, newline-delimited files)
    and merge the ones that pass; the skipped ones are counted with their reasons.
    ``workers``: the processes that check them (:func:`.intake.read_reports_into`)."""
    _duckdb()  # before reading anything: without DuckDB there is nothing to merge into
    with tempfile.TemporaryDirectory(prefix="qcom-ext-compat-") as scratch:
        names, intake = read_reports_into(inputs, scratch, workers)
        if not intake.merged:
            return Merged(intake, 0, 0, 0, [], [])
        return aggregate(names, intake, scratch)
