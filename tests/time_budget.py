"""The per-test time budget, a pytest plugin (tests/conftest.py loads it).

A test that takes longer than the budget, counting its setup and teardown (a module's
fixtures are paid by its first test), fails with an error at teardown that says so. The
budget is ``test_budget_s`` of pyproject.toml's ``[tool.pytest.ini_options]`` (30 s);
``QCOM_EXT_TEST_BUDGET_S`` overrides it (0 turns it off, for a debugger or a much slower
machine). The run ends with its five slowest tests, budget or not. pytest-timeout's
``timeout`` stays the hang guard.

"Longer" means both clocks (:func:`over_budget`): the wall clock, and the CPU time of
the test process (all its threads) and of the child processes it waited for.

Under pytest-xdist (the README's ``-n auto``) each worker times and judges its own
tests; the times ride on each test's teardown report to the controller, which lists the
slowest of the whole run.
"""

from __future__ import annotations

import os
import resource
import time

import pytest

_BUDGET = pytest.StashKey[float]()
_START = pytest.StashKey[tuple[float, float]]()
_TIMES = pytest.StashKey[list[tuple[float, float, str]]]()  # (wall, CPU, node id)
_ON_REPORT = "budget_times"  # a teardown report's (wall, CPU): xdist sends it along


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "test_budget_s",
        "a test (setup, call and teardown) slower than this many seconds fails; 0: none",
        default="30",
    )


def budget_seconds(raw: str) -> float:
    """The budget a setting spells (seconds, 0 for none).

    >>> budget_seconds("60"), budget_seconds(" 0.5 ")
    (60.0, 0.5)
    """
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise pytest.UsageError(
            f"test budget {raw!r} (QCOM_EXT_TEST_BUDGET_S or test_budget_s): "
            "expected a number of seconds >= 0"
        )
    return value


def cpu_seconds() -> float:
    """CPU time of this process (every thread: pocl's too) and of its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def over_budget(wall: float, cpu: float, budget: float) -> bool:
    """Whether a test that took ``wall`` seconds and ``cpu`` CPU-seconds is over ``budget``.

    Both must exceed it. Wall time alone would fail a test because the machine was busy
    with other work (a shared CI runner, a second test run); CPU time alone would miss a
    test that waits, and counts pocl's worker threads once per core. A test over on both
    did that much work and took that long.

    >>> over_budget(75.0, 20.0, 60), over_budget(30.0, 70.0, 60), over_budget(61.0, 61.0, 60)
    (False, False, True)
    >>> over_budget(500.0, 500.0, 0)  # no budget
    False
    """
    return budget > 0 and wall > budget and cpu > budget


def pytest_configure(config: pytest.Config) -> None:
    raw = os.environ.get("QCOM_EXT_TEST_BUDGET_S") or config.getini("test_budget_s")
    config.stash[_BUDGET] = budget_seconds(raw)
    config.stash[_TIMES] = []
    config.pluginmanager.register(_Collector(config.stash[_TIMES]), "time_budget_collector")


class _Collector:
    """Keeps each test's times from its teardown report: this process's, or (xdist) a
    worker's as the controller receives it."""

    def __init__(self, times: list[tuple[float, float, str]]) -> None:
        self.times = times

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        times = getattr(report, _ON_REPORT, None)
        if report.when == "teardown" and times is not None:
            wall, cpu = times
            self.times.append((float(wall), float(cpu), report.nodeid))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    item.stash[_START] = (time.perf_counter(), cpu_seconds())
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    report = yield
    if call.when != "teardown" or _START not in item.stash:
        return report
    wall0, cpu0 = item.stash[_START]
    wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
    setattr(report, _ON_REPORT, (wall, cpu))
    budget = item.config.stash[_BUDGET]
    if over_budget(wall, cpu, budget) and report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {wall:.1f} s ({cpu:.1f} CPU-s) with its setup and "
            f"teardown: over the {budget:g} s budget of one test (tests/time_budget.py). "
            "Build programs once per module or session, draw from fixed shapes, or split it."
        )
    return report


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    times = config.stash.get(_TIMES, [])
    if not times:
        return
    budget = config.stash[_BUDGET]
    limit = f"budget {budget:g} s" if budget else "no budget"
    terminalreporter.write_sep("-", f"slowest tests ({limit}, setup and teardown included)")
    for wall, cpu, nodeid in sorted(times, reverse=True)[:5]:
        terminalreporter.write_line(f"{wall:7.1f} s {cpu:7.1f} CPU-s  {nodeid}")
