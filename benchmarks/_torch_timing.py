"""Device time of a torch operation on CUDA, the one way every suite times its torch rows.

A CUDA event pair around a single call measures Python's dispatch as well as the GPU:
when the GPU is idle, the start event fires at once and the kernel follows only after
torch has dispatched it (10-50 µs), which made a 16 µs GEMV look like 50 µs. So the
calls are captured in a CUDA graph, ``batch`` of them, and the graph is replayed
between two events: the time per call is the GPU's alone (the graph launches its nodes
back to back, as a decode loop under CUDA graphs does). Where an operation cannot be
captured (the capture raises), the ``batch`` calls are enqueued back to back between
the events instead, which hides dispatch only when a call's GPU time exceeds it.

qcom_ext's own rows are device times from OpenCL profiling events of single launches;
the matmul suite also times its calls released at once, back to back as the graph runs
them (on an H100 both gave the same GEMV times).
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_BATCH", "MIN_BATCH", "cuda_seconds"]

#: Calls captured per graph: MAX_BATCH for short ops (the replay's own launch spread
#: thin), MIN_BATCH for ops of 100 µs and more (large outputs, little to spread).
MAX_BATCH, MIN_BATCH = 20, 5


def _replay(torch: Any, op: Callable[[int], Any], batch: int) -> Callable[[], Any]:
    """A callable that runs ``op(0) .. op(batch - 1)`` once: a CUDA graph of the calls,
    or the calls themselves where capture fails (with a warning: the row then counts
    whatever dispatch the device waits for)."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
            for i in range(3):
                op(i)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(batch):
                op(i)
        return graph.replay
    except RuntimeError as exc:
        torch.cuda.synchronize()
        warnings.warn(f"torch timed without a CUDA graph (capture failed: {exc})", stacklevel=3)
        return lambda: [op(i) for i in range(batch)]


def cuda_seconds(
    torch: Any, op: Callable[[int], Any], rounds: int, batch: int = MAX_BATCH
) -> float:
    """Median GPU seconds per call of ``op(i)``: ``batch`` calls
    (``i`` = 0 .. batch - 1, e.g. to rotate through weight copies) captured in a CUDA
    graph and replayed ``rounds`` times between two CUDA events."""
    for i in range(2):
        op(i)
    torch.cuda.synchronize()
    run = _replay(torch, op, batch)
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / batch)
    return statistics.median(times)
