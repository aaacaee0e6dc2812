"""``qcom-ext bench --summary`` from the wheel alone (no benchmarks/, torch or OpenCV): one
table of what ran on the device, each case and the ops-suite's ops with its time and, where
it knows its bytes, their share of the buffer copy measured in the same run; JSON beside.
No timing checks (this VM's numbers mean nothing): the shares must be the same run's
arithmetic."""

from __future__ import annotations

import itertools
import json
import re
import sys
import textwrap

import pytest
from conftest import benchmark_module

_run, cases_memory = benchmark_module("run"), benchmark_module("cases_memory")
cases_ops = benchmark_module("cases_ops")


@pytest.fixture
def wheel_only(monkeypatch):
    """The lab and its libraries cannot be imported (as where only the wheel is)."""
    for name in ("benchmarks", "torch", "cv2"):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` raises ImportError


@pytest.fixture
def spec(device_caps, monkeypatch):
    from test_samples import device_spec

    found = device_spec(device_caps)
    monkeypatch.setenv("PYOPENCL_CTX", found)  # main() sets it; restored after the test
    return found


def test_qcom_ext_bench_summary_from_the_wheel_alone(
    wheel_only, spec, device_caps, tmp_path, capsys
):
    from qcom_ext.tools.cli import main as cli_main

    out, markdown = tmp_path / "bench.json", tmp_path / "bench.md"
    argv = ["bench", "--summary", "memory_onchip", "ops-suite", "--device", spec, "--rounds", "1"]
    files = ["--json", str(out), "--markdown", str(markdown)]
    assert cli_main([*argv, "--batch-ms", "1", *files]) == 0
    data = json.loads(out.read_text())
    summary = data["suites"]["summary"]
    copy_Bps = summary["buffer_copy_Bps"]
    assert copy_Bps > 0 and summary["copy_rounds"] == 1  # measured in this run
    rows = {r["op"]: r for r in summary["rows"]}
    results = {r["name"]: r for r in data["results"]}
    assert set(results) == {"global_scratch_replay", "onchip_scratch_replay"}
    for name, result in results.items():  # the cases: their bytes against the same copy
        row = rows[f"memory_onchip: {name}"]
        assert row["seconds"] == result["median_s"] > 0
        moved = cases_memory.REPLAY_BYTES
        assert row["of_buffer_copy"] == pytest.approx(moved / result["median_s"] / copy_Bps)
    ops = data["suites"]["ops-suite"]
    assert ops["buffer_copy_Bps"] == copy_Bps  # the suite used the runner's copy
    (n, k), scale = cases_ops.sizes(device_caps)
    side = round(56 * scale)  # dw144_s1_56: whole on a GPU, a quarter elsewhere
    gemv = [f"GEMV {fmt} {n}x{k}" for fmt in ("f16", "q8_0", "q4_0")]
    conv = [f"depthwise 3x3 144x{side}x{side}"] if device_caps.image_support else []
    assert [r["op"] for r in ops["rows"]] == gemv + conv
    for r in ops["rows"]:  # the ops: device time, bytes, their share of the same copy
        assert rows[r["op"]]["seconds"] == r["seconds"] > 0 and r["bytes"] > 0
        assert rows[r["op"]]["of_buffer_copy"] == pytest.approx(
            r["bytes"] / r["seconds"] / copy_Bps
        )
    assert all(r["vs_torch"] is None and r["target"] == "" for r in summary["rows"])

    text = markdown.read_text()  # the summary's markdown (as --update-doc writes it)
    table = text[text.index("| op | time |") :].split("\n\n")[0].splitlines()
    assert table[0] == "| op | time | of buffer copy | device | driver | date |"  # no lab columns
    assert len(table) == 2 + len(rows)
    label, driver = device_caps.label, device_caps.driver_version
    assert all(line.endswith(f"| {label} | {driver} | {data['header']['date'][:10]} |")
               for line in table[2:])  # fmt: skip
    assert summary["roofline"] in text and "measured in this run" in summary["roofline"]
    console = capsys.readouterr().out  # the same rows on the console, the copy above them
    shown = console[console.index(summary["roofline"]) :].split("ops-suite")[0]
    assert "of buffer copy" in shown and "vs torch" not in shown and "target" not in shown
    assert all(op.split(": ")[-1] in shown for op in rows)


def test_a_bare_summary_runs_the_cases_and_the_default_suites(
    wheel_only, spec, tmp_path, monkeypatch, capsys
):
    """No names: every case and the suites marked ``default`` (the wheel's ops-suite);
    the others only when named."""
    package = tmp_path / "fake_bench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cases_fake.py").write_text(
        textwrap.dedent("""
        from qcom_ext.tools.bench._case import Case, Suite, SuiteResult
        from qcom_ext.tools.bench.report import summary_row

        def _suite(name):
            def run(caps, options):
                copy = options.same_run_copy  # the runner's, with --summary
                share = None if copy is None else copy.fraction(1e9, 1.0)
                row = summary_row(name, seconds=1.0, of_buffer_copy=share)
                return SuiteResult(f"{name} ran", {"summary_rows": [row]})
            return run

        CASES = [Case("sum", "fake", lambda caps: 1000, lambda n: sum(range(n)),
                      baseline=True, work={"bytes": 8000})]
        SUITES = [Suite("quick-suite", "short", _suite("quick"), default=True),
                  Suite("long-suite", "only by name", _suite("long"))]
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["--summary", "--device", spec, "--rounds", "1", "--batch-ms", "1"]
    assert _run.main(argv, packages=("fake_bench",)) == 0
    out = capsys.readouterr().out
    assert "fake: sum" in out and re.search(r"^ *quick +1 s", out, re.M) and "quick ran" in out
    assert "long" not in out
    assert _run.main([*argv[1:], "long-suite"], packages=("fake_bench",)) == 0
    out = capsys.readouterr().out  # a named suite alone, without --summary
    assert "long ran" in out and "quick" not in out and "fake" not in out
    with pytest.raises(SystemExit):
        _run.main(["--help"], packages=("fake_bench",))
    assert "quick-suite (runs by default)" in capsys.readouterr().out


def test_the_lab_columns_come_together_where_the_lab_supplies_one():
    """A target (or torch's ratio, or the image copy) brings all three lab columns, as the
    lab's table always had them (torch absent included); the wheel's rows show none."""
    report = benchmark_module("report")
    header = {"device_label": "gpu", "driver_version": "1.0", "date": "2026-11-27T22:00"}

    def head(*rows):
        suites = {"s": report.SuiteResult("", {"summary_rows": list(rows)})}
        return report.summary_table(report.Report(header, [], suites)).splitlines()[0]

    wheel = report.summary_row("GEMV f16", seconds=1e-3, of_buffer_copy=0.5)
    lab = report.summary_row("box", seconds=1e-3, of_buffer_copy=0.5, target=">= 0.85: NOT met")
    full = "| op | time | of buffer copy | of image copy | vs torch | target | device | driver "
    assert head(wheel) == "| op | time | of buffer copy | device | driver | date |"
    assert head(wheel, lab) == head(lab) == full + "| date |"


def test_the_ops_gemvs_rotate_through_cold_copies(device_caps, kernel_context, monkeypatch):
    """Each GEMV launch reads another copy of W (cold: an H100's L2 holds one whole), and
    never the copy the launch before it read."""
    from qcom_ext.tools.bench import _profiling

    monkeypatch.setattr(cases_ops, "cold_copies", lambda cache, nbytes: 3)
    monkeypatch.setattr(cases_ops, "GEMV_FORMATS", ("f16", "q4_0"))
    enqueued: list[int] = []
    real = cases_ops.Linear.enqueue

    def spy(self, queue, x, out, **options):
        enqueued.append(id(self))
        return real(self, queue, x, out, **options)

    monkeypatch.setattr(cases_ops.Linear, "enqueue", spy)
    queue = _profiling.profiling_queue(device_caps)
    copy = _profiling.CopyBandwidth(buffer_Bps=1e9, buffer_bytes=1 << 26)
    rows = cases_ops.gemv_rows(queue, (64, 64), 4, copy)
    assert [r["op"] for r in rows] == ["GEMV f16 64x64", "GEMV q4_0 64x64"]
    assert len(enqueued) == 2 * (3 + 4)  # per format: a warm-up of each copy, 4 rounds
    for start in range(0, len(enqueued), 7):
        launches = enqueued[start : start + 7]
        assert len(set(launches)) == 3
        assert all(a != b for a, b in itertools.pairwise(launches))
