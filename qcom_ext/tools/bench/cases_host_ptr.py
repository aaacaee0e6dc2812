"""What zero-copy saves: one kernel pass over 16 MiB that lives in host memory.

Cases (group ``zero_copy``; each ``run`` makes the data visible to the device, runs a
kernel that adds 1 to every uint32, and makes the result visible to the host again):

* ``copy_in_out`` (baseline): an ordinary device buffer, ``enqueue_copy`` in and out;
* ``host_buffer_map``: ``qcom_ext.host_buffer`` over a page-aligned array
  (``CL_MEM_USE_HOST_PTR``), the result read through a blocking map;
* ``dmabuf_map``: a memfd imported with ``qcom_ext.import_dmabuf`` on the mapped path
  (Linux; forced there on a device that imports real dma-bufs natively), read through a
  blocking map.

On CPU and integrated GPUs the last two touch no copy; on a discrete GPU the driver
moves the data itself, which the ratios show.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext

try:  # the runner's case type (qcom_ext/tools/bench/_case.py); plain dicts without it
    from qcom_ext.tools.bench._case import Case
except ImportError:
    Case = None

COUNT = 4 << 20  # uint32 values: 16 MiB
SOURCE = "__kernel void inc(__global uint *a) { a[get_global_id(0)] += 1u; }"


def _common(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    context = cl.Context([caps.device()])
    queue = cl.CommandQueue(context)
    kernel = cl.Kernel(cl.Program(context, SOURCE).build(), "inc")
    return {"context": context, "queue": queue, "kernel": kernel}


def setup_copy(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = _common(caps)
    state["host"] = np.zeros(COUNT, np.uint32)
    state["buffer"] = cl.Buffer(state["context"], cl.mem_flags.READ_WRITE, COUNT * 4)
    state["kernel"].set_arg(0, state["buffer"])
    return state


def run_copy(state: dict[str, Any]) -> np.ndarray:
    queue, host, buffer = state["queue"], state["host"], state["buffer"]
    cl.enqueue_copy(queue, buffer, host)
    cl.enqueue_nd_range_kernel(queue, state["kernel"], (COUNT,), None)
    cl.enqueue_copy(queue, host, buffer)  # blocking
    return host


def setup_host_buffer(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = _common(caps)
    host = qcom_ext.aligned_empty(COUNT, np.uint32, context=state["context"])
    host[:] = 0
    state["buffer"] = qcom_ext.host_buffer(state["context"], host)
    state["kernel"].set_arg(0, state["buffer"])
    return state


@contextlib.contextmanager
def _mapped_dmabuf_path() -> Iterator[None]:
    """A memfd is no dma-buf for a native driver: take the mapped path for setup."""
    saved = os.environ.get("QCOM_EXT_DISABLE")
    os.environ["QCOM_EXT_DISABLE"] = ",".join(filter(None, [saved, "cl_qcom_dmabuf_host_ptr"]))
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("QCOM_EXT_DISABLE", None)
        else:
            os.environ["QCOM_EXT_DISABLE"] = saved


def setup_dmabuf(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = _common(caps)
    fd = os.memfd_create("qcom-ext-benchmark")
    try:
        os.ftruncate(fd, COUNT * 4)
        with _mapped_dmabuf_path(), warnings.catch_warnings():
            warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
            state["buffer"] = qcom_ext.import_dmabuf(state["context"], fd, COUNT * 4)
    finally:
        os.close(fd)  # the mapping keeps its own reference
    state["kernel"].set_arg(0, state["buffer"])
    return state


def run_mapped(state: dict[str, Any]) -> np.ndarray:
    queue = state["queue"]
    cl.enqueue_nd_range_kernel(queue, state["kernel"], (COUNT,), None)
    mapped, _ = cl.enqueue_map_buffer(
        queue, state["buffer"], cl.map_flags.READ, 0, (COUNT,), np.uint32
    )
    result = mapped[:4].copy()  # the host reads the result, then gives the map back
    mapped.base.release(queue)
    return result


_SPECS: list[dict[str, Any]] = [
    {
        "name": "copy_in_out",
        "group": "zero_copy",
        "setup": setup_copy,
        "run": run_copy,
        "baseline": True,
        "note": "device buffer: enqueue_copy in, kernel, enqueue_copy out",
    },
    {
        "name": "host_buffer_map",
        "group": "zero_copy",
        "setup": setup_host_buffer,
        "run": run_mapped,
        "baseline": False,
        "note": "qcom_ext.host_buffer (USE_HOST_PTR): kernel, blocking map",
    },
]
if hasattr(os, "memfd_create"):
    _SPECS.append(
        {
            "name": "dmabuf_map",
            "group": "zero_copy",
            "setup": setup_dmabuf,
            "run": run_mapped,
            "baseline": False,
            "note": "memfd via qcom_ext.import_dmabuf (mapped): kernel, map",
        }
    )

CASES: list[Any] = [Case(**spec) if Case else spec for spec in _SPECS]
