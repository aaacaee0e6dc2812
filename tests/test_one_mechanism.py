"""Concerns that have one place in the library (docs/ARCHITECTURE.md, "One mechanism per
concern") stay in one place: a second copy is what let a context leak and a trust hole
live in three places each before."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import qcom_ext

PACKAGE = Path(qcom_ext.__file__).parent


def _sources_with(text: str) -> set[str]:
    return {
        p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if text in p.read_text()
    }


def test_shared_kernels_are_launched_in_one_place():
    """Setting a shared kernel's arguments and enqueueing it: ext/program/launch.py. The
    others enqueue kernels they own: the tuner times one, a recording replays its own,
    the self-test and the benchmarks measure raw pyopencl on purpose."""
    own = {"ops/tuning.py", "ext/recording/replay.py", "tools/selftest/checks_builtins.py"}
    found = {
        p
        for p in _sources_with("enqueue_nd_range_kernel")
        if not p.startswith("tools/bench/") and p not in own
    }
    assert found == {"ext/program/launch.py"}


def test_torch_is_timed_in_one_place():
    """The lab's torch rows: benchmarks/_torch_timing.py (a replayed CUDA graph); the
    package times no torch at all."""
    assert _sources_with("cuda.Event(") == set()
    lab = PACKAGE.parent / "benchmarks"
    if not lab.is_dir():
        pytest.skip("the benchmarking lab (benchmarks/) is part of a checkout, not the wheel")
    found = {p.name for p in lab.rglob("*.py") if "cuda.Event(" in p.read_text()}
    assert found == {"_torch_timing.py"}


def test_library_programs_are_built_and_cached_in_one_place():
    """The programs the library builds for itself: ext/program/shared.py, one cache keyed
    by the probe's flags (three private caches keyed without them handed out programs
    of other paths). The tools build their own on purpose; ``qcom_ext.build_program``
    is the public re-export."""
    importing = re.compile(r"from qcom_ext\.ext\.program\.build import[^\n]*\bbuild_program\b")
    found = {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if importing.search(p.read_text())
    }
    found = {p for p in found if not p.startswith("tools/") and p != "__init__.py"}
    assert found == {"ext/program/shared.py"}


def test_child_processes_start_and_die_in_one_place():
    """Starting a child (a session of its own, no current directory on its import path)
    and killing its process group: qcom_ext/_isolation.py (``start_child``, ``Child``),
    which the isolated probe and compile, the doctor's child and the verify trials all
    use (tools/verify/_process.py had a Popen, a session and a killpg of its own)."""
    assert _sources_with("Popen(") == {"_isolation.py"}
    assert _sources_with("killpg") == {"_isolation.py"}
    assert _sources_with("start_new_session") == {"_isolation.py"}


def test_json_entries_are_stored_in_one_place():
    """One JSON file per key (format, version, key, memo): qcom_ext/_json_store.py, for
    the tuning cache and the variant store alike (they were near twins). The program
    cache (binaries under an HMAC) and the verdicts (one merged file under a lock) are
    other formats; every one goes through _cache_dir's writer and trust check."""
    writers = {"_cache_dir.py", "_json_store.py", "ext/program/cache.py", "device/verdicts.py"}
    assert _sources_with("write_atomically(") == writers
    assert _sources_with("read_json(") == writers - {"ext/program/cache.py"}  # binaries


def test_per_context_state_lives_in_one_cache():
    """What qcom_ext keeps per context (built objects, the hints a context was made
    with, the image formats the ops ask for): qcom_ext/_context_cache.py, the one table
    that never keeps a context alive (ext/context.py and ops/_tensor.py had weak tables
    of their own)."""
    assert _sources_with("WeakValueDictionary") == {"_context_cache.py"}
    assert _sources_with("WeakKeyDictionary(") == set()


# ---- one device rule for the tests that build kernels (issue 26, finding 13) ---------

TESTS = Path(__file__).parent
_DEVICE_FIXTURES = {"cl_context", "cl_queue", "cl_device", "device_caps"}
_BUILDS = {"Program", "build_program", "shared_program"}
_THE_RULE = {"skip_unless_building", "building_device", "default_building_context"}


def _called(node: ast.AST) -> set[str]:
    return {
        getattr(call.func, "attr", getattr(call.func, "id", ""))
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
    }


def _fixture_closure(names: list[str], fixtures: dict[str, ast.FunctionDef]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [a.arg for a in fixtures[name].args.args] if name in fixtures else []
    return seen


def kernel_builders_outside_the_rule(source: str) -> list[str]:
    """The tests of a module that take a device fixture and build a program in their own
    body (``cl.Program``, ``build_program``, ``shared_program``) without going through the
    device rule: ``kernel_context`` among their fixtures (those of the module followed),
    or ``skip_unless_building`` / ``building_device`` / ``default_building_context``."""
    tree = ast.parse(source)
    fixtures = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any("fixture" in ast.unparse(d) for d in node.decorator_list)
    }
    found = []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test")):
            continue
        used = _fixture_closure([a.arg for a in node.args.args], fixtures)
        ruled = "kernel_context" in used or _called(node) & _THE_RULE
        ruled = ruled or any(_called(fixtures[n]) & _THE_RULE for n in used if n in fixtures)
        if used & _DEVICE_FIXTURES and not ruled and _called(node) & _BUILDS:
            found.append(node.name)
    return found


def test_every_kernel_building_test_goes_through_the_device_rule():
    """A device whose compiler builds nothing (the PyPI pocl 3.0 on newer CPUs: "unknown
    target CPU 'generic'") skips such tests, naming why, through one rule:
    ``kernel_context`` / ``skip_unless_building`` (DeviceCaps.build_problem)."""
    found = {
        path.name: names
        for path in sorted(TESTS.glob("test_*.py"))
        if (names := kernel_builders_outside_the_rule(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_rule_check_sees_a_test_that_builds_on_its_own():
    source = (
        "def test_a(cl_queue):\n    cl.Program(cl_queue.context, SRC).build()\n\n"
        "def test_b(cl_queue, kernel_context):\n    cl.Program(kernel_context, SRC).build()\n"
    )
    assert kernel_builders_outside_the_rule(source) == ["test_a"]


def test_a_missing_native_entry_point_falls_back_one_way():
    """Every ``except EntryPointMissing`` of the host API goes through
    ``Route.downgrade`` (one warning, the route without the extension): the 9 blocks
    that each warned and fell back their own way are gone."""
    found = []
    for path in sorted((PACKAGE / "ext").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            caught = getattr(node, "type", None)
            if isinstance(node, ast.ExceptHandler) and "EntryPointMissing" in ast.unparse(
                caught or ast.Constant(None)
            ):
                calls = {
                    n.func.attr
                    for n in ast.walk(node)
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                }
                found.append((path.relative_to(PACKAGE).as_posix(), node.lineno, calls))
    assert len(found) >= 8  # the search sees them
    assert [(p, line) for p, line, calls in found if "downgrade" not in calls] == []


def test_reports_and_labels_of_a_context_come_from_one_helper():
    """No module turns a context's devices into reports, or reports into a label list, by
    hand: ``device/shared.py`` does (``route``, ``context_caps``, ``labels``)."""
    copies = {
        "reports": re.compile(r"probe\(\w+\) for \w+ in \w+\.devices"),
        "labels": re.compile(r"join\([^)]*\.label for "),
    }
    found = [
        (kind, p.relative_to(PACKAGE).as_posix())
        for p in PACKAGE.rglob("*.py")
        if p.name != "shared.py" or p.parent.name != "device"
        for kind, pattern in copies.items()
        if pattern.search(p.read_text())
    ]
    assert found == []
