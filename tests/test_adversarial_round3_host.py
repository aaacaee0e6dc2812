"""Issue 26, the adversarial review on pocl 3.1: the host-side findings 3, 4, 8, 9, 10
and 11, each with the regression that failed before its fix (crashes and hangs run in a
child process)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl
import pytest
from fakes.claiming import claiming

import qcom_ext
from qcom_ext.device.probe import clear_cache
from qcom_ext.ext.program.build import build_program
from qcom_ext.ops import load_weight, save_weights

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


# ---- 4: save_weights' temporary file is mkstemp's, never a predictable name ----------


def _predictable(target: Path, pid: int) -> Path:
    """The name the temporary file had before the fix."""
    return target.with_name(f".{target.name}.{pid}.partial")


def _weights() -> dict:
    return {"w": np.ones((2, 3), np.float32)}


@pytest.fixture
def gguf():
    return pytest.importorskip(
        "gguf", reason="writing GGUF needs the gguf package (qcom_ext[gguf])"
    )


def test_a_planted_symlink_at_the_old_temporary_name_is_not_followed(tmp_path, gguf):
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's file")
    target = tmp_path / "w.gguf"
    planted = _predictable(target, os.getpid())
    planted.symlink_to(victim)
    save_weights(target, _weights())
    assert victim.read_text() == "the victim's file"
    assert not target.is_symlink() and load_weight(target, "w").shape == (2, 3)
    assert planted.is_symlink() and planted.resolve() == victim.resolve()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [planted.name, "victim.txt", "w.gguf"]
    )


def test_a_planted_file_at_the_old_temporary_name_does_not_become_the_model(tmp_path, gguf):
    target = tmp_path / "w.gguf"
    planted = _predictable(target, os.getpid())
    planted.write_bytes(b"the planter's file")
    os.chmod(planted, 0o666)
    save_weights(target, _weights())
    assert planted.read_bytes() == b"the planter's file"
    assert os.stat(target).st_ino != os.stat(planted).st_ino
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([planted.name, "w.gguf"])


def test_a_planted_fifo_at_the_old_temporary_name_does_not_block_the_save(tmp_path, gguf):
    target = tmp_path / "w.gguf"
    code = (
        "import os, sys, numpy as np; from qcom_ext.ops import save_weights; "
        "target = sys.argv[1]; d, n = os.path.split(target); "
        "os.mkfifo(os.path.join(d, f'.{n}.{os.getpid()}.partial')); "
        "save_weights(target, {'w': np.ones((2, 3), np.float32)})"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(target)], capture_output=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail("save_weights blocked on a FIFO planted at its temporary file's name")
    assert done.returncode == 0, done.stderr.decode()
    assert load_weight(target, "w").shape == (2, 3)


def test_a_failed_save_leaves_no_temporary_file(tmp_path, gguf, monkeypatch):
    def broken(self, *args, **kwargs):
        raise ValueError("gguf-py refused")

    monkeypatch.setattr(gguf.GGUFWriter, "write_kv_data_to_file", broken)
    with pytest.raises(ValueError, match="gguf-py refused"):
        save_weights(tmp_path / "w.gguf", _weights())
    assert list(tmp_path.iterdir()) == []
