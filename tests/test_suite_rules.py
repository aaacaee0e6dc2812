"""The suite's own rules (tests/conftest.py, tests/time_budget.py), each run in a pytest
child process over a small test file: the per-test time budget, the slowest-tests list
and the hypothesis profiles; and the device grid (tests/device_grid.py) over this
checkout's own collection."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
import time
from pathlib import Path

import device_grid
import pytest
import time_budget
from time_budget import budget_seconds, cpu_seconds, over_budget

from qcom_ext.tools.pytest_plugin import selected_devices

TESTS = Path(__file__).resolve().parent
slow = pytest.mark.slow  # runs pytest in a child process

TIMED = """
import time

def test_computes():  # CPU time and wall time over the budget
    end = time.process_time() + 1.0
    while time.process_time() < end:
        pass

def test_waits():  # wall time only: a busy machine or a wait
    time.sleep(2.0)

def test_quick():
    pass
"""

PROFILE = """
from hypothesis import settings

def test_profile():
    print("derandomize", settings.default.derandomize, "database", settings.default.database)
"""


def run_pytest(
    tmp_path: Path, source: str, env: dict[str, str], ini: str = "", args: tuple[str, ...] = ()
) -> str:
    """pytest -rA (and ``args``) over ``source`` in a child process, with this suite's
    plugin and hypothesis profiles; returns what it printed, exit status first."""
    (tmp_path / "pytest.ini").write_text(f"[pytest]\n{ini}\n")
    (tmp_path / "conftest.py").write_text(
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        f"spec = importlib.util.spec_from_file_location('suite', {str(TESTS / 'conftest.py')!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))  # the profiles\n"
        'pytest_plugins = ["time_budget"]\n'
    )
    (tmp_path / "test_inner.py").write_text(source)
    child_env = {k: v for k, v in os.environ.items() if k not in ("CI", "QCOM_EXT_TEST_BUDGET_S")}
    child_env.update(env)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-rA",
            "-s",
            *args,
            "test_inner.py",
        ],
        cwd=tmp_path,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


@slow
@pytest.mark.parametrize("args", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_test_over_the_budget_fails(tmp_path, args):
    """Judged and listed alike in one process and under pytest-xdist (whose workers
    run the tests and whose controller prints the list)."""
    if args:
        pytest.importorskip("xdist", reason="needs pytest-xdist (the test extra)")
    out = run_pytest(tmp_path, TIMED, {}, ini="test_budget_s = 0.5", args=args)
    assert out.startswith("exit 1"), out
    assert "ERROR test_inner.py::test_computes" in out, out
    assert "over the 0.5 s budget of one test" in out, out
    assert "PASSED test_inner.py::test_waits" in out, out  # waited, computed little
    assert "ERROR test_inner.py::test_waits" not in out, out
    assert "3 passed, 1 error" in out, out
    listed = out.split("slowest tests (budget 0.5 s, setup and teardown included)", 1)[
        1
    ].splitlines()[1:4]
    rows = {line.split()[-1]: (float(line.split()[0]), float(line.split()[2])) for line in listed}
    assert set(rows) == {f"test_inner.py::test_{n}" for n in ("computes", "waits", "quick")}
    walls = [float(line.split()[0]) for line in listed]
    assert walls == sorted(walls, reverse=True), out  # slowest first
    assert rows["test_inner.py::test_computes"][1] >= 0.9, out  # CPU-s of its busy loop
    wall, cpu = rows["test_inner.py::test_waits"]
    assert wall >= 1.9 and cpu < 0.5, out


@slow
def test_the_environment_overrides_the_budget(tmp_path):
    out = run_pytest(tmp_path, TIMED, {"QCOM_EXT_TEST_BUDGET_S": "0"}, ini="test_budget_s = 0.5")
    assert out.startswith("exit 0") and "3 passed" in out, out
    assert "slowest tests (no budget, setup and teardown included)" in out, out


@slow
def test_a_bad_budget_is_a_usage_error(tmp_path):
    out = run_pytest(tmp_path, TIMED, {"QCOM_EXT_TEST_BUDGET_S": "a minute"})
    assert out.startswith("exit 4"), out
    assert "test budget 'a minute'" in out and "expected a number of seconds" in out, out


@pytest.mark.parametrize("raw", ["-1", "nan", "inf", "", "60s"])
def test_budget_values_are_checked(raw):
    with pytest.raises(pytest.UsageError, match="expected a number of seconds"):
        budget_seconds(raw)


def test_the_plugin_examples_hold():
    failed, tried = doctest.testmod(time_budget)
    assert tried >= 3 and failed == 0


def test_over_budget_needs_both_clocks():
    assert over_budget(61.0, 61.0, 60) and over_budget(600.0, 90.0, 60)
    assert not over_budget(75.0, 20.0, 60)  # a loaded machine
    assert not over_budget(30.0, 70.0, 60)  # pocl's threads on two cores
    assert not over_budget(500.0, 500.0, 0)  # no budget


def test_cpu_seconds_counts_children_and_work():
    before = cpu_seconds()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass",
        ],
        check=True,
    )
    end = time.process_time() + 0.2
    while time.process_time() < end:
        pass
    assert cpu_seconds() - before >= 0.45


@slow
@pytest.mark.parametrize(("ci", "derandomized"), [("true", True), ("", False)])
def test_ci_loads_the_derandomized_profile(tmp_path, ci, derandomized):
    out = run_pytest(tmp_path, PROFILE, {"CI": ci} if ci else {})
    assert out.startswith("exit 0"), out
    expected = "derandomize True database None" if derandomized else "derandomize False"
    assert expected in out, out


def test_the_device_grid_examples_hold():
    failed, tried = doctest.testmod(device_grid)
    assert tried >= 3 and failed == 0


def _collected(env: dict[str, str], *args: str) -> list[str]:
    """The node ids ``pytest --collect-only`` selects in this checkout (a child process)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *args],
        cwd=TESTS.parent,
        env={**{k: v for k, v in os.environ.items() if k != device_grid.FULL_GRID_ENV}, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


@slow
def test_every_device_runs_every_test_and_a_lead_runs_the_whole_grid():
    """The house rule over a real collection: each device test function runs on each
    selected device; each family's lead runs all its instances, which the full grid
    (QCOM_EXT_TEST_FULL_GRID=1) runs on every device."""
    devices = selected_devices()
    leads = device_grid.family_leads(devices)
    if len(leads) == len(devices):
        pytest.skip("no two selected devices share a driver family: nothing is thinned")
    files = ["tests/test_ops_matmul.py", "tests/test_recording.py"]
    thinned, full = _collected({}, *files), _collected({device_grid.FULL_GRID_ENV: "1"}, *files)
    assert set(thinned) < set(full)
    for caps in devices:
        mine = [i for i in thinned if f"[{caps.label}" in i]
        grid = [i for i in full if f"[{caps.label}" in i]
        assert {i.split("[")[0] for i in mine} == {i.split("[")[0] for i in grid}, caps.label
        if leads[device_grid.family(caps)] is caps:
            assert mine == grid, caps.label
    named = next(i for i in full if i not in thinned)  # a left-out instance, named, runs
    assert _collected({}, named) == [named]
