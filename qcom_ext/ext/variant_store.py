"""The remembered choices of variant tuning: which variant of an op (a register tile of a
layer, a method, block and work-group of a whole-image op) ran fastest for one input shape
on one device. One store for every op: :func:`qcom_ext.ops.variant_tuning.choose` writes
it, the layers (:mod:`qcom_ext.ops._variants`) and the whole-image ops (``tuned=True``)
read it. It sits in ``ext/`` so that both layers can.

A choice is what the op is given back: a tuple of ints for a layer (its variant, e.g.
``(pixels, rows, ...)``), or a dict of keyword options for a whole-image op
(``{"method": "strips", "block": (1, 8), "local_size": (16, 8)}``).

The entries sit beside the local sizes in the tuning cache directory (``tuning/`` of the
cache root, :mod:`qcom_ext._cache_dir`), one JSON file per key in the one JSON store
(:class:`qcom_ext._json_store.JsonStore`), written atomically and read through
:func:`~qcom_ext._cache_dir.read_json`: an entry that is unreadable (not a regular file
of the user, in a directory others could write, oversized, not JSON), of another format,
for another key, or naming a choice the op rejects is a miss (the op then runs its
default, and the next tuning replaces the entry). The key is the platform, device,
driver, op, the hash of the op's kernel sources, the op's fixed options and the input
shape. Lookups are memoised in the process; :func:`forget` (called by
:func:`qcom_ext.tuning.forget`) drops the memo.

>>> import tempfile
>>> from pathlib import Path
>>> key = VariantKey("pocl", "cpu", "6.0", "depthwise_conv2d", "0" * 64, "KH=3", (1, 8, 9, 9))
>>> cache = VariantCache(Path(tempfile.mkdtemp()))
>>> cache.store(key, (8, 4), best_ns=1200.0).suffix
'.json'
>>> cache.load(key), cache.load(key.__class__(*key[:-1], (1, 8, 9, 10)))
((8, 4), None)
>>> _ = cache.store(key._replace(op="box_filter_image"), {"method": "strips", "block": (1, 8)})
>>> cache.load(key._replace(op="box_filter_image"))
{'method': 'strips', 'block': (1, 8)}
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from qcom_ext._cache_dir import cache_enabled, cache_subdir
from qcom_ext._json_store import JsonStore, Memo
from qcom_ext.ext.program.shared import kernels_digest

__all__ = [
    "Choice",
    "VariantCache",
    "VariantKey",
    "cached_variant",
    "forget",
    "kernels_digest",
    "open_store",
    "store_variant",
]

FORMAT = "qcom_ext-variant"
VERSION = 1
#: An entry larger than this is not read (a miss, replaced by the next tuning).
MAX_ENTRY_BYTES = 1 << 16
#: A remembered choice: a layer's variant (ints) or a whole-image op's keyword options.
Choice = tuple[int, ...] | dict[str, Any]
_MAX_INT = 1 << 16  # every int of a choice is below this (sizes, tiles, counts)


class VariantKey(NamedTuple):
    """What a remembered choice is valid for."""

    platform: str
    device: str
    driver: str
    op: str
    source_sha256: str
    options: str
    shape: tuple[int, ...]

    @classmethod
    def of(
        cls, device: Any, op: str, sources: str, options: str, shape: Iterable[int]
    ) -> VariantKey:
        """The key of ``op`` on the pyopencl ``device`` (its platform, name, driver)."""
        return cls(
            device.platform.name.strip(),
            device.name.strip(),
            device.driver_version.strip(),
            op,
            sources,
            options,
            tuple(int(v) for v in shape),
        )

    def as_dict(self) -> dict[str, Any]:
        return {**self._asdict(), "shape": [int(v) for v in self.shape]}

    def digest(self) -> str:
        text = json.dumps({"format": FORMAT, **self.as_dict()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def _small_int(value: Any) -> bool:
    return type(value) is int and 0 <= value < _MAX_INT


def _decode(value: Any) -> Choice | None:
    """The choice an entry holds, or None when it is not a well-formed one: a list of small
    ints, or an object of at most 8 options, each None, a short string or a list of at
    most 4 small ints (lists come back as tuples)."""
    if isinstance(value, list):
        return tuple(value) if value and all(_small_int(v) for v in value) else None
    if not isinstance(value, dict) or not value or len(value) > 8:
        return None
    found: dict[str, Any] = {}
    for name, option in value.items():
        if len(name) > 32:
            return None
        if isinstance(option, list) and len(option) <= 4 and all(map(_small_int, option)):
            found[name] = tuple(option)
        elif option is None or (isinstance(option, str) and len(option) <= 32):
            found[name] = option
        else:
            return None
    return found


def _encode(choice: Choice) -> Any:
    if isinstance(choice, dict):
        return {k: list(v) if isinstance(v, tuple) else v for k, v in choice.items()}
    return [int(v) for v in choice]


@dataclass
class VariantCache:
    """One JSON file per key in ``directory`` (the tuning cache's), through
    :class:`~qcom_ext._json_store.JsonStore`."""

    directory: Path

    @property
    def _entries(self) -> JsonStore:
        return JsonStore(self.directory, FORMAT, VERSION, max_bytes=MAX_ENTRY_BYTES)

    def path(self, key: VariantKey) -> Path:
        return self._entries.path(key.digest())

    def load(self, key: VariantKey, allowed: Collection[Any] | None = None) -> Choice | None:
        """The stored choice, or None when absent, unreadable, foreign or (``allowed``
        given) not in ``allowed``."""
        entry = self._entries.load(key.digest(), key.as_dict())
        if entry is None:
            return None
        found = _decode(entry.get("variant"))
        return found if allowed is None or _within(found, allowed) else None

    def store(
        self,
        key: VariantKey,
        choice: Choice,
        best_ns: float | None = None,
        measured: Sequence[tuple[Choice, float]] = (),
    ) -> Path | None:
        """Write the entry atomically; its path, or None (with a warning) when impossible."""
        fields = {
            "variant": _encode(choice),
            "best_ns": best_ns,
            "measured": [[_encode(c), ns] for c, ns in measured],
        }
        return self._entries.store(key.digest(), key.as_dict(), fields)


_memory: Memo[VariantKey, Choice | None] = Memo()


def open_store() -> VariantCache | None:
    """The store now (``tuning/`` of the cache root), or None where caching is off
    (``QCOM_EXT_NO_CACHE=1``: choices then live in the process only)."""
    return VariantCache(cache_subdir("tuning")) if cache_enabled() else None


def forget() -> None:
    """Drop the in-process memo of lookups (files are read again on the next one)."""
    _memory.forget()


def cached_variant(key: VariantKey, allowed: Collection[Any]) -> Choice | None:
    """The remembered choice for ``key`` if it is in ``allowed``, else None (memoised).
    ``allowed`` may be any object with ``__contains__``: the op's check of a choice."""

    def load() -> Choice | None:
        cache = open_store()
        return cache.load(key) if cache else None

    found = _memory.get(key, load)
    return found if _within(found, allowed) else None


def _within(found: Choice | None, allowed: Collection[Any]) -> bool:
    """Whether ``found`` is a choice in ``allowed`` (a dict where tuples are expected,
    unhashable in a set, is not)."""
    try:
        return found is not None and found in allowed
    except TypeError:
        return False


def store_variant(
    key: VariantKey, choice: Choice, best_ns: float, measured: Sequence[tuple[Choice, float]]
) -> None:
    """Remember ``choice`` for ``key`` in the process and in the cache (where enabled)."""
    _memory.put(key, _decode(_encode(choice)))
    cache = open_store()
    if cache is not None:
        cache.store(key, choice, best_ns, measured)
