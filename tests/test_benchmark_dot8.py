"""The dot8 benchmark cases (qcom_ext/tools/bench/cases_dot8.py): both kernels compute
what the numpy model of their loop computes, on every device, and the portable case
really is the portable code."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from qcom_ext.tools.bench import cases_dot8


def test_both_cases_compute_the_reference(device_caps, kernel_context):
    state = cases_dot8.setup(device_caps, items=2048)
    want = cases_dot8.reference(state["a"], state["b"], rounds=40)
    for which in ("probed", "portable"):
        np.testing.assert_array_equal(cases_dot8.launch(state, which, rounds=40), want, which)


def test_saturation_is_reached_and_applied(device_caps, kernel_context):
    """Enough rounds to drive the sums into both int32 limits: the model's clipping and
    the kernels' agree there too."""
    state = cases_dot8.setup(device_caps, items=512)
    rounds = 20_000  # 20,000 x up to 260,100 passes 2**31
    want = cases_dot8.reference(state["a"], state["b"], rounds=rounds)
    assert (want == 2**31 - 1).any()
    np.testing.assert_array_equal(cases_dot8.launch(state, "probed", rounds=rounds), want)


def test_the_portable_case_leaves_out_every_faster_path(device_caps, kernel_context):
    state = cases_dot8.setup(device_caps, items=64)
    program = state["kernels"]["portable"].get_info(cl.kernel_info.PROGRAM)
    options = program.get_build_info(device_caps.device(), cl.program_build_info.OPTIONS)
    assert "dot_product8" not in options and "QCOM_EXT_NV_SM" not in options
    probed = state["kernels"]["probed"].get_info(cl.kernel_info.PROGRAM)
    flags = probed.get_build_info(device_caps.device(), cl.program_build_info.OPTIONS)
    assert ("QCOM_EXT_NV_SM" in flags) == (device_caps.limits.nv_compute_capability is not None)


def test_cases_are_a_group_with_a_baseline():
    names = {c.name: c for c in cases_dot8.CASES}
    assert set(names) == {"dot8_portable", "dot8_probed"}
    assert names["dot8_portable"].baseline and {c.group for c in cases_dot8.CASES} == {"dot8"}
