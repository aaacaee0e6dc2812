"""The roofline of the benchmarks (issue 18): the buffer copy measured in the same run
(qcom_ext/tools/bench/_profiling.py), the one helper that states bytes / time against it,
the issue's targets (the lab's benchmarks/goals.py) and the summary table (``--summary``)."""

from __future__ import annotations

import pytest
from conftest import benchmark_module, lab_module

from qcom_ext import DeviceCaps

_profiling, goals = benchmark_module("_profiling"), lab_module("goals")
report_module, run = benchmark_module("report"), benchmark_module("run")
_case = benchmark_module("_case")


@pytest.fixture
def profiling_queue(cl_context, cl_device):
    import pyopencl as cl

    return cl.CommandQueue(cl_context, properties=cl.command_queue_properties.PROFILING_ENABLE)


def test_the_buffer_copy_is_measured_at_least_as_large_as_the_traffic(profiling_queue):
    small = _profiling.measure_copy(profiling_queue, 1000, rounds=2)
    assert small.buffer_bytes == _profiling.MIN_COPY_BYTES and small.image_Bps is None
    assert small.buffer_Bps > 0 and small.rounds == 2
    big = _profiling.MIN_COPY_BYTES + 160
    copy = _profiling.measure_copy(profiling_queue, big, rounds=1, image=(64, 32))
    assert copy.buffer_bytes == big
    if profiling_queue.device.image_support:
        assert copy.image_Bps > 0
    compat = _profiling.copy_bandwidth(profiling_queue, 1 << 20, 1)  # the former helper
    assert compat["buffer_copy_Bps"] > 0 and compat["copy_bytes"] == _profiling.MIN_COPY_BYTES


def test_the_one_helper_states_bytes_over_time_against_a_bandwidth():
    copy = _profiling.CopyBandwidth(buffer_Bps=3e12, buffer_bytes=1 << 28, rounds=5)
    assert copy.fraction(1.5e9, 1e-3) == _profiling.fraction(1.5e9, 1e-3, 3e12) == 0.5
    assert copy.image_fraction(1.5e9, 1e-3) is None
    with_image = copy.with_image(2e9, 2e-3)  # an image copy of 1 TB/s
    assert with_image.image_Bps == 1e12 and with_image.image_fraction(1.5e9, 1e-3) == 1.5
    assert with_image.as_dict() == {
        "buffer_copy_Bps": 3e12,
        "copy_bytes": 1 << 28,
        "copy_rounds": 5,
        "image_copy_Bps": 1e12,
    }


@pytest.mark.parametrize(
    ("goal", "value", "verdict"),
    [
        ("box_7x7", 0.85, "met"),
        ("box_7x7", 0.8499, "NOT met"),
        ("convolve_5x5", 0.9, "met"),
        ("bicubic_2x", 0.45, "NOT met"),
        ("depthwise", 0.53, "NOT met"),
        ("pointwise", 1.25, "met"),
        ("pointwise_slowest", 0.79, "NOT met"),
        ("block_match", 428e-6, "met"),
        ("block_match", 429e-6, "NOT met"),
    ],
)
def test_the_issue_targets(goal, value, verdict):
    line = goals.GOALS[goal].line(value)
    assert line.endswith(f": {verdict}") and goals.GOALS[goal].verdict(value) == verdict
    assert goals.GOALS[goal].met(None) is None and "not measured" in goals.GOALS[goal].line(None)


CAPS = DeviceCaps.from_info(
    extensions="",
    device_name="synthetic gpu",
    driver_version="9.9-test",
    platform_version="OpenCL 3.0 synthetic",
    opencl_c_version="OpenCL C 1.2",
    device_type="gpu",
    disabled=(),
)


def _report(rows_a, rows_b):
    suites = {
        "a-suite": _case.SuiteResult("a table\n", {"summary_rows": rows_a}),
        "b-suite": _case.SuiteResult("b table\n", {"summary_rows": rows_b, "other": 1}),
    }
    return report_module.Report(report_module.stamps(CAPS, "qcom-ext bench a"), [], suites)


def test_the_summary_table_holds_every_suites_rows_with_device_driver_and_date():
    row = goals.summary_row
    report = _report(
        [row("box", seconds=1.59e-4, of_buffer_copy=0.58, of_image_copy=1.96, vs_torch=5.5,
             goal="box_7x7", value=0.58)],
        [row("1x1 median", vs_torch=0.95, goal="pointwise", value=0.95), row("bare")],
    )  # fmt: skip
    lines = report_module.summary_table(report).splitlines()
    date = report.header["date"][:10]
    assert lines[0] == (
        "| op | time | of buffer copy | of image copy | vs torch | target | device | driver "
        "| date |"
    )
    label = CAPS.label
    assert lines[2:] == [
        f"| box | 159 µs | 0.58 | 1.96 | 5.50x | >= 0.85 of buffer copy: NOT met | {label} "
        f"| 9.9-test | {date} |",
        f"| 1x1 median | — | — | — | 0.95x | >= 1.25x torch: NOT met | {label} | 9.9-test "
        f"| {date} |",
        f"| bare | — | — | — | — | — | {label} | 9.9-test | {date} |",
    ]
    summarised = report_module.with_summary(report)
    assert list(summarised.suites) == ["summary", "a-suite", "b-suite"]
    assert summarised.suites["summary"].data["rows"][0]["op"] == "box"
    assert summarised.to_markdown().index("### `summary`") < summarised.to_markdown().index(
        "### `a-suite`"
    )


def test_a_new_summary_block_goes_under_the_summary_heading(tmp_path):
    doc = tmp_path / "B.md"
    doc.write_text("# B\n\n## Summary\n\nintro\n\n### CPU\n\n<!-- bench k summary -->\n"
                   "y\n<!-- /bench -->\n\n## Other\n")  # fmt: skip
    report = report_module.with_summary(_report([goals.summary_row("op", seconds=1.0)], []))
    report_module.update_doc(report, doc, key="gpu")
    text = doc.read_text()
    summary = text.index("<!-- bench gpu summary -->")
    assert text.index("intro") < summary < text.index("### CPU")  # before the subsections
    assert text.count("<!-- bench gpu a-suite -->") == 1  # new suite blocks go to the end
    assert text.index("<!-- bench gpu a-suite -->") > text.index("## Other")
    assert "<!-- bench k summary -->\ny\n" in text  # the other device's, untouched
    block = text[summary:].split("<!-- /bench -->")[0]
    assert "driver 9.9-test" in block and "| op | 1 s |" in block
    report_module.update_doc(report, doc, key="gpu")  # in place the second time
    assert doc.read_text() == text
