"""Where qcom_ext keeps persistent caches, whether it may, and how an entry is read.

The root is ``QCOM_EXT_CACHE_DIR`` when set, else the user cache directory
(``platformdirs.user_cache_dir("qcom_ext")``); each cache has its own subdirectory
(``programs/``, ``tuning/``, ``verdicts/``). ``QCOM_EXT_NO_CACHE`` set to anything but
``""`` or ``"0"`` turns persistent caches off.

Every file the library reads back is untrusted input, and this module is the one place
that decides whether a cache directory may be used and how an entry is read:

* A directory is used only when it is private to the user: the root (whose symlink, if
  it is one, is followed) and every sub-directory below it (never a symlink) must be
  owned by the current user and not writable by group or others; a sticky world-writable
  directory like ``/tmp`` is refused too. Otherwise one :class:`~qcom_ext.QcomExtWarning`
  per directory and reason names it (as pip does), and the caches work uncached.
  On Windows, where modes are not permissions, only the symlink rule applies.
  Missing directories are created with mode ``0o700``.
* :func:`read_entry` reads only a regular file owned by the user (never a symlink, FIFO
  or device), and :func:`read_json` turns anything unreadable, oversized, too deep,
  non-finite or ill-typed into a miss (None) that the next write replaces.

>>> import os
>>> os.environ["QCOM_EXT_CACHE_DIR"] = "/tmp/qcom-ext-doc"
>>> str(cache_root()), str(cache_subdir("tuning"))
('/tmp/qcom-ext-doc', '/tmp/qcom-ext-doc/tuning')
>>> del os.environ["QCOM_EXT_CACHE_DIR"]
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qcom_ext.errors import ConfigError, QcomExtWarning

__all__ = [
    "DIR_ENV",
    "DISABLE_ENV",
    "NotAnEntry",
    "UntrustedDir",
    "cache_enabled",
    "cache_root",
    "cache_subdir",
    "check_dir",
    "parse_json",
    "read_entry",
    "read_json",
    "unwritable",
    "write_atomically",
    "write_new",
]

DIR_ENV = "QCOM_EXT_CACHE_DIR"
DISABLE_ENV = "QCOM_EXT_NO_CACHE"

#: Mode bits and owner mean nothing on Windows (ACLs decide): only symlinks are checked.
_POSIX = os.name == "posix"


def cache_enabled() -> bool:
    """False when ``QCOM_EXT_NO_CACHE`` is set to anything but ``""`` or ``"0"``."""
    return os.environ.get(DISABLE_ENV, "").strip() in ("", "0")


def cache_root() -> Path:
    """``QCOM_EXT_CACHE_DIR``, else the platform's user cache directory for qcom_ext."""
    override = os.environ.get(DIR_ENV)
    if override:
        try:
            return Path(override).expanduser()
        except RuntimeError:  # "~name" of a user that does not exist
            raise ConfigError(
                f"{DIR_ENV}={override!r}: cannot expand the home directory in it; "
                "expected a directory path"
            ) from None
    import platformdirs

    return Path(platformdirs.user_cache_dir("qcom_ext", appauthor=False))


def cache_subdir(name: str) -> Path:
    """The directory of one cache (not created here)."""
    return cache_root() / name


# ---- directory trust ---------------------------------------------------------------------


class UntrustedDir(OSError):
    """A cache directory that others could write: not used (a warning said why)."""


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _refuse(directory: str, reason: str) -> UntrustedDir:
    """Warn once per directory and reason; the error that makes the caller miss."""
    with _warned_lock:
        first = (directory, reason) not in _warned
        _warned.add((directory, reason))
    if first:
        warnings.warn(
            f"qcom_ext does not use the cache directory {directory}: it {reason}; caching "
            f"there is off (make it private with 'chmod 700', or set {DIR_ENV} to a "
            f"directory only you can write, or {DISABLE_ENV}=1)",
            QcomExtWarning,
            stacklevel=5,
        )
    return UntrustedDir(errno.EPERM, f"untrusted cache directory: it {reason}", directory)


def _reason(directory: str, follow: bool) -> str | None:
    """Why ``directory`` may not hold cache entries, or None. FileNotFoundError if absent."""
    info = os.stat(directory) if follow else os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        return "is a symlink (symlinks inside the cache are not followed)"
    if not stat.S_ISDIR(info.st_mode):  # no trust question: an ordinary error
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", directory)
    if not _POSIX:
        return None
    if info.st_uid != os.geteuid():
        return f"is not owned by the current user (owner uid {info.st_uid}, you {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        sticky = " (sticky, as /tmp: others can still add entries)"
        sticky = sticky if info.st_mode & stat.S_ISVTX else ""
        return f"is writable by group or others (mode {stat.filemode(info.st_mode)}){sticky}"
    return None


def _chain(directory: str | os.PathLike[str]) -> list[tuple[str, bool]]:
    """The directories that must be private for entries in ``directory`` to be used, with
    whether to follow a symlink there: the cache root (followed) and each sub-directory
    down to ``directory`` (not followed); a directory outside the root stands alone."""
    directory = os.path.abspath(directory)
    try:
        root = os.path.abspath(cache_root())
    except ConfigError:
        return [(directory, True)]
    if directory != root and not directory.startswith(root.rstrip(os.sep) + os.sep):
        return [(directory, True)]
    chain, current = [(root, True)], root
    for part in filter(None, directory[len(root) :].split(os.sep)):
        current = os.path.join(current, part)
        chain.append((current, False))
    return chain


def check_dir(directory: str | os.PathLike[str], *, create: bool = False) -> Path:
    """``directory`` when entries may be read from or written to it; else OSError:
    :class:`UntrustedDir` (after one warning per directory and reason) when it or a
    directory above it within the cache is not private to the user, FileNotFoundError
    when one is missing and ``create`` is false. With ``create``, missing directories
    are made with mode 0o700 (the root's parents with the default mode).

    >>> import tempfile
    >>> base = Path(tempfile.mkdtemp())
    >>> check_dir(base / "cache", create=True) == base / "cache"
    True
    >>> oct((base / "cache").stat().st_mode & 0o777)
    '0o700'
    >>> (base / "cache").chmod(0o777)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_dir(base / "cache")
    Traceback (most recent call last):
    ...
    qcom_ext._cache_dir.UntrustedDir: [Errno 1] untrusted cache directory: it is writable ...
    >>> "is writable by group or others (mode drwxrwxrwx)" in str(caught[0].message)
    True
    """
    for index, (path, follow) in enumerate(_chain(directory)):
        if create:
            with contextlib.suppress(FileExistsError):  # a file there: _reason raises
                if index == 0:
                    Path(path).mkdir(mode=0o700, parents=True)  # parents: default mode
                else:
                    os.mkdir(path, 0o700)
        reason = _reason(path, follow)
        if reason is not None:
            raise _refuse(path, reason)
    return Path(directory)


# ---- reading entries ---------------------------------------------------------------------

#: Opens an entry without following a final symlink, and without blocking on a FIFO.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


class NotAnEntry(OSError):
    """The path is not a regular file of the user (a symlink, FIFO, device, directory,
    another user's file) or is larger than the reader accepts."""


def read_entry(path: Path, *, max_bytes: int | None = None) -> bytes:
    """The bytes of cache entry ``path``; OSError when it cannot be read: its directory
    is not trusted (:class:`UntrustedDir`, see :func:`check_dir`), or it is not a regular
    file of the user or is over ``max_bytes`` (:class:`NotAnEntry`): a cache never reads
    through a symlink (which could point at another cache's entry or any file) nor from a
    FIFO or device (which could block or never end).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "entry").write_bytes(b"abc") and read_entry(folder / "entry")
    b'abc'
    >>> (folder / "link").symlink_to(folder / "entry")
    >>> read_entry(folder / "link")
    Traceback (most recent call last):
    ...
    qcom_ext._cache_dir.NotAnEntry: ... is a symlink, not a cache entry
    """
    check_dir(path.parent)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):  # where O_NOFOLLOW does not exist
            raise NotAnEntry(f"{path} is a symlink, not a cache entry")
        handle = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if isinstance(exc, NotAnEntry) or exc.errno not in (errno.ELOOP, errno.EMLINK):
            raise
        raise NotAnEntry(f"{path} is a symlink, not a cache entry") from None
    with os.fdopen(handle, "rb") as entry:
        info = os.fstat(entry.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotAnEntry(f"{path} is not a regular file (mode {stat.filemode(info.st_mode)})")
        if _POSIX and info.st_uid != os.geteuid():
            raise NotAnEntry(f"{path} is owned by uid {info.st_uid}, not the current user")
        if max_bytes is not None and info.st_size > max_bytes:
            raise NotAnEntry(f"{path} is over {max_bytes} bytes: not read")
        data = entry.read(info.st_size + 1)  # not read(max_bytes): that allocates it all
        if len(data) > info.st_size:  # entries are replaced, never grown in place
            raise NotAnEntry(f"{path} grew while it was read")
        return data


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def _too_deep(text: str, max_depth: int) -> bool:
    """Whether JSON ``text`` nests deeper than ``max_depth`` (strings are skipped), found
    without recursion, so that ``"[" * 100_000`` is refused before ``json`` sees it."""
    depth = 0
    for bracket in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > max_depth:
            return True
    return False


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 overflows to inf
        raise ValueError(f"number {text[:20]} is not a finite float")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(
    data: bytes,
    *,
    max_bytes: int,
    validate: Callable[[Any], bool] | None = None,
    max_depth: int = 32,
) -> Any | None:
    """The JSON value of ``data``, or None when it is over ``max_bytes``, not UTF-8, not
    JSON, nested deeper than ``max_depth``, holds a non-finite or overflowing number
    (``NaN``, ``1e400``) or ``validate(value)`` is false (or raises TypeError,
    ValueError, KeyError, AttributeError or IndexError on it).

    >>> parse_json(b'{"sizes": [1, 2]}', max_bytes=100)
    {'sizes': [1, 2]}
    >>> [parse_json(bad, max_bytes=100) for bad in (b"[" * 90, b"[1e400]", b"\\xff", b"{")]
    [None, None, None, None]
    >>> parse_json(b"[1]" * 40, max_bytes=100) is None  # over the size: never parsed
    True
    >>> parse_json(b'{"n": "1"}', max_bytes=100, validate=lambda v: type(v["n"]) is int)
    """
    if len(data) > max_bytes:
        return None
    try:
        text = data.decode("utf-8")
        if _too_deep(text, max_depth):
            return None
        value = json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
        return None
    if validate is not None:
        try:
            if not validate(value):
                return None
        except (TypeError, ValueError, KeyError, AttributeError, IndexError):
            return None
    return value


def read_json(
    path: Path,
    *,
    max_bytes: int,
    validate: Callable[[Any], bool] | None = None,
    max_depth: int = 32,
) -> Any | None:
    """The JSON value of cache entry ``path``, or None (a miss) when it is absent, cannot
    be read (see :func:`read_entry`: untrusted directory, not a regular file, over
    ``max_bytes``) or does not parse into a value ``validate`` accepts (see
    :func:`parse_json`). The caller's next write replaces what was there.

    >>> import tempfile
    >>> entry = Path(tempfile.mkdtemp()) / "entry.json"
    >>> _ = entry.write_text('{"local_size": [64]}')
    >>> read_json(entry, max_bytes=1 << 16, validate=lambda v: isinstance(v, dict))
    {'local_size': [64]}
    >>> _ = entry.write_text("[" * 100_000)
    >>> read_json(entry, max_bytes=1 << 20) is None
    True
    """
    try:
        data = read_entry(path, max_bytes=max_bytes)
    except OSError:
        return None
    return parse_json(data, max_bytes=max_bytes, validate=validate, max_depth=max_depth)


# ---- writing entries ---------------------------------------------------------------------


def _temporary(path: Path, data: bytes) -> str:
    """A new file (mode 0o600) holding ``data`` beside ``path`` in a trusted directory."""
    check_dir(path.parent, create=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{path.stem[:16]}-", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return temporary


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and
    ``os.replace``, so concurrent readers see the old entry or the whole new one; the
    temporary file is removed on failure (the OSError propagates). The directory is
    created (0o700) and must be trusted (:func:`check_dir`: else :class:`UntrustedDir`).

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "sub" / "entry.bin"
    >>> write_atomically(target, b"abc"); target.read_bytes()
    b'abc'
    """
    temporary = _temporary(path, data)
    try:
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_new(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` (mode 0o600) unless it exists: True when this
    call created it, False when another file was there first (never overwritten; where
    the file system has no hard links, concurrent creators replace each other's file).

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "secret"
    >>> write_new(target, b"first"), write_new(target, b"second"), target.read_bytes()
    (True, False, b'first')
    """
    temporary = _temporary(path, data)
    try:
        os.link(temporary, path)  # atomic and exclusive: fails when path exists
        return True
    except FileExistsError:
        return False
    except OSError:  # no hard links here (FAT, some network file systems): last one wins
        os.replace(temporary, path)
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def unwritable(what: str, path: Path, exc: OSError) -> None:
    """The one warning for a cache entry that could not be written (work goes on); none
    for an untrusted directory, which :func:`check_dir` has warned about already."""
    if isinstance(exc, UntrustedDir):
        return
    warnings.warn(
        f"qcom_ext could not write the {what} entry {path}: {exc}; "
        f"set {DIR_ENV} to a writable directory or {DISABLE_ENV}=1",
        QcomExtWarning,
        stacklevel=4,
    )
