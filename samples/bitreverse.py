"""Bit-reversal permutation with qcom_bitreverse (cl_qcom_bitreverse) on any device.

    python samples/bitreverse.py [--device 0:0] [--bits 10]

Reorders 2**bits values into bit-reversed index order, the first step of an in-place
radix-2 FFT, with ``kernels/bitreverse.cl``. On Adreno the native builtin runs; with
cl_khr_extended_bit_ops its bit_reverse; elsewhere the portable code of
``kernels/qcom_ext.h``. The result is checked against numpy; exit status 1 on mismatch.
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--bits", type=int, default=10, choices=range(1, 25), metavar="1..24")
    args = parser.parse_args()
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_bitreverse")

    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    program = qcom_ext.build_program(ctx, (kernels_dir() / "bitreverse.cl").read_text())

    n = 1 << args.bits
    indices = np.arange(n, dtype=np.uint32)
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=indices)
    dst = cl.Buffer(ctx, mf.WRITE_ONLY, indices.nbytes)
    program.bitreverse_u32(queue, (n,), None, src, dst)
    reversed_full = np.empty_like(indices)
    cl.enqueue_copy(queue, reversed_full, dst)
    permutation = reversed_full >> np.uint32(32 - args.bits)  # reverse within `bits` bits

    expected = np.array([int(f"{i:0{args.bits}b}"[::-1], 2) for i in range(n)])
    ok = np.array_equal(permutation, expected)
    print(f"first indices: {permutation[:8].tolist()} (expected {expected[:8].tolist()})")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
