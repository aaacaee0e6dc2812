"""Issue 26, the adversarial review on pocl 3.1: the host-side findings 3, 4, 8, 9, 10
and 11, each with the regression that failed before its fix (crashes and hangs run in a
child process)."""

from __future__ import annotations

import sys

import pyopencl
import pytest
from fakes.claiming import claiming

import qcom_ext
from qcom_ext.device.probe import clear_cache
from qcom_ext.ext.program.build import build_program

# ---- 3: child processes never import from the current directory ---------------------

MARKER = "planted-json-ran"
#: A json.py in a shared working directory: it leaves a marker, then hands over the
#: real json module (so that a child that imports it still works).
PLANTED_JSON = f"""
import importlib, os, sys
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, {MARKER!r}), "w").close()
sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != here]
del sys.modules["json"]
sys.modules["json"] = importlib.import_module("json")
"""


@pytest.fixture
def planted_cwd(tmp_path, monkeypatch):
    """The current directory holds a planted json.py; the parent's path has '' (as
    ``python -c`` and the REPL do)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "json.py").write_text(PLANTED_JSON)
    monkeypatch.chdir(shared)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    return shared / MARKER


def test_isolated_compile_imports_nothing_from_the_cwd(planted_cwd, cl_context):
    source = f"__kernel void k(__global int *a) {{ a[0] = {len(str(planted_cwd))}; }}"
    program = build_program(cl_context, f"// {planted_cwd}\n{source}", isolate=True)
    assert program.get_info(pyopencl.program_info.NUM_KERNELS) == 1
    assert not planted_cwd.exists(), "the isolated compile's child ran ./json.py"


def test_isolated_probe_imports_nothing_from_the_cwd(planted_cwd):
    reports = qcom_ext.probe_all(isolated=True)
    assert reports
    assert not planted_cwd.exists(), "probe_all(isolated=True)'s child ran ./json.py"


def test_cli_isolated_probe_imports_nothing_from_the_cwd(planted_cwd, capsys):
    from qcom_ext.tools import cli

    assert cli.main(["probe", "--isolated", "--all", "--json"]) == 0
    assert not planted_cwd.exists(), "qcom-ext probe --isolated's child ran ./json.py"


def test_probe_verify_imports_nothing_from_the_cwd(planted_cwd, device_caps, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(planted_cwd.parent / "cache"))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    clear_cache()
    name = "cl_qcom_bitreverse"  # claimed: its trial runs in a child
    with claiming(device_caps.device_id, extensions=[name]):
        caps = qcom_ext.probe(device_caps.device_id, verify=True)
    assert name in caps.verdicts
    assert not planted_cwd.exists(), "probe(verify=True)'s trial child ran ./json.py"
