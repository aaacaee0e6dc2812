"""Tuned kernel variants: which compile-time variant of an op (a register tile, a strip
of rows, a work-group tile) was fastest for one input shape on one device.

The entries sit beside the local sizes in the tuning cache directory
(:func:`~qcom_ext.ops.tuning_cache.tuning_dir`), one JSON file per key, written and read
as the local sizes are: written atomically, and any entry that is unreadable, of
another format, for another key or naming a variant outside the op's variant space is a
miss (the op then runs its default variant, and the next tuning replaces the entry).
The key is the platform, device, driver, op, the hash of the op's kernel sources, the
layer's fixed options and the input shape. Lookups are memoised in the process
(:func:`~qcom_ext.ops.tuning_cache.forget` drops the memo with the local sizes').

>>> import tempfile
>>> from pathlib import Path
>>> key = VariantKey("pocl", "cpu", "6.0", "depthwise_conv2d", "0" * 64, "KH=3", (1, 8, 9, 9))
>>> cache = VariantCache(Path(tempfile.mkdtemp()))
>>> cache.store(key, (8, 4), best_ns=1200.0).suffix
'.json'
>>> cache.load(key), cache.load(key.__class__(*key[:-1], (1, 8, 9, 10)))
((8, 4), None)
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from qcom_ext._cache_dir import read_json, unwritable, write_atomically
from qcom_ext.ops import tuning_cache
from qcom_ext.ops.tuning_cache import MAX_ENTRY_BYTES, open_cache

__all__ = ["Variant", "VariantCache", "VariantKey", "cached_variant", "store_variant"]

FORMAT = "qcom_ext-variant"
VERSION = 1
#: A variant: the ints that select it (an op's own meaning, e.g. (pixels, rows)).
Variant = tuple[int, ...]


class VariantKey(NamedTuple):
    """What a tuned variant is valid for."""

    platform: str
    device: str
    driver: str
    op: str
    source_sha256: str
    options: str
    shape: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        return {**self._asdict(), "shape": [int(v) for v in self.shape]}

    def digest(self) -> str:
        text = json.dumps({"format": FORMAT, **self.as_dict()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class VariantCache:
    """One JSON file per key in ``directory`` (the tuning cache's)."""

    directory: Path

    def path(self, key: VariantKey) -> Path:
        return self.directory / f"{key.digest()}.json"

    def load(self, key: VariantKey, allowed: Collection[Variant] | None = None) -> Variant | None:
        """The stored variant, or None when absent, unreadable, foreign or (``allowed``
        given) not one of ``allowed``."""
        entry = read_json(
            self.path(key), max_bytes=MAX_ENTRY_BYTES, validate=lambda e: type(e) is dict
        )
        if entry is None or entry.get("format") != FORMAT or entry.get("version") != VERSION:
            return None
        if entry.get("key") != key.as_dict():
            return None
        variant = entry.get("variant")
        if not isinstance(variant, list) or not all(
            type(v) is int and 0 <= v < 1 << 16 for v in variant
        ):
            return None
        found = tuple(variant)
        return found if allowed is None or found in allowed else None

    def store(
        self,
        key: VariantKey,
        variant: Variant,
        best_ns: float | None = None,
        measured: Sequence[tuple[Variant, float]] = (),
    ) -> Path | None:
        """Write the entry atomically; its path, or None (with a warning) when impossible."""
        path = self.path(key)
        entry = {
            "format": FORMAT,
            "version": VERSION,
            "key": key.as_dict(),
            "variant": [int(v) for v in variant],
            "best_ns": best_ns,
            "measured": [[list(v), ns] for v, ns in measured],
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        try:
            write_atomically(path, json.dumps(entry, indent=1).encode())
            return path
        except OSError as exc:
            unwritable("tuning cache", path, exc)
            return None


_memory: dict[VariantKey, Variant | None] = {}
_lock = threading.Lock()
_generation = [0]  # tuning_cache.generation() when _memory was last cleared


def _cache() -> VariantCache | None:
    cache = open_cache()
    return None if cache is None else VariantCache(cache.directory)


def _sync() -> None:
    """Drop the memo when :func:`~qcom_ext.ops.tuning_cache.forget` ran since it was made."""
    with _lock:
        if tuning_cache.generation() != _generation[0]:
            _memory.clear()
            _generation[0] = tuning_cache.generation()


def cached_variant(key: VariantKey, allowed: Collection[Variant]) -> Variant | None:
    """The tuned variant for ``key`` if it is one of ``allowed``, else None (memoised)."""
    _sync()
    try:
        found = _memory[key]
    except KeyError:
        cache = _cache()
        found = cache.load(key) if cache else None
        with _lock:
            _memory[key] = found
    return found if found in allowed else None


def store_variant(
    key: VariantKey, variant: Variant, best_ns: float, measured: Sequence[tuple[Variant, float]]
) -> None:
    """Remember ``variant`` for ``key`` in the process and in the cache (where enabled)."""
    _sync()
    with _lock:
        _memory[key] = tuple(variant)
    cache = _cache()
    if cache is not None:
        cache.store(key, variant, best_ns, measured)
