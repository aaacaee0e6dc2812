"""The benchmark runner's machinery on a tiny synthetic group (no device, no timing checks)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import benchmark_module, lab_module

from qcom_ext import DeviceCaps

_case, _run = benchmark_module("_case"), benchmark_module("run")
Case, Suite, SuiteResult, Target = _case.Case, _case.Suite, _case.SuiteResult, _case.Target
UnknownCaseError, compare, main, measure = (
    _run.UnknownCaseError,
    _run.compare,
    _run.main,
    _run.measure,
)
select, update_doc, write = _run.select, _run.update_doc, _run.write

CAPS = DeviceCaps.from_info(
    extensions="cl_khr_fp16",
    device_name="synthetic device",
    driver_version="9.9-test",
    platform_name="Synthetic Platform",
    platform_version="OpenCL 3.0 synthetic",
    opencl_c_version="OpenCL C 1.2 synthetic",
    device_type="cpu",
    disabled=(),
)

CASES = [
    Case("sleep0", "synthetic", lambda caps: None, lambda _: time.sleep(0), baseline=True),
    Case(
        "busy",
        "synthetic",
        lambda caps: 200,
        lambda n: sum(range(n)),
        note="busy loop",
        target=Target(10.0),
    ),
]


def test_runner_outputs_stamps_and_ratios(tmp_path: Path) -> None:
    report = measure(CASES, CAPS, rounds=2, batch_s=0.001)
    write(report, json_path=tmp_path / "out.json", markdown_path=tmp_path / "out.md")
    data = json.loads((tmp_path / "out.json").read_text())
    header = data["header"]
    assert header["device_label"] == CAPS.label
    assert header["device_name"] == "synthetic device"
    assert header["driver_version"] == "9.9-test"
    assert header["platform_version"] == "OpenCL 3.0 synthetic"
    assert header["opencl_c_version"] == "OpenCL C 1.2 synthetic"
    for key in ("python", "qcom_ext", "host_cpu", "date"):
        assert header[key], key
    results = {r["name"]: r for r in data["results"]}
    assert set(results) == {"sleep0", "busy"}
    assert results["sleep0"]["ratio"] == 1.0 and results["sleep0"]["baseline"]
    assert all(r["rounds"] == 2 and r["group"] == "synthetic" for r in results.values())
    assert results["busy"]["target"] == "< 10 s" and results["busy"]["target_met"] is not None
    markdown = (tmp_path / "out.md").read_text()
    assert "driver 9.9-test" in markdown and CAPS.label in markdown and "qcom_ext" in markdown
    assert "| group | case | median | min | IQR | ratio | rate | note |" in markdown
    assert "| synthetic | `busy` |" in markdown and "busy loop" in markdown


def test_selection_keeps_baseline_and_names_unknown_cases(capsys) -> None:
    assert [c.name for c in select(CASES, ["busy"])] == ["sleep0", "busy"]
    with pytest.raises(UnknownCaseError, match=r"nope.*known: sleep0, busy, synthetic"):
        select(CASES, ["busy", "nope"])
    with pytest.raises(SystemExit) as exc:
        main(["no_such_case"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "no_such_case" in err and "probe_cold" in err


def test_work_becomes_rates_and_compare_gives_speedups(tmp_path: Path) -> None:
    cases = [
        Case(
            "copy",
            "rates",
            lambda caps: 1e6,
            lambda n: time.sleep(0.001),
            baseline=True,
            work=lambda n: {"bytes": n, "pixels": n / 4},
        ),
        Case("math", "rates", lambda caps: None, lambda _: time.sleep(0.001), work={"flops": 2e6}),
    ]
    report = measure(cases, CAPS, rounds=2, batch_s=0.001)
    rates = {r.name: r.throughput for r in report.results}
    copy = next(r for r in report.results if r.name == "copy")
    assert rates["copy"]["GB/s"] == pytest.approx(1e6 / copy.median_s / 1e9)
    assert rates["copy"]["Mpix/s"] == pytest.approx(0.25e6 / copy.median_s / 1e6)
    assert set(rates["math"]) == {"GFLOP/s"}
    earlier = {"results": [{"name": "copy", "median_s": copy.median_s * 3}]}
    compared = compare(report, earlier)
    speedups = {r.name: r.speedup for r in compared.results}
    assert speedups["copy"] == pytest.approx(3.0) and speedups["math"] is None
    assert "| vs earlier |" in compared.to_markdown() and "3.00x" in compared.to_markdown()
    with pytest.raises(ValueError, match="not a benchmark JSON report"):
        compare(report, {"rows": []})
    bad = [Case("x", "g", lambda caps: None, lambda _: None, work={"watts": 1})]
    with pytest.raises(ValueError, match="unknown work kind"):
        measure(bad, CAPS, rounds=1, batch_s=0.0001)


def test_update_doc_replaces_only_its_own_block(tmp_path: Path) -> None:
    doc = tmp_path / "BENCH.md"
    doc.write_text("# Benchmarks\n\nhand-written intro\n")
    first = measure(CASES, CAPS, rounds=1, batch_s=0.0001)
    update_doc(first, doc)
    update_doc(measure(CASES, CAPS, rounds=1, batch_s=0.0001), doc)
    other = measure(CASES[:1], CAPS, rounds=1, batch_s=0.0001)
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written intro\n")
    assert text.count(f"<!-- bench {CAPS.label} synthetic -->") == 1
    assert text.count("<!-- /bench -->") == 1
    update_doc(other, doc)  # same device and group: still one block
    assert doc.read_text().count("<!-- /bench -->") == 1


def test_suites_get_their_own_stamped_blocks(tmp_path: Path) -> None:
    doc = tmp_path / "BENCH.md"
    doc.write_text("# Benchmarks\n\n<!-- bench dev mine -->\nold table\n<!-- /bench -->\nend\n")
    report = measure(CASES, CAPS, rounds=1, batch_s=0.0001, command="qcom-ext bench x")
    suites = {"mine": SuiteResult("| a | b |\n|---|--:|\n| x | 1.5 ms |\n", {"b": 1.5})}
    report = _run.dataclasses_replace(report, suites=suites)
    update_doc(report, doc, key="dev")
    update_doc(report, doc, key="dev")
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\n<!-- bench dev mine -->\n**")
    assert text.count("<!-- bench dev mine -->") == 1 and "old table" not in text
    assert text.count("<!-- bench dev synthetic -->") == 1 and text.count("<!-- /bench -->") == 2
    mine = text.split("<!-- bench dev mine -->", 1)[1].split("<!-- /bench -->", 1)[0]
    assert "driver 9.9-test" in mine and "Command: `qcom-ext bench x`" in mine
    assert "| x | 1.5 ms |" in mine and "| synthetic |" not in mine
    assert "\n<!-- /bench -->\nend\n" in text
    assert report.to_dict()["suites"] == {"mine": {"b": 1.5}}
    assert "### `mine`" in report.to_markdown()
    with pytest.raises(ValueError, match="no closing"):
        _run.replace_block("<!-- bench a b -->\nnever closed\n", "<!-- bench a b -->", "x")


def test_command_stamp_names_what_changes_the_measurement() -> None:
    size = "QCOM_EXT_BENCH_ACCELERATED_SIZE"
    env = {size: "64x48", "QCOM_EXT_CACHE_DIR": "/c", "PYOPENCL_CTX": "0:0"}
    assert _run.command_line("qcom-ext bench", ["accelerated", "--rounds", "2"], env) == (
        f"PYOPENCL_CTX=0:0 {size}=64x48 qcom-ext bench accelerated --rounds 2"
    )
    assert _run.command_line("p", ["--device", "1:0", "a b"], env) == (
        f"{size}=64x48 p --device 1:0 'a b'"
    )


def test_suite_names_may_not_clash_with_cases() -> None:
    lab = lab_module("__main__").LAB_PACKAGES
    cases = _run.discover(lab)
    names = {s.name for s in _run.discover_suites(cases, lab)}
    assert {"conv-suite", "accelerated-suite", "bicubic-suite"} <= names
    with pytest.raises(ValueError, match="probe"):
        _run._check_suite_names([Suite("probe", "", lambda caps, o: None)], cases)
    with pytest.raises(ValueError, match="probe"):  # nor may a former name
        _run._check_suite_names(
            [Suite("new-suite", "", lambda caps, o: None, aliases=("probe",))], cases
        )


def test_hof_suite_is_the_accelerated_suite(capsys) -> None:
    lab_main = lab_module("__main__").main

    assert lab_main(["hof-suite", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "accelerated-suite" in listed and "probe_cold" not in listed
    assert lab_main(["accelerated-suite", "hof-suite", "--list"]) == 0
    assert capsys.readouterr().out.count("accelerated-suite") == 1  # named twice, listed once


def test_qcom_ext_bench_runs_the_wheels_cases_and_the_lab_adds_its_own(capsys) -> None:
    """``qcom-ext bench`` finds the on-device cases of the package only; ``python -m
    benchmarks`` runs the same runner over them and the lab's cases and suites."""
    from qcom_ext.tools.cli import main as cli_main

    assert cli_main(["bench", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "probe_cold" in listed and "gather_downscale" in listed
    assert "ops-suite" in listed  # the wheel's one suite: qcom_ext.ops on the device
    assert "conv-suite" not in listed and "torch" not in listed and "conv_1x1" not in listed
    with pytest.raises(SystemExit):
        cli_main(["bench", "--help"])
    assert "python -m benchmarks --help" in " ".join(capsys.readouterr().out.split())
    wheel = {m.__name__ for m in _run._case_modules()}
    assert wheel and all(n.startswith("qcom_ext.tools.bench.cases_") for n in wheel)
    with pytest.raises(SystemExit):
        cli_main(["bench", "conv-suite"])
    assert "unknown benchmark case or group: conv-suite" in capsys.readouterr().err

    lab_main = lab_module("__main__").main
    assert lab_main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert "probe_cold" in listed and "conv-suite" in listed and "conv_1x1" in listed
    assert lab_main(["conv-suite", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "conv-suite" in listed and "probe_cold" not in listed
    with pytest.raises(SystemExit):
        lab_main(["nope-suite"])
    assert "conv-suite" in capsys.readouterr().err  # the known names include the suites


def test_qcom_ext_bench_cli_rejects_a_missing_compare_file(capsys) -> None:
    from qcom_ext.tools.cli import main as cli_main

    with pytest.raises(SystemExit) as exc:
        cli_main(["bench", "--compare", "/nonexistent.json"])
    assert exc.value.code == 2
    assert "--compare /nonexistent.json" in capsys.readouterr().err
