"""Performance hints (cl_qcom_perf_hint) on any device: the path each hint takes.

    python samples/perf_hint.py [--device 0:0] [--runs 20]

Creates one context per hint (high, normal, low) with ``qcom_ext.create_context``,
prints the path the hint took (``native`` on Adreno, ``khr:cl_khr_throttle_hints``
where the device has Khronos throttle hints, else ``fallback``: a recorded no-op) and,
where the device can build kernels, the median device time of a small kernel run on a
queue of that context. Then changes the hint with ``qcom_ext.set_perf_hint``.
The sample checks itself (paths agree with the probe, kernel results are exact);
exit status 1 when a check fails.
"""

from __future__ import annotations

import statistics
import warnings

import _common
import numpy as np
import pyopencl as cl

import qcom_ext

KERNEL = """
__kernel void lcg(__global uint *x, uint rounds) {
    size_t i = get_global_id(0);
    uint v = x[i];
    for (uint r = 0; r < rounds; ++r) v = v * 1664525u + 1013904223u;
    x[i] = v;
}
"""
ROUNDS = 256


def expected(values: np.ndarray) -> np.ndarray:
    out = values.copy()
    with np.errstate(over="ignore"):
        for _ in range(ROUNDS):
            out = out * np.uint32(1664525) + np.uint32(1013904223)
    return out


def time_kernel(ctx: cl.Context, runs: int) -> tuple[float, bool]:
    """Median kernel time in microseconds and whether every result was exact."""
    queue = qcom_ext.create_queue(ctx, profiling=True)
    kernel = cl.Program(ctx, KERNEL).build().lcg
    data = np.arange(1 << 16, dtype=np.uint32)
    want = expected(data)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, data.nbytes)
    times, exact = [], True
    out = np.empty_like(data)
    for _ in range(runs):
        cl.enqueue_copy(queue, buf, data)
        event = kernel(queue, data.shape, None, buf, np.uint32(ROUNDS))
        cl.enqueue_copy(queue, out, buf)
        times.append((event.profile.end - event.profile.start) / 1e3)
        exact = exact and np.array_equal(out, want)
    return statistics.median(times), exact


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--runs", type=int, default=20, help="kernel runs per hint")
    args = parser.parse_args()
    caps = _common.probe_device(args)
    status = _common.report(caps, "cl_qcom_perf_hint")
    ok, can_build = True, True
    for hint in ("high", "normal", "low"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", qcom_ext.QcomExtWarning)
            ctx = qcom_ext.create_context(perf_hint=hint)
        info = qcom_ext.context_info(ctx)
        ok = ok and info.perf_hint == hint and info.perf_hint_path == status.path
        line = f"perf_hint={hint:<6} path={info.perf_hint_path}"
        if can_build:
            try:
                median, exact = time_kernel(ctx, args.runs)
            except cl.Error as exc:  # e.g. the PyPI pocl on CPUs its LLVM does not know
                can_build = False
                errors = [ln for ln in str(exc).splitlines() if "error" in ln.lower()]
                reason = errors[-1] if errors else exc
                print(f"(no timing: this device cannot build kernels here: {reason})")
            else:
                ok = ok and exact
                line += f"  kernel {median:9.1f} us  {'exact' if exact else 'WRONG RESULT'}"
        print(line)
        for warning in caught:
            print(f"  note: {warning.message}")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", qcom_ext.QcomExtWarning)
        qcom_ext.set_perf_hint(ctx, "normal")
    changed = qcom_ext.context_info(ctx)
    print(
        f"set_perf_hint(ctx, 'normal') -> perf_hint={changed.perf_hint} "
        f"path={changed.perf_hint_path}"
    )
    ok = ok and changed.perf_hint == "normal"
    print("OK" if ok else "CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
