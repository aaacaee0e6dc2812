"""The one launch path of shared kernels (qcom_ext/ext/program/launch.py): typed scalar
arguments carry each call's values, a change of scalar types retypes the kernel, and
threads sharing one kernel each get their own arguments."""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl

from qcom_ext.ext.program.launch import enqueue, scalar_dtypes

SOURCE = """
__kernel void affine(__global uint *y, uint a, uint b, __local uint *scratch)
{
    scratch[get_local_id(0)] = a * (uint)get_global_id(0) + b;
    y[get_global_id(0)] = scratch[get_local_id(0)];
}
"""


def _run(queue, kernel, a, b, n=8):
    y = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * n)
    enqueue(queue, kernel, (n,), (n,), [y, a, b, cl.LocalMemory(4 * n)])
    out = np.empty(n, np.uint32)
    cl.enqueue_copy(queue, out, y)
    return out


def test_every_call_passes_its_own_scalars(kernel_context, cl_queue):
    kernel = cl.Program(cl_queue.context, SOURCE).build().affine
    for a, b in [(1, 0), (3, 5), (0, 7), (2**31, 1)]:
        want = (np.uint64(a) * np.arange(8, dtype=np.uint64) + np.uint64(b)) % 2**32
        got = _run(cl_queue, kernel, np.uint32(a), np.uint32(b))
        np.testing.assert_array_equal(got, want.astype(np.uint32))


def test_a_change_of_scalar_types_retypes_the_kernel(kernel_context, cl_queue):
    """int32 -1 after uint32 values: its own bytes (0xFFFFFFFF), as untyped pyopencl."""
    kernel = cl.Program(cl_queue.context, SOURCE).build().affine
    _run(cl_queue, kernel, np.uint32(1), np.uint32(2))
    got = _run(cl_queue, kernel, np.int32(0), np.int32(-1))
    np.testing.assert_array_equal(got, np.full(8, 0xFFFFFFFF, np.uint32))
    assert scalar_dtypes([None, np.int32(0), cl.LocalMemory(4)]) == (None, np.int32, None)


def test_threads_sharing_a_kernel_get_their_own_arguments(kernel_context, cl_queue):
    kernel = cl.Program(cl_queue.context, SOURCE).build().affine
    results, errors = {}, []

    def work(t):
        try:
            queue = cl.CommandQueue(cl_queue.context)
            for i in range(20):
                results[(t, i)] = _run(queue, kernel, np.uint32(t + 1), np.uint32(i))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for (t, i), got in results.items():
        np.testing.assert_array_equal(got, (t + 1) * np.arange(8, dtype=np.uint32) + i)
