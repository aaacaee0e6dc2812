"""Prefix sum with sub-group shuffles (cl_qcom_subgroup_shuffle) on any device.

    python samples/subgroup_prefix_sum.py [--device 0:0] [--n 1000000]
                                          [--emulated-sub-group-size 32]

``kernels/subgroup_prefix_sum.cl`` scans each sub-group with ``qcom_sub_group_shuffle_up``
(a Hillis-Steele scan), combines the sub-group totals of a work-group through local
memory, and the host scans the work-group totals with the same kernels. On Adreno the
native shuffles run; with cl_khr_subgroup_shuffle its ``sub_group_shuffle`` on the
device's sub-groups; elsewhere ``kernels/qcom_ext.h`` emulates sub-groups of
``--emulated-sub-group-size`` work-items (passed as -DQCOM_EXT_EMULATED_SUB_GROUP_SIZE).
The result is checked against ``numpy.cumsum``; exit status 1 on mismatch.
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir


class PrefixSum:
    """Inclusive int32 prefix sum of a device buffer, block by block."""

    def __init__(self, ctx: cl.Context, local_size: int, emulated_size: int) -> None:
        self.ctx, self.local_size = ctx, local_size
        self.queue = cl.CommandQueue(ctx)
        defines = {"LOCAL_SIZE": local_size, "QCOM_EXT_EMULATED_SUB_GROUP_SIZE": emulated_size}
        source = (kernels_dir() / "subgroup_prefix_sum.cl").read_text()
        self.program = qcom_ext.build_program(ctx, source, defines=defines)
        self.scan_blocks = cl.Kernel(self.program, "scan_blocks")
        self.add_offsets = cl.Kernel(self.program, "add_block_offsets")

    def sub_group_size(self) -> int:
        size = np.zeros(1, np.uint32)
        buf = cl.Buffer(self.ctx, cl.mem_flags.WRITE_ONLY, size.nbytes)
        kernel = cl.Kernel(self.program, "sub_group_size")
        kernel(self.queue, (self.local_size,), (self.local_size,), buf)
        cl.enqueue_copy(self.queue, size, buf)
        return int(size[0])

    def __call__(self, values: cl.Buffer, out: cl.Buffer, n: int) -> None:
        blocks = -(-n // self.local_size)
        sums = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 4 * blocks)
        global_size = (blocks * self.local_size,)
        self.scan_blocks(
            self.queue, global_size, (self.local_size,), values, out, sums, np.uint32(n)
        )
        if blocks > 1:
            scanned = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 4 * blocks)
            self(sums, scanned, blocks)
            self.add_offsets(
                self.queue, global_size, (self.local_size,), out, scanned, np.uint32(n)
            )


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="number of values")
    parser.add_argument(
        "--emulated-sub-group-size",
        type=int,
        default=32,
        metavar="S",
        help="sub-group size where they are emulated (default 32)",
    )
    args = parser.parse_args()
    if args.n < 1 or args.emulated_sub_group_size < 1:
        parser.error("--n and --emulated-sub-group-size must be positive")
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_subgroup_shuffle")

    ctx = cl.Context([caps.device()])
    local_size = min(256, caps.device().max_work_group_size)
    local_size = 1 << (local_size.bit_length() - 1)  # a power of two
    scan = PrefixSum(ctx, local_size, args.emulated_sub_group_size)
    print(f"work-groups of {local_size}, sub-groups of {scan.sub_group_size()}")

    values = np.random.default_rng(7).integers(-100, 101, args.n, dtype=np.int32)
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=values)
    dst = cl.Buffer(ctx, mf.READ_WRITE, values.nbytes)

    def run():
        scan(src, dst, args.n)
        scan.queue.finish()

    timing, _ = _common.timed(run)
    result = np.empty_like(values)
    cl.enqueue_copy(scan.queue, result, dst)

    expected = np.cumsum(values, dtype=np.int64)
    ok = np.array_equal(result, expected)
    print(
        f"{args.n} values: {timing}; last sums {result[-3:].tolist()} "
        f"(numpy {expected[-3:].tolist()})"
    )
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
