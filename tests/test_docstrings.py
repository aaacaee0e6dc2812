"""The examples in the docstrings run (those that probe need an OpenCL device)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from qcom_ext.errors import OpenCLUnavailable

MODULES = [
    "qcom_ext",
    "qcom_ext.errors",
    "qcom_ext._resources",
    "qcom_ext._cdefs",
    "qcom_ext._lib",
    "qcom_ext._info",
    "qcom_ext.extensions",
    "qcom_ext.caps",
    "qcom_ext.probe",
    "qcom_ext.verify",
    "qcom_ext._hints",
    "qcom_ext.context",
    "qcom_ext.recording",
    "qcom_ext._recording_args",
    "qcom_ext.program",
    "qcom_ext.pytest_plugin",
    "qcom_ext._mem_flags",
    "qcom_ext._image_formats",
    "qcom_ext.image_info",
    "qcom_ext.image_buffer",
    "qcom_ext.onchip",
    "qcom_ext._memobj",
    "qcom_ext.host_ptr",
    "qcom_ext.images",
    "qcom_ext.planar",
    "qcom_ext.yuv",
    "qcom_ext.program_cache",
    "qcom_ext.subgroups",
    "qcom_ext.sampler",
    "qcom_ext.bicubic",
    "qcom_ext.bfloat16",
    "qcom_ext.accelerated",
    "qcom_ext.hof_reference",
    "qcom_ext.image_ops",
    "qcom_ext._hof_points",
    "qcom_ext.selftest",
    "qcom_ext.selftest._registry",
    "qcom_ext.selftest._paths",
    "qcom_ext.selftest._report",
    "qcom_ext.selftest._runner",
    "qcom_ext.selftest._memory",
    "qcom_ext.selftest.checks_builtins",
    "qcom_ext._cache_dir",
    "qcom_ext._clml",
    "qcom_ext._finalizer_lock",
    "qcom_ext.tuning",
    "qcom_ext.ops",
    "qcom_ext.ops.layout",
    "qcom_ext.ops.depthwise",
    "qcom_ext.ops.conv_1x1",
    "qcom_ext.ops.kxk",
    "qcom_ext.ops.conv_int8",
    "qcom_ext.ops.suite",
]

NEEDS_DEVICE = {
    "qcom_ext",
    "qcom_ext.probe",
    "qcom_ext.context",
    "qcom_ext.recording",
    "qcom_ext.program",
    "qcom_ext.image_info",
    "qcom_ext.image_buffer",
    "qcom_ext.onchip",
    "qcom_ext.host_ptr",
    "qcom_ext.images",
    "qcom_ext.planar",
    "qcom_ext.subgroups",
    "qcom_ext.sampler",
    "qcom_ext.accelerated",
    "qcom_ext.image_ops",
    "qcom_ext._hof_points",
    "qcom_ext.selftest",
    "qcom_ext.selftest._paths",
    "qcom_ext.tuning",
    "qcom_ext.ops",
    "qcom_ext.ops.layout",
    "qcom_ext.ops.depthwise",
    "qcom_ext.ops.conv_1x1",
    "qcom_ext.ops.kxk",
    "qcom_ext.ops.conv_int8",
}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    if name in NEEDS_DEVICE:
        try:
            importlib.import_module("qcom_ext").probe()
        except OpenCLUnavailable as exc:
            pytest.skip(f"needs an OpenCL device: {exc}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no runnable example"
