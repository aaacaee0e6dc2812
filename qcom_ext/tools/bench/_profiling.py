"""Device time from OpenCL profiling events, and the copy bandwidth it is compared with
(the suites' reference: a buffer copy and an RGBA float image copy, read + write)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl

__all__ = ["copy_bandwidth", "copy_image", "median_ns"]


def copy_image(queue: Any, dst: Any, src: Any, size: tuple[int, int]) -> Any:
    """``clEnqueueCopyImage`` of the ``size`` (width, height) of ``src`` into ``dst``."""
    return cl.enqueue_copy(queue, dst, src, src_origin=(0, 0), dest_origin=(0, 0), region=size)


def median_ns(queue: Any, launch: Callable[[], Any], rounds: int, warmup: int = 2) -> float:
    """Median device time of ``launch()`` (which enqueues one kernel) over ``rounds``."""
    for _ in range(warmup):
        launch().wait()
    events = [launch() for _ in range(rounds)]
    cl.wait_for_events(events)
    return float(statistics.median(e.profile.end - e.profile.start for e in events))


def copy_bandwidth(queue: Any, nbytes: int, rounds: int) -> dict[str, float]:
    """Bytes per second read + written by a buffer copy and by an RGBA float image copy."""
    context = queue.context
    src = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, nbytes)
    buffer_ns = median_ns(queue, lambda: cl.enqueue_copy(queue, dst, src), rounds)
    result = {"buffer_copy_Bps": 2 * nbytes / (buffer_ns * 1e-9), "copy_bytes": nbytes}
    device = queue.device
    if device.image_support:
        width = min(device.image2d_max_width, 8192)
        height = max(1, min(device.image2d_max_height, nbytes // (16 * width)))
        fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
        a = cl.create_image(context, cl.mem_flags.READ_WRITE, fmt, shape=(width, height))
        b = cl.create_image(context, cl.mem_flags.READ_WRITE, fmt, shape=(width, height))
        image_ns = median_ns(queue, lambda: copy_image(queue, b, a, (width, height)), rounds)
        result["image_copy_Bps"] = 2 * width * height * 16 / (image_ns * 1e-9)
    return result
