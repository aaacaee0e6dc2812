"""Two kernels chained through on-chip memory inside a recording (cl_qcom_onchip_global_memory).

    python samples/onchip_memory.py [--device 0:0] [--elements 65536] [--replays 6]

Stage 1 (``scale_bias``) writes an intermediate array into a buffer from
``qcom_ext.onchip_buffer``; stage 2 (``smooth3``) reads it in the same replay of a
``qcom_ext.Recording`` and writes the result to global memory. On Adreno the
intermediate never leaves on-chip memory; elsewhere it is an ordinary buffer. Each
replay changes ``scale`` and ``bias``; between replays ``qcom_ext.scrub_onchip``
overwrites a fallback buffer, as the hardware would lose it, so a pipeline that relied
on on-chip contents surviving a replay would fail here too. Every replay is checked
against numpy; exit status 1 on mismatch.
"""

from __future__ import annotations

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir

EXTENSION = "cl_qcom_onchip_global_memory"


def reference(src: np.ndarray, scale: int, bias: int) -> np.ndarray:
    staged = src.astype(np.int64) * scale + bias
    padded = np.concatenate([staged[:1], staged, staged[-1:]])
    return (padded[:-2] + 2 * padded[1:-1] + padded[2:]).astype(np.int32)


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--elements", type=int, default=65536)
    parser.add_argument("--replays", type=int, default=6)
    args = parser.parse_args()
    if args.elements < 1 or args.replays < 1:
        parser.error("--elements and --replays must be at least 1")
    caps = _common.probe_device(args)
    _common.report(caps, EXTENSION)

    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    program = qcom_ext.build_program(ctx, (kernels_dir() / "onchip.cl").read_text())
    scale_bias, smooth3 = cl.Kernel(program, "scale_bias"), cl.Kernel(program, "smooth3")

    n = args.elements
    src_host = np.random.default_rng(7).integers(-1000, 1000, n, dtype=np.int32)
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src_host)
    dst = cl.Buffer(ctx, mf.WRITE_ONLY, src_host.nbytes)
    staged = qcom_ext.onchip_buffer(ctx, src_host.nbytes)
    limit = caps.limits.onchip_global_mem_size
    print(
        f"staging buffer: {staged.size} bytes, onchip={staged.onchip} (path {staged.path}"
        + (f", on-chip size {limit} bytes)" if limit else ")")
    )

    with qcom_ext.Recording(queue) as rec:
        rec.enqueue(scale_bias, (n,), None, src, staged, np.int32(1), np.int32(0))
        rec.enqueue(smooth3, (n,), None, staged, dst, np.int32(n))
    print(f"recording path {rec.path}; {len(rec)} dispatches")
    if staged.onchip and rec.path != "native":
        print(
            "on-chip contents pass between kernels only inside a native recording "
            f"(cl_qcom_recordable_queues); this one is {rec.path}"
        )
        return 2

    ok = True
    out = np.empty_like(src_host)
    for replay in range(args.replays):
        scale, bias = replay + 2, 100 * replay - 250
        event = rec.replay(queue, args={(0, 2): scale, (0, 3): bias})
        cl.enqueue_copy(queue, out, dst, wait_for=[event])
        scrub = qcom_ext.scrub_onchip(queue, staged)  # the hardware would forget it here
        good = np.array_equal(out, reference(src_host, scale, bias))
        ok &= good
        verdict = "ok" if good else "MISMATCH"
        note = "" if scrub is None else ", on-chip stand-in scrubbed"
        print(f"replay {replay}: scale {scale:2d} bias {bias:+5d} {verdict}{note}")
    rec.release()
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
