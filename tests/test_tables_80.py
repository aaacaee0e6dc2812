"""The command line's tables at 80 columns (``qcom_ext.tools._table``, which
``qcom-ext probe``, ``selftest`` and ``bench`` print through): no line is wider, no word
is split across lines (names, paths and every word of a note come out whole), and a note
that does not fit at the end of its row goes under it. ``selftest``'s table of a real
run is checked in tests/test_selftest.py, ``probe``'s in tests/test_device_facts.py."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from qcom_ext.tools._table import Column, Row, print_table, wrap_words
from qcom_ext.tools.bench._case import SuiteResult
from qcom_ext.tools.bench.report import SUMMARY, Report, Result, render, with_summary

ROOT = Path(__file__).resolve().parent.parent


def rendered(draw, width: int = 80) -> str:
    out = io.StringIO()
    draw(Console(file=out, width=width, color_system=None))
    return out.getvalue()


def assert_fits(text: str, words: list[str], width: int = 80) -> None:
    """No line over ``width`` cells; each of ``words`` whole on some line."""
    too_long = [line for line in text.splitlines() if len(line.rstrip()) > width]
    assert not too_long, too_long
    shown = {word.strip(",;:") for line in text.splitlines() for word in line.split()}
    split = [word for word in words if word.strip(",;:") not in shown]
    assert not split, f"split or missing: {split}\n{text}"


def words_of(*texts: str) -> list[str]:
    return [word for text in texts for word in text.split()]


def test_rows_too_wide_move_their_group_up_and_their_notes_under():
    columns = (Column("extension"), Column("path"), Column("ms", right=True))
    long_note = "a reason of many words " * 6
    rows = [
        Row(("cl_qcom_android_ahardwarebuffer_host_ptr", "khr:cl_khr_external_memory", "1.5")),
        Row(("", "fallback", "12.25"), long_note),
        Row(("cl_qcom_bitreverse", "native", "3.0"), "short"),
    ]
    text = rendered(lambda c: print_table(c, columns, rows), width=60)
    lines = text.splitlines()
    assert_fits(text, words_of(*(c for r in rows for c in r.cells), long_note), width=60)
    assert "  cl_qcom_android_ahardwarebuffer_host_ptr" in lines  # on a line of its own
    assert any(line.split() == ["native", "3.0", "short"] for line in lines)  # fits: at the end
    under = [line for line in lines if line.startswith(" " * 6) and line[6] != " "]
    assert len(under) > 1 and " ".join(" ".join(under).split()) == " ".join(long_note.split())


def test_rows_that_fit_stay_on_one_line():
    columns = (Column("op"), Column("time", right=True))
    text = rendered(lambda c: print_table(c, columns, [Row(("box", "1 ms"), "met")]))
    assert text.splitlines()[2].split() == ["box", "1", "ms", "met"]


def test_a_word_longer_than_the_line_keeps_its_own_line():
    word = "x" * 30
    lines = [line.plain for line in wrap_words(f"a {word} b", 10)]
    assert lines == ["a", word, "b"]


def bench_report() -> Report:
    header = {
        "device_label": "pocl-3.1-cpu",
        "device_name": "pthread-skylake-avx512-AMD EPYC",
        "driver_version": "3.1+debian",
        "python": "CPython 3.11.7",
        "qcom_ext": "0.1.0",
        "host_cpu": "AMD EPYC",
        "date": "2026-11-27T21:00:00+00:00",
    }

    def result(group: str, name: str, note: str, **more) -> Result:
        base = dict(baseline=False, rounds=3, loops=10, median_s=1.2e-3, min_s=1.1e-3)
        values = {**base, "iqr_s": 2e-5, "ratio": 4.95, "target": None, "target_met": None}
        return Result(name, group, note=note, **{**values, **more})

    results = [
        result("queue_factories", "cl_command_queue", "cl.CommandQueue(context)", ratio=1.0),
        result(
            "queue_factories",
            "create_context_caps",
            "qcom_ext.create_context(caps): the report passed down, no probe",
            target="< 10 µs over baseline",
            target_met=False,
            speedup=1.25,
        ),
        result(
            "gather",
            "convolve_5x5_per_pixel",
            "10 x downscale2x_gather (qcom_read_imagef_2x2 x 4): 20 B per input pixel",
            throughput={"GB/s": 1.34, "Gpix/s": 0.067},
        ),
    ]
    rows = [
        {
            "op": "bicubic 2x upscale",
            "seconds": 0.0123,
            "of_buffer_copy": 0.58,
            "of_image_copy": None,
            "vs_torch": 5.5,
            "target": ">= 0.85 of buffer copy: NOT met",
        }
    ]
    suites = {"conv-suite": SuiteResult("| a | b |\n", {"summary_rows": rows})}
    return with_summary(Report(header, results, suites))


def test_bench_tables_fit_80_columns_without_splitting_words():
    report = bench_report()
    text = rendered(lambda c: render(report, c))
    words = words_of(*(f"{r.group} {r.name} {r.note} {r.target or ''}" for r in report.results))
    *cases, row = report.suites[SUMMARY].data["rows"]  # a row per case, then the suite's
    assert len(cases) == len(report.results)
    assert_fits(text, words + words_of(*(r["op"] for r in cases), row["op"], row["target"]))
    lines = text.splitlines()
    assert "  queue_factories" in lines  # the group above its cases
    assert any(line.split()[:1] == ["convolve_5x5_per_pixel"] for line in lines)
    assert "target < 10 µs over baseline: NOT met;" in " ".join(text.split())


@pytest.mark.slow  # a child process
def test_bench_list_fits_80_columns_when_piped():
    """``qcom-ext bench --list | less``: not a terminal, COLUMNS=80."""
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-m", "qcom_ext", "bench", "--list"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    from qcom_ext.tools.bench.run import discover

    cases = discover()
    words = [word for c in cases for word in (c.group, c.name, *c.note.split())]
    assert_fits(result.stdout, words)
