"""The Python examples of docs/ pages run as written, on every device here, each in a
child process on this checkout's code with a private cache (the README's are
tests/test_readme.py's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from qcom_ext import REGISTRY

pytestmark = pytest.mark.slow  # child processes

ROOT = Path(__file__).resolve().parent.parent


def examples(page: str) -> list[str]:
    path = ROOT / page
    if not path.is_file():
        pytest.skip("not running from a source checkout")
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def run_example(code: str, caps, tmp_path: Path) -> subprocess.CompletedProcess:
    """``code`` in a child process on the device of ``caps`` (PYOPENCL_CTX)."""
    from qcom_ext.device.choice import pyopencl_ctx

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {k: v for k, v in os.environ.items() if k != "QCOM_EXT_DISABLE"}
    env.update(PYTHONPATH=path, QCOM_EXT_CACHE_DIR=str(cache), PYOPENCL_CTX=pyopencl_ctx(caps))
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def test_verify_page_example_runs(device_caps, tmp_path):
    """docs/verify.md: ``probe(verify=True)``, its verdicts, a lookup of one that may be
    missing (it raised KeyError on every device without an Adreno driver)."""
    code = examples("docs/verify.md")[0]  # the second is a fragment: how a trial is declared
    result = run_example(code, device_caps, tmp_path)
    assert result.returncode == 0 and not result.stderr, result.stdout + result.stderr
    *verdicts, looked_up = result.stdout.splitlines()
    outcomes = {"ok", "failed", "crashed", "timed_out", "inconclusive"}
    for line in verdicts:
        name, outcome = line.split()[:2]
        assert (name in REGISTRY or name.startswith("cl_khr_")) and outcome in outcomes, line
    named = {line.split()[0] for line in verdicts}
    assert (looked_up == "None") == ("cl_qcom_recordable_queues" not in named), looked_up
