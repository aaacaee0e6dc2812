"""Branches of the vector-image and shuffle compat parts that no local device takes.

The khr shuffle path (cl_khr_subgroup_shuffle) and the cl_khr_fp16 variants (half
reads, writes and shuffles) are compiled with clang's own OpenCL front end for the
SPIR target, whose default header declares those builtins (-fsyntax-only: nothing
runs). The samples' kernels are compiled the same way.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from qcom_ext._resources import kernels_dir

CLANG = next(
    (c for c in ("clang", *(f"clang-{v}" for v in range(20, 13, -1))) if shutil.which(c)), None
)

HALF_SOURCE = """
#include <qcom_ext.h>
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                         CLK_FILTER_NEAREST;
__kernel void k(read_only image2d_t im, write_only image2d_t y, __global float4 *o,
                __global half *hv, __global ulong *uv64)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    float2 c = (float2)(1.0f, 1.0f);
    o[0] = convert_float4(qcom_read_imageh_2x2(im, s, c, 1));
    o[1] = convert_float4(qcom_read_imageh_4x1(im, s, c, 2));
    o[2] = convert_float4(qcom_read_imageui_2x2(im, s, c, 0));
    o[3] = convert_float4(qcom_read_imagei_4x1(im, s, c, 3));
    half h[4] = {(half)0.0f, (half)1.0f, (half)0.5f, (half)0.25f};
    half2 uv[2] = {(half2)(0.5f, 0.25f), (half2)(1.0f, 0.0f)};
    qcom_write_imagehv_2x1_n8n00(y, (int2)(0, 0), h);
    qcom_write_imagehv_4x1_n8n00(y, (int2)(0, 0), h);
    qcom_write_imagehv_2x2_n8n00(y, (int2)(0, 0), h);
    qcom_write_imagehv_2x1_n8n01(y, (int2)(0, 0), uv);
    size_t i = get_global_id(0);
    qcom_sub_group_shuffle_width_modes_t w = CLK_SUB_GROUP_SHUFFLE_WIDTH_W8_QCOM;
    hv[i] = qcom_sub_group_shuffle_xor(hv[i], 1u, w, (half)0.0f);
    uv64[i] = qcom_sub_group_shuffle_rotate_up(uv64[i], 3u, w, (ulong)0)
            + qcom_sub_group_shuffle_down(uv64[i], 1u, w, (ulong)0);
}
"""

CONFIGS = {
    "emulated-1": ["-cl-std=CL1.2"],
    "emulated-16": ["-cl-std=CL2.0", "-DQCOM_EXT_EMULATED_SUB_GROUP_SIZE=16"],
    "khr-cl2.0": ["-cl-std=CL2.0", "-DQCOM_EXT_KHR_cl_qcom_subgroup_shuffle"],
    "khr-cl1.2": [
        "-cl-std=CL1.2",
        "-Dcl_khr_subgroups",
        "-Dcl_khr_subgroup_shuffle",
        "-DQCOM_EXT_KHR_cl_qcom_subgroup_shuffle",
    ],
}


def syntax_check(source: str, options: list[str], tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "k.cl"
    path.write_text(source)
    command = [
        CLANG,
        "-x",
        "cl",
        "-target",
        "spir64",
        "-Xclang",
        "-finclude-default-header",
        "-fsyntax-only",
        "-Werror",
        "-I",
        str(kernels_dir()),
        *options,
        str(path),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CLANG is None, reason="no clang with an OpenCL front end installed")
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_half_and_khr_branches_compile(config, tmp_path):
    result = syntax_check(HALF_SOURCE, CONFIGS[config], tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(CLANG is None, reason="no clang with an OpenCL front end installed")
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("kernel", ["downscale.cl", "subgroup_prefix_sum.cl"])
def test_sample_kernels_compile(config, kernel, tmp_path):
    source = (kernels_dir() / kernel).read_text()
    result = syntax_check(source, [*CONFIGS[config], "-DLOCAL_SIZE=256"], tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(CLANG is None, reason="no clang with an OpenCL front end installed")
def test_the_check_can_fail(tmp_path):
    """A kernel that shuffles without the scratch on emulated sub-groups is rejected."""
    source = HALF_SOURCE.replace("QCOM_SUB_GROUP_SHUFFLE_SCRATCH;", "")
    result = syntax_check(source, CONFIGS["emulated-16"], tmp_path)
    assert result.returncode != 0
    assert "declare_it_with_QCOM_SUB_GROUP_SHUFFLE_SCRATCH" in result.stderr
