"""probe() reports the CLML (cl_qcom_ml_ops) interface versions through
clQueryMLInterfaceVersionsQCOM, marshalled through cffi callbacks (tests/fakes/driver.py)."""

from __future__ import annotations

import json

from fakes.driver import (
    DEVICE,
    adreno740_device_info,
    cstr,
    fake_driver,
    ml_versions_query,
    platform_info,
)

from qcom_ext.binding.lib import ffi
from qcom_ext.device.probe import read_device


def test_versions_are_reported_with_the_two_call_pattern():
    calls: list = []
    query = ml_versions_query(((1, 1), (2, 0), (3, 0)), calls=calls)
    with fake_driver(
        adreno740_device_info(), platform_info(), [], clQueryMLInterfaceVersionsQCOM=query
    ):
        caps = read_device(DEVICE)
    assert caps.limits.ml_interface_versions == ((1, 1), (2, 0), (3, 0))
    # first (NULL, NULL, 0, &n), then arrays of n and no count pointer
    assert calls == [(True, True, 0, False), (False, False, 3, True)]
    assert caps.path("cl_qcom_ml_ops") == "native" and caps.problems == ()
    limits = json.loads(caps.to_json())["limits"]
    assert limits["ml_interface_versions"] == [[1, 1], [2, 0], [3, 0]]


def test_a_failing_query_is_a_problem_not_an_error():
    with fake_driver(
        adreno740_device_info(),
        platform_info(),
        [],
        clQueryMLInterfaceVersionsQCOM=ml_versions_query(status=-30),
    ):
        caps = read_device(DEVICE)
    assert caps.limits.ml_interface_versions is None
    (problem,) = caps.problems
    assert "cl_qcom_ml_ops" in problem and "CL_INVALID_VALUE (-30)" in problem


def test_a_missing_entry_point_is_a_problem():
    lookups: list = []

    def lookup(platform, name):
        lookups.append(ffi.string(name))
        return ffi.NULL

    with fake_driver(
        adreno740_device_info(),
        platform_info(),
        [],
        clGetExtensionFunctionAddressForPlatform=lookup,
        clQueryMLInterfaceVersionsQCOM=None,
    ):
        caps = read_device(DEVICE)
    assert lookups == [b"clQueryMLInterfaceVersionsQCOM"]
    (problem,) = caps.problems
    assert "does not provide clQueryMLInterfaceVersionsQCOM" in problem


def test_no_query_without_the_extension():
    info = adreno740_device_info()
    info[0x1030] = cstr("cl_khr_fp16 cl_qcom_perf_hint")
    calls: list = []
    with fake_driver(
        info, platform_info(), [], clQueryMLInterfaceVersionsQCOM=ml_versions_query(calls=calls)
    ):
        caps = read_device(DEVICE)
    assert calls == [] and caps.limits.ml_interface_versions is None
