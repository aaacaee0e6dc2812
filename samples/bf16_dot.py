"""bfloat16 dot product with qcom_mad32_bf16 (cl_qcom_bfloat16_product) on any device.

    python samples/bf16_dot.py [--device 0:0] [--n 1000000] [--groups 64] [--local 64]

Rounds two random float32 vectors to bfloat16 (``qcom_ext.ext.program.bfloat16.to_bfloat16``) and
takes their dot product with ``kernels/bf16_dot.cl``: every multiply-add is
``qcom_mad32_bf16`` (the Adreno builtin natively, a float32 fma elsewhere), summed per
work-item in float32, then per work-group in local memory, then the group results on the
host. numpy replays the same summation order (``qcom_ext.ext.program.bfloat16.mad32_bf16``
per step,
the same float32 tree): the portable fma path must match it bit for bit; a native
builtin, whose rounding is not documented, must stay within the float32 error bound of
that order. The float64 dot product of the same bf16 values is printed for scale. Exit
status 1 on a mismatch.
"""

from __future__ import annotations

import math

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir
from qcom_ext.ext.program.bfloat16 import from_bfloat16, mad32_bf16, to_bfloat16


def replay(a: np.ndarray, b: np.ndarray, groups: int, local: int) -> np.ndarray:
    """The kernel's per-group float32 results, computed in numpy in the kernel's order."""
    items = groups * local
    steps = -(-len(a) // items)
    pad = steps * items - len(a)
    a_steps = np.concatenate([a, np.zeros(pad, np.uint16)]).reshape(steps, items)
    b_steps = np.concatenate([b, np.zeros(pad, np.uint16)]).reshape(steps, items)
    acc = np.zeros(items, np.float32)
    for step in range(steps):  # a padded step adds +0 * +0: leaves acc unchanged
        acc = mad32_bf16(a_steps[step], b_steps[step], acc)
    scratch = acc.reshape(groups, local)
    stride = local // 2
    while stride:
        scratch[:, :stride] = scratch[:, :stride] + scratch[:, stride : 2 * stride]
        stride //= 2
    return scratch[:, 0].copy()


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="vector length")
    parser.add_argument("--groups", type=int, default=64, help="work-groups")
    parser.add_argument("--local", type=int, default=64, help="work-group size (power of 2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.local < 1 or args.local & (args.local - 1):
        parser.error(f"--local {args.local}: expected a power of two")
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_bfloat16_product")

    rng = np.random.default_rng(args.seed)
    a = to_bfloat16(rng.standard_normal(args.n, dtype=np.float32))
    b = to_bfloat16(rng.standard_normal(args.n, dtype=np.float32))
    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    program = qcom_ext.build_program(ctx, (kernels_dir() / "bf16_dot.cl").read_text())
    mf = cl.mem_flags
    a_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    b_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    partial = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * args.groups)
    kernel = cl.Kernel(program, "bf16_dot")
    kernel.set_args(a_buf, b_buf, np.uint32(args.n), partial, cl.LocalMemory(4 * args.local))
    cl.enqueue_nd_range_kernel(queue, kernel, (args.groups * args.local,), (args.local,))
    sums = np.empty(args.groups, np.float32)
    cl.enqueue_copy(queue, sums, partial)
    device = float(sums.astype(np.float64).sum())

    expected_sums = replay(a, b, args.groups, args.local)
    replayed = float(expected_sums.astype(np.float64).sum())
    products = from_bfloat16(a).astype(np.float64) * from_bfloat16(b)
    exact = float(products.sum())
    print(
        f"n={args.n} bf16: device {device:.6f}, numpy replay {replayed:.6f}, float64 {exact:.6f}"
    )
    if caps.path("cl_qcom_bfloat16_product") == "native":
        # each rounding is at most 2^-24 relative: per-item steps plus the tree depth
        steps = math.ceil(args.n / (args.groups * args.local)) + int(math.log2(args.local)) + 1
        bound = steps * 2.0**-24 * float(np.abs(products).sum())
        ok = abs(device - replayed) <= bound
        print(f"|device - replay| {abs(device - replayed):.3g} (bound {bound:.3g})")
    else:
        ok = np.array_equal(sums, expected_sums)
        differ = np.count_nonzero(sums != expected_sums)
        print("bit for bit equal to the replay" if ok else f"{differ} group results differ")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
