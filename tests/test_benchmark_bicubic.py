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
