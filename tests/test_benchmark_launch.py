"""The benchmark cases of cases_launch: declared for the runner, and each computes the
layer's own y, bit for bit (no timing)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from conftest import benchmark_module

from qcom_ext.ops.quant import dequantize


@pytest.fixture(scope="module")
def cases_module():
    return benchmark_module("cases_launch")


def test_cases_are_declared_for_the_runner(cases_module):
    cases = cases_module.CASES
    assert [c.name for c in cases] == [
        "gemv_preset_enqueue",
        "gemv_untyped_set_args",
        "gemv_typed_enqueue",
        "gemv_linear_enqueue",
    ]
    assert {c.group for c in cases} == {"launch"}
    assert [c.name for c in cases if c.baseline] == ["gemv_preset_enqueue"]


def test_every_case_computes_the_layers_product(
    cases_module, device_caps, kernel_context, monkeypatch
):
    monkeypatch.setattr(cases_module, "CALLS", 2)
    state = cases_module.setup(device_caps)
    queue, layer, x, out = (state[k] for k in ("queue", "layer", "x", "out"))
    results = {}
    for case in cases_module.CASES:
        cl.enqueue_fill_buffer(queue, out.buffer, np.float32(np.nan), 0, out.nbytes)
        case.run(state)
        results[case.name] = out.to_numpy(queue)
    want = x.to_numpy(queue).astype(np.float64) @ dequantize(layer.quantized).T
    np.testing.assert_allclose(results["gemv_linear_enqueue"], want, rtol=1e-5, atol=1e-4)
    for name, got in results.items():
        np.testing.assert_array_equal(got, results["gemv_linear_enqueue"], err_msg=name)
