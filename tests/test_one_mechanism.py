"""Concerns that have one place in the library (docs/ARCHITECTURE.md, "One mechanism per
concern") stay in one place: a second copy is what let a context leak and a trust hole
live in three places each before."""

from __future__ import annotations

import re
from pathlib import Path

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
    """The benchmarks' torch rows: tools/bench/_torch_timing.py (a replayed CUDA graph)."""
    assert _sources_with("cuda.Event(") == {"tools/bench/_torch_timing.py"}


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
