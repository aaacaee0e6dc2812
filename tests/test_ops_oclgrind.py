"""Every convolution kernel under Oclgrind: no out-of-bounds access, data race or barrier
divergence on small shapes (tests/oclgrind_conv.py), and no uninitialized value for the
float buffer kernels.

Oclgrind 21.10's uninitialized-value plugin is off for two parts: on the image kernels it
reports every value read through a program-scope ``__constant sampler_t`` as
uninitialized, even in a two-kernel program that writes every texel before reading it
back exactly (a false positive; the values are checked against numpy in the same run);
on the int8 kernel it crashes (SIGSEGV) on the ``add_sat`` of the dot-product builtins."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ICD_LIBRARY = Path("/usr/lib/oclgrind/liboclgrind-rt-icd.so")
PROBLEMS = re.compile(r"^(Invalid|.*data race|Uninitialized|.*divergence|Work-group)",
                      re.MULTILINE | re.IGNORECASE)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("part", ["images", "buffers", "int8"])
@pytest.mark.skipif(shutil.which("oclgrind") is None or not ICD_LIBRARY.is_file(),
                    reason="oclgrind (and its ICD library) is not installed")  # fmt: skip
def test_conv_kernels_are_oclgrind_clean(tmp_path, part):
    icd = tmp_path / "icd"
    icd.mkdir()
    (icd / "oclgrind.icd").write_text(f"{ICD_LIBRARY}\n")
    log = tmp_path / "oclgrind.log"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "OCL_ICD_VENDORS": str(icd),
           "PYOPENCL_CTX": "Oclgrind", "OCLGRIND_DATA_RACES": "1",
           "OCLGRIND_UNINITIALIZED": "1" if part == "buffers" else "0",
           "OCLGRIND_LOG": str(log),
           "QCOM_EXT_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
    env.pop("QCOM_EXT_TEST_DEVICES", None)
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "oclgrind_conv.py"), part],
                            capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Oclgrind" in result.stdout, result.stdout
    report = log.read_text() if log.exists() else ""
    assert not PROBLEMS.search(report), report[:4000]
