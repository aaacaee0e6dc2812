"""Device time from OpenCL profiling events, and the roofline every bandwidth-bound
benchmark result is stated against (issue 18): the device's buffer-copy bandwidth,
``clEnqueueCopyBuffer`` of a buffer at least as large as the operation's traffic, timed
with profiling events in the same run, best of N (read + write). An image copy
(``clEnqueueCopyImage``, RGBA float) is kept as a second reference: on some drivers it
runs at a third of the buffer copy, so "2x the image copy" does not mean that a kernel
beat the memory system.

:func:`fraction` is the one place "bytes moved / time / bandwidth" is computed; every
suite calls it through :class:`CopyBandwidth`.

>>> copy = CopyBandwidth(buffer_Bps=2e12, buffer_bytes=1 << 28, image_Bps=1e12, rounds=5)
>>> copy.fraction(1e9, 1e-3)  # 1 GB in 1 ms is 1 TB/s: half the buffer copy
0.5
>>> copy.image_fraction(1e9, 1e-3)
1.0
>>> copy.describe()
'buffer copy 2000 GB/s (best of 5, 268 MB buffer), image copy 1000 GB/s'
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

__all__ = [
    "MIN_COPY_BYTES",
    "CopyBandwidth",
    "cold_copies",
    "copy_bandwidth",
    "copy_image",
    "event_ns",
    "fraction",
    "image_of_bytes",
    "measure_copy",
    "median_ns",
    "profiling_queue",
]


def copy_image(queue: Any, dst: Any, src: Any, size: tuple[int, int]) -> Any:
    """``clEnqueueCopyImage`` of the ``size`` (width, height) of ``src`` into ``dst``."""
    return cl.enqueue_copy(queue, dst, src, src_origin=(0, 0), dest_origin=(0, 0), region=size)


def profiling_queue(caps: Any) -> Any:
    """A queue with profiling enabled on a new context of the device ``caps`` (a
    :class:`qcom_ext.DeviceCaps`) describes."""
    context = cl.Context([caps.device()])
    return cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)


#: The most copies of one operand a cold rotation makes (:func:`cold_copies`).
MAX_COLD_COPIES = 40


def cold_copies(cache_bytes: int, nbytes: int, floor_bytes: int = 64 << 20) -> int:
    """Copies of an operand of ``nbytes`` to launch in rotation so that no launch finds
    its own bytes in a cache of ``cache_bytes`` (``CL_DEVICE_GLOBAL_MEM_CACHE_SIZE``):
    a span of at least twice the cache and ``floor_bytes``, plus one; at least two (never
    the same bytes twice in a row), at most :data:`MAX_COLD_COPIES`. Timing one copy
    again and again instead is the *warm* number: what fits the cache stays there (an
    H100's 50 MB L2 holds a (4096, 4096) f16 weight whole).

    >>> cold_copies(50 << 20, 32 << 20, floor_bytes=256 << 20)  # 288 MiB on an H100
    9
    >>> cold_copies(8 << 20, 32 << 20)  # a phone's: 64 MiB past an 8 MiB cache
    3
    >>> cold_copies(50 << 20, 500 << 20)  # larger than the span: two alternate
    2
    """
    span = max(2 * int(cache_bytes), int(floor_bytes))
    return max(2, min(MAX_COLD_COPIES, -(-span // max(1, int(nbytes))) + 1))


def event_ns(event: Any) -> int:
    """Device nanoseconds of a profiled command (waits for it)."""
    event.wait()
    return event.profile.end - event.profile.start


def median_ns(queue: Any, launch: Callable[[], Any], rounds: int, warmup: int = 2) -> float:
    """Median device time of ``launch()`` (which enqueues one kernel) over ``rounds``."""
    for _ in range(warmup):
        launch().wait()
    events = [launch() for _ in range(rounds)]
    cl.wait_for_events(events)
    return float(statistics.median(e.profile.end - e.profile.start for e in events))


#: The smallest buffer the reference copies: small copies do not reach the peak.
MIN_COPY_BYTES = 64 << 20
_RGBA_FLOAT = 16  # bytes a pixel


def fraction(moved_bytes: float, seconds: float, bandwidth_Bps: float) -> float:
    """``moved_bytes / seconds / bandwidth_Bps``: the share of a bandwidth a result reached.

    >>> fraction(3e9, 1e-3, 2e12)
    1.5
    """
    return moved_bytes / seconds / bandwidth_Bps


@dataclass(frozen=True)
class CopyBandwidth:
    """The copy bandwidths measured in a run (bytes per second, read + write)."""

    buffer_Bps: float
    buffer_bytes: int
    image_Bps: float | None = None
    rounds: int = 0

    def fraction(self, moved_bytes: float, seconds: float) -> float:
        """The share of the buffer copy's bandwidth that moving ``moved_bytes`` in
        ``seconds`` reached."""
        return fraction(moved_bytes, seconds, self.buffer_Bps)

    def image_fraction(self, moved_bytes: float, seconds: float) -> float | None:
        """The same share of the image copy's bandwidth (None: not measured)."""
        return None if self.image_Bps is None else fraction(moved_bytes, seconds, self.image_Bps)

    def with_image(self, moved_bytes: float, seconds: float) -> CopyBandwidth:
        """This reference with the image copy a suite timed itself (``moved_bytes`` in
        ``seconds``)."""
        return dataclasses.replace(self, image_Bps=moved_bytes / seconds)

    def describe(self) -> str:
        text = (
            f"buffer copy {self.buffer_Bps / 1e9:.0f} GB/s (best of {self.rounds}, "
            f"{self.buffer_bytes / 1e6:.0f} MB buffer)"
        )
        if self.image_Bps is not None:
            text += f", image copy {self.image_Bps / 1e9:.0f} GB/s"
        return text

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``buffer_copy_Bps`` etc., the keys the suites wrote before)."""
        data = {
            "buffer_copy_Bps": self.buffer_Bps,
            "copy_bytes": self.buffer_bytes,
            "copy_rounds": self.rounds,
        }
        if self.image_Bps is not None:
            data["image_copy_Bps"] = self.image_Bps
        return data


def _best_ns(queue: Any, launch: Any, rounds: int) -> float:
    launch().wait()  # warm-up: the first copy may page the buffers in
    return min(event_ns(launch()) for _ in range(max(1, rounds)))


def _copy_bytes(device: Any, at_least: int) -> int:
    wanted = max(int(at_least), MIN_COPY_BYTES)
    limit = int(device.max_mem_alloc_size)
    return max(16, min(wanted, limit) // 16 * 16)


def measure_copy(
    queue: Any, at_least_bytes: int, rounds: int, image: tuple[int, int] | None = None
) -> CopyBandwidth:
    """Best of ``rounds`` profiled buffer copies of a buffer of at least
    ``at_least_bytes`` (and :data:`MIN_COPY_BYTES`; at most the device's largest
    allocation); with ``image`` (width, height), also the best image copy of an RGBA float
    image of that size. ``queue`` must have profiling enabled."""
    context, device = queue.context, queue.device
    nbytes = _copy_bytes(device, at_least_bytes)
    src = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, nbytes)
    buffer_ns = _best_ns(queue, lambda: cl.enqueue_copy(queue, dst, src), rounds)
    copy = CopyBandwidth(2 * nbytes / (buffer_ns * 1e-9), nbytes, None, max(1, rounds))
    if image is None or not device.image_support:
        return copy
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    a, b = (cl.create_image(context, cl.mem_flags.READ_WRITE, fmt, shape=image) for _ in "ab")
    image_ns = _best_ns(queue, lambda: copy_image(queue, b, a, image), rounds)
    moved = 2 * image[0] * image[1] * _RGBA_FLOAT
    return copy.with_image(moved, image_ns * 1e-9)


def image_of_bytes(device: Any, nbytes: int) -> tuple[int, int] | None:
    """An RGBA float image of about ``nbytes`` (at most 8192 wide), or None without images."""
    if not device.image_support:
        return None
    width = min(device.image2d_max_width, 8192)
    return width, max(1, min(device.image2d_max_height, nbytes // (16 * width)))


def copy_bandwidth(queue: Any, nbytes: int, rounds: int) -> dict[str, float]:
    """:func:`measure_copy` of ``nbytes`` (and an image of about as many bytes,
    :func:`image_of_bytes`) as a dict: ``buffer_copy_Bps``, ``copy_bytes``,
    ``image_copy_Bps``."""
    return measure_copy(queue, nbytes, rounds, image_of_bytes(queue.device, nbytes)).as_dict()
