"""The qcom-ext command line, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import qcom_ext
from qcom_ext import REGISTRY

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "qcom_ext", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


@pytest.fixture(scope="module")
def devices():
    reports = qcom_ext.probe_all()
    if not reports:
        pytest.skip("no OpenCL device")
    return reports


def test_probe_table(devices):
    result = run("probe")
    assert result.returncode == 0, result.stderr
    assert "cl_qcom_recordable_queues" in result.stdout
    assert "fallback" in result.stdout or "native" in result.stdout


def test_probe_json_is_the_full_report(devices):
    result = run("probe", "--json", "--device", "0:0")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report["qcom"]) == set(REGISTRY)
    assert report["label"] == devices[0].label


def test_probe_all_json_lists_every_device(devices):
    result = run("probe", "--all", "--json")
    assert result.returncode == 0, result.stderr
    assert [r["label"] for r in json.loads(result.stdout)] == [c.label for c in devices]


def test_kill_switch_shows_in_the_table(devices):
    result = run("probe", env={"QCOM_EXT_DISABLE": "cl_khr_command_buffer"})
    assert result.returncode == 0, result.stderr
    assert "QCOM_EXT_DISABLE" in result.stdout


def test_bad_kill_switch_is_a_clear_error():
    result = run("probe", env={"QCOM_EXT_DISABLE": "cl_qcom_bogus"})
    assert result.returncode == 1
    assert "cl_qcom_bogus" in result.stderr and "Traceback" not in result.stderr


def test_no_platform_is_a_clear_error(tmp_path):
    import pyopencl

    # pyopencl's loader with an empty vendor list: a library that loads, with no driver
    env = {
        "OCL_ICD_VENDORS": str(tmp_path / "none"),
        "QCOM_EXT_OPENCL_LIBRARY": pyopencl._cl.__file__,
    }
    result = run("probe", env=env)
    assert result.returncode == 1
    assert "no OpenCL platform" in result.stderr and "Traceback" not in result.stderr


def test_unloadable_override_names_what_was_tried(tmp_path):
    result = run("probe", env={"QCOM_EXT_OPENCL_LIBRARY": str(tmp_path / "libOpenCL.so")})
    assert result.returncode == 1
    assert "QCOM_EXT_OPENCL_LIBRARY" in result.stderr and str(tmp_path) in result.stderr


def test_device_option_is_passed_down_not_written_to_the_environment(devices, monkeypatch, capsys):
    """``--device`` picks the device without touching PYOPENCL_CTX (which other code of
    the process, and its child processes, would see)."""
    import pyopencl as cl

    from qcom_ext.tools import cli

    specs = [
        f"{p}:{d}" for p, pl in enumerate(cl.get_platforms()) for d in range(len(pl.get_devices()))
    ]
    monkeypatch.setenv("PYOPENCL_CTX", specs[0])
    for spec, caps in zip(specs, devices, strict=True):
        assert cli.main(["probe", "--json", "--device", spec]) == 0
        assert json.loads(capsys.readouterr().out)["label"] == caps.label
        assert os.environ["PYOPENCL_CTX"] == specs[0]
    assert cli.main(["probe", "--device", "no-such-platform"]) == 1
    assert "device: 'no-such-platform' matches no platform" in capsys.readouterr().err
