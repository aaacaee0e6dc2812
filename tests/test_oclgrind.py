"""The compat parts' kernels under Oclgrind: built, run, checked against numpy, and no
error reported (invalid memory accesses, data races, uninitialized values, divergence).

Oclgrind is used as an ICD (``OCL_ICD_VENDORS`` pointing at a directory holding
``oclgrind.icd``), so pyopencl and qcom_ext's cffi see the same platform; its reports go
to ``OCLGRIND_LOG`` and never change the exit status (portable-interop.md section 5), so
the log and stderr are read. API checking stays off: pyopencl itself asks Oclgrind 21.10
for device information it does not know while building and creating kernels.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve().parent / "oclgrind_kernels.py"
ICD_LIBRARIES = ("/usr/lib/oclgrind/liboclgrind-rt-icd.so",
                 "/usr/lib/x86_64-linux-gnu/oclgrind/liboclgrind-rt-icd.so")  # fmt: skip


def oclgrind_icd() -> str:
    if shutil.which("oclgrind") is None:
        pytest.skip("oclgrind is not installed")
    for library in ICD_LIBRARIES:
        if Path(library).is_file():
            return library
    pytest.skip(f"oclgrind is installed but its ICD library is not in {ICD_LIBRARIES}")


@pytest.mark.slow
def test_compat_kernels_are_clean_under_oclgrind(tmp_path):
    icd_dir = tmp_path / "icd"
    icd_dir.mkdir()
    (icd_dir / "oclgrind.icd").write_text(oclgrind_icd() + "\n")
    log = tmp_path / "oclgrind.log"
    paths = (str(ROOT), os.environ.get("PYTHONPATH"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "OCL_ICD_VENDORS": str(icd_dir),
        "PYOPENCL_CTX": "Oclgrind",
        "OCLGRIND_LOG": str(log),
        "OCLGRIND_DATA_RACES": "1",
        "OCLGRIND_UNINITIALIZED": "1",
        "QCOM_EXT_CACHE_DIR": str(tmp_path / "cache"),
    }
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                            env=env, timeout=600, cwd=ROOT)  # fmt: skip
    output = result.stdout + result.stderr
    first_line = result.stdout.splitlines()[:1]
    assert first_line and first_line[0].startswith("oclgrind"), f"not on Oclgrind:\n{output}"
    assert result.returncode == 0, output
    assert result.stdout.rstrip().endswith("OK"), output
    reports = log.read_text() if log.exists() else ""
    assert not reports.strip(), f"Oclgrind reported:\n{reports}"
    for marker in ("OCLGRIND FATAL", "Oclgrind - "):  # errors Oclgrind prints itself
        assert marker not in result.stderr, result.stderr
