"""The qcom-ext command line, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import stable_report

import qcom_ext
from qcom_ext import REGISTRY
from qcom_ext.tools.pytest_plugin import skip_unless_building

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
    assert "--device 'no-such-platform' names no device" in capsys.readouterr().err


# ---- --device by label (issue 16, item 10) -------------------------------------------


def parts(label: str) -> list[str]:
    """The parts of ``label`` (3 characters or more), longest first."""
    found = {label[i:j] for i in range(len(label)) for j in range(i + 3, len(label) + 1)}
    return sorted(found, key=lambda p: (-len(p), p))


def unique_parts(label: str, devices) -> list[str]:
    """Parts of ``label`` that no other device's label contains."""
    others = [c.label for c in devices if c.label != label]
    return [p for p in parts(label) if p != label and not any(p in o for o in others)]


def test_probe_device_takes_a_label_or_a_part_of_one(devices, capsys):
    from qcom_ext.tools import cli

    for caps in devices:
        unique = unique_parts(caps.label, devices)  # the longest and the shortest
        for spec in [caps.label, *unique[:1], *unique[-1:]]:
            assert cli.main(["probe", "--json", f"--device={spec}"]) == 0, spec
            assert json.loads(capsys.readouterr().out)["device"] == caps.to_dict()["device"]


def test_selftest_device_takes_a_label(devices, capsys):
    from qcom_ext.tools import cli

    for caps in devices:
        cli.main(["selftest", "--only", "bitreverse", "--json", "--device", caps.label])
        assert json.loads(capsys.readouterr().out)["device"]["label"] == caps.label


def test_tune_device_takes_a_label(devices, tmp_path, capsys):
    from qcom_ext.tools import cli

    caps = next((c for c in reversed(devices) if c.builds_programs), devices[-1])
    skip_unless_building(caps)  # tuning builds the layers' kernels
    out = tmp_path / "tune.json"
    argv = ["tune", "--device", caps.label, "--kinds", "1x1", "--scale", "0.05"]
    argv += ["--budget-s", "0.05", "--repeats", "1", "--json", str(out)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["device"] == caps.label


def test_bench_device_takes_a_label(devices, tmp_path):
    caps = devices[-1]
    out = tmp_path / "bench.json"
    argv = ["bench", "cl_context", "--rounds", "1", "--batch-ms", "1", "--json", str(out)]
    result = run(*argv, "--device", caps.label)
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["header"]["device_label"] == caps.label


@pytest.mark.parametrize(
    "command",
    [["probe"], ["probe", "--isolated"], ["selftest"], ["tune", "--kinds", "1x1"], ["bench"]],
)
def test_a_bad_device_names_the_option_and_lists_the_labels(devices, command):
    result = run(*command, "--device", "no-such-device", env={"PYOPENCL_CTX": ""})
    assert result.returncode == 1
    assert "--device 'no-such-device' names no device" in result.stderr
    assert "PYOPENCL_CTX" not in result.stderr and "Traceback" not in result.stderr
    for caps in devices:
        assert caps.label in result.stderr
    assert "0:0 = " in result.stderr


def test_a_part_shared_by_two_labels_lists_them(devices, capsys):
    from qcom_ext.tools import cli

    labels = [c.label for c in devices]
    shared = next((p for p in parts(labels[0]) if sum(p in c for c in labels) >= 2), None)
    if shared is None:
        pytest.skip(f"needs two OpenCL devices whose labels share a part (have {labels})")
    matching = [label for label in labels if shared in label]
    assert cli.main(["probe", f"--device={shared}"]) == 1
    err = capsys.readouterr().err
    assert f"--device {shared!r} matches {len(matching)} devices" in err
    assert all(label in err for label in matching)


# ---- --isolated (issue 16, item 9) ---------------------------------------------------


def test_probe_isolated_prints_the_probe(devices, capsys):
    from qcom_ext.tools import cli

    for caps in devices:
        assert cli.main(["probe", "--json", "--device", caps.label]) == 0
        here = json.loads(capsys.readouterr().out)
        assert cli.main(["probe", "--isolated", "--json", "--device", caps.label]) == 0
        assert stable_report(json.loads(capsys.readouterr().out)) == stable_report(here)
    assert cli.main(["probe", "--isolated", "--all", "--json"]) == 0
    assert [r["label"] for r in json.loads(capsys.readouterr().out)] == [c.label for c in devices]


@pytest.fixture(scope="module")
def crashing(tmp_path_factory) -> dict[str, str]:
    from _crashing_opencl import build_libraries

    return build_libraries(tmp_path_factory.mktemp("crashing-opencl"))


@pytest.mark.parametrize("command", [["probe"], ["probe", "--all"], ["selftest"]])
def test_isolated_commands_report_a_driver_crash(crashing, command):
    env = {"QCOM_EXT_OPENCL_LIBRARY": crashing["segfault"]}
    result = run(*command, "--isolated", env=env)
    assert result.returncode == 1
    assert "the OpenCL driver crashed in clGetPlatformIDs (SIGSEGV)" in result.stderr
    assert "--isolated" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["probe", "selftest", "tune", "doctor", "env", "bench"])
def test_every_command_says_what_it_does_in_its_help(command, capsys):
    """``qcom-ext COMMAND --help``: usage, then a description of a sentence or more."""
    from qcom_ext.tools import cli

    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    blocks = capsys.readouterr().out.split("\n\n")
    assert blocks[0].startswith(f"usage: qcom-ext {command}"), blocks[0]
    description = blocks[1]
    assert not description.startswith(("options:", "positional arguments:")), blocks
    assert len(description.split()) >= 8, description
