"""Throughput of the cl_qcom_dot_product8 builtins as the probe builds them, against the
portable byte-lane code on the same device.

    qcom-ext bench dot8 [--device nvidia]

Cases (group ``dot8``; each ``run`` launches one kernel in which every work-item makes
:data:`ROUNDS` dependent ``qcom_dot8_acc`` and ``qcom_udot8_acc`` calls, and waits):

* ``dot8_portable`` (baseline): the portable code of ``kernels/compat/
  cl_qcom_dot_product8.h``, whatever the device has (its flags without
  ``QCOM_EXT_NV_SM`` and the native or Khronos dot8 flag);
* ``dot8_probed``: the builtins as :func:`qcom_ext.build_program` builds them for the
  device: native on Adreno, ``cl_khr_integer_dot_product`` where usable, PTX ``dp4a`` on
  NVIDIA from compute capability 6.1, the portable code elsewhere (then the two cases
  are the same program).

Both kernels give the same results (``tests/test_benchmark_dot8.py`` checks them against
numpy). The work is 8 integer operations a builtin call (4 multiplies, 4 adds), counted
as ``flops``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext.tools.bench._case import Case

__all__ = ["CASES", "ROUNDS", "SOURCE", "reference", "setup"]

#: Dependent builtin calls of each kind per work-item.
ROUNDS = 256

SOURCE = """
__kernel void dot8_loop(__global const uint *a, __global const uint *b, __global int *out,
                        int rounds)
{
    const size_t i = get_global_id(0);
    uint x = a[i];
    const uint y = b[i];
    int s = 0, t = 0;
    for (int k = 0; k < rounds; ++k) {
        s = qcom_dot8_acc(x, y, s);
        t = qcom_udot8_acc(y, x, t);
        x = x * 1664525u + 1013904223u;
    }
    out[2 * i] = s;
    out[2 * i + 1] = t;
}
"""


def _items(caps: qcom_ext.DeviceCaps) -> int:
    return 1 << 20 if caps.device_type == "gpu" else 1 << 14


def _portable_program(context: Any, caps: qcom_ext.DeviceCaps) -> Any:
    """SOURCE built with the device's flags but those that pick a faster dot8 (native,
    Khronos, NVIDIA's dp4a): the portable code. (Not ``-U``: pocl refuses it.)"""
    from qcom_ext._resources import kernels_dir
    from qcom_ext.ext.program.build import PRELUDE

    faster = ("QCOM_EXT_NV_SM", "_cl_qcom_dot_product8")
    flags = [f for f in caps.compiler_options() if not any(n in f for n in faster)]
    program = cl.Program(context, PRELUDE + SOURCE)
    return program.build(options=["-I", str(kernels_dir()), *flags])


def setup(caps: qcom_ext.DeviceCaps, items: int | None = None) -> dict[str, Any]:
    """Both programs, random operands of ``items`` work-items and an output buffer."""
    context = cl.Context([caps.device()])
    queue = cl.CommandQueue(context)
    items = items or _items(caps)
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2**32, items, dtype=np.uint32) for _ in range(2))
    mf = cl.mem_flags
    buffers = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) for v in (a, b)]
    out = cl.Buffer(context, mf.WRITE_ONLY, 8 * items)
    kernels = {
        "probed": qcom_ext.build_program(context, SOURCE).dot8_loop,
        "portable": _portable_program(context, caps).dot8_loop,
    }
    return {"queue": queue, "kernels": kernels, "args": [*buffers, out], "a": a, "b": b,
            "items": items, "out": out}  # fmt: skip


def _enqueue(state: dict[str, Any], which: str, rounds: int) -> None:
    kernel = state["kernels"][which]
    kernel(state["queue"], (state["items"],), None, *state["args"], np.int32(rounds))


def launch(state: dict[str, Any], which: str, rounds: int = ROUNDS) -> np.ndarray:
    """Run kernel ``which`` ("probed" or "portable") and return (s, t) per work-item."""
    _enqueue(state, which, rounds)
    found = np.empty((state["items"], 2), np.int32)
    cl.enqueue_copy(state["queue"], found, state["out"])
    return found


def reference(a: np.ndarray, b: np.ndarray, rounds: int) -> np.ndarray:
    """The kernel's (s, t) in numpy: each builtin's four lane products summed exactly and
    added with signed 32-bit saturation."""
    lo, hi = -(2**31), 2**31 - 1
    x, y = a.astype(np.uint32).copy(), b.astype(np.uint32)
    y_u = y.view(np.uint8).reshape(-1, 4).astype(np.int64)
    s = np.zeros(a.size, np.int64)
    t = np.zeros(a.size, np.int64)
    for _ in range(rounds):
        x_s = x.view(np.int8).reshape(-1, 4).astype(np.int64)
        x_u = x.view(np.uint8).reshape(-1, 4).astype(np.int64)
        s = np.clip(s + (x_s * y_u).sum(axis=1), lo, hi)
        t = np.clip(t + (y_u * x_u).sum(axis=1), lo, hi)
        x = (x * np.uint32(1664525) + np.uint32(1013904223)).astype(np.uint32)
    return np.stack([s, t], axis=1).astype(np.int32)


def _run(which: str) -> Any:
    def run(state: dict[str, Any]) -> None:
        _enqueue(state, which, ROUNDS)
        state["queue"].finish()

    return run


def _work(state: dict[str, Any]) -> dict[str, float]:
    return {"flops": 8.0 * 2 * ROUNDS * state["items"]}


_NOTE = f"{ROUNDS} dependent qcom_dot8_acc + qcom_udot8_acc a work-item; 8 int ops a call"
CASES = [
    Case("dot8_portable", "dot8", setup, _run("portable"), baseline=True, work=_work,
         note=f"the portable byte-lane code; {_NOTE}"),
    Case("dot8_probed", "dot8", setup, _run("probed"), work=_work,
         note=f"as build_program builds it (NVIDIA 6.1+: PTX dp4a); {_NOTE}"),
]  # fmt: skip
