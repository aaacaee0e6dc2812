"""The vector-image and sub-group-shuffle compat parts under Oclgrind (OpenCL 1.2).

Oclgrind builds them, runs them, and checks every access: out-of-bounds, data races
(the emulated shuffles' local-memory passes) and, for the shuffle kernel, uninitialized
values. Its findings go to a log file and do not change the exit status, so the test
reads the log. (Oclgrind 21.10's uninitialized-value plugin crashes on any kernel that
combines the results of several read_imagef calls, with or without qcom_ext, so the
image kernel runs with the race and bounds checks only.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = Path("/usr/lib/oclgrind/liboclgrind-rt-icd.so")
ERRORS = ("Invalid", "Write-write", "Read-write", "Uninitialized", "divergence", "error")

SCRIPT = r'''
import sys
import numpy as np, pyopencl as cl, qcom_ext

caps = qcom_ext.probe()
assert "Oclgrind" in caps.platform_name, caps.platform_name
ctx = cl.Context([caps.device()])
queue = cl.CommandQueue(ctx)
if sys.argv[1] == "shuffle":
    src = """
    __kernel void scan(__global int *v) {
        QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
        size_t g = get_global_id(0);
        int x = v[g];
        for (uint d = 1; d < get_sub_group_size(); d <<= 1)
            x += qcom_sub_group_shuffle_up(x, d, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0);
        x += qcom_sub_group_shuffle_xor(x, 3u, CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM, 0);
        x += qcom_sub_group_shuffle_rotate_down(x, 1u, CLK_SUB_GROUP_SHUFFLE_WIDTH_W8_QCOM, 0);
        v[g] = x;
    }"""
    prg = qcom_ext.build_program(ctx, src, defines={"QCOM_EXT_EMULATED_SUB_GROUP_SIZE": 8})
    values = np.arange(80, dtype=np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=values)
    prg.scan(queue, (80,), (40,), buf)
    out = np.empty_like(values)
    cl.enqueue_copy(queue, out, buf)
    lanes = values.reshape(-1, 8)
    x = np.cumsum(lanes, axis=1)
    x = x + x[:, [3, 2, 1, 0, 7, 6, 5, 4]]
    x = x + np.roll(x, -1, axis=1)
    assert (out == x.ravel()).all(), (out, x.ravel())
else:
    src = """
    __constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP |
                               CLK_FILTER_NEAREST;
    __kernel void gather(read_only image2d_t im, write_only image2d_t y, __global float4 *o) {
        int i = get_global_id(0);
        float2 c = (float2)(2 * i + 1.0f, 1.0f);
        o[2 * i] = qcom_read_imagef_2x2(im, smp, c, 1);
        o[2 * i + 1] = qcom_read_imagef_4x1(im, smp, c, 2);
        float v[4] = {0.0f, 1.0f, 0.2f, 0.4f};
        qcom_write_imagefv_2x2_n8n00(y, (int2)(2 * i, 0), v);
    }"""
    prg = qcom_ext.build_program(ctx, src)
    data = np.random.default_rng(1).random((4, 8, 4), dtype=np.float32)
    mf = cl.mem_flags
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    im = cl.create_image(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, fmt, shape=(8, 4), hostbuf=data)
    y = cl.create_image(ctx, mf.WRITE_ONLY,
                        cl.ImageFormat(cl.channel_order.R, cl.channel_type.UNORM_INT8), (8, 2))
    o = cl.Buffer(ctx, mf.WRITE_ONLY, 8 * 16)
    prg.gather(queue, (4,), None, im, y, o)
    out = np.empty((4, 2, 4), np.float32)
    cl.enqueue_copy(queue, out, o)
    for i in range(4):
        x = 2 * i
        assert out[i, 0].tolist() == [data[1, x, 1], data[1, x + 1, 1], data[0, x + 1, 1],
                                      data[0, x, 1]]
        assert out[i, 1].tolist() == [data[1, x + 1 + k, 2] if x + 1 + k < 8 else 0.0
                                      for k in range(4)]
    plane = np.empty((2, 8), np.uint8)
    cl.enqueue_copy(queue, plane, y, origin=(0, 0), region=(8, 2))
    assert plane.tolist() == [[0, 255] * 4, [51, 102] * 4], plane
print("OK")
'''


@pytest.mark.skipif(not (shutil.which("oclgrind") and RUNTIME.is_file()),
                    reason="Oclgrind is not installed")  # fmt: skip
@pytest.mark.parametrize("part", ["shuffle", "images"])
def test_compat_parts_run_clean_under_oclgrind(tmp_path, part):
    (tmp_path / "oclgrind.icd").write_text(f"{RUNTIME}\n")
    log = tmp_path / "oclgrind.log"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "OCL_ICD_VENDORS": str(tmp_path), "PYOPENCL_CTX": "Oclgrind",
           "OCLGRIND_DATA_RACES": "1", "OCLGRIND_LOG": str(log), "PYTHONPATH": path,
           "PYOPENCL_NO_CACHE": "1"}  # fmt: skip
    env.pop("QCOM_EXT_DISABLE", None)
    if part == "shuffle":
        env["OCLGRIND_UNINITIALIZED"] = "1"
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    result = subprocess.run([sys.executable, str(script), part], capture_output=True,
                            text=True, env=env, timeout=600)  # fmt: skip
    findings = log.read_text() if log.exists() else ""
    assert result.returncode == 0, result.stdout + result.stderr + findings
    assert result.stdout.strip().endswith("OK")
    assert not [line for line in findings.splitlines() if line.startswith(ERRORS)], findings
