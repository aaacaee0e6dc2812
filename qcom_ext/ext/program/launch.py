"""Set a shared kernel's arguments and enqueue it: the one place qcom_ext does both.

Built kernels are cached per context and shared by every caller, so the arguments are
set and the kernel enqueued under one lock. Scalar arguments go through pyopencl's typed
invoker (``Kernel.set_scalar_arg_dtypes``), typed from the numpy scalars of the call:
without it pyopencl converts each numpy scalar on every call, 5.6 µs apiece on pocl, so
the GEMV's 11 arguments took 33 µs to set where the typed invoker takes 0.7 µs (and a
whole ``Linear`` call 70 µs of host time on the NVIDIA machine). A kernel is retyped
whenever a call's scalar types differ from the last, so that every call passes its
numpy scalars' own bytes, as pyopencl's untyped path does.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> program = cl.Program(ctx, "__kernel void f(__global int *y, int a) { y[0] = 2 * a; }")
>>> kernel = program.build().f
>>> y = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
>>> _ = enqueue(queue, kernel, (1,), None, [y, np.int32(21)])
>>> out = np.empty(1, np.int32)
>>> _ = cl.enqueue_copy(queue, out, y)
>>> int(out[0]), scalar_dtypes([y, np.int32(21)])
(42, (None, dtype('int32')))
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["enqueue", "scalar_dtypes"]

_lock = threading.Lock()
#: The attribute on a kernel object holding the argument types its invoker was typed for.
_TYPED = "_qcom_ext_scalar_dtypes"


def scalar_dtypes(args: Sequence[Any]) -> tuple[np.dtype | None, ...]:
    """The numpy dtype of each numpy-scalar argument, None for the rest (buffers, images,
    samplers, local memory, None): the argument types pyopencl's typed invoker takes."""
    return tuple(arg.dtype if isinstance(arg, np.generic) else None for arg in args)


def enqueue(
    queue: Any,
    kernel: Any,
    global_size: Sequence[int],
    local_size: Sequence[int] | None,
    args: Sequence[Any],
    wait_for: Any = None,
) -> Any:
    """Set ``args`` on ``kernel`` (a shared ``pyopencl.Kernel``) and enqueue it over
    ``global_size`` / ``local_size``, atomically; returns the event."""
    import pyopencl as cl

    types = tuple(map(type, args))  # a numpy scalar's type fixes its dtype; cheap to compare
    with _lock:
        if getattr(kernel, _TYPED, None) != types:
            kernel.set_scalar_arg_dtypes(scalar_dtypes(args))
            setattr(kernel, _TYPED, types)
        kernel.set_args(*args)
        return cl.enqueue_nd_range_kernel(
            queue, kernel, global_size, local_size, wait_for=wait_for
        )
