"""Host time of a decode-step GEMV call: what setting a kernel's arguments costs.

    qcom-ext bench launch [--device nvidia]

Cases (group ``launch``; each ``run`` makes :data:`CALLS` calls of the GEMV of one
``ops.Linear`` (M = 1, q4_0; (N, K) = (4096, 4096) on a GPU, (256, 512) elsewhere), then
finishes the queue, so a case whose host part is shorter than the kernel shows the
device's time instead):

* ``gemv_preset_enqueue`` (baseline): the kernel's arguments set once, then
  ``cl.enqueue_nd_range_kernel`` alone: the floor of any pyopencl launch loop;
* ``gemv_untyped_set_args``: ``kernel.set_args(*args)`` with numpy scalars and no scalar
  types, then the enqueue: how every qcom_ext launch ran before
  ``qcom_ext.ext.program.launch`` typed them (pyopencl converts each numpy scalar on
  every call);
* ``gemv_typed_enqueue``: ``launch.enqueue``, the one launch path of qcom_ext's kernels;
* ``gemv_linear_enqueue``: ``Linear.enqueue(queue, x, out)``: the whole call a decode loop
  makes (argument checks, the tuned local size, the launch).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext.ext.program.launch import enqueue
from qcom_ext.tools.bench._case import Case

__all__ = ["CALLS", "CASES"]

#: GEMV calls per timed run.
CALLS = 100


def _shape(caps: qcom_ext.DeviceCaps) -> tuple[int, int]:
    return (4096, 4096) if caps.device_type == "gpu" else (256, 512)


def setup(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    """A Linear (q4_0, M = 1) with its GEMV kernel, arguments and launch sizes, and a
    second kernel object of the same program with the arguments preset (never typed)."""
    from qcom_ext.ops import BufferMatrix, Linear
    from qcom_ext.ops.tuning import padded

    context = cl.Context([caps.device()])
    queue = cl.CommandQueue(context)
    n, k = _shape(caps)
    rng = np.random.default_rng(0)
    layer = Linear(queue, rng.standard_normal((n, k), dtype=np.float32), weight_format="q4_0")
    x = BufferMatrix.from_numpy(context, rng.standard_normal((1, k), dtype=np.float32))
    out = BufferMatrix.empty(context, (1, n))
    layer.enqueue(queue, x, out)  # builds the kernel
    gemv, global_size, args = layer._launches(queue, x, out, [])[0]
    local = layer._local(gemv, global_size, "tuned")
    shared = gemv.launcher.kernel
    untyped = cl.Kernel(shared.program, shared.function_name)
    preset = cl.Kernel(shared.program, shared.function_name)
    preset.set_args(*args)
    queue.finish()
    return {
        "queue": queue,
        "layer": layer,
        "x": x,
        "out": out,
        "args": args,
        "sizes": (padded(global_size, local), local),
        "typed": shared,
        "untyped": untyped,
        "preset": preset,
    }


def run_preset(state: dict[str, Any]) -> None:
    queue, kernel, (size, local) = state["queue"], state["preset"], state["sizes"]
    for _ in range(CALLS):
        cl.enqueue_nd_range_kernel(queue, kernel, size, local)
    queue.finish()


def run_untyped(state: dict[str, Any]) -> None:
    queue, kernel, args, (size, local) = (state[k] for k in ("queue", "untyped", "args", "sizes"))
    for _ in range(CALLS):
        kernel.set_args(*args)
        cl.enqueue_nd_range_kernel(queue, kernel, size, local)
    queue.finish()


def run_typed(state: dict[str, Any]) -> None:
    queue, kernel, args, (size, local) = (state[k] for k in ("queue", "typed", "args", "sizes"))
    for _ in range(CALLS):
        enqueue(queue, kernel, size, local, args)
    queue.finish()


def run_linear(state: dict[str, Any]) -> None:
    queue, layer, x, out = (state[k] for k in ("queue", "layer", "x", "out"))
    for _ in range(CALLS):
        layer.enqueue(queue, x, out)
    queue.finish()


_NOTE = f"{CALLS} GEMV calls (q4_0, M = 1) + finish; the time is per {CALLS} calls"
CASES = [
    Case("gemv_preset_enqueue", "launch", setup, run_preset, baseline=True,
         note=f"arguments preset, enqueue only; {_NOTE}"),
    Case("gemv_untyped_set_args", "launch", setup, run_untyped,
         note=f"set_args with untyped numpy scalars + enqueue (before); {_NOTE}"),
    Case("gemv_typed_enqueue", "launch", setup, run_typed,
         note=f"qcom_ext.ext.program.launch.enqueue; {_NOTE}"),
    Case("gemv_linear_enqueue", "launch", setup, run_linear,
         note=f"Linear.enqueue(queue, x, out): the whole call; {_NOTE}"),
]  # fmt: skip
