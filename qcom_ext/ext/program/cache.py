"""A persistent store of OpenCL program binaries, safe to share between processes.

:func:`qcom_ext.build_program` keeps one entry per build: the binaries of every device,
under a key that hashes everything the binary depends on (see :func:`key_of`). The
store knows nothing about OpenCL; it writes and verifies bytes.

Each entry is one file, written to a temporary name in the same directory and moved
into place with :func:`os.replace`, so a reader sees a whole old entry or a whole new
one, whatever other threads or processes do. The file carries its key, the metadata it
was built for and an HMAC-SHA256 of its key and everything before the HMAC: a corrupt,
truncated or foreign entry (another key, device or driver) is reported as a miss, never
handed to a driver, and so is anything at an entry's path that is not a regular file
(a symlink is not followed).

Threat model. A program binary is code (on pocl it carries a host shared object that
runs in this process), so the store is used only where :mod:`qcom_ext._cache_dir`
trusts the directory: owned by the user, not writable by group or others, no symlinks
inside. The HMAC is keyed by a random secret kept in the directory (``.integrity-key``,
mode 0o600, made on the first store): it catches corruption and truncation, an entry
filed under another key, and entries copied in from another cache (another user or
machine) that were not made with this secret. It cannot stop anyone who runs code as
the same user, or root: they can read the secret and write entries, but they can also
run anything as that user already. A binary the driver built itself is trusted as is.

>>> import tempfile
>>> store = ProgramCache(tempfile.mkdtemp())
>>> key = key_of({"source": "kernel void k() {}", "options": ["-DN=4"]})
>>> store.load(key, {"device": "pocl"}) is None
True
>>> _ = store.store(key, {"device": "pocl"}, [b"binary for device 0"])
>>> store.load(key, {"device": "pocl"})
[b'binary for device 0']
>>> store.load(key, {"device": "another driver"}) is None  # foreign: never trusted
True
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import struct
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from qcom_ext._cache_dir import (
    DIR_ENV,
    DISABLE_ENV,
    NotAnEntry,
    cache_enabled,
    cache_subdir,
    check_dir,
    parse_json,
    read_entry,
    unwritable,
    write_atomically,
    write_new,
)

__all__ = [
    "DIR_ENV",
    "DISABLE_ENV",
    "FORMAT",
    "ProgramCache",
    "cache_enabled",
    "default_cache",
    "default_dir",
    "directory_digest",
    "key_of",
]

#: Bumped whenever the entry layout or the key's contents change (2: HMAC, not SHA-256).
FORMAT = 2
MAGIC = b"QCOM_EXT program cache\n"
_LENGTH = struct.Struct("<Q")
_DIGEST_SIZE = 32
SUFFIX = ".clbin"
#: The file of the directory's HMAC secret, and its size.
SECRET_NAME = ".integrity-key"
_SECRET_SIZE = 32
#: Entries and headers larger than this are not read (a miss).
MAX_ENTRY_BYTES = 1 << 30
MAX_HEADER_BYTES = 1 << 20

log = logging.getLogger(__name__)


def key_of(parts: Mapping[str, Any]) -> str:
    """The hex SHA-256 of ``parts`` as canonical JSON (sorted keys, no whitespace).

    >>> key_of({"b": 1, "a": [2]}) == key_of({"a": [2], "b": 1})
    True
    >>> len(key_of({}))
    64
    """
    text = json.dumps({"format": FORMAT, **parts}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def directory_digest(
    directory: str | os.PathLike[str], suffixes: Iterable[str], limit: int = 5000
) -> str | None:
    """A SHA-256 over the names and contents of every file under ``directory`` whose
    name ends with one of ``suffixes`` (recursively); None when more than ``limit``
    files match (too many to hash on every build). A missing directory hashes as empty.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.h").write_text("#define A 1")
    >>> before = directory_digest(d, [".h"])
    >>> _ = (d / "a.h").write_text("#define A 2")
    >>> before == directory_digest(d, [".h"])
    False
    """
    root = Path(directory)
    wanted = tuple(suffixes)
    files: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        subfolders.sort()
        files += [Path(folder, n) for n in sorted(names) if n.endswith(wanted)]
        if len(files) > limit:
            return None
    digest = hashlib.sha256()
    for path in files:
        try:
            content = path.read_bytes()
        except OSError:  # unreadable: the compiler cannot include it either
            content = b"\0unreadable"
        name = path.relative_to(root).as_posix().encode()
        digest.update(_LENGTH.pack(len(name)) + name)
        digest.update(_LENGTH.pack(len(content)) + hashlib.sha256(content).digest())
    return digest.hexdigest()


def default_dir() -> Path:
    """``programs/`` under the cache root: ``QCOM_EXT_CACHE_DIR`` if set, else
    ``platformdirs.user_cache_dir("qcom_ext")`` (the tuner keeps ``tuning/`` beside it)."""
    return cache_subdir("programs")


def default_cache() -> ProgramCache | None:
    """The store :func:`qcom_ext.build_program` uses now, or None when disabled."""
    return ProgramCache(default_dir()) if cache_enabled() else None


class ProgramCache:
    """Entries of program binaries in ``directory`` (created, mode 0o700, on the first
    store). The directory is used only while :func:`qcom_ext._cache_dir.check_dir`
    trusts it; otherwise loads miss and stores write nothing (one warning says why)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        """Where the entry of ``key`` lives."""
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"cache key {key!r} is not a hex SHA-256 (64 lowercase digits)")
        return self.directory / f"{key}{SUFFIX}"

    def load(self, key: str, meta: Mapping[str, Any]) -> list[bytes] | None:
        """The binaries stored under ``key`` for ``meta``; None on a miss.

        An entry that fails any check (HMAC, layout, header, key, metadata) is a miss and
        is removed, so that the rebuild that follows replaces it.
        """
        path = self.path(key)
        try:
            secret = self._secret(create=False)
            if secret is None:  # no secret yet: nothing here can be verified
                raise FileNotFoundError(path)
            data = read_entry(path, max_bytes=MAX_ENTRY_BYTES)
        except FileNotFoundError:
            log.debug("program cache miss: %s", path.name)
            return None
        except NotAnEntry as exc:  # a symlink or FIFO is never followed; it is replaced
            log.info("program cache entry rejected (%s): rebuilding", exc)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        except OSError as exc:  # UntrustedDir included: nothing there is touched
            log.info("program cache entry %s unreadable (%s): rebuilding", path, exc)
            return None
        binaries, problem = _decode(data, secret, key, meta)
        if problem is not None:
            log.info("program cache entry %s rejected (%s): rebuilding", path, problem)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        log.debug("program cache hit: %s", path.name)
        return binaries

    def store(self, key: str, meta: Mapping[str, Any], binaries: Sequence[bytes]) -> Path | None:
        """Write the entry of ``key`` atomically; its path, or None when it could not be
        written (a :class:`~qcom_ext.QcomExtWarning` says why; builds go on uncached)."""
        path = self.path(key)
        try:
            write_atomically(path, _encode(self._secret(create=True), key, meta, binaries))
            return path
        except OSError as exc:
            if self.load(key, meta) is not None:  # another writer got there (Windows)
                return path
            unwritable("program cache", path, exc)
            return None

    def _secret(self, *, create: bool) -> bytes | None:
        """The directory's HMAC secret; None when there is none (or it is not a private
        file of the right size) and ``create`` is false; else a new one replaces it. The
        first of concurrent creators wins; OSError when the directory cannot be used."""
        path = self.directory / SECRET_NAME
        try:
            found: bytes | None = read_entry(path, max_bytes=_SECRET_SIZE)
        except FileNotFoundError:
            found = None
        except NotAnEntry:  # a symlink, FIFO, another user's file, too long
            found = b""
        if found is not None and len(found) == _SECRET_SIZE:
            return found
        if not create:
            return None
        fresh = secrets.token_bytes(_SECRET_SIZE)
        if found is None and not write_new(path, fresh):
            return self._secret(create=False) or self._secret(create=True)
        if found is not None:  # not a secret: replaced (entries made with it now miss)
            write_atomically(path, fresh)
        return fresh

    def entries(self) -> list[Path]:
        """The entry files present now (none in a directory that is not trusted)."""
        try:
            check_dir(self.directory)
        except OSError:
            return []
        return sorted(self.directory.glob(f"*{SUFFIX}"))

    def clear(self) -> int:
        """Remove every entry; the number removed."""
        removed = 0
        for path in self.entries():
            try:
                path.unlink()
                removed += 1
            except FileNotFoundError:
                pass
        return removed


def _seal(secret: bytes, key: str, body: bytes | memoryview) -> bytes:
    """The HMAC-SHA256 of an entry: keyed by the directory's secret, over its key and body."""
    mac = hmac.new(secret, key.encode() + b"\0", hashlib.sha256)
    mac.update(body)
    return mac.digest()


def _encode(secret: bytes, key: str, meta: Mapping[str, Any], binaries: Sequence[bytes]) -> bytes:
    header = json.dumps(
        {"format": FORMAT, "key": key, "meta": meta, "sizes": [len(b) for b in binaries]},
        sort_keys=True,
    ).encode()
    body = MAGIC + _LENGTH.pack(len(header)) + header + b"".join(binaries)
    return body + _seal(secret, key, body)


def _header_ok(header: Any) -> bool:
    """The types an entry's header must have (its values are checked by :func:`_decode`)."""
    return (
        isinstance(header, dict)
        and type(header.get("format")) is int
        and isinstance(header.get("key"), str)
        and "meta" in header
        and isinstance(header.get("sizes"), list)
        and all(type(n) is int and n >= 0 for n in header["sizes"])
    )


def _decode(
    data: bytes, secret: bytes, key: str, meta: Mapping[str, Any]
) -> tuple[list[bytes], str | None]:
    """The binaries of an entry and None, or [] and why the entry is not trusted."""
    start = len(MAGIC) + _LENGTH.size
    if len(data) < start + _DIGEST_SIZE or not data.startswith(MAGIC):
        return [], "not a qcom_ext cache entry, or truncated"
    body, digest = memoryview(data)[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
    if not hmac.compare_digest(_seal(secret, key, body), digest):
        return [], "HMAC mismatch: corrupt, truncated, another key's or another cache's"
    (header_size,) = _LENGTH.unpack_from(body, len(MAGIC))
    if header_size > MAX_HEADER_BYTES:
        return [], f"header of {header_size} bytes, over {MAX_HEADER_BYTES}"
    header = parse_json(
        bytes(body[start : start + header_size]), max_bytes=MAX_HEADER_BYTES, validate=_header_ok
    )
    if header is None:
        return [], "unreadable or ill-typed header"
    if header["format"] != FORMAT:
        return [], f"format {header['format']}, expected {FORMAT}"
    if header["key"] != key:
        return [], "entry of another key"
    expected = json.loads(json.dumps(meta, sort_keys=True))  # as it reads back from JSON
    if header["meta"] != expected:
        return [], f"built for {header['meta']}, not {expected}"
    payload, sizes = body[start + header_size :], header["sizes"]
    if sum(sizes) != len(payload):
        return [], "binary sizes do not match the payload"
    binaries, offset = [], 0
    for n in sizes:
        binaries.append(bytes(payload[offset : offset + n]))
        offset += n
    return binaries, None
