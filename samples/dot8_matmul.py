"""Int8 matrix multiply with qcom_dot8_acc / qcom_udot8_acc (cl_qcom_dot_product8).

    python samples/dot8_matmul.py [--device 0:0] [--size 96x200x130]

Multiplies a signed int8 matrix A (M x K) by an unsigned uint8 matrix B (K x N) with
``qcom_dot8_acc``, and two uint8 matrices with ``qcom_udot8_acc``, four k per call, with
``kernels/dot8_matmul.cl`` built by ``qcom_ext.build_program``. On Adreno the native
builtins run; with cl_khr_integer_dot_product its dot_acc_sat builtins; elsewhere the
portable code of ``kernels/qcom_ext.h``. Both products are checked exactly against a
numpy int64 matrix product clipped to int32; exit status 1 on mismatch.
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir


def pack_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows of 8-bit values -> rows of uint32 words, four consecutive columns per word
    (zero-padded to a multiple of 4). Lane order does not matter for a dot product as long
    as both operands use the same one."""
    rows, cols = matrix.shape
    padded = np.zeros((rows, -(-cols // 4) * 4), dtype=np.uint8)
    padded[:, :cols] = matrix.view(np.uint8)
    return np.ascontiguousarray(padded).view("<u4")


def shape(text: str) -> tuple[int, int, int]:
    m, k, n = (int(v) for v in text.lower().split("x"))
    if min(m, k, n) < 1:
        raise ValueError(text)
    return m, k, n


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", type=shape, default=(96, 200, 130), metavar="MxKxN")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_dot_product8")

    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    program = qcom_ext.build_program(ctx, (kernels_dir() / "dot8_matmul.cl").read_text())

    m, k, n = args.size
    rng = np.random.default_rng(args.seed)
    a_signed = rng.integers(-128, 128, (m, k), dtype=np.int8)
    a_unsigned = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(0, 256, (k, n), dtype=np.uint8)
    mf = cl.mem_flags
    bt_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=pack_rows(b.T.copy()))
    c_buf = cl.Buffer(ctx, mf.WRITE_ONLY, m * n * 4)
    k_words = -(-k // 4)

    ok = True
    for name, a in (("matmul_s8u8", a_signed), ("matmul_u8u8", a_unsigned)):
        a_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=pack_rows(a))
        kernel = cl.Kernel(program, name)
        kernel.set_args(a_buf, bt_buf, c_buf, np.int32(m), np.int32(n), np.int32(k_words))
        cl.enqueue_nd_range_kernel(queue, kernel, (-(-n // 4), m), None)
        c = np.empty((m, n), dtype=np.int32)
        cl.enqueue_copy(queue, c, c_buf)
        expected = np.clip(a.astype(np.int64) @ b.astype(np.int64), -(2**31), 2**31 - 1)
        same = np.array_equal(c, expected)
        ok &= same
        verdict = "exact" if same else f"MISMATCH, expected {expected[0, :4].tolist()}"
        print(f"{name}: {m}x{k} @ {k}x{n}, c[0, :4] = {c[0, :4].tolist()} ({verdict})")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
