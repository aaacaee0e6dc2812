"""The benchmark cases of cases_bicubic: its cases run on a small image and compute the upscale."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from conftest import benchmark_module

from qcom_ext.reference.bicubic import upscale2x


@pytest.fixture(scope="module")
def cases_module():
    return benchmark_module("cases_bicubic")


def test_cases_are_declared_for_the_runner(cases_module):
    names = [s["name"] for s in cases_module._SPECS]
    expected = ["bicubic_image_copy", "bicubic_2x", "bicubic_2x_blocks"]
    if cases_module.torch_cuda_available():
        expected.append("torch_bicubic_2x")
    assert names == expected
    assert {s["group"] for s in cases_module._SPECS} == {"bicubic"}
    assert [s["name"] for s in cases_module._SPECS if s["baseline"]] == ["bicubic_image_copy"]


def test_issue_sizes(cases_module, monkeypatch):
    monkeypatch.delenv(cases_module.SIZE_ENV, raising=False)
    assert cases_module.size() == (3840, 2160)
    moved = cases_module.bytes_moved(3840, 2160)
    assert round(moved["copy"] / 2e6) == 133  # 133 MB in (and out again)
    assert round((moved["bicubic"] - moved["copy"] / 2) / 1e6) == 531  # 531 MB out
    monkeypatch.setenv(cases_module.SIZE_ENV, "64x32")
    assert cases_module.size() == (64, 32)
    with pytest.raises(ValueError, match="WxH"):
        cases_module.parse_size("0x4")


def read_back(state) -> np.ndarray:
    width, height = state["dst"].shape
    out = np.empty((height, width, 4), np.float32)
    cl.enqueue_copy(state["queue"], out, state["dst"], origin=(0, 0), region=(width, height))
    return out


def test_every_case_computes_its_result(cases_module, device_caps, kernel_context, monkeypatch):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    monkeypatch.setenv(cases_module.SIZE_ENV, "40x24")
    source = cases_module.source_pixels(40, 24)
    copy = cases_module.setup_images(device_caps)
    cases_module.run_once(copy)
    np.testing.assert_array_equal(read_back(copy), source)
    expected = upscale2x(source)
    for setup in (cases_module.setup_bicubic, cases_module.setup_blocks):
        state = setup(device_caps)
        cases_module.run_once(state)
        np.testing.assert_allclose(read_back(state), expected, atol=2e-5)
        assert cases_module.check_result(state, samples=32) < 2e-5
        assert len(cases_module.device_seconds(state, 2)) == 2


def test_suite_states_the_upscales_against_the_buffer_copy(
    cases_module, device_caps, kernel_context, monkeypatch
):
    """Bytes: the source read once and the output written once (5 x the source), over
    the buffer copy measured in the run; the image copy's share beside it."""
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    monkeypatch.setenv(cases_module.SIZE_ENV, "40x24")
    data = cases_module.measure_suite(device_caps, 2)
    rows, source = data["rows"], 40 * 24 * 16
    assert data["copy_bytes"] >= 5 * source and data["buffer_copy_Bps"] > 0
    assert rows["copy"]["of_image_copy"] == 1.0
    for kind in ("bicubic", "blocks"):
        r = rows[kind]
        assert r["bytes"] == 5 * source
        assert r["of_buffer_copy"] == pytest.approx(
            5 * source / r["seconds"] / data["buffer_copy_Bps"]
        )
        assert r["of_image_copy"] == pytest.approx(2.5 * rows["copy"]["seconds"] / r["seconds"])
    text = cases_module.suite_markdown(data)
    assert "| case | time | GB/s | of buffer copy | of image copy |" in text
    blocks = rows["blocks"]["of_buffer_copy"]
    verdict = "met" if blocks >= 0.85 else "NOT met"
    assert (
        f"* bicubic 2x (2x2 outputs per work-item): {blocks:.2f} of buffer copy (target >= "
        f"0.85 of buffer copy, source read once + output written once): {verdict}"
    ) in text
    ops = [r["op"] for r in data["summary_rows"]]
    assert ops == [
        "bicubic 2x upscale (2x2 outputs per work-item), 40x24 source",
        "bicubic 2x upscale (one read per output), 40x24 source",
    ]
