"""Fault injection: each documented error code of each driver entry point qcom_ext calls.

A real pocl device claims the Qualcomm extensions (tests/fakes/claiming.py) and cffi callbacks
stand in for the entry points: they make real objects through the real driver, recorded
in a :class:`fakes.ledger.Ledger`, or fake recordings (tests/fakes/recording.py). Each case
arms one fault on one entry point and makes the public call that reaches it:

* ``error``: the entry point returns (or writes to ``errcode_ret``) one code that its
  specification lists for it (:data:`ENTRY_POINTS` names the list and its source);
* ``null``: a handle-returning entry point returns NULL with ``CL_SUCCESS``;
* ``handle``: it returns a real handle together with the error code.

Every case asserts the typed error (:class:`CLError` naming the entry point and the
injected code; ``CL_INVALID_VALUE`` and "NULL" in the message for a NULL with
CL_SUCCESS), that every handle made so far was released exactly once *while the
exception and its traceback are still alive* (nothing is left for the garbage
collector) and that a caller's objects were not touched, and that no Python-side residue
remains (context registry entries, recording state, host mappings); a scenario then
checks that the object it failed on still works where it survives (a recording replays
after a failed replay, records after a failed begin). :data:`SUMMARY` counts the cases;
``python tests/test_fault_injection.py`` prints the table docs/RELIABILITY.md quotes.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pytest
from conftest import DEVICES
from fakes.claiming import claiming
from fakes.driver import ml_versions_query, u32, u64
from fakes.ledger import Ledger
from fakes.recording import FakeRecordingDriver

import qcom_ext
from qcom_ext import (
    CLError,
    ContextInfo,
    Recording,
    WeightImage,
    buffer_from_image,
    image_with_buffer,
    onchip_buffer,
    query_image_info,
)
from qcom_ext._context_cache import live_handles
from qcom_ext.binding.lib import C, driver, ffi, fn_type
from qcom_ext.device import clml as _clml
from qcom_ext.device.probe import clear_cache, probe
from qcom_ext.errors import RecordingStateError, error_name
from qcom_ext.ext import context as context_module
from qcom_ext.ext.images import image_buffer as image_buffer_module
from qcom_ext.ext.memory import external as external_memory
from qcom_ext.tools.pytest_plugin import skip_unless_building

DEVICE = next((c for c in DEVICES if c.image_support), None)
pytestmark = [
    pytest.mark.skipif(
        ffi.sizeof("void *") != 8 or sys.byteorder != "little",
        reason="the fake recording driver decodes the LP64 little-endian layouts",
    ),
    pytest.mark.skipif(DEVICE is None, reason="needs an OpenCL device with images"),
]

# ---- the documented error codes of each entry point -----------------------------------

SPEC = "OpenCL 3.0 API specification"
OOR, OOHM = "CL_OUT_OF_RESOURCES", "CL_OUT_OF_HOST_MEMORY"
_QUEUE = (
    "CL_INVALID_CONTEXT",
    "CL_INVALID_DEVICE",
    "CL_INVALID_VALUE",
    "CL_INVALID_QUEUE_PROPERTIES",
    OOR,
    OOHM,
)
_BUFFER = (
    "CL_INVALID_CONTEXT",
    "CL_INVALID_VALUE",
    "CL_INVALID_BUFFER_SIZE",
    "CL_INVALID_HOST_PTR",
    "CL_MEM_OBJECT_ALLOCATION_FAILURE",
    OOR,
    OOHM,
)
_REPLAY = (
    "CL_INVALID_COMMAND_QUEUE",
    "CL_INVALID_CONTEXT",
    "CL_INVALID_VALUE",
    "CL_INVALID_OPERATION",
    "CL_INVALID_KERNEL_ARGS",
    "CL_INVALID_ARG_INDEX",
    "CL_INVALID_ARG_VALUE",
    "CL_INVALID_ARG_SIZE",
    "CL_INVALID_GLOBAL_WORK_SIZE",
    "CL_INVALID_GLOBAL_OFFSET",
    "CL_INVALID_WORK_GROUP_SIZE",
    "CL_INVALID_WORK_ITEM_SIZE",
    "CL_INVALID_EVENT_WAIT_LIST",
    "CL_MEM_OBJECT_ALLOCATION_FAILURE",
    OOR,
    OOHM,
)
_NO_SPEC = "no specification text (qcom-extensions.md §21): the codes of"

#: entry point -> (where its error codes come from, the codes)
ENTRY_POINTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "clCreateContext": (
        SPEC,
        (
            "CL_INVALID_PLATFORM",
            "CL_INVALID_PROPERTY",
            "CL_INVALID_VALUE",
            "CL_INVALID_DEVICE",
            "CL_DEVICE_NOT_AVAILABLE",
            OOR,
            OOHM,
        ),
    ),
    "clSetPerfHintQCOM": (
        "qcom-extensions.md §1 (cl_qcom_perf_hint)",
        ("CL_INVALID_CONTEXT", "CL_INVALID_PROPERTY", "CL_INVALID_VALUE", OOR, OOHM),
    ),
    "clCreateCommandQueueWithProperties": (SPEC, _QUEUE),
    "clCreateCommandQueue": (SPEC, _QUEUE),
    "clNewRecordingQCOM": (
        f"{_NO_SPEC} clCreateCommandBufferKHR that apply; "
        "CL_INVALID_COMMAND_QUEUE is seen on devices (§20)",
        ("CL_INVALID_COMMAND_QUEUE", "CL_INVALID_CONTEXT", "CL_INVALID_VALUE", OOR, OOHM),
    ),
    "clEnqueueNDRangeKernel": (
        SPEC,
        (
            "CL_INVALID_PROGRAM_EXECUTABLE",
            "CL_INVALID_COMMAND_QUEUE",
            "CL_INVALID_KERNEL",
            "CL_INVALID_CONTEXT",
            "CL_INVALID_KERNEL_ARGS",
            "CL_INVALID_WORK_DIMENSION",
            "CL_INVALID_GLOBAL_WORK_SIZE",
            "CL_INVALID_GLOBAL_OFFSET",
            "CL_INVALID_WORK_GROUP_SIZE",
            "CL_INVALID_WORK_ITEM_SIZE",
            "CL_MISALIGNED_SUB_BUFFER_OFFSET",
            "CL_INVALID_IMAGE_SIZE",
            "CL_IMAGE_FORMAT_NOT_SUPPORTED",
            "CL_MEM_OBJECT_ALLOCATION_FAILURE",
            "CL_INVALID_EVENT_WAIT_LIST",
            "CL_INVALID_OPERATION",
            OOR,
            OOHM,
        ),
    ),
    "clEndRecordingQCOM": (
        f"{_NO_SPEC} clFinalizeCommandBufferKHR (CL_INVALID_VALUE "
        "for its CL_INVALID_COMMAND_BUFFER_KHR)",
        ("CL_INVALID_VALUE", "CL_INVALID_OPERATION", OOR, OOHM),
    ),
    "clEnqueueRecordingQCOM": (
        f"{_NO_SPEC} clEnqueueCommandBufferKHR and of the "
        "clSetKernelArg / clEnqueueNDRangeKernel checks its "
        "updates repeat",
        _REPLAY,
    ),
    "clEnqueueRecordingSVMQCOM": ("as clEnqueueRecordingQCOM", _REPLAY),
    "clReleaseRecordingQCOM": (
        f"{_NO_SPEC} clReleaseCommandBufferKHR (CL_INVALID_VALUE "
        "for its CL_INVALID_COMMAND_BUFFER_KHR)",
        ("CL_INVALID_VALUE", OOR, OOHM),
    ),
    "clGetSupportedImageFormats": (SPEC, ("CL_INVALID_CONTEXT", "CL_INVALID_VALUE", OOR, OOHM)),
    "clCreateImage": (
        SPEC + "; cl_qcom_ext_host_ptr adds only CL_INVALID_VALUE cases",
        (
            "CL_INVALID_CONTEXT",
            "CL_INVALID_VALUE",
            "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
            "CL_INVALID_IMAGE_DESCRIPTOR",
            "CL_INVALID_IMAGE_SIZE",
            "CL_INVALID_HOST_PTR",
            "CL_IMAGE_FORMAT_NOT_SUPPORTED",
            "CL_MEM_OBJECT_ALLOCATION_FAILURE",
            "CL_INVALID_OPERATION",
            OOR,
            OOHM,
        ),
    ),
    "clCreateBuffer": (SPEC + "; cl_qcom_ext_host_ptr adds only CL_INVALID_VALUE cases", _BUFFER),
    "clCreateBufferWithProperties": (SPEC, ("CL_INVALID_PROPERTY", *_BUFFER)),
    "clCreateBufferFromImageQCOM": (
        "cl_qcom_create_buffer_from_image spec, version 7",
        (
            "CL_INVALID_MEM_OBJECT",
            "CL_INVALID_VALUE",
            "CL_MEM_OBJECT_ALLOCATION_FAILURE",
            OOR,
            OOHM,
        ),
    ),
    "clGetDeviceImageInfoQCOM": (
        "cl_qcom_ext_host_ptr spec, version 5",
        ("CL_INVALID_VALUE", "CL_INVALID_MEM_OBJECT", OOR, OOHM),
    ),
    "clQueryImageInfoQCOM": (
        f"{_NO_SPEC} clGetDeviceImageInfoQCOM and the image descriptor checks of clCreateImage",
        (
            "CL_INVALID_DEVICE",
            "CL_INVALID_VALUE",
            "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
            "CL_INVALID_IMAGE_DESCRIPTOR",
            OOR,
            OOHM,
        ),
    ),
    "clQueryMLInterfaceVersionsQCOM": (
        f"{_NO_SPEC} any query (cl_qcom_ml_ops.h only)",
        ("CL_INVALID_VALUE", OOR, OOHM),
    ),
    "clCreateSampler": (
        SPEC,
        ("CL_INVALID_CONTEXT", "CL_INVALID_VALUE", "CL_INVALID_OPERATION", OOR, OOHM),
    ),
}


def returns_handle(entry: str) -> bool:
    return ffi.typeof(fn_type(entry)).result.kind == "pointer"


# ---- the device the cases claim extensions on --------------------------------------------

ADD = "__kernel void add(__global int *a, int b) { a[get_global_id(0)] += b; }"
N = 64
RGBA8 = "RGBA/UNORM_INT8"
INFO = {
    0x41DE: u32(64),  # CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE
    0x104A: u32(16),  # CL_DEVICE_IMAGE_PITCH_ALIGNMENT (the cl_khr_image2d_from_buffer tier)
    0x40A1: u64(4096),  # CL_DEVICE_PAGE_SIZE_QCOM
    0x40A0: u64(0),  # CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM
    0x41A4: u64(1 << 20),  # CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM
    0x4111: u32(16),
    0x4112: u32(16),
    0x4113: u32(16),  # HOF phases, filter x, y
    0x4114: u32(32),
    0x4115: u32(32),  # block-matching region x, y
}


class LedgerDriver:
    """Entry points that make real objects (recorded in the ledger) or answer queries;
    recordings go through :class:`FakeRecordingDriver`, which replays for real."""

    def __init__(self, ledger: Ledger, context: cl.Context) -> None:
        self.ledger, self.context = ledger, context
        self.recordings = FakeRecordingDriver()
        self._real = {
            name: driver.function(name)
            for name in (
                "clCreateContext",
                "clCreateCommandQueueWithProperties",
                "clCreateBuffer",
                "clCreateImage",
                "clGetSupportedImageFormats",
                "clCreateSampler",
                "clReleaseSampler",
            )
        }

    def substitutes(self) -> dict[str, Callable[..., Any]]:
        r = self.recordings
        return {
            "clCreateContext": self.create_context,
            "clSetPerfHintQCOM": lambda context, hint: 0,
            "clCreateCommandQueueWithProperties": self.create_queue_with_properties,
            "clCreateCommandQueue": self.create_queue,
            "clReleaseCommandQueue": r.release_queue,
            "clSetKernelArg": r.set_arg,
            "clSetKernelArgSVMPointer": r.set_arg_svm,
            "clEnqueueNDRangeKernel": r.enqueue_ndrange,
            "clNewRecordingQCOM": self.new_recording,
            "clEndRecordingQCOM": r.end_recording,
            "clReleaseRecordingQCOM": r.release_recording,
            "clEnqueueRecordingQCOM": r.enqueue_recording,
            "clEnqueueRecordingSVMQCOM": r.enqueue_recording_svm,
            "clGetSupportedImageFormats": self.formats,
            "clCreateImage": self.create_image,
            "clCreateBuffer": self.create_buffer,
            "clCreateBufferWithProperties": self.create_buffer_with_properties,
            "clCreateBufferFromImageQCOM": self.buffer_from_image,
            "clGetDeviceImageInfoQCOM": self.device_image_info,
            "clQueryImageInfoQCOM": self.query_image_info,
            "clQueryMLInterfaceVersionsQCOM": ml_versions_query(),
            "clCreateSampler": self.create_sampler,
            "clReleaseSampler": self._real["clReleaseSampler"],
        }

    def create_context(self, properties, num_devices, devices, notify, user_data, errcode):
        handle = self._real["clCreateContext"](
            ffi.NULL, num_devices, devices, ffi.NULL, ffi.NULL, errcode
        )
        return self.ledger.real("context", handle, "clCreateContext")

    def create_queue_with_properties(self, context, device, properties, errcode):
        handle = self._real["clCreateCommandQueueWithProperties"](
            context, device, ffi.NULL, errcode
        )
        return self.ledger.real("queue", handle, "clCreateCommandQueueWithProperties")

    def create_queue(self, context, device, properties, errcode):
        handle = self.recordings.create_queue(context, device, properties, errcode)
        return self.ledger.real("queue", handle, "clCreateCommandQueue")

    def new_recording(self, queue, errcode):
        handle = self.recordings.new_recording(queue, errcode)
        return self.ledger.counted("recording", handle, "clNewRecordingQCOM")

    def observers(self) -> dict[str, Callable[..., Any]]:
        """What sees every call of an entry point, failed ones too: a release call counts
        as made even when the fault makes it fail."""
        return {"clReleaseRecordingQCOM": self.release_call, "clReleaseSampler": self.release_call}

    def release_call(self, handle) -> None:
        assert self.ledger.released(handle), "released a handle no stand-in made"

    def create_sampler(self, context, normalized, addressing, filter_mode, errcode):
        handle = self._real["clCreateSampler"](
            context, normalized, addressing, C.CL_FILTER_NEAREST, errcode
        )
        return self.ledger.counted("sampler", handle, "clCreateSampler")

    def formats(self, context, flags, image_type, num_entries, formats, num_formats):
        if image_type != C.CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM:
            return self._real["clGetSupportedImageFormats"](
                context, flags, image_type, num_entries, formats, num_formats
            )
        if num_formats != ffi.NULL:
            num_formats[0] = 1
        if num_entries:
            formats[0].image_channel_order = C.CL_R
            formats[0].image_channel_data_type = C.CL_HALF_FLOAT
        return 0

    def _image(self, context, errcode, made_by: str):
        fmt = ffi.new("cl_image_format *", (C.CL_RGBA, C.CL_UNORM_INT8))
        desc = ffi.new("cl_image_desc *")
        desc.image_type, desc.image_width, desc.image_height = C.CL_MEM_OBJECT_IMAGE2D, 16, 16
        handle = self._real["clCreateImage"](
            context, C.CL_MEM_READ_WRITE, fmt, desc, ffi.NULL, errcode
        )
        return self.ledger.real("mem", handle, made_by)

    def _buffer(self, context, errcode, made_by: str):
        handle = self._real["clCreateBuffer"](
            context, C.CL_MEM_READ_WRITE, 1 << 14, ffi.NULL, errcode
        )
        return self.ledger.real("mem", handle, made_by)

    def create_image(self, context, flags, fmt, desc, host_ptr, errcode):
        return self._image(context, errcode, "clCreateImage")

    def create_buffer(self, context, flags, size, host_ptr, errcode):
        return self._buffer(context, errcode, "clCreateBuffer")

    def create_buffer_with_properties(self, context, properties, flags, size, host_ptr, errcode):
        return self._buffer(context, errcode, "clCreateBufferWithProperties")

    def buffer_from_image(self, image, flags, errcode):
        context = ffi.cast("cl_context", self.context.int_ptr)
        return self._buffer(context, errcode, "clCreateBufferFromImageQCOM")

    def device_image_info(self, device, width, height, fmt, param, size, value, size_ret):
        row = -(-width * 4 // 64) * 64  # every image here is RGBA/UNORM_INT8
        data = (
            u32(row)
            if param == C.CL_BUFFER_FROM_IMAGE_ROW_PITCH_QCOM
            else struct.pack("<i", row * height)
        )
        ffi.memmove(value, data, 4)
        size_ret[0] = 4
        return 0

    def query_image_info(self, device, flags, fmt, desc, param, size, value, size_ret):
        ffi.memmove(value, u64(64), 8)
        size_ret[0] = 8
        return 0


class Faults:
    """Wraps the stand-ins; :meth:`arm` makes one call of one entry point fail."""

    def __init__(self) -> None:
        self.armed: dict[str, list] = {}
        self.fired: list[str] = []

    def arm(self, entry: str, mode: str, code: int, skip: int = 0) -> None:
        """Fail the call of ``entry`` after ``skip`` more pass: ``mode`` error/null/handle."""
        self.armed[entry] = [mode, code, skip]

    def wrap(
        self, name: str, impl: Callable[..., Any], observe: Callable[..., Any] | None = None
    ) -> Callable[..., Any]:
        handle = returns_handle(name)

        def call(*args):
            if observe is not None:
                observe(*args)
            armed = self.armed.get(name)
            if armed is None or armed[2]:
                if armed is not None:
                    armed[2] -= 1
                return impl(*args)
            mode, code, _ = self.armed.pop(name)
            self.fired.append(name)
            if not handle:
                return code
            made = impl(*args) if mode == "handle" else ffi.NULL
            if args[-1] != ffi.NULL:  # errcode_ret
                args[-1][0] = 0 if mode == "null" else code
            return made

        return call


@dataclass
class Env:
    """What a scenario works with: the device, a context and queue, the ledger."""

    caps: Any
    context: cl.Context
    queue: cl.CommandQueue
    kernel: cl.Kernel
    ledger: Ledger
    faults: Faults
    fake: LedgerDriver
    monkeypatch: pytest.MonkeyPatch
    code: int = 0  # the code of the case under test

    @property
    def device(self) -> cl.Device:
        return self.caps.device()

    @contextlib.contextmanager
    def native(self, claims: tuple[str, ...]) -> Iterator[None]:
        observers = self.fake.observers()
        wrapped = {
            name: self.faults.wrap(name, impl, observers.get(name))
            for name, impl in self.fake.substitutes().items()
        }
        with claiming(self.caps.device_id, extensions=claims, info=INFO, **wrapped):
            yield


@pytest.fixture(scope="module")
def shared():
    skip_unless_building(DEVICE)
    context = cl.Context([DEVICE.device()])
    kernel = cl.Kernel(cl.Program(context, ADD).build(), "add")
    return context, cl.CommandQueue(context), kernel


@pytest.fixture
def env(shared, monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    context, queue, kernel = shared
    ledger = Ledger()
    yield Env(
        DEVICE,
        context,
        queue,
        kernel,
        ledger,
        Faults(),
        LedgerDriver(ledger, context),
        monkeypatch,
    )
    queue.finish()
    ledger.close()


# ---- the sites: a public call and the entry point it reaches ---------------------------

Scenario = Callable[[Env], Iterator[Any]]


@dataclass(frozen=True)
class Site:
    """``scenario(env)`` is a generator: it arranges, yields the call to fault, checks the
    residue, then yields once more while it still holds its objects (the test checks
    the ledger there: a caller's objects must still be alive and untouched)."""

    call: str  # the public call, as the report shows it
    entry: str  # where the fault goes
    claims: tuple[str, ...]
    scenario: Scenario
    routine: str | None = None  # CLError.routine, when it is not ``entry``
    skip: int = 0  # calls of ``entry`` that succeed before the fault

    @property
    def codes(self) -> tuple[str, ...]:
        return ENTRY_POINTS[self.entry][1]

    @property
    def returns_handle(self) -> bool:
        return returns_handle(self.entry)


SITES: list[Site] = []


def site(
    call: str, entry: str, *claims: str, routine: str | None = None, skip: int = 0
) -> Callable[[Scenario], Scenario]:
    def register(scenario: Scenario) -> Scenario:
        SITES.append(Site(call, entry, claims, scenario, routine, skip))
        return scenario

    return register


PERF, PRIORITY = "cl_qcom_perf_hint", "cl_qcom_priority_hint"
RECORDABLE, PROTECTED = "cl_qcom_recordable_queues", "cl_qcom_protected_context"
FROM_IMAGE, HOST_PTR = "cl_qcom_create_buffer_from_image", "cl_qcom_ext_host_ptr"


def _hinted_contexts() -> set[int]:
    """The contexts qcom_ext keeps hint state for (facts of their _context_cache entries)."""
    return {h for h in live_handles() if context_module._lookup(h) is not None}


def _no_new_contexts(before: set[int]) -> None:
    assert _hinted_contexts() <= before, "a failed create_context left its state"


@site("create_context(perf_hint, priority_hint)", "clCreateContext", PERF, PRIORITY)
def _context_with_hints(env: Env):
    before = _hinted_contexts()
    yield lambda: qcom_ext.create_context(env.device, perf_hint="high", priority_hint="low")
    _no_new_contexts(before)
    yield


@site("create_context(protected=True)", "clCreateContext", PROTECTED)
def _protected_context(env: Env):
    before = _hinted_contexts()
    yield lambda: qcom_ext.create_context(env.device, protected=True)
    _no_new_contexts(before)
    yield


@site("set_perf_hint", "clSetPerfHintQCOM", PERF)
def _set_perf_hint(env: Env):
    context = cl.Context([env.device])  # a plain context: qcom_ext keeps no state for it
    yield lambda: qcom_ext.set_perf_hint(context, "low")
    assert context_module._lookup(context.int_ptr) is None
    assert qcom_ext.context_info(context) == ContextInfo()
    yield


@site(
    "create_queue(priority, throttle)",
    "clCreateCommandQueueWithProperties",
    "cl_khr_priority_hints",
    "cl_khr_throttle_hints",
)
def _queue_with_hints(env: Env):
    yield lambda: qcom_ext.create_queue(env.context, priority="high", throttle="low")
    yield


@site("create_queue(recordable=True)", "clCreateCommandQueue", RECORDABLE)
def _recordable_queue(env: Env):
    yield lambda: qcom_ext.create_queue(env.context, recordable=True)
    yield


def _record(env: Env, rec: Recording, *args: Any) -> Recording:
    with rec:
        rec.enqueue(env.kernel, (N,), None, *(args or (_buffer(env), np.int32(1))))
    return rec


def _buffer(env: Env) -> cl.Buffer:
    return cl.Buffer(env.context, cl.mem_flags.READ_WRITE, N * 4)


def _holds_nothing(rec: Recording) -> None:
    backend = rec._backend
    assert getattr(backend, "_queue", None) is None
    assert getattr(backend, "_recording", None) is None


def _failed_begin(env: Env):
    rec = Recording(env.context)
    assert rec.path == "native"
    yield rec.__enter__
    assert rec._state == "new"
    _holds_nothing(rec)
    _record(env, rec).replay(env.queue).wait()  # the same Recording records after all
    rec.release()
    yield


site(
    "Recording: with rec (recordable queue)",
    "clCreateCommandQueue",
    RECORDABLE,
    routine="clCreateCommandQueue(CL_QUEUE_RECORDABLE_QCOM)",
)(_failed_begin)
site("Recording: with rec (new recording)", "clNewRecordingQCOM", RECORDABLE)(_failed_begin)


@site(
    "Recording.enqueue",
    "clEnqueueNDRangeKernel",
    RECORDABLE,
    routine="clEnqueueNDRangeKernel (recording)",
)
def _failed_enqueue(env: Env):
    rec = Recording(env.context)
    yield lambda: _record(env, rec)
    assert rec._state == "released"  # leaving the with block on an error released it
    yield


@site("Recording: end of with rec", "clEndRecordingQCOM", RECORDABLE)
def _failed_end(env: Env):
    rec = Recording(env.context)
    rec.__enter__()
    rec.enqueue(env.kernel, (N,), None, _buffer(env), np.int32(1))
    yield lambda: rec.__exit__(None, None, None)
    assert rec._state == "released"
    with pytest.raises(RecordingStateError):
        rec.replay(env.queue)
    yield


@site("Recording.replay", "clEnqueueRecordingQCOM", RECORDABLE)
def _failed_replay(env: Env):
    rec = _record(env, Recording(env.context))
    yield lambda: rec.replay(env.queue, args={(0, 1): np.int32(5)})
    assert rec._state == "ready"
    rec.replay(env.queue).wait()  # it still replays, sending the failed update back
    assert env.fake.recordings.replays[-1]["values"] == {(0, 1): struct.pack("<i", 1)}
    rec.release()
    yield


@site("Recording.replay (SVM update)", "clEnqueueRecordingSVMQCOM", RECORDABLE)
def _failed_svm_replay(env: Env):
    flags = cl.svm_mem_flags.READ_WRITE
    first, second = (cl.SVM(cl.svm_empty(env.context, flags, N, np.int32)) for _ in "ab")
    rec = _record(env, Recording(env.context), first, np.int32(1))
    yield lambda: rec.replay(env.queue, args={(0, 0): second})
    assert rec._state == "ready"
    rec.replay(env.queue, args={(0, 0): second}).wait()
    rec.release()
    yield


@site("Recording.release", "clReleaseRecordingQCOM", RECORDABLE)
def _failed_release(env: Env):
    rec = _record(env, Recording(env.context))
    yield rec.release
    assert rec._state == "released"
    _holds_nothing(rec)
    rec.release()  # idempotent: no second release call reaches the driver
    yield


def _weight_image(env: Env):
    yield lambda: WeightImage(env.context, [[1, 2, 1], [2, 4, 2], [1, 2, 1]], center=(1, 1))
    yield


ACCELERATED = "cl_qcom_accelerated_image_ops"
site("WeightImage (format count)", "clGetSupportedImageFormats", ACCELERATED)(_weight_image)
site("WeightImage (format list)", "clGetSupportedImageFormats", ACCELERATED, skip=1)(_weight_image)
site("WeightImage", "clCreateImage", ACCELERATED)(_weight_image)


def _caller_image(env: Env) -> cl.Image:
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)
    image = cl.create_image(env.context, cl.mem_flags.READ_WRITE, fmt, (16, 8))
    env.ledger.real("mem", ffi.cast("cl_mem", image.int_ptr), "the caller's image", owned=False)
    return image


def _buffer_from_image(env: Env):
    image = _caller_image(env)  # the caller's: qcom_ext must not release it
    yield lambda: buffer_from_image(image)
    yield


site("buffer_from_image", "clCreateBufferFromImageQCOM", FROM_IMAGE)(_buffer_from_image)
site("buffer_from_image (pitch query)", "clGetDeviceImageInfoQCOM", FROM_IMAGE)(_buffer_from_image)


def _native_image_with_buffer(env: Env):
    made = image_buffer_module._new_image

    def new_image(*args):  # qcom_ext's own image: it must release it when the pair fails
        image = made(*args)
        env.ledger.real("mem", ffi.cast("cl_mem", image.int_ptr), "image_with_buffer's image")
        return image

    env.monkeypatch.setattr(image_buffer_module, "_new_image", new_image)
    yield lambda: image_with_buffer(env.context, (16, 8), RGBA8)
    yield


site("image_with_buffer", "clCreateBufferFromImageQCOM", FROM_IMAGE)(_native_image_with_buffer)
site("image_with_buffer (pitch query)", "clGetDeviceImageInfoQCOM", FROM_IMAGE)(
    _native_image_with_buffer
)


def _khr_image_with_buffer(env: Env):
    yield lambda: image_with_buffer(env.context, (16, 8), RGBA8)
    yield


KHR_FROM_BUFFER = "cl_khr_image2d_from_buffer"
site("image_with_buffer (khr: buffer)", "clCreateBuffer", KHR_FROM_BUFFER)(_khr_image_with_buffer)
site("image_with_buffer (khr: image over it)", "clCreateImage", KHR_FROM_BUFFER)(
    _khr_image_with_buffer
)


FD = object()  # stands for the memfd a scenario makes
# external memory: the public call -> (claimed extension, function, arguments after the context)
IMPORTS: dict[str, tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {
    "import_dmabuf": ("cl_qcom_dmabuf_host_ptr", qcom_ext.import_dmabuf, (FD,), {}),
    "import_dmabuf(protected=True)": (
        "cl_qcom_dmabuf_host_ptr",
        qcom_ext.import_dmabuf,
        (FD,),
        {"protected": True},
    ),
    "import_ion": ("cl_qcom_ion_host_ptr", qcom_ext.import_ion, (FD, 0x10000), {}),
    "import_ahardwarebuffer": (
        "cl_qcom_android_ahardwarebuffer_host_ptr",
        qcom_ext.import_ahardwarebuffer,
        (0x7000,),
        {},
    ),
    "import_android_native_buffer": (
        "cl_qcom_android_native_buffer_host_ptr",
        qcom_ext.import_android_native_buffer,
        (0x7000, 4096),
        {},
    ),
}


def _import(name: str, image: bool) -> Scenario:
    def scenario(env: Env):
        mappings = []
        mapped = external_memory.map_fd

        def map_fd(*args):
            mappings.append(mapped(*args))
            return mappings[-1]

        env.monkeypatch.setattr(external_memory, "map_fd", map_fd)
        fd = os.memfd_create("fault-injection")
        try:
            os.ftruncate(fd, 8192)
            _, function, args, kwargs = IMPORTS[name]
            args = tuple(fd if a is FD else a for a in args)
            if image:
                kwargs = {**kwargs, "image_format": RGBA8, "shape": (16, 16)}
            yield lambda: function(env.context, *args, **kwargs)
            assert all(m.closed for m in mappings), "a failed import left its host mapping"
            yield
        finally:
            os.close(fd)

    return scenario


for _name, (_ext, *_) in IMPORTS.items():
    site(_name, "clCreateBuffer", _ext, HOST_PTR)(_import(_name, image=False))
    site(f"{_name} (image)", "clCreateImage", _ext, HOST_PTR)(_import(_name, image=True))


@site("query_image_info", "clQueryImageInfoQCOM", "cl_qcom_extended_query_image_info")
def _query_image_info(env: Env):
    yield lambda: query_image_info(env.device, RGBA8, (64, 64))
    yield


@site("onchip_buffer", "clCreateBufferWithProperties", "cl_qcom_onchip_global_memory")
def _onchip(env: Env):
    yield lambda: onchip_buffer(env.context, 4096)
    yield


def _ml_versions(query: int):
    def scenario(env: Env):
        yield lambda: _clml.ml_interface_versions(env.caps.platform_id)
        # probe(), the public call, reports the failure instead of raising it
        env.faults.arm("clQueryMLInterfaceVersionsQCOM", "error", env.code, skip=query)
        clear_cache()
        caps = probe(env.caps.device_id)
        assert caps.limits.ml_interface_versions is None
        failed = f"clQueryMLInterfaceVersionsQCOM failed: {error_name(env.code)}"
        assert any(failed in problem for problem in caps.problems)
        yield

    return scenario


site("probe: CLML versions (count)", "clQueryMLInterfaceVersionsQCOM", "cl_qcom_ml_ops")(
    _ml_versions(0)
)
site("probe: CLML versions (list)", "clQueryMLInterfaceVersionsQCOM", "cl_qcom_ml_ops", skip=1)(
    _ml_versions(1)
)


@site("create_sampler(filter='bicubic')", "clCreateSampler", "cl_qcom_filter_bicubic")
def _bicubic_sampler(env: Env):
    yield lambda: qcom_ext.create_sampler(env.context, normalized=True, addressing="clamp")
    yield


# ---- the cases ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    site: Site
    mode: str  # error | null | handle
    code: str  # the injected code's name ("CL_SUCCESS" for null)

    @property
    def id(self) -> str:
        return f"{self.site.call} -> {self.site.entry}: {self.mode} {self.code}"

    @property
    def expected(self) -> int:
        return C.CL_INVALID_VALUE if self.mode == "null" else getattr(C, self.code)


def _cases() -> list[Case]:
    cases = []
    for s in SITES:
        cases += [Case(s, "error", code) for code in s.codes]
        if s.returns_handle:
            cases.append(Case(s, "null", "CL_SUCCESS"))
            cases += [Case(s, "handle", code) for code in s.codes]
    return cases


CASES = _cases()
SUMMARY = {
    "public functions and methods": len({re.split(r"[ (:]", s.call)[0] for s in SITES}),
    "sites (public call x entry point)": len(SITES),
    "entry points": len({s.entry for s in SITES}),
    "distinct error codes": len({c.code for c in CASES if c.mode == "error"}),
    "cases": len(CASES),
    "error cases": sum(c.mode == "error" for c in CASES),
    "NULL cases": sum(c.mode == "null" for c in CASES),
    "handle-with-error cases": sum(c.mode == "handle" for c in CASES),
}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault(case: Case, env: Env) -> None:
    s = case.site
    if s.entry == "clEnqueueRecordingSVMQCOM" and not env.device.svm_capabilities:
        pytest.skip(f"{env.caps.label} has no SVM")
    env.code = case.expected
    with env.native(s.claims):
        steps = s.scenario(env)
        call = next(steps)
        mark = env.ledger.mark()
        env.faults.arm(s.entry, case.mode, case.expected, s.skip)
        with pytest.raises(CLError) as raised:
            call()
        assert env.faults.fired == [s.entry], "the call did not reach the fault"
        error = raised.value
        assert (error.routine, error.code) == (s.routine or s.entry, case.expected)
        if case.mode == "null":
            assert "NULL" in str(error)
        assert env.ledger.problems(since=mark) == []  # the traceback still lives
        del raised, error
        next(steps)  # residue checks
        assert env.ledger.problems() == []  # everything the stand-ins ever made
        steps.close()


@pytest.mark.parametrize("first", ["clEndRecordingQCOM", "the caller's error"])
def test_a_failing_cleanup_does_not_hide_the_first_error(env: Env, first: str) -> None:
    """Leaving ``with rec`` on an error releases the recording; a release that fails then
    must not replace that error, and every handle is given back all the same."""
    with env.native((RECORDABLE,)):
        rec = Recording(env.context)
        env.faults.arm("clReleaseRecordingQCOM", "error", C.CL_OUT_OF_RESOURCES)
        if first == "clEndRecordingQCOM":
            env.faults.arm(first, "error", C.CL_INVALID_OPERATION)
            with pytest.raises(CLError) as raised:
                _record(env, rec)
            assert (raised.value.routine, raised.value.code) == (first, C.CL_INVALID_OPERATION)
        else:
            with pytest.raises(ValueError, match=first), rec:
                rec.enqueue(env.kernel, (N,), None, _buffer(env), np.int32(1))
                raise ValueError(first)
        assert "clReleaseRecordingQCOM" in env.faults.fired
        assert rec._state == "released"
        assert env.ledger.problems() == []


def test_summary_counts_every_site() -> None:
    assert SUMMARY["entry points"] == len(ENTRY_POINTS)  # no entry point without a site
    handle_sites = [s for s in SITES if s.returns_handle]
    assert SUMMARY["NULL cases"] == len(handle_sites)
    assert SUMMARY["cases"] == sum(len(s.codes) for s in SITES) + sum(
        len(s.codes) + 1 for s in handle_sites
    )


def table() -> str:
    """The markdown table of entry points x codes (``python tests/...py`` prints it)."""
    lines = [
        "| entry point | public calls | codes | cases | source of the codes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for entry, (source, codes) in ENTRY_POINTS.items():
        calls = [s.call for s in SITES if s.entry == entry]
        cases = sum(c.site.entry == entry for c in CASES)
        lines.append(f"| `{entry}` | {', '.join(calls)} | {len(codes)} | {cases} | {source} |")
    lines.append("")
    lines += [f"* {name}: {value}" for name, value in SUMMARY.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
