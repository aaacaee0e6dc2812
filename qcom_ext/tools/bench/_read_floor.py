"""The read floor of a bandwidth-bound kernel: the device time of a kernel that only
reads the same number of bytes (``kernels/bench_read.cl``), and of an empty launch.

A kernel that reads B bytes cannot beat :func:`read_only_seconds` of B on that device;
at a few MiB the launch and the ramp to full bandwidth (:func:`empty_seconds`) dominate,
so a fraction of the large-copy bandwidth is out of reach for any kernel there.

>>> import pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
>>> read_only_seconds(queue, 1 << 16, copies=2, rounds=2) > 0
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qcom_ext.tools.bench._profiling import median_ns

__all__ = ["copy_texels", "empty_seconds", "read_only_seconds"]

#: The work-group of :func:`copy_texels` (16 x 16, or the device's largest square below).
TEXEL_GROUP = 16

#: Work-items per compute unit the read kernel is timed with (the fastest is kept).
ITEMS_PER_UNIT = (256, 1024, 2048)


def _kernel(queue: Any, name: str) -> Any:
    from qcom_ext.ops._programs import kernel_for

    return kernel_for(queue, queue.device, "bench_read.cl", name, {}).kernel


def read_only_seconds(queue: Any, nbytes: int, copies: int, rounds: int) -> float:
    """Median device seconds of reading ``nbytes`` (rounded down to 16-byte words) once,
    rotating through ``copies`` buffers as the benchmarked kernel does; the fastest of a
    few global sizes (:data:`ITEMS_PER_UNIT` a compute unit, 256 a work-group)."""
    import pyopencl as cl

    words = max(1, nbytes // 16)
    buffers = [cl.Buffer(queue.context, cl.mem_flags.READ_ONLY, words * 16) for _ in range(copies)]
    for buffer in buffers:
        cl.enqueue_fill_buffer(queue, buffer, np.uint8(0x5A), 0, words * 16)
    sink = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 4)
    kernel = _kernel(queue, "read_words")
    group = min(256, int(queue.device.max_work_group_size))
    units = int(queue.device.max_compute_units)
    best = float("inf")
    for per_unit in ITEMS_PER_UNIT:
        size = min(units * per_unit, -(-words // group) * group)
        size = -(-size // group) * group
        turn = iter(range(1 << 30))

        def launch(size=size, turn=turn):
            buffer = buffers[next(turn) % copies]
            return kernel(queue, (size,), (group,), buffer, np.uint32(words), sink)

        best = min(best, median_ns(queue, launch, rounds, warmup=copies + 1) * 1e-9)
    return best


def empty_seconds(queue: Any, rounds: int) -> float:
    """Median device seconds of an empty kernel over one work-group per compute unit."""
    import pyopencl as cl

    sink = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 4)
    kernel = _kernel(queue, "empty")
    group = min(256, int(queue.device.max_work_group_size))
    size = int(queue.device.max_compute_units) * group
    return median_ns(queue, lambda: kernel(queue, (size,), (group,), sink), rounds) * 1e-9


def copy_texels(queue: Any, dst: Any, src: Any, size: tuple[int, int]) -> Any:
    """Enqueue ``dst = src`` (2-D images of ``size``), one texel a work-item through
    read_imagef / write_imagef: the floor of a kernel that reads and writes each pixel
    once through the image path. Returns the event."""
    kernel = _kernel(queue, "copy_texels")
    side = TEXEL_GROUP
    while side * side > int(queue.device.max_work_group_size):
        side //= 2
    padded = tuple(-(-n // side) * side for n in size)
    return kernel(queue, padded, (side, side), src, dst)
