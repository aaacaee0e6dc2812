"""Where qcom_ext keeps persistent caches, and whether it may.

The root is ``QCOM_EXT_CACHE_DIR`` when set, else the user cache directory
(``platformdirs.user_cache_dir("qcom_ext")``); each cache has its own subdirectory
(``tuning/`` for local work sizes). ``QCOM_EXT_NO_CACHE`` set to anything but ``""`` or
``"0"`` turns persistent caches off.

>>> import os
>>> os.environ["QCOM_EXT_CACHE_DIR"] = "/tmp/qcom-ext-doc"
>>> str(cache_root()), str(cache_subdir("tuning"))
('/tmp/qcom-ext-doc', '/tmp/qcom-ext-doc/tuning')
>>> del os.environ["QCOM_EXT_CACHE_DIR"]
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import warnings
from pathlib import Path

from qcom_ext.errors import ConfigError, QcomExtWarning

__all__ = [
    "DIR_ENV",
    "DISABLE_ENV",
    "cache_enabled",
    "cache_root",
    "cache_subdir",
    "read_entry",
    "unwritable",
    "write_atomically",
]

DIR_ENV = "QCOM_EXT_CACHE_DIR"
DISABLE_ENV = "QCOM_EXT_NO_CACHE"


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


#: Opens an entry without following a final symlink, and without blocking on a FIFO.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


class NotAnEntry(OSError):
    """The path is not a regular file (a symlink, FIFO, device or directory)."""


def read_entry(path: Path) -> bytes:
    """The bytes of cache entry ``path``; OSError when it cannot be read, and
    :class:`NotAnEntry` (an OSError) when it is not a regular file: a cache never reads
    through a symlink (which could point at another cache's entry or any file) nor
    from a FIFO or device (which could block or never end).

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
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):  # where O_NOFOLLOW does not exist
            raise NotAnEntry(f"{path} is a symlink, not a cache entry")
        handle = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if isinstance(exc, NotAnEntry) or exc.errno not in (errno.ELOOP, errno.EMLINK):
            raise
        raise NotAnEntry(f"{path} is a symlink, not a cache entry") from None
    with os.fdopen(handle, "rb") as entry:
        mode = os.fstat(entry.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise NotAnEntry(f"{path} is not a regular file (mode {stat.filemode(mode)})")
        return entry.read()


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and
    ``os.replace``, so concurrent readers see the old entry or the whole new one; the
    temporary file is removed on failure (the OSError propagates).

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "sub" / "entry.bin"
    >>> write_atomically(target, b"abc"); target.read_bytes()
    b'abc'
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{path.stem[:16]}-", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def unwritable(what: str, path: Path, exc: OSError) -> None:
    """The one warning for a cache entry that could not be written (work goes on)."""
    warnings.warn(
        f"qcom_ext could not write the {what} entry {path}: {exc}; "
        f"set {DIR_ENV} to a writable directory or {DISABLE_ENV}=1",
        QcomExtWarning,
        stacklevel=4,
    )
