"""benchmarks/cases_conv.py: the runner's cases run, the script's measurements and
summary are well-formed (no timing checks: this VM's numbers mean nothing)."""

from __future__ import annotations

import json

import numpy as np
import pyopencl as cl
import pytest
from conftest import lab_module
from conv_reference import assert_close, conv2d
from test_ops_int8 import reference as int8_reference
from test_ops_int8 import requantise

from qcom_ext import ops
from qcom_ext.ops.suite import host_arrays


@pytest.fixture(scope="module")
def conv_module():
    return lab_module("cases_conv")


def test_cases_are_declared_for_the_runner(conv_module):
    names = [s["name"] for s in conv_module._SPECS]
    assert names == [
        "conv_copy",
        "conv_depthwise",
        "conv_1x1",
        "conv_kxk_image",
        "conv_kxk_tiled",
        "conv_int8",
    ]
    assert {s["group"] for s in conv_module._SPECS} == {"conv"}
    assert [s["name"] for s in conv_module._SPECS if s["baseline"]] == ["conv_copy"]


def test_every_case_runs_and_matches_numpy(conv_module, device_caps, kernel_context):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label}: the image-layout cases need images")
    checked = []
    for spec in conv_module._SPECS:
        state = spec["setup"](device_caps)
        spec["run"](state)
        if spec["name"] == "conv_copy":
            copied = np.empty(state["b"].size // 4, np.float32)
            cl.enqueue_copy(state["queue"], copied, state["b"])
            np.testing.assert_array_equal(copied, 1.5)  # what setup filled the source with
        else:
            got, want = _result_and_reference(state)
            if state["layer"].kind == "int8":  # requantised: at most one step off
                assert got.dtype == np.int8 and got.shape == want.shape
                assert np.abs(got.astype(np.int64) - want).max() <= 1
            else:
                assert_close(got, want, np.float32)
        checked.append(spec["name"])
    assert checked == [spec["name"] for spec in conv_module._SPECS]


def _result_and_reference(state):
    """The case's output read back (NCHW; NHWC for int8) and its numpy reference."""
    queue, op, out, layer = state["queue"], state["op"], state["out"], state["layer"]
    arrays = host_arrays(layer)  # what prepare() gave the case
    x, w, b = arrays["x"], arrays["weight"], arrays["bias"]
    if layer.kind == "int8":
        q = op.quantisation
        real = int8_reference(
            x, w, b, q.input_scale, q.input_zero_point, q.weight_scale, 0,
            (layer.stride,) * 2, layer.activation, 0.01,
        )  # fmt: skip
        want = requantise(real, q.output_scale, q.output_zero_point, np.int8)
        return out.to_numpy(queue), want
    if layer.kind == "1x1":
        w = w[:, :, None, None]
    groups = layer.in_channels if layer.kind == "depthwise" else 1
    want = conv2d(
        x, w, b, stride=layer.stride, padding=layer.padding, groups=groups,
        activation=layer.activation,
    )  # fmt: skip
    if isinstance(out, ops.ImageTensor):
        return ops.from_image(queue, out), want
    got = out.to_numpy(queue)
    return (got.transpose(0, 3, 1, 2) if out.layout == "NHWC" else got), want


def _summary_rows(a_best, b_best, c_peak):
    """1x1 layers a (two tiles) and b, depthwise c (two variants), a tiled conv d."""
    return [
        {"layer": "a", "kind": "1x1", "variant": "tile 2x4", "gain": 1.0, "vs_torch": 0.3},
        {"layer": "a", "kind": "1x1", "variant": "tile 4x8", "gain": 1.2, "vs_torch": a_best},
        {"layer": "b", "kind": "1x1", "variant": "tile 2x4", "gain": 1.4, "vs_torch": b_best},
        {
            "layer": "c",
            "kind": "depthwise",
            "variant": "4 px",
            "gain": 1.3,
            "bandwidth_fraction": c_peak,
            "roofline_fraction": 0.65,
            "vs_torch": 2.0,
        },
        {
            "layer": "c",
            "kind": "depthwise",
            "variant": "8 px",
            "gain": 1.3,
            "bandwidth_fraction": c_peak - 0.05,
            "roofline_fraction": 0.55,
        },
        {"layer": "d", "kind": "conv", "variant": "tiled", "gain": 1.0},
    ]


def test_summary_medians_and_verdicts(conv_module):
    summary = conv_module.summarise(_summary_rows(0.7, 0.5, 0.45))
    assert summary["pointwise_vs_torch"] == pytest.approx(0.6)  # best tiles: 0.7 and 0.5
    assert summary["pointwise_slowest_vs_torch"] == pytest.approx(0.5)
    assert summary["pointwise_slowest_layer"] == "b"
    assert summary["pointwise_mace_vs_torch"] == pytest.approx(0.4)
    assert summary["pointwise_best_tiles"] == {"a": "tile 4x8", "b": "tile 2x4"}
    assert summary["depthwise_roofline"] == pytest.approx(0.65)  # the best variant's
    assert summary["depthwise_peak_bandwidth"] == pytest.approx(0.45)
    assert summary["depthwise_vs_torch"] == pytest.approx(2.0)
    assert summary["depthwise_best_variants"] == {"c": "4 px"}
    assert summary["tuning_gain"] == pytest.approx(1.3)  # tiled rows are not tuned
    targets = summary["targets"]
    assert {name: t["limit"] for name, t in targets.items()} == {  # issue 18's, issue 7's gain
        "pointwise_vs_torch": 1.25,
        "pointwise_slowest_vs_torch": 0.8,
        "depthwise_peak_bandwidth": 0.85,
        "tuning_gain": 1.15,
    }
    assert targets["tuning_gain"]["met"]
    assert not targets["pointwise_vs_torch"]["met"]
    assert not targets["pointwise_slowest_vs_torch"]["met"]
    assert not targets["depthwise_peak_bandwidth"]["met"]
    assert conv_module.goal_lines(summary)[2] == (
        "1x1 conv (slowest shape): 0.50x torch (target >= 0.80x torch): NOT met; b"
    )
    met = conv_module.summarise(_summary_rows(1.6, 0.9, 0.9))
    assert all(t["met"] for t in met["targets"].values())
    assert [line.rsplit(": ", 1)[1] for line in conv_module.goal_lines(met)] == ["met"] * 2 + [
        "met; b"
    ]
    assert conv_module.summarise([])["targets"]["tuning_gain"]["met"] is None


def test_summary_rows_of_the_conv_suite(conv_module):
    rows = conv_module.summary_rows(conv_module.summarise(_summary_rows(1.6, 0.9, 0.9)), 32)
    assert [(r["op"], r["of_buffer_copy"], r["vs_torch"], r["target"]) for r in rows] == [
        (
            "depthwise 3x3, median of 1 MobileNetV2 shapes, batch 32",
            0.9,
            2.0,
            ">= 0.85 of peak buffer copy: met",
        ),
        (
            "1x1 conv, median of 2 shapes, batch 32",
            None,
            pytest.approx(1.25),
            ">= 1.25x torch: met",
        ),
        ("1x1 conv, slowest shape (b), batch 32", None, 0.9, ">= 0.80x torch: met"),
    ]
    untimed = [  # no torch: the 1x1 rows have no vs_torch
        {k: v for k, v in r.items() if r["kind"] != "1x1" or k != "vs_torch"}
        for r in _summary_rows(1, 1, 1)
    ]
    rows = conv_module.summary_rows(conv_module.summarise(untimed), 1)
    assert [r["op"].split(",")[0] for r in rows] == ["depthwise 3x3"]  # no 1x1 row


#: The variants each end-to-end run must time (two runs: one file's share of the suite's
#: 30 s per test). The layers are an eighth of MobileNetV2's size: this checks the suite's
#: plumbing (tuning, JSON, markdown, bandwidth), not its times.
SMALL_RUN_VARIANTS = {
    "depthwise": {("depthwise", "4 px"), ("depthwise", "8 px")},
    "1x1,conv": {
        ("1x1", "tile 2x4"),
        ("1x1", "tile 4x8"),
        ("1x1", "tile 8x8"),
        ("conv", "image"),
        ("conv", "tiled"),
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("kinds", sorted(SMALL_RUN_VARIANTS))
def test_small_run_writes_json_and_markdown(
    conv_module, device_caps, kernel_context, tmp_path, monkeypatch, kinds
):
    from test_samples import device_spec

    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label}: the depthwise layers need images")
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path / "cache"))
    out_json, out_md = tmp_path / "conv.json", tmp_path / "conv.md"
    code = conv_module.main(
        [
            "--device",
            device_spec(device_caps),
            "--small",
            "--scale",
            "0.125",
            "--rounds",
            "1",
            "--budget-s",
            "0.1",
            "--kinds",
            kinds,
            "--no-torch",
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ]
    )
    assert code == 0
    data = json.loads(out_json.read_text())
    assert data["bandwidth"]["buffer_copy_Bps"] > 0
    assert data["bandwidth"]["copy_bytes"] >= 64 << 20  # a peak: at least 64 MiB
    assert {(r["kind"], r["variant"]) for r in data["rows"]} >= SMALL_RUN_VARIANTS[kinds]
    for row in data["rows"]:
        assert row["tuned_ns"] > 0 and row["gflops"] > 0
        assert row["gflops"] == pytest.approx(row["flops"] / row["tuned_ns"])
    markdown = out_md.read_text()
    assert "| layer | shape (C x H x W) | kernel |" in markdown
    assert "| tuning_gain | 1.15 |" in markdown
    if kinds != "depthwise":
        return
    assert "| depthwise_peak_bandwidth | 0.85 |" in markdown
    assert "* depthwise (median over the MobileNetV2 shapes): " in markdown
    for row in data["rows"]:
        assert row["copy_ns"] > 0 and row["roofline_fraction"] > 0
        assert row["roofline_fraction"] == pytest.approx(row["copy_ns"] / row["tuned_ns"])
        want = row["bytes"] / (row["tuned_ns"] * 1e-9) / data["bandwidth"]["buffer_copy_Bps"]
        assert row["bandwidth_fraction"] == pytest.approx(want)
