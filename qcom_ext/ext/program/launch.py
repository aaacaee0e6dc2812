"""Set a shared kernel's arguments and enqueue it: the one place qcom_ext does both.

Built kernels are cached per context and shared by every caller, so the arguments are
set and the kernel enqueued under one lock. Scalar arguments go through pyopencl's typed
invoker (``Kernel.set_scalar_arg_dtypes``), typed from the numpy scalars of the call:
without it pyopencl converts each numpy scalar on every call, 5.6 µs apiece on pocl, so
the GEMV's 11 arguments took 33 µs to set where the typed invoker takes 0.7 µs (and a
whole ``Linear`` call 70 µs of host time on the NVIDIA machine). A kernel is retyped
whenever a call's scalar types differ from the last, so that every call passes its
numpy scalars' own bytes, as pyopencl's untyped path does.

Out-of-order queues (``create_queue(ctx, out_of_order=True)``) are supported: on such a
queue every command qcom_ext enqueues, kernels here and host transfers through
:func:`copy`, waits for the event of the one qcom_ext enqueued on it before (a chain
kept on the queue object), so an op's commands and consecutive ops run in the order
they were enqueued, as on an in-order queue. Commands of your own on such a queue wait
for the events qcom_ext returns (or ``queue.finish()``). In-order queues pay one
property read a call. (A barrier a launch would do the same, but costs 1-2 ms a
command on pocl.)

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

__all__ = ["copy", "enqueue", "out_of_order", "scalar_dtypes"]

_lock = threading.Lock()
#: The attribute on a kernel object holding the argument types its invoker was typed for.
_TYPED = "_qcom_ext_scalar_dtypes"
#: The attribute on an out-of-order queue holding the event of qcom_ext's last command.
_TAIL = "_qcom_ext_last_event"
#: CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE.
_OUT_OF_ORDER = 1


def out_of_order(queue: Any) -> bool:
    """Whether ``queue`` runs its commands out of order
    (``CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE``)."""
    return bool(queue.properties & _OUT_OF_ORDER)


def _chained(queue: Any, wait_for: Any) -> list[Any] | None:
    """``wait_for`` with the event of qcom_ext's last command on the out-of-order
    ``queue`` (call under the lock)."""
    last = getattr(queue, _TAIL, None)
    if last is None:
        return list(wait_for) if wait_for else None
    return [*wait_for, last] if wait_for else [last]


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
    ``global_size`` / ``local_size``, atomically; returns the event. On an out-of-order
    queue it also waits for qcom_ext's command before it (see the module)."""
    import pyopencl as cl

    types = tuple(map(type, args))  # a numpy scalar's type fixes its dtype; cheap to compare
    chain = out_of_order(queue)
    with _lock:
        if getattr(kernel, _TYPED, None) != types:
            kernel.set_scalar_arg_dtypes(scalar_dtypes(args))
            setattr(kernel, _TYPED, types)
        kernel.set_args(*args)
        if chain:
            wait_for = _chained(queue, wait_for)
        event = cl.enqueue_nd_range_kernel(
            queue, kernel, global_size, local_size, wait_for=wait_for
        )
        if chain:
            setattr(queue, _TAIL, event)
        return event


def copy(
    queue: Any, dest: Any, src: Any, *, wait_for: Any = None, is_blocking: bool = True, **kw: Any
) -> Any:
    """``pyopencl.enqueue_copy`` between the host and a buffer or image (``kw``: its
    ``origin`` / ``region``), blocking unless ``is_blocking=False``; returns the event.
    On an out-of-order queue it waits for qcom_ext's command before it, and the next
    waits for it (see the module)."""
    import pyopencl as cl

    if not out_of_order(queue):
        return cl.enqueue_copy(queue, dest, src, wait_for=wait_for, is_blocking=is_blocking, **kw)
    with _lock:  # enqueued without blocking: a blocking copy would hold the lock
        event = cl.enqueue_copy(
            queue, dest, src, wait_for=_chained(queue, wait_for), is_blocking=False, **kw
        )
        setattr(queue, _TAIL, event)
    if is_blocking:
        event.wait()
    return event
