"""One buffer beyond CL_DEVICE_MAX_MEM_ALLOC_SIZE where the driver allows (cl_qcom_large_buffer).

    python samples/large_buffer.py [--device 0:0] [--mib 64] [--chunk-mib 16]

Prints the device's limits, makes a ``--mib`` buffer with ``qcom_ext.create_large_buffer``
(natively ``CL_LARGE_BUFFER_QCOM``; elsewhere an ordinary buffer, refused with
``BufferTooLargeError`` beyond ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``) and fills and transforms it
with kernels/large_buffer.cl, built with ``large_buffer=True`` (the option
``-qcom-enable-large-buffer`` natively). It then shows a request one byte over the limit
being refused, and makes the same data as ``--chunk-mib`` chunks with
``qcom_ext.allocate_chunked``, the portable way past the limit. Every result is checked
against numpy; exit status 1 on a mismatch.
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir

EXTENSION = "cl_qcom_large_buffer"
MIB = 1 << 20


def pattern(base: int, n: int) -> np.ndarray:
    """What ``fill_pattern`` writes for elements ``base`` .. ``base + n - 1``."""
    index = np.arange(base, base + n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (index ^ (index >> np.uint64(32))).astype(np.uint32) * np.uint32(2654435761)


def reference(n: int, scale: int, bias: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return pattern(0, n) * np.uint32(scale) + np.uint32(bias)


def one_buffer(ctx, queue, program, size: int) -> bool:
    n = size // 4
    buffer = qcom_ext.create_large_buffer(ctx, cl.mem_flags.READ_WRITE, size)
    print(f"buffer: {size} bytes, path {buffer.path}, CL_LARGE_BUFFER_QCOM passed: {buffer.large}")
    program.fill_pattern(queue, (n,), None, buffer, np.uint64(0))
    program.affine(queue, (n,), None, buffer, np.uint32(5), np.uint32(11))
    out = np.empty(n, np.uint32)
    cl.enqueue_copy(queue, out, buffer)
    good = np.array_equal(out, reference(n, 5, 11))
    print(f"fill_pattern + affine on {n} uints: {'ok' if good else 'MISMATCH'}")
    return good


def chunked(ctx, queue, program, size: int, chunk: int) -> bool:
    parts = qcom_ext.allocate_chunked(ctx, size, chunk=chunk)
    fill = cl.Kernel(program, "fill_pattern")
    got = []
    for part in parts:
        n = part.size // 4
        fill(queue, (n,), None, part, np.uint64(part.chunk_offset // 4))
        got.append(np.empty(n, np.uint32))
        cl.enqueue_copy(queue, got[-1], part)
    good = np.array_equal(np.concatenate(got), pattern(0, size // 4))
    sizes = ", ".join(f"{p.size}@{p.chunk_offset}" for p in parts)
    print(f"allocate_chunked: {len(parts)} buffers ({sizes}): {'ok' if good else 'MISMATCH'}")
    return good


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--mib", type=int, default=64, help="size of the buffer in MiB")
    parser.add_argument("--chunk-mib", type=int, default=16, help="chunk size in MiB")
    args = parser.parse_args()
    if args.mib < 1 or args.chunk_mib < 1:
        parser.error("--mib and --chunk-mib must be at least 1")
    caps = _common.probe_device(args)
    _common.report(caps, EXTENSION)
    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    limit = qcom_ext.large_buffer_limit(ctx)
    print(
        f"CL_DEVICE_MAX_MEM_ALLOC_SIZE {caps.limits.max_mem_alloc_size}, "
        f"max_large_buffer_size {caps.limits.max_large_buffer_size}, "
        f"create_large_buffer limit {limit}"
    )
    source = (kernels_dir() / "large_buffer.cl").read_text()
    program = qcom_ext.build_program(ctx, source, large_buffer=True)
    options = program.get_build_info(caps.device(), cl.program_build_info.OPTIONS)
    print(f"built with -qcom-enable-large-buffer: {'-qcom-enable-large-buffer' in options}")

    size = args.mib * MIB
    if limit is not None and size > limit:
        print(f"--mib {args.mib} exceeds the limit; using {limit // MIB} MiB")
        size = limit // MIB * MIB
    ok = one_buffer(ctx, queue, program, size)
    if limit is not None:
        try:
            qcom_ext.create_large_buffer(ctx, cl.mem_flags.READ_WRITE, limit + 1)
            print("a request over the limit was allocated")
            ok = False
        except qcom_ext.BufferTooLargeError as exc:
            print(f"refused: {exc}")
    ok &= chunked(ctx, queue, program, size, args.chunk_mib * MIB)
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
