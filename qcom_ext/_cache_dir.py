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

import os
from pathlib import Path

__all__ = ["DIR_ENV", "DISABLE_ENV", "cache_enabled", "cache_root", "cache_subdir"]

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
