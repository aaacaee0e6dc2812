"""Host cost per dispatch of a 32-kernel pipeline replayed 1,000 times.

    python -m qcom_ext.tools.bench.cases_recording [--device 0:0] [--rounds 7]

Cases (group ``recording``; each ``run`` does 1,000 replays, then finishes the queue):

* ``naive_call``: ``kernel(queue, gws, lws, *args)`` with numpy scalars and no
  ``set_scalar_arg_dtypes`` (pyopencl converts every argument on every call);
* ``preset_enqueue`` (baseline): one kernel object per dispatch, arguments set once,
  ``cl.enqueue_nd_range_kernel`` in the loop: the cheapest raw pyopencl loop;
* ``recording_replay``: ``Recording.replay`` on the device's own path;
* ``recording_replay_direct``: the same, forced onto the replay path;
* ``recording_replay_update``: one scalar argument updated on every replay.

Targets (issue 3): ``recording_replay`` at most 1.1x the baseline and at least 4x
faster than ``naive_call``. Run as a script, the cases are timed in interleaved
rounds and the median per dispatch is printed, host part (the replay calls) and
total (with ``queue.finish()``), with the ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext.device import shared

try:  # the runner's case type (qcom_ext/tools/bench/_case.py); plain dicts without it
    from qcom_ext.tools.bench._case import Case
except ImportError:
    Case = None

REPLAYS = 1000
NAMES = ("k_add", "k_mad", "k_xor", "k_rot")  # not add/mad/mix: OpenCL C builtins
DISPATCHES = 32
GLOBAL, LOCAL = (256,), (64,)
SOURCE = """
__kernel void k_add(__global uint *a, uint v) { size_t i = get_global_id(0); a[i] += v; }
__kernel void k_mad(__global uint *a, uint v, uint w)
{ size_t i = get_global_id(0); a[i] = a[i] * v + w; }
__kernel void k_xor(__global uint *a, __global const uint *b, uint v)
{ size_t i = get_global_id(0); a[i] ^= b[i] + v; }
__kernel void k_rot(__global uint *a, uint s)
{ size_t i = get_global_id(0); a[i] = rotate(a[i], s) + (uint)i; }
"""


def _pipeline(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    """Context, queue, buffers and the 32 (kernel name, args) of the pipeline."""
    context = cl.Context([caps.device()])
    queue = cl.CommandQueue(context)
    program = cl.Program(context, SOURCE).build()
    buffers = [cl.Buffer(context, cl.mem_flags.READ_WRITE, GLOBAL[0] * 4) for _ in range(4)]
    for buf in buffers:
        cl.enqueue_fill_buffer(queue, buf, np.uint32(1), 0, buf.size)
    dispatches = []
    for j in range(DISPATCHES):
        a, b, v = buffers[j % 4], buffers[(j + 1) % 4], np.uint32(j + 1)
        name, args = [
            ("k_add", (a, v)),
            ("k_mad", (a, v, np.uint32(7))),
            ("k_xor", (a, b, v)),
            ("k_rot", (a, np.uint32(j % 31))),
        ][j % 4]
        dispatches.append((name, args))
    queue.finish()
    return {
        "context": context,
        "queue": queue,
        "program": program,
        "buffers": buffers,
        "dispatches": dispatches,
        "replays": REPLAYS,
    }


def setup_naive(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = _pipeline(caps)
    kernels = {name: cl.Kernel(state["program"], name) for name in NAMES}
    state["calls"] = [(kernels[name], args) for name, args in state["dispatches"]]
    return state


def loop_naive(state: dict[str, Any]) -> None:
    queue, calls = state["queue"], state["calls"]
    for _ in range(state["replays"]):
        for kernel, args in calls:
            kernel(queue, GLOBAL, LOCAL, *args)


def setup_preset(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = _pipeline(caps)
    kernels = []
    for name, args in state["dispatches"]:
        kernel = cl.Kernel(state["program"], name)
        kernel.set_args(*args)
        kernels.append(kernel)
    state["kernels"] = kernels
    return state


def loop_preset(state: dict[str, Any]) -> None:
    queue, kernels, enqueue = state["queue"], state["kernels"], cl.enqueue_nd_range_kernel
    for _ in range(state["replays"]):
        for kernel in kernels:
            enqueue(queue, kernel, GLOBAL, LOCAL)


@contextlib.contextmanager
def _forced_replay() -> Iterator[None]:
    saved = os.environ.get("QCOM_EXT_DISABLE")
    os.environ["QCOM_EXT_DISABLE"] = "cl_qcom_recordable_queues"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["QCOM_EXT_DISABLE"]
        else:
            os.environ["QCOM_EXT_DISABLE"] = saved


def setup_recording(caps: qcom_ext.DeviceCaps, direct: bool = False) -> dict[str, Any]:
    state = _pipeline(caps)
    kernels = {name: cl.Kernel(state["program"], name) for name in NAMES}
    with _forced_replay() if direct else contextlib.nullcontext():
        rec = qcom_ext.Recording(state["queue"])
    with rec:
        for name, args in state["dispatches"]:
            rec.enqueue(kernels[name], GLOBAL, LOCAL, *args)
    state["recording"] = rec
    state["updates"] = [{(0, 1): np.uint32(1)}, {(0, 1): np.uint32(2)}]
    return state


def setup_direct(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return setup_recording(caps, direct=True)


def loop_recording(state: dict[str, Any]) -> None:
    queue, replay = state["queue"], state["recording"].replay
    for _ in range(state["replays"]):
        replay(queue)


def loop_recording_update(state: dict[str, Any]) -> None:
    queue, replay, updates = state["queue"], state["recording"].replay, state["updates"]
    for i in range(state["replays"]):
        replay(queue, args=updates[i & 1])


def _finishing(loop: Any) -> Any:
    def run(state: dict[str, Any]) -> None:
        loop(state)
        state["queue"].finish()

    run.__name__ = f"run_{loop.__name__.removeprefix('loop_')}"
    run.loop = loop  # type: ignore[attr-defined]
    return run


_SPECS = [
    {
        "name": "naive_call",
        "group": "recording",
        "setup": setup_naive,
        "run": _finishing(loop_naive),
        "baseline": False,
        "note": "kernel(queue, gws, lws, *args), numpy scalars, no set_scalar_arg_dtypes",
    },
    {
        "name": "preset_enqueue",
        "group": "recording",
        "setup": setup_preset,
        "run": _finishing(loop_preset),
        "baseline": True,
        "note": "one kernel per dispatch, args preset, cl.enqueue_nd_range_kernel",
    },
    {
        "name": "recording_replay",
        "group": "recording",
        "setup": setup_recording,
        "run": _finishing(loop_recording),
        "baseline": False,
        "note": "Recording.replay(queue) on the device's path",
    },
    {
        "name": "recording_replay_direct",
        "group": "recording",
        "setup": setup_direct,
        "run": _finishing(loop_recording),
        "baseline": False,
        "note": "Recording.replay(queue), forced onto the replay path",
    },
    {
        "name": "recording_replay_update",
        "group": "recording",
        "setup": setup_recording,
        "run": _finishing(loop_recording_update),
        "baseline": False,
        "note": "Recording.replay(queue, args={(0, 1): value}), value changing",
    },
]

CASES: list[Any] = [Case(**spec) if Case else spec for spec in _SPECS]


def measure(caps: qcom_ext.DeviceCaps, rounds: int) -> dict[str, dict[str, float]]:
    """Seconds per dispatch of each case over interleaved rounds: median and minimum of
    the host part (the replay calls) and of the total (with ``queue.finish()``)."""
    states = {spec["name"]: spec["setup"](caps) for spec in _SPECS}
    times: dict[str, dict[str, list[float]]] = {n: {"host": [], "total": []} for n in states}
    for spec in _SPECS:  # warm-up: kernels compiled, queues started
        states[spec["name"]]["replays"] = 5
        spec["run"](states[spec["name"]])
        states[spec["name"]]["replays"] = REPLAYS
    for _ in range(rounds):
        for spec in _SPECS:
            state = states[spec["name"]]
            start = time.perf_counter()
            spec["run"].loop(state)
            host = time.perf_counter() - start
            state["queue"].finish()
            total = time.perf_counter() - start
            times[spec["name"]]["host"].append(host)
            times[spec["name"]]["total"].append(total)
    launches = REPLAYS * DISPATCHES
    return {
        name: {
            **{part: statistics.median(values) / launches for part, values in t.items()},
            **{f"{part}_min": min(values) / launches for part, values in t.items()},
        }
        for name, t in times.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", help="as PYOPENCL_CTX: '0:0', 'nvidia', ...")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    caps = qcom_ext.probe()
    print(f"{shared.labels([caps])}, {caps.driver_version}")
    print(
        f"recording path: {caps.path('cl_qcom_recordable_queues')}; {DISPATCHES} dispatches "
        f"x {REPLAYS} replays, median of {args.rounds} interleaved rounds"
    )
    result = measure(caps, args.rounds)
    base = result["preset_enqueue"]
    print("µs per dispatch; median (min) over the rounds; x base: ratio of the medians")
    print(f"{'case':<26}{'host':>15}{'x base':>8}{'total':>15}{'x base':>8}")
    for name, r in result.items():
        host = f"{r['host'] * 1e6:.2f} ({r['host_min'] * 1e6:.2f})"
        total = f"{r['total'] * 1e6:.2f} ({r['total_min'] * 1e6:.2f})"
        print(
            f"{name:<26}{host:>15}{r['host'] / base['host']:8.2f}"
            f"{total:>15}{r['total'] / base['total']:8.2f}"
        )
    replay, naive = result["recording_replay"], result["naive_call"]
    for part in ("host", "total"):
        vs_base = replay[part] / base[part]
        speedup = naive[part] / replay[part]
        print(
            f"{part}: replay/baseline {vs_base:.2f} (target <= 1.1: "
            f"{'met' if vs_base <= 1.1 else 'NOT met'}), naive/replay {speedup:.1f}x "
            f"(target >= 4: {'met' if speedup >= 4 else 'NOT met'})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
