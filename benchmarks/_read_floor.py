"""The limits a bandwidth-bound kernel is measured against (``kernels/bench_read.cl``):
the device time of a kernel that only reads the same number of bytes, of an empty
launch, and of the fastest copy of an image through ``read_imagef`` / ``write_imagef``.

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

#: The work-group of :func:`copy_texels` (32 x 8, halved where the device takes less).
TEXEL_GROUP = (32, 8)

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
    """Enqueue ``dst = src`` (2-D images of ``size``) through read_imagef / write_imagef,
    two texels a work-item half the grid's width apart, work-groups of
    :data:`TEXEL_GROUP`: the fastest copy through the image path measured (the ceiling of
    a kernel that reads and writes each pixel once there). Returns the event."""
    kernel = _kernel(queue, "copy_texels")
    gx, gy = TEXEL_GROUP
    while gx * gy > int(queue.device.max_work_group_size):
        gx, gy = max(1, gx // 2), max(1, gy // 2)
    width, height = size
    half = -(-width // 2)  # the second texel of item x is x + the grid's width
    padded = (-(-half // gx) * gx, -(-height // gy) * gy)
    return kernel(queue, padded, (gx, gy), src, dst)
