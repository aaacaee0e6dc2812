"""The one torch timer of the suites (benchmarks/_torch_timing.py), against a fake
torch whose GPU clock charges each eager call Python's dispatch as well as its GPU time
(an idle GPU waits for it) and a CUDA graph replay only the GPU time of its calls."""

from __future__ import annotations

import contextlib
import warnings
from types import SimpleNamespace

import pytest
from conftest import lab_module

cuda_seconds = lab_module("_torch_timing").cuda_seconds

GPU_S, DISPATCH_S = 16e-6, 34e-6


class FakeTorch:
    """The parts of torch.cuda that cuda_seconds uses, with a virtual GPU clock."""

    def __init__(self, capturable: bool = True) -> None:
        self.clock = 0.0
        self.capturing: list[float] | None = None
        self.capturable = capturable
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing
                self.at = None

            def record(self) -> None:
                self.at = fake.clock

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return (end.at - self.at) * 1e3  # milliseconds, as torch's

        class CUDAGraph:
            def __init__(self) -> None:
                self.calls: list[float] = []

            def replay(self) -> None:
                fake.clock += sum(self.calls)

        @contextlib.contextmanager
        def graph(g: CUDAGraph):
            if not fake.capturable:
                raise RuntimeError("operation not permitted when stream is capturing")
            fake.capturing = g.calls
            try:
                yield
            finally:
                fake.capturing = None

        stream = SimpleNamespace(wait_stream=lambda other: None)
        self.cuda = SimpleNamespace(
            Event=Event,
            CUDAGraph=CUDAGraph,
            graph=graph,
            Stream=lambda: stream,
            current_stream=lambda: stream,
            stream=lambda s: contextlib.nullcontext(),
            synchronize=lambda: None,
        )

    def op(self, seen: list[int]):
        def call(i: int) -> None:
            seen.append(i)
            if self.capturing is not None:
                self.capturing.append(GPU_S)
            else:
                self.clock += DISPATCH_S + GPU_S

        return call


def test_a_captured_graph_times_the_gpu_alone():
    torch, seen = FakeTorch(), []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # captured: no warning
        seconds = cuda_seconds(torch, torch.op(seen), rounds=3, batch=8)
    assert seconds == pytest.approx(GPU_S)
    assert seen[-8:] == list(range(8))  # the captured calls: op(0) .. op(batch - 1)


def test_without_capture_the_calls_run_back_to_back():
    torch, seen = FakeTorch(capturable=False), []
    with pytest.warns(UserWarning, match="without a CUDA graph .capture failed: operation"):
        seconds = cuda_seconds(torch, torch.op(seen), rounds=3, batch=4)
    assert seconds == pytest.approx(GPU_S + DISPATCH_S)  # this fake's GPU waits for Python
    assert seen[-4:] == [0, 1, 2, 3]
