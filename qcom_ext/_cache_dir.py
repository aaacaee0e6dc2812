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
import os
import tempfile
import warnings
from pathlib import Path

from .errors import QcomExtWarning

__all__ = [
    "DIR_ENV",
    "DISABLE_ENV",
    "cache_enabled",
    "cache_root",
    "cache_subdir",
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
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("qcom_ext", appauthor=False))


def cache_subdir(name: str) -> Path:
    """The directory of one cache (not created here)."""
    return cache_root() / name


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
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem[:16]}-", suffix=".tmp",
                                         dir=path.parent)  # fmt: skip
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
