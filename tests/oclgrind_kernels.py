"""Builds and runs the kernels of the compat parts on the current device; prints OK.

Run by tests/test_oclgrind.py inside Oclgrind (PYOPENCL_CTX=Oclgrind), whose checks
(invalid accesses, data races, uninitialized values, API errors) go to its log. Each
result is also checked against numpy here; exit status 1 on a mismatch.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir
from qcom_ext.bfloat16 import mad32_bf16, to_bfloat16
from qcom_ext.bicubic import upscale2x

SUB_GROUPS = """
QCOM_REQD_SUB_GROUP_SIZE(half)
__kernel void half_k(__global int *out) { out[get_global_id(0)] = 1; }
#pragma OPENCL EXTENSION cl_qcom_reqd_sub_group_size : enable
__attribute__((qcom_reqd_sub_group_size("full")))
__kernel void adreno_k(__global int *out) { out[get_global_id(0)] = 3; }
__kernel void bitrev(__global uint *v)
{ v[get_global_id(0)] = qcom_bitreverse(v[get_global_id(0)]); }
__kernel void mad_bf16(__global const ushort *a, __global const ushort *b,
                       __global const float *acc, __global float *out)
{ size_t i = get_global_id(0); out[i] = qcom_mad32_bf16(a[i], b[i], acc[i]); }
"""


def check(name: str, ok: bool) -> bool:
    print(f"{name}: {'ok' if ok else 'MISMATCH'}")
    return ok


def main() -> int:
    caps = qcom_ext.probe()
    print(caps.summary())
    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    mf = cl.mem_flags
    results = []

    misc = qcom_ext.build_program(ctx, SUB_GROUPS)
    ints = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * 16)
    for name, value in (("half_k", 1), ("adreno_k", 3)):
        kernel = cl.Kernel(misc, name)
        kernel.set_args(ints)
        cl.enqueue_nd_range_kernel(queue, kernel, (16,), (8,))
        host = np.empty(16, np.int32)
        cl.enqueue_copy(queue, host, ints)
        results.append(check(f"reqd_sub_group_size {name}", bool((host == value).all())))
    size = qcom_ext.kernel_sub_group_size(cl.Kernel(misc, "half_k"), caps.device(), (8,))
    results.append(check("kernel_sub_group_size", size >= 1))

    values = np.array([0x1248EDBF, 0, 1, 0x80000000], np.uint32)
    buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=values)
    misc.bitrev(queue, values.shape, None, buf)
    cl.enqueue_copy(queue, values, buf)
    results.append(check("bitreverse", values.tolist() == [0xFDB71248, 0, 0x80000000, 1]))

    rng = np.random.default_rng(0)
    a = rng.integers(0, 0x10000, 64).astype(np.uint16)
    b = rng.integers(0, 0x10000, 64).astype(np.uint16)
    acc = rng.standard_normal(64).astype(np.float32)
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, acc)]
    out = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * 64)
    misc.mad_bf16(queue, (64,), None, *bufs, out)
    got = np.empty(64, np.float32)
    cl.enqueue_copy(queue, got, out)
    expected = mad32_bf16(a, b, acc)
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    results.append(check("qcom_mad32_bf16", bool(same.all())))

    dot = qcom_ext.build_program(ctx, (kernels_dir() / "bf16_dot.cl").read_text())
    n, groups, local = 300, 2, 8
    x = to_bfloat16(rng.standard_normal(n).astype(np.float32))
    y = to_bfloat16(rng.standard_normal(n).astype(np.float32))
    xb, yb = (cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) for v in (x, y))
    partial = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * groups)
    kernel = cl.Kernel(dot, "bf16_dot")
    kernel.set_args(xb, yb, np.uint32(n), partial, cl.LocalMemory(4 * local))
    cl.enqueue_nd_range_kernel(queue, kernel, (groups * local,), (local,))
    sums = np.empty(groups, np.float32)
    cl.enqueue_copy(queue, sums, partial)
    exact = float((mad32_bf16(x, y, 0.0).astype(np.float64)).sum())
    results.append(check("bf16_dot", abs(float(sums.sum()) - exact) < 1e-4 * n))

    if caps.image_support:
        pixels = rng.random((6, 8, 4), dtype=np.float32)
        fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
        src = cl.create_image(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, fmt, shape=(8, 6),
                              hostbuf=pixels)  # fmt: skip
        program = qcom_ext.build_program(ctx, (kernels_dir() / "bicubic.cl").read_text(),
                                         defines={"QCOM_EXT_BICUBIC_NORMALIZED": 1})  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
            sampler = qcom_ext.create_sampler(ctx, normalized=True, addressing="clamp")
        expected = upscale2x(pixels)
        for name, args, size in (("upscale2x", (src, sampler), (16, 12)),
                                 ("upscale2x_blocks", (src,), (8, 6))):  # fmt: skip
            dst = cl.create_image(ctx, mf.WRITE_ONLY, fmt, shape=(16, 12))
            kernel = cl.Kernel(program, name)
            kernel.set_args(*args, dst)
            cl.enqueue_nd_range_kernel(queue, kernel, size, None)
            got = np.empty((12, 16, 4), np.float32)
            cl.enqueue_copy(queue, got, dst, origin=(0, 0), region=(16, 12))
            results.append(check(f"bicubic {name}", bool(np.allclose(got, expected, atol=2e-5))))
    queue.finish()
    ok = all(results)
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
