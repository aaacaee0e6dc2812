"""Program cycles for tests/test_leaks.py, run in a child process on ``PYOPENCL_CTX``.

``python tests/leak_programs.py CYCLES WARMUP BASELINE``: each cycle builds one source
with ``qcom_ext.build_program`` (a program-cache hit after the first cycle), runs its
kernel and drops both; prints the :class:`_leakcheck.Measurement` as one JSON line. The
live handle count is the context's reference count (each program retains its context,
each kernel its program).

The driver's own share: pocl 3.1 gains RSS on every ``clBuildProgram`` of a binary whose
kernels use image or sampler types (the bare OpenCL API shows it: ~190 B a build for a
one-kernel image program, nothing for one without images, 0.9-3 KB for a program that
includes ``qcom_ext.h``, varying over windows of 700 builds). qcom_ext's own share is
held by the exact counts (Python objects, OpenCL handles); RSS is held to 8 MiB plus
what BASELINE builds of the same binary through pyopencl alone gained per build in this
process, times the measured cycles.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pyopencl as cl
from _leakcheck import measure, reference_total

import qcom_ext
from qcom_ext.ext.program import build
from qcom_ext.ext.program.build import program_options

# The cycles are of qcom_ext's program store (a hit after the first build), on pocl too,
# whose builds the store otherwise leaves to pocl's own cache (as conftest's
# program_binaries_stored does for the tests in process).
build.drivers_cache_builds = lambda devices: False

SOURCE = (
    "__kernel void bump(__global uint *a) { a[get_global_id(0)] += qcom_bitreverse(0x80000000u); }"
)


def main(cycles: int, warmup: int, baseline: int) -> None:
    context = cl.Context([qcom_ext.probe().device()])
    device = context.devices[0]
    queue = cl.CommandQueue(context)
    data = cl.Buffer(
        context,
        cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
        hostbuf=np.zeros(4, np.uint32),
    )
    live = lambda: reference_total(context)  # noqa: E731
    binary = qcom_ext.build_program(context, SOURCE).binaries[0]
    options = program_options([device])

    def bare(i: int) -> None:  # what pyopencl and the driver do in a cycle, without qcom_ext
        cl.Program(context, [device], [binary]).build(options=options).bump(
            queue, (4,), None, data
        )

    def cycle(i: int) -> None:
        program = qcom_ext.build_program(context, SOURCE)
        program.bump(queue, (4,), None, data)

    driver = measure(
        "pyopencl alone", bare, live=live, drain=queue.finish, cycles=baseline + 100, warmup=100
    )
    measurement = measure(
        "programs", cycle, live=live, drain=queue.finish, cycles=cycles, warmup=warmup
    )
    per_build = max(0.0, driver.rss_growth / baseline)
    measurement.allowance = round(per_build * (cycles - warmup))
    measurement.allowance_note = f"allowed: the driver's {per_build:.0f} B a build"
    out = np.empty(4, np.uint32)
    cl.enqueue_copy(queue, out, data)
    launches = cycles + baseline + 100
    assert (out == launches).all(), out  # every launch ran (qcom_bitreverse(1 << 31) == 1)
    print(json.dumps(measurement.as_dict()))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
