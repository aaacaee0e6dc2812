"""The tuning cache: what a tuned local size is valid for (:class:`KernelIdentity`),
one JSON file per key, and the in-process memo of lookups (:func:`cached_local_size`).

Results persist as one JSON file per key in ``tuning/`` of the cache root
(:class:`qcom_ext._json_store.JsonStore`, the one JSON store)
(``QCOM_EXT_CACHE_DIR``, else the user cache directory; ``QCOM_EXT_NO_CACHE=1`` keeps
them in memory only). The key is the platform, device, driver version, kernel name,
source hash, build options, global size and whether the global size may be padded, so
a new driver, source or option set is tuned afresh. Files are written to a temporary
name and renamed, so concurrent writers never leave a torn file; a file that does not
parse or does not match its key is ignored (and replaced by the next tuning).

>>> import tempfile
>>> from pathlib import Path
>>> identity = KernelIdentity("pocl", "cpu", "6.0", "k", "0" * 64, "-DX=1")
>>> cache = TuningCache(Path(tempfile.mkdtemp()))
>>> result = TuningResult((64,), best_ns=10.0, driver_ns=15.0)
>>> cache.store(identity, (4096,), False, result).suffix
'.json'
>>> cache.load(identity, (4096,), False).local_size, cache.load(identity, (2048,), False)
((64,), None)
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from qcom_ext._cache_dir import cache_enabled, cache_subdir
from qcom_ext._json_store import JsonStore, Memo
from qcom_ext.ext import variant_store

__all__ = [
    "KernelIdentity",
    "LocalSize",
    "TuningCache",
    "TuningResult",
    "cached_local_size",
    "forget",
    "generation",
    "kernel_identity",
    "open_cache",
    "remember",
    "tuning_dir",
]

FORMAT = "qcom_ext-tuning"
VERSION = 1
LocalSize = tuple[int, ...] | None
#: A tuning file larger than this is not read (a miss, replaced by the next tuning).
MAX_ENTRY_BYTES = 1 << 16


@dataclass(frozen=True)
class KernelIdentity:
    """What a tuned local size is valid for, besides the global size."""

    platform: str
    device: str
    driver: str
    kernel: str
    source_sha256: str
    options: str

    def key(self, global_size: Sequence[int], pad_global: bool) -> dict[str, Any]:
        """The full cache key of one global size (stored in the entry and checked)."""
        return {
            **asdict(self),
            "global_size": [int(g) for g in global_size],
            "pad_global": bool(pad_global),
        }

    def digest(self, global_size: Sequence[int], pad_global: bool) -> str:
        text = json.dumps(self.key(global_size, pad_global), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def kernel_identity(
    kernel: Any, device: Any = None, *, source: str | None = None, options: str | None = None
) -> KernelIdentity:
    """The identity of ``kernel`` on ``device`` (default: its context's first device).

    The source comes from the program (``CL_PROGRAM_SOURCE``) unless given; a program
    created from binaries has none: one :func:`qcom_ext.build_program` loaded from its
    cache is keyed by the source it was built from (as when it compiles it), any other
    by the hash of its binaries.
    """
    import pyopencl as cl

    from qcom_ext.ext.program.build import binaries_digest, source_digest

    program = kernel.get_info(cl.kernel_info.PROGRAM)
    device = device if device is not None else kernel.context.devices[0]
    source_sha256 = None
    if source is None:
        source = program.get_info(cl.program_info.SOURCE) or ""
        if not source.strip():
            binaries = program.get_info(cl.program_info.BINARIES)
            source_sha256 = source_digest(binaries)
            source = "binary:" + binaries_digest(binaries)
    if options is None:
        options = program.get_build_info(device, cl.program_build_info.OPTIONS) or ""
    return KernelIdentity(
        platform=device.platform.name.strip(),
        device=device.name.strip(),
        driver=device.driver_version.strip(),
        kernel=kernel.function_name,
        source_sha256=source_sha256 or hashlib.sha256(source.encode()).hexdigest(),
        options=" ".join(options.split()),
    )


def tuning_dir() -> Path:
    """The directory of the tuning cache now (``<cache root>/tuning``)."""
    return cache_subdir("tuning")


@dataclass(frozen=True)
class TuningResult:
    """What :func:`tune_report` found. Times are median device nanoseconds per run."""

    local_size: LocalSize
    best_ns: float | None
    driver_ns: float | None
    measured: tuple[tuple[LocalSize, float], ...] = ()
    rejected: tuple[tuple[LocalSize, str], ...] = ()
    from_cache: bool = False

    @property
    def gain(self) -> float | None:
        """Driver's median over the best median (1.0: the driver's choice is the best)."""
        if not self.best_ns or not self.driver_ns:
            return None
        return self.driver_ns / self.best_ns


@dataclass
class TuningCache:
    """One JSON file per key in ``directory`` (:class:`~qcom_ext._json_store.JsonStore`)."""

    directory: Path

    @property
    def _entries(self) -> JsonStore:
        return JsonStore(self.directory, FORMAT, VERSION, max_bytes=MAX_ENTRY_BYTES)

    def path(self, digest: str) -> Path:
        return self._entries.path(digest)

    def load(
        self, identity: KernelIdentity, global_size: Sequence[int], pad_global: bool
    ) -> TuningResult | None:
        """The stored result, or None when absent, unreadable, corrupt or foreign."""
        key = identity.key(global_size, pad_global)
        entry = self._entries.load(identity.digest(global_size, pad_global), key)
        return None if entry is None else _decode(entry, key)

    def store(
        self,
        identity: KernelIdentity,
        global_size: Sequence[int],
        pad_global: bool,
        result: TuningResult,
    ) -> Path | None:
        """Write the entry atomically; its path, or None (with a warning) when impossible."""
        fields = {
            "local_size": None if result.local_size is None else list(result.local_size),
            "best_ns": result.best_ns,
            "driver_ns": result.driver_ns,
            "measured": [[None if ls is None else list(ls), ns] for ls, ns in result.measured],
        }
        digest = identity.digest(global_size, pad_global)
        return self._entries.store(digest, identity.key(global_size, pad_global), fields)


def _decode(entry: dict[str, Any], key: dict[str, Any]) -> TuningResult | None:
    """The result of an entry of this format and key; None when a field is malformed."""
    local = entry.get("local_size")
    dims = len(key["global_size"])
    if local is not None:
        if (
            not isinstance(local, list)
            or len(local) != dims
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in local)
        ):
            return None
        local = tuple(local)
    best, driver_ns = entry.get("best_ns"), entry.get("driver_ns")
    if not all(v is None or _is_time(v) for v in (best, driver_ns)):
        return None
    return TuningResult(local, best, driver_ns, from_cache=True)


def _is_time(value: Any) -> bool:
    """A median time as stored: a finite number of nanoseconds >= 0 (a bool is not one)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


_memory: Memo[tuple[KernelIdentity, tuple[int, ...], bool], TuningResult | None] = Memo()


def forget() -> None:
    """Drop the in-process memo of cache lookups (files are re-read on the next lookup),
    the remembered variants' too (:mod:`qcom_ext.ext.variant_store`)."""
    _memory.forget()
    variant_store.forget()


def generation() -> int:
    """How many times :func:`forget` ran: memos of other lookups compare it with theirs."""
    return _memory.generation


def open_cache() -> TuningCache | None:
    """The tuning cache now, or None where caching is off (``QCOM_EXT_NO_CACHE=1``)."""
    return TuningCache(tuning_dir()) if cache_enabled() else None


def remember(
    identity: KernelIdentity, global_size: Sequence[int], pad_global: bool, result: TuningResult
) -> None:
    """Put a new ``result`` in the in-process memo of :func:`cached_local_size`."""
    _memory.put((identity, tuple(int(g) for g in global_size), bool(pad_global)), result)


def cached_local_size(
    identity: KernelIdentity, global_size: Sequence[int], pad_global: bool = True
) -> LocalSize:
    """The tuned local size for this kernel and global size, or None (driver's choice)
    when it was never tuned. Lookups are memoised in the process (see :func:`forget`), so
    a launch pays a dict lookup, not a file read."""
    key = (identity, tuple(int(g) for g in global_size), bool(pad_global))

    def load() -> TuningResult | None:
        cache = open_cache()
        return cache.load(identity, key[1], pad_global) if cache else None

    found = _memory.get(key, load)
    return None if found is None else found.local_size
