"""The one persistent JSON store: one file per key in a directory of the cache root.

The tuning cache (:mod:`qcom_ext.ops.tuning_cache`: local sizes) and the variant store
(:mod:`qcom_ext.ext.variant_store`: remembered choices) are two formats of it. An entry
is ``{"format", "version", "key", <the fields of its format>, "created"}`` in
``<digest>.json``, written atomically (:func:`~qcom_ext._cache_dir.write_atomically`) and
read back as untrusted input through :func:`~qcom_ext._cache_dir.read_json` (the one trust
check: not a regular file of the user, in a directory others could write, oversized or
not JSON is a miss). An entry of another format or version, or stored for another key,
is a miss too; a caller decodes the fields it finds and treats a bad one as a miss (the
next tuning replaces the entry). :class:`Memo` is the in-process memo of lookups, with
its lock and the count of :meth:`~Memo.forget` calls.

>>> import tempfile
>>> store = JsonStore(Path(tempfile.mkdtemp()), "demo", 1)
>>> store.store("ab12", {"k": 1}, {"value": [1, 2]}).name
'ab12.json'
>>> store.load("ab12", {"k": 1})["value"], store.load("ab12", {"k": 2})
([1, 2], None)
>>> memo = Memo()
>>> memo.get("x", lambda: 42), memo.get("x", lambda: 0)
(42, 42)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from qcom_ext._cache_dir import read_json, unwritable, write_atomically

__all__ = ["DEFAULT_MAX_BYTES", "JsonStore", "Memo"]

#: An entry larger than this is not read (a miss, replaced by the next store).
DEFAULT_MAX_BYTES = 1 << 16

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class JsonStore:
    """The entries of one ``format`` and ``version`` in ``directory``; ``what`` names
    the store in the warning of an entry that cannot be written."""

    def __init__(
        self,
        directory: Path,
        format: str,
        version: int,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        what: str = "tuning cache",
    ) -> None:
        self.directory = Path(directory)
        self.format, self.version = format, version
        self.max_bytes, self.what = max_bytes, what

    def path(self, digest: str) -> Path:
        return self.directory / f"{digest}.json"

    def load(self, digest: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The entry stored under ``digest`` for ``key``, or None when it is absent,
        unreadable, of another format or version, or for another key."""
        entry = read_json(
            self.path(digest), max_bytes=self.max_bytes, validate=lambda e: type(e) is dict
        )
        if entry is None or entry.get("format") != self.format:
            return None
        if entry.get("version") != self.version or entry.get("key") != dict(key):
            return None
        return entry

    def store(self, digest: str, key: Mapping[str, Any], fields: Mapping[str, Any]) -> Path | None:
        """Write the entry of ``key`` with ``fields`` atomically; its path, or None (with
        a warning) when impossible."""
        path = self.path(digest)
        entry = {
            "format": self.format,
            "version": self.version,
            "key": dict(key),
            **fields,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        try:
            write_atomically(path, json.dumps(entry, indent=1).encode())
            return path
        except OSError as exc:
            unwritable(self.what, path, exc)
            return None


class Memo(Generic[K, V]):
    """Lookups remembered in the process, under one lock; :meth:`forget` drops them and
    counts (:attr:`generation`), so memos of other lookups can tell."""

    def __init__(self) -> None:
        self._values: dict[K, V] = {}
        self._lock = threading.Lock()
        self.generation = 0

    def get(self, key: K, load: Callable[[], V]) -> V:
        """The value remembered for ``key``; else ``load()``'s, remembered. A hit is one
        dict lookup (atomic under the GIL: no lock on the launch path)."""
        try:
            return self._values[key]
        except KeyError:
            pass
        found = load()
        with self._lock:
            return self._values.setdefault(key, found)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._values[key] = value

    def forget(self) -> None:
        with self._lock:
            self._values.clear()
            self.generation += 1
