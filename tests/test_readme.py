"""The README's commands, run as it documents them, each in a child process on this
checkout's code: the quick start's ``qcom-ext probe`` (the installs are ``.ci/run``'s, which
runs the test command verbatim), every other ``qcom-ext`` command the README shows, its
``--device`` and ``QCOM_EXT_DISABLE`` examples and its Python snippet. Each run is
checked against what the README says it does, so a broken command fails here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import qcom_ext
from qcom_ext import REGISTRY

child = pytest.mark.slow  # runs child processes

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: the pages a new user reads first: the README and the probe's page it sends them to
FRONT_DOOR = (README, ROOT / "docs" / "probe.md")


def readme() -> str:
    if not README.is_file():
        pytest.skip("not running from a source checkout")
    return README.read_text()


def front_door() -> str:
    """The README and docs/probe.md, where its probe options and switches moved."""
    if not all(page.is_file() for page in FRONT_DOOR):
        pytest.skip("not running from a source checkout")
    return "\n".join(page.read_text() for page in FRONT_DOOR)


def quick_start() -> list[str]:
    section = readme().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def shown_commands() -> list[str]:
    """Every ``qcom-ext ...`` command of the README and docs/probe.md: inline code, and
    the commands of their ``sh`` blocks (``&&``-joined ones split, comments dropped)."""
    text = "\n".join(page.read_text() for page in FRONT_DOOR if page.is_file())
    found = {" ".join(code.split()) for code in re.findall(r"`(qcom-ext\s[^`]+)`", text)}
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in line.split("#", 1)[0].split("&&"):
                if part.strip().startswith("qcom-ext "):
                    found.add(part.strip())
    return sorted(found)


def qcom_ext_command() -> list[str]:
    """``qcom-ext`` as installed next to this Python (what the README types), else
    ``python -m qcom_ext``, which runs the same function (test_entry_point_is_python_m)."""
    script = Path(sys.executable).with_name("qcom-ext")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "qcom_ext"]


def run(args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> Any:
    """A child process on this checkout's code, with its own (private) cache directory."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    base = {k: v for k, v in os.environ.items() if k not in ("QCOM_EXT_DISABLE", "PYOPENCL_CTX")}
    base.update(PYTHONPATH=path, QCOM_EXT_CACHE_DIR=str(cache), COLUMNS="250")
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**base, **(env or {})},
        timeout=120,
    )


def cli(argv: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> Any:
    result = run([*qcom_ext_command(), *argv], tmp_path, env)
    assert result.returncode == 0, f"qcom-ext {' '.join(argv)}:\n{result.stdout}{result.stderr}"
    return result


@pytest.fixture(autouse=True)
def fresh_default(monkeypatch):
    """The commands run in children with neither PYOPENCL_CTX nor QCOM_EXT_DISABLE and an
    empty probe cache; what they print is compared with this process's probe, so it is
    made the same way (earlier tests of a full run may have left a cached default)."""
    from qcom_ext.device.probe import clear_cache

    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    clear_cache()
    yield
    clear_cache()


@pytest.fixture(scope="module")
def devices() -> list[Any]:
    try:
        found = qcom_ext.probe_all()
    except qcom_ext.OpenCLUnavailable:
        found = []
    if not found:
        pytest.skip("no OpenCL device: the README's commands have nothing to show")
    return found


# ---- the quick start ------------------------------------------------------------------


@pytest.fixture
def ci_script() -> str:
    path = ROOT / ".ci" / "run"
    if not path.is_file():
        pytest.skip("not running from a source checkout")
    return path.read_text()


def test_quick_start_is_two_commands():
    install_and_probe, install_and_test = quick_start()
    assert install_and_probe.endswith("qcom-ext probe") and "[pocl]" in install_and_probe
    assert "pytest" in install_and_test and "test]" in install_and_test


def test_ci_runs_the_readme_test_command_verbatim(ci_script):
    test_command = quick_start()[1]
    assert test_command in ci_script.splitlines() or any(
        line.startswith(test_command + " ||") for line in ci_script.splitlines()
    )


def test_entry_point_is_python_m():
    """pyproject's ``qcom-ext`` script and ``python -m qcom_ext`` call the same function."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["qcom-ext"].partition(":")
    main = (ROOT / "qcom_ext" / "__main__.py").read_text()
    assert re.search(rf"^from {re.escape(module)} import {function}$", main, re.M), main


@child
def test_quick_start_probe_prints_the_table(devices, tmp_path):
    command = quick_start()[0].rsplit("&&", 1)[1].split()
    assert command == ["qcom-ext", "probe"]
    result = cli(command[1:], tmp_path)
    default = qcom_ext.probe()
    assert default.summary() in result.stdout, result.stdout
    for line in ("cl_qcom_perf_hint", "cl_qcom_recordable_queues"):
        assert f"{line} " in result.stdout


# ---- every qcom-ext command the README shows -------------------------------------------


def check_probe_table(result: Any, devices: list[Any], tmp_path: Path) -> None:
    assert qcom_ext.probe().summary() in result.stdout, result.stdout


def check_probe_json(result: Any, devices: list[Any], tmp_path: Path) -> None:
    report = json.loads(result.stdout)
    assert report["label"] == qcom_ext.probe().label
    assert set(report["qcom"]) == {name for name in REGISTRY if name.startswith("cl_qcom_")}
    assert all(entry["path"] and entry["reason"] for entry in report["qcom"].values())


def check_probe_all(result: Any, devices: list[Any], tmp_path: Path) -> None:
    for caps in devices:
        assert caps.summary() in result.stdout, f"{caps.label} missing:\n{result.stdout}"


def check_selftest_table(result: Any, devices: list[Any], tmp_path: Path) -> None:
    assert "cl_qcom_recordable_queues" in result.stdout and "pass" in result.stdout


def check_report(result: Any, devices: list[Any], tmp_path: Path) -> None:
    """What the README says: one file here, named after the device, valid against the
    schema, its path and a line of counts printed."""
    jsonschema = pytest.importorskip("jsonschema")
    from qcom_ext.tools.fleet.report import schema

    (written,) = tmp_path.glob("qcom-ext-report-*.json")
    report = json.loads(written.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema()).validate(report)
    assert report["probe"]["facts"]["label"] == qcom_ext.probe().label
    assert qcom_ext.probe().label in written.name
    ids = {c["id"] for c in report["checks"]}
    assert "cl_qcom_recordable_queues/fallback/recording" in ids
    assert written.name in result.stdout and " checks: " in result.stdout


def check_tune(result: Any, devices: list[Any], tmp_path: Path) -> None:
    results = json.loads((tmp_path / "tune.json").read_text())["results"]
    assert results and "median gain" in result.stdout


def check_doctor_table(result: Any, devices: list[Any], tmp_path: Path) -> None:
    assert "verdict" in result.stdout and "pyopencl" in result.stdout, result.stdout
    assert "ok" in result.stdout.split("verdict", 1)[1].splitlines()[0]  # exit 0: ok


def check_doctor_json(result: Any, devices: list[Any], tmp_path: Path) -> None:
    report = json.loads(result.stdout)
    assert report["schema"] == "qcom_ext.doctor/1" and report["verdict"]["status"] == "ok"
    import pyopencl as cl

    names = [p["name"] for p in report["python"]["platforms"]]
    assert names == [p.name.strip() for p in cl.get_platforms()]


# command -> (the options this test adds so it fits the test budget, the check)
COMMANDS = {
    "qcom-ext probe": ([], check_probe_table),
    "qcom-ext probe --json": ([], check_probe_json),
    "qcom-ext probe --all": ([], check_probe_all),
    "qcom-ext probe --verify": ([], check_probe_table),
    "qcom-ext probe --isolated": ([], check_probe_table),
    "qcom-ext doctor": ([], check_doctor_table),
    "qcom-ext doctor --json": ([], check_doctor_json),
    "qcom-ext selftest --isolated": (["--only", "recordable_queues"], check_selftest_table),
    # --only: the README's way to repeat one extension's checks (the full run takes minutes)
    "qcom-ext selftest": (["--only", "recordable_queues"], check_selftest_table),
    "qcom-ext report": (["--only", "recordable_queues"], check_report),
    "qcom-ext tune": (
        [
            *("--scale", "0.25", "--kinds", "1x1", "--repeats", "1", "--variants", "default"),
            *("--budget-s", "0.2", "--json", "tune.json"),  # the search: test_tune_cli.py
        ],
        check_tune,
    ),
}


@child
@pytest.mark.parametrize("command", shown_commands())
def test_readme_command_runs(command, devices, tmp_path):
    assert command in COMMANDS, f"the README shows `{command}`: add how to check it here"
    extra, check = COMMANDS[command]
    words, _, redirect = command.partition(" > ")
    result = cli([*words.split()[1:], *extra], tmp_path)
    if redirect:
        (tmp_path / redirect.strip()).write_text(result.stdout)
    check(result, devices, tmp_path)


def test_the_readme_shows_the_commands_this_test_runs():
    assert set(shown_commands()) == set(COMMANDS), "README and COMMANDS disagree"


# ---- options, environment and the Python snippet ------------------------------------------


def device_example() -> tuple[str, str]:
    """The README's two ``PYOPENCL_CTX``-style ``--device`` examples: by index, by name."""
    found = re.search(r"\(`--device (\d+:\d+)`, `--device (\w+)`\)", front_door())
    assert found, "the README's --device examples moved: update this test"
    return found.group(1), found.group(2)


@child
def test_device_option_by_index_and_by_name(devices, tmp_path, monkeypatch):
    """``--device P:D`` for every device here (the README's ``1:0`` among them where it
    exists), and by name as ``PYOPENCL_CTX`` picks: the README's name where a platform has
    it (else a one-line error naming it), and this machine's platform names (one that two
    platforms share, as pocl 3.0 and 3.1 do, is refused as ambiguous)."""
    import pyopencl as cl

    by_index, name = device_example()
    specs = [
        f"{p}:{d}" for p, pf in enumerate(cl.get_platforms()) for d in range(len(pf.get_devices()))
    ]
    names = {pf.name.split()[0].lower() for pf in cl.get_platforms()}
    if any(name in pf.name.lower() for pf in cl.get_platforms()):
        names.add(name)
    else:
        result = run([*qcom_ext_command(), "probe", "--device", name], tmp_path)
        assert result.returncode != 0 and f"--device '{name}' names no device" in result.stderr
        assert all(caps.label in result.stderr for caps in devices), result.stderr
        assert "Traceback" not in result.stderr, result.stderr
    assert by_index in specs or len(cl.get_platforms()) < 2
    for spec in specs + sorted(names):
        shared = [pf for pf in cl.get_platforms() if ":" not in spec and spec in pf.name.lower()]
        if len(shared) > 1:  # PYOPENCL_CTX keeps the last; an ambiguous --device is an error
            result = run([*qcom_ext_command(), "probe", "--device", spec], tmp_path)
            assert result.returncode != 0, spec
            assert f"--device {spec!r} matches {len(shared)} devices" in result.stderr
            assert "Traceback" not in result.stderr, result.stderr
            continue
        monkeypatch.setenv("PYOPENCL_CTX", spec)
        (expected,) = cl.create_some_context(interactive=False).devices
        report = json.loads(cli(["probe", "--json", "--device", spec], tmp_path).stdout)
        assert report["platform"]["name"] == expected.platform.name, spec
        assert report["device"]["name"] == expected.name, spec


@child
def test_kill_switch_as_the_readme_shows(devices, tmp_path):
    found = re.search(r"`QCOM_EXT_DISABLE=([\w,]+)`", front_door())
    assert found, "the README's QCOM_EXT_DISABLE example moved: update this test"
    names = found.group(1).split(",")
    report = json.loads(
        cli(["probe", "--json"], tmp_path, {"QCOM_EXT_DISABLE": found.group(1)}).stdout
    )
    assert sorted(report["disabled"]) == sorted(names)
    assert all(report["qcom"][name]["path"] == "fallback" for name in names), report["qcom"]
    bad = run([*qcom_ext_command(), "probe"], tmp_path, {"QCOM_EXT_DISABLE": "cl_qcom_nope"})
    assert bad.returncode != 0 and "cl_qcom_nope" in bad.stderr  # "an error, not ignored"
    assert "Traceback" not in bad.stderr, bad.stderr


def snippets() -> dict[str, str]:
    """The README's Python snippets by what they show: ``probe`` and ``matmul``."""
    found = re.findall(r"```python\n(.*?)```", readme(), re.S)
    named = {("matmul" if "ops.matmul" in code else "probe"): code for code in found}
    assert len(named) == len(found) == 2, "the README's snippets changed: update this test"
    return named


@child
def test_python_snippet_runs(devices, tmp_path):
    result = run([sys.executable, "-c", snippets()["probe"]], tmp_path)
    assert result.returncode == 0 and not result.stderr, result.stdout + result.stderr
    # the snippet: the default device's path and a reason, then a summary per device
    lines = result.stdout.splitlines()
    default = qcom_ext.probe()
    status = default.status("cl_qcom_perf_hint")
    assert lines[0] == f"{default.path('cl_qcom_recordable_queues')} {status.reason}"
    assert lines[1:] == [caps.summary() for caps in devices]


@child
def test_matmul_snippet_runs(devices, tmp_path):
    """The five-line matmul: y's shape, and an error within q8_0's rounding (as it says)."""
    result = run([sys.executable, "-c", snippets()["matmul"]], tmp_path)
    assert result.returncode == 0 and not result.stderr, result.stdout + result.stderr
    shape, error = result.stdout.strip().rsplit(" ", 1)
    assert shape == "(4, 128)" and 0 < float(error) < 0.5, result.stdout


def test_shown_probe_output_is_what_the_probe_says(devices):
    """The quick start's probe table (cut) matches the probe of the device it names,
    where that device is here: every extension's path and the summary."""
    section = readme().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    label = re.search(r"^ +label +(\S+)$", shown, re.M).group(1)
    caps = next((c for c in devices if c.label == label), None)
    if caps is None:
        pytest.skip(f"no {label} here: the README's table cannot be compared")
    rows = re.findall(r"^  (cl_qcom_\w+) +(\S+)$", shown, re.M)
    assert rows and all(caps.path(name) == path for name, path in rows), rows
    assert " ".join(shown.split()).endswith(caps.summary()), shown


@child
def test_sample_command_runs_as_shown(devices, tmp_path):
    """The README's sample command, where its device is here: its first line and its
    timings as the output shown (first run apart from the steady state)."""
    (command,) = [
        line
        for block in re.findall(r"```sh\n(.*?)```", readme(), re.S)
        for line in block.splitlines()
        if line.startswith("python samples/")
    ]
    words = command.split()
    label = words[words.index("--device") + 1]
    if label not in {c.label for c in devices}:
        pytest.skip(f"no {label} here")
    result = run([sys.executable, str(ROOT / words[1]), *words[2:]], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    shown = readme().split(command, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert lines[0] == shown.splitlines()[0] and lines[-1] == "OK"
    pattern = re.compile(
        r"^box \S+: first run .+ \(kernel builds included\), then .+ \(median of 3\)"
    )
    assert sum(bool(pattern.match(line)) for line in lines) == 3, lines


@child
def test_device_option_by_label(devices, tmp_path):
    """The README's label example (``--device pocl-3.1-cpu``) picks that device where it
    exists; every device's label picks it."""
    found = re.search(r"`--device ([a-z][\w.-]*-(?:cpu|gpu))`", front_door())
    assert found, "the README's --device label example moved: update this test"
    labels = {caps.label for caps in devices}
    assert found.group(1) in labels or found.group(1).startswith("pocl-")
    for caps in devices:
        report = json.loads(cli(["probe", "--json", "--device", caps.label], tmp_path).stdout)
        assert report["label"] == caps.label and report["device"] == caps.to_dict()["device"]
