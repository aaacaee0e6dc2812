"""What qcom_ext's factories cost over pyopencl's: a context and a queue, made and dropped.

Groups ``factories`` (``cl.Context`` vs :func:`qcom_ext.create_context`) and
``queue_factories`` (``cl.CommandQueue`` vs :func:`qcom_ext.create_queue`). Each call
makes the object and drops it at once (the release is part of the cost, as it is for
the user). The device's report is cached first (``probe``), as in any program past its
first call. Target (issue item 10): each factory within 10 µs of pyopencl's.

Setup keeps one context of the device alive: pocl opens its device with the first
context and closes it with the last, so a loop with no other context alive times that
instead of the factories.
"""

from __future__ import annotations

from typing import Any

import pyopencl as cl

from qcom_ext import DeviceCaps, create_context, create_queue, probe
from qcom_ext.tools.bench._case import Case, Target

_LIMIT = Target(10e-6, over_baseline=True)


def _setup(caps: DeviceCaps) -> dict[str, Any]:
    device = caps.device()
    probe(device)  # the report is cached: what every later call finds
    context = cl.Context([device])
    return {"device": device, "caps": caps, "context": context}


def _cl_context(state: dict[str, Any]) -> object:
    return cl.Context([state["device"]])


def _create_context(state: dict[str, Any]) -> object:
    return create_context(state["device"])


def _create_context_caps(state: dict[str, Any]) -> object:
    return create_context(state["caps"])


def _cl_queue(state: dict[str, Any]) -> object:
    return cl.CommandQueue(state["context"])


def _create_queue(state: dict[str, Any]) -> object:
    return create_queue(state["context"])


CASES = [
    Case(
        "cl_context",
        "factories",
        _setup,
        _cl_context,
        baseline=True,
        note="cl.Context([device]), dropped",
    ),
    Case(
        "create_context",
        "factories",
        _setup,
        _create_context,
        note="qcom_ext.create_context(device), dropped",
        target=_LIMIT,
    ),
    Case(
        "create_context_caps",
        "factories",
        _setup,
        _create_context_caps,
        note="qcom_ext.create_context(caps): the report passed down, no probe",
        target=_LIMIT,
    ),
    Case(
        "cl_command_queue",
        "queue_factories",
        _setup,
        _cl_queue,
        baseline=True,
        note="cl.CommandQueue(context), dropped",
    ),
    Case(
        "create_queue",
        "queue_factories",
        _setup,
        _create_queue,
        note="qcom_ext.create_queue(context), dropped",
        target=_LIMIT,
    ),
]
