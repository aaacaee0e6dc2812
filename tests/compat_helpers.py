"""Helpers for the kernel-side compat parts: preprocess the header per path, run kernels."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

import pytest

from qcom_ext._resources import kernels_dir


def preprocess(snippet: str, flags: Sequence[str] = (), *, header: bool = False) -> str:
    """``snippet`` after ``#include <qcom_ext.h>``, run through the C preprocessor with
    ``flags``: what a compiler given these ``-D`` flags would see (skips without cpp).
    Whitespace is collapsed; ``header=True`` keeps the header's own output (pragmas,
    definitions) in front, one line per line."""
    cpp = shutil.which("cpp")
    if cpp is None:
        pytest.skip("no C preprocessor (cpp) to expand the compat header with")
    result = subprocess.run(
        [cpp, "-P", "-undef", "-nostdinc", "-I", str(kernels_dir()), *flags],
        input=f"#include <qcom_ext.h>\n__MARK__\n{snippet}\n",
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"cpp failed:\n{result.stderr}")
    before, after = result.stdout.split("__MARK__", 1)
    snippet_text = " ".join(after.split())
    return f"{before}{snippet_text}" if header else snippet_text


def whole(text: str) -> str:
    """``text`` with whitespace runs collapsed, to compare with :func:`preprocess`."""
    return " ".join(text.split())
