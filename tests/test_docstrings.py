"""The examples in the docstrings run (those that probe need an OpenCL device)."""

from __future__ import annotations

import doctest
import importlib

import pytest
from conftest import lab_module

from qcom_ext.errors import OpenCLUnavailable

MODULES = [
    "qcom_ext",
    "qcom_ext.errors",
    "qcom_ext._resources",
    "qcom_ext.binding.cdefs",
    "qcom_ext.binding.lib",
    "qcom_ext.binding.info",
    "qcom_ext.device.registry",
    "qcom_ext.device.extensions",
    "qcom_ext.device.limits",
    "qcom_ext.device.driver_strings",
    "qcom_ext.device.kgsl",
    "qcom_ext.device.report_text",
    "qcom_ext.device.caps",
    "qcom_ext.device.verdicts",
    "qcom_ext.device.probe",
    "qcom_ext.device.shared",
    "qcom_ext._context_cache",
    "qcom_ext.tools.verify.runner",
    "qcom_ext.tools.verify._process",
    "qcom_ext.ext.hints",
    "qcom_ext.ext.context",
    "qcom_ext.ext.recording",
    "qcom_ext.ext.recording.args",
    "qcom_ext.ext.program.build",
    "qcom_ext.tools.pytest_plugin",
    "qcom_ext.ext.memory.flags",
    "qcom_ext.ext.memory.formats",
    "qcom_ext.ext.images.info",
    "qcom_ext.ext.images.image_buffer",
    "qcom_ext.ext.memory.onchip",
    "qcom_ext.ext.memory.memobj",
    "qcom_ext.ext.memory.host_ptr",
    "qcom_ext.ext.memory.external",
    "qcom_ext.ext.images.image",
    "qcom_ext.ext.images.planar",
    "qcom_ext.ext.images.yuv",
    "qcom_ext.ext.program.cache",
    "qcom_ext.ext.program.subgroups",
    "qcom_ext.ext.images.sampler",
    "qcom_ext.reference.bicubic",
    "qcom_ext.ext.program.bfloat16",
    "qcom_ext.ext.accelerated.weights",
    "qcom_ext.reference.accelerated",
    "qcom_ext.ext.accelerated.whole_image",
    "qcom_ext.ext.accelerated.points",
    "qcom_ext.ext.accelerated.support",
    "qcom_ext.ext.accelerated.filter_spec",
    "qcom_ext.ext.accelerated.plan",
    "qcom_ext.ext.accelerated.rgba",
    "qcom_ext.tools.selftest",
    "qcom_ext.tools.selftest._registry",
    "qcom_ext.tools.selftest._env",
    "qcom_ext.tools.selftest._paths",
    "qcom_ext.tools.selftest._report",
    "qcom_ext.tools.selftest._runner",
    "qcom_ext.tools.selftest._memory",
    "qcom_ext.tools.selftest.checks_builtins",
    "qcom_ext._cache_dir",
    "qcom_ext.device.clml",
    "qcom_ext.ops.tuning",
    "qcom_ext.ops.tuning_cache",
    "qcom_ext.ops",
    "qcom_ext.ops.options",
    "qcom_ext.ops.layout",
    "qcom_ext.ops.depthwise",
    "qcom_ext.ops.conv_1x1",
    "qcom_ext.ops.kxk",
    "qcom_ext.ops.conv_int8",
    "qcom_ext.ops.suite",
    "qcom_ext.ops.quant",
    "qcom_ext.ops.gguf_weights",
    "qcom_ext.ops.matmul",
    "qcom_ext.ops._matmul_layout",
    "qcom_ext.ops._matmul_programs",
    "qcom_ext.ops.variant_tuning",
    "qcom_ext.ext.variant",
    "qcom_ext.ext.variant_store",
    "benchmarks._read_floor",
    "benchmarks._ptx",
    "benchmarks._occupancy",
    "benchmarks._kernel_profile",
    "qcom_ext._isolation",
    "qcom_ext.device.location",
    "qcom_ext.device.choice",
    "qcom_ext.device.isolated",
    "qcom_ext.ext.program.isolated",
    "qcom_ext._trials",
    "qcom_ext._json_store",
    "qcom_ext.tools.fleet.identity",
    "qcom_ext.tools.fleet.privacy",
    "qcom_ext.tools.fleet.checks",
    "qcom_ext.tools.fleet.report",
    "qcom_ext.tools.fleet.from_capture",
]

NEEDS_DEVICE = {
    "qcom_ext",
    "qcom_ext.device.probe",
    "qcom_ext.device.shared",
    "qcom_ext._context_cache",
    "qcom_ext.ext.context",
    "qcom_ext.ext.recording",
    "qcom_ext.ext.program.build",
    "qcom_ext.ext.images.info",
    "qcom_ext.ext.images.image_buffer",
    "qcom_ext.ext.memory.onchip",
    "qcom_ext.ext.memory.host_ptr",
    "qcom_ext.ext.images.image",
    "qcom_ext.ext.images.planar",
    "qcom_ext.ext.program.subgroups",
    "qcom_ext.ext.images.sampler",
    "qcom_ext.ext.accelerated.weights",
    "qcom_ext.ext.accelerated.whole_image",
    "qcom_ext.ext.accelerated.points",
    "qcom_ext.ext.accelerated.rgba",
    "qcom_ext.tools.selftest",
    "qcom_ext.tools.selftest._env",
    "qcom_ext.tools.selftest._paths",
    "qcom_ext.ops.tuning",
    "qcom_ext.ops",
    "qcom_ext.ops.layout",
    "qcom_ext.ops.depthwise",
    "qcom_ext.ops.conv_1x1",
    "qcom_ext.ops.kxk",
    "qcom_ext.ops.conv_int8",
    "qcom_ext.ops.matmul",
    "qcom_ext.device.location",
    "qcom_ext.device.choice",
    "qcom_ext.device.isolated",
    "qcom_ext.ext.program.isolated",
    "qcom_ext.tools.fleet.checks",
    "qcom_ext.tools.fleet.report",
}


#: Modules whose examples need an optional package (the extra that installs it).
NEEDS_PACKAGE = {"qcom_ext.ops.gguf_weights": ("gguf", "qcom_ext[gguf]")}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name.startswith("benchmarks."):  # the checkout's lab, not the wheel
        module = lab_module(name.removeprefix("benchmarks."))
    else:
        module = importlib.import_module(name)
    if name in NEEDS_PACKAGE:
        package, extra = NEEDS_PACKAGE[name]
        pytest.importorskip(package, reason=f"needs the {package} package ({extra})")
    if name in NEEDS_DEVICE:
        try:
            importlib.import_module("qcom_ext").probe()
        except OpenCLUnavailable as exc:
            pytest.skip(f"needs an OpenCL device: {exc}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no runnable example"
