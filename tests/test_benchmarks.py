"""The benchmark runner's machinery on a tiny synthetic group (no device, no timing checks)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from qcom_ext import DeviceCaps

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks/ is a top-level package of the checkout
    sys.path.insert(0, str(ROOT))

from benchmarks._case import Case, Target  # noqa: E402
from benchmarks.run import UnknownCaseError, main, measure, select, write  # noqa: E402

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
    Case("busy", "synthetic", lambda caps: 200, lambda n: sum(range(n)), note="busy loop",
         target=Target(10.0)),
]  # fmt: skip


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
    assert "| group | case | median | min | IQR | ratio | note |" in markdown
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
