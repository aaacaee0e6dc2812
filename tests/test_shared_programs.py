"""The shared programs (qcom_ext/ext/program/shared.py): every kernel the library builds
for itself comes from one cache, keyed by the probe's kernel-side flags, so a
``disabling()`` block (or a changed ``QCOM_EXT_DISABLE``) gets programs built for the
paths the probe gives there. Before, three of the four per-context kernel caches (ops,
bicubic upscale, point ops) kept handing out the program built for the earlier paths."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.probe import disabling
from qcom_ext.ext.accelerated import points, whole_image
from qcom_ext.ext.accelerated.points import PointOps, upload
from qcom_ext.ext.images import upscale
from qcom_ext.ext.program.shared import defines_key, kernels_digest, shared_program, source_text
from qcom_ext.ops._programs import kernel_for

FORCED = "cl_qcom_bitreverse"


@pytest.fixture
def marked_flags(monkeypatch):
    """The probe's flags carry a mark of the extensions disabled (a define no kernel
    reads), so that a program shows which flags it was built with."""

    def flags(caps: DeviceCaps) -> tuple[str, ...]:
        return (f"-DPROBE_MARK={len(caps.disabled)}",)

    monkeypatch.setattr(DeviceCaps, "compiler_options", flags)


def _options(kernel, device) -> str:
    program = kernel.get_info(cl.kernel_info.PROGRAM)
    return program.get_build_info(device, cl.program_build_info.OPTIONS)


def _point_ops_kernel(queue, ops, monkeypatch) -> cl.Kernel:
    """The kernel a call of ``ops`` launches (caught at its enqueue)."""
    launched = []
    with monkeypatch.context() as patch:
        patch.setattr(points, "enqueue", lambda queue, kernel, *rest: launched.append(kernel))
        image = upload(ops.context, np.zeros((2, 2, 4), np.float32))
        ops.box_filter(queue, image, (1.0, 1.0), [(0.5, 0.5)])
    return launched[0]


def _kernels_of_every_user(queue, device, ops, monkeypatch):
    """The kernel each module that launches shared programs takes for the same call."""
    return {
        "ops": kernel_for(queue, device, "bitreverse.cl", "bitreverse_u32", {}).kernel,
        "whole_image": whole_image._kernel(queue, "qe_block_match_search", {}),
        "upscale": upscale._kernel(queue, "sampler", {"QCOM_EXT_BICUBIC_NORMALIZED": 1}),
        "points": _point_ops_kernel(queue, ops, monkeypatch),
    }


def test_every_user_gets_the_program_of_the_paths_in_force(
    marked_flags, cl_device, kernel_context, cl_queue, monkeypatch
):
    cl_context = kernel_context
    if not cl_device.image_support:
        pytest.skip(f"{cl_device.name}: no image support (the point ops read images)")
    ops = PointOps(cl_context)  # made outside the block, used inside it too
    outside = _kernels_of_every_user(cl_queue, cl_device, ops, monkeypatch)
    with disabling([FORCED]):
        inside = _kernels_of_every_user(cl_queue, cl_device, ops, monkeypatch)
    again = _kernels_of_every_user(cl_queue, cl_device, ops, monkeypatch)
    for user in outside:
        assert "-DPROBE_MARK=0" in _options(outside[user], cl_device), user
        assert "-DPROBE_MARK=1" in _options(inside[user], cl_device), user
        assert again[user] is outside[user], f"{user}: the first program was built again"


def test_one_program_per_context_source_defines_and_devices(kernel_context, cl_device):
    cl_context = kernel_context
    queue = cl.CommandQueue(cl_context)
    first = shared_program(cl_context, "bitreverse.cl")
    assert shared_program(queue, "bitreverse.cl") is first  # the queue's context: same entry
    assert shared_program(cl_context, "bitreverse.cl", devices=[cl_device]) is first
    other = shared_program(cl_context, "bitreverse.cl", {"UNUSED_DEFINE": 3})
    assert other is not first and "-DUNUSED_DEFINE=3" in other.options
    assert shared_program(cl.Context([cl_device]), "bitreverse.cl") is not first


def test_derived_values_are_made_once_per_program(kernel_context):
    cl_context = kernel_context
    shared = shared_program(cl_context, "bitreverse.cl")
    made = []
    first = shared.derived("thing", lambda: made.append(1) or object())
    assert shared.derived("thing", lambda: made.append(1) or object()) is first
    assert made == [1]


def test_a_failed_build_caches_nothing(kernel_context, monkeypatch):
    cl_context = kernel_context
    from qcom_ext import BuildError

    with pytest.raises(BuildError):
        shared_program(cl_context, "bitreverse.cl", {"qcom_bitreverse": "(", "X": 1})
    # the same key is tried again (not a cached failure), and a good build still works
    with pytest.raises(BuildError):
        shared_program(cl_context, "bitreverse.cl", {"qcom_bitreverse": "(", "X": 1})
    assert "bitreverse_u32" in shared_program(cl_context, "bitreverse.cl").kernels


def test_sources_and_their_identity():
    assert "bitreverse_u32" in source_text("bitreverse.cl")
    assert kernels_digest("bitreverse.cl") != kernels_digest("bicubic.cl")
    assert defines_key({"B": 1, "A": None, "C": False, "D": True}) == (("B", "1"), ("D", "True"))
