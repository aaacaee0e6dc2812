"""Where the data directories (``cdefs/``, ``kernels/``, ``schemas/``) are: checkout or wheel.

In an installed wheel they sit inside the package (``qcom_ext/cdefs``); in a source
checkout (and an editable install) ``cdefs/`` and ``kernels/`` sit next to the package, at
the top level, and ``schemas/`` inside it (the same place in both).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """The directory ``name`` ("cdefs", "kernels" or "schemas"), wheel layout first.

    >>> data_dir("cdefs").joinpath("cl_core.h").is_file()
    True
    """
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"qcom_ext data directory {name!r} is missing: looked in {_PACKAGE / name} "
        f"(installed wheel) and {_PACKAGE.parent / name} (source checkout)"
    )


def cdefs_dir() -> Path:
    """The directory of the C declarations loaded by cffi."""
    return data_dir("cdefs")


def kernels_dir() -> Path:
    """The directory of the OpenCL C sources (passed to the compiler as ``-I``)."""
    return data_dir("kernels")


def schemas_dir() -> Path:
    """The directory of the JSON Schemas of the files qcom_ext writes (``report-1.json``)."""
    return data_dir("schemas")
