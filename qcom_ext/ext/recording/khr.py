"""The Khronos backend of :class:`qcom_ext.Recording`: one ``cl_khr_command_buffer``.

Dispatches are recorded with ``clCommandNDRangeKernelKHR``, each waiting on the sync
point of the one before (the command-buffer itself is out-of-order; the chain keeps
the in-order semantics of a recordable queue). A replay without updates is one
``clEnqueueCommandBufferKHR`` on the replay queue (passed as a substitute queue; a
driver that finds it incompatible gets a direct replay instead).

ABI by extension version: this backend calls only Create, NDRange, Finalize, Enqueue
and Release, whose positional ABI is the same in every version (NDRange's third
parameter was typed ``cl_ndrange_kernel_command_properties_khr *`` up to 0.9.4, also a
``cl_properties`` array), so the current ``_fn`` typedefs serve 0.9.0 (Debian pocl 3.1)
to 0.9.8; the ``_0_9_4_fn`` variants are for the commands whose ABI changed, which
are not recorded here. Before 0.9.8 a command-buffer cannot be enqueued while a
previous submission is pending unless it was created with
``CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR``: that flag is requested where the device
reports the capability, otherwise the previous submission is waited for.

Updates: ``cl_khr_command_buffer_mutable_dispatch`` is not used (no device here has
it), so a replay with any update runs through the direct replay backend. That is
cheaper than re-recording a command-buffer with the new values: on pocl 3.1 a
re-record costs 3.7 µs per dispatch against 1.7 µs for direct enqueues.
"""

from __future__ import annotations

from typing import Any

import pyopencl as cl

from qcom_ext.binding.lib import C, check, ffi
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import CLError
from qcom_ext.ext.recording.args import Dispatch, Updates
from qcom_ext.ext.recording.replay import ReplayBackend

__all__ = ["KhrBackend", "wrap_event"]

_FUNCTIONS = (
    "clCreateCommandBufferKHR",
    "clCommandNDRangeKernelKHR",
    "clFinalizeCommandBufferKHR",
    "clEnqueueCommandBufferKHR",
    "clReleaseCommandBufferKHR",
)
_CAPABILITY_SIMULTANEOUS = 0x4  # CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR (1 << 2)


def _version(text: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in (text or "0.9.0").split("."))
    except ValueError:
        return (0, 9, 0)


def _cast_events(wait_for: Any) -> tuple[int, Any]:
    if not wait_for:
        return 0, ffi.NULL
    events = [ffi.cast("cl_event", e.int_ptr) for e in wait_for]
    return len(events), ffi.new("cl_event[]", events)


def wrap_event(event: Any) -> cl.Event:
    """A pyopencl Event owning the reference an entry point returned."""
    return cl.Event.from_int_ptr(int(ffi.cast("intptr_t", event)), retain=False)


class KhrBackend:
    """Records into one command-buffer; replays it, or replays directly for updates."""

    path = "khr_command_buffer"

    def __init__(self, caps: DeviceCaps, queue: cl.CommandQueue) -> None:
        fns = shared.require_all(caps, "cl_khr_command_buffer", _FUNCTIONS)
        self._create, self._ndrange, self._finalize, self._enqueue, self._release = (
            fns[name] for name in _FUNCTIONS
        )
        version = _version(caps.extension_versions.get("cl_khr_command_buffer"))
        capabilities = caps.limits.command_buffer_capabilities or 0
        old = version < (0, 9, 8)  # the Pending state exists
        self.simultaneous = old and bool(capabilities & _CAPABILITY_SIMULTANEOUS)
        self._wait_previous = old and not self.simultaneous
        self._previous: cl.Event | None = None
        self._queue = queue
        self._handle: Any = None
        self._kernels: list[cl.Kernel] = []
        self._dispatches: list[Dispatch] = []
        self._direct: ReplayBackend | None = None
        self._direct_only = False  # a dispatch the command-buffer cannot hold
        self._sync = ffi.new("cl_sync_point_khr[2]")
        self._queues = ffi.new("cl_command_queue[1]")
        self._event = ffi.new("cl_event *")
        self.last_path = self.path

    def begin(self) -> None:
        properties = ffi.NULL
        if self.simultaneous:
            properties = ffi.new(
                "cl_command_buffer_properties_khr[]",
                [C.CL_COMMAND_BUFFER_FLAGS_KHR, C.CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0],
            )
        self._queues[0] = ffi.cast("cl_command_queue", self._queue.int_ptr)
        err = ffi.new("cl_int *")
        handle = self._create(1, self._queues, properties, err)
        check(err[0], "clCreateCommandBufferKHR")
        self._handle = handle

    def add(self, dispatch: Dispatch) -> None:
        if self._direct_only or any(arg.kind == "sampler" for arg in dispatch.args):
            # pocl 3.1 aborts (POclRetainSampler) on a sampler argument in a
            # command-buffer: such a recording replays directly, every time
            self._direct_only = True
            self._dispatches.append(dispatch)
            return
        kernel = dispatch.private_kernel()
        dims = len(dispatch.global_size)
        gws = ffi.new("size_t[]", dispatch.global_size)
        lws = ffi.NULL if dispatch.local_size is None else ffi.new("size_t[]", dispatch.local_size)
        off = (
            ffi.NULL
            if dispatch.global_offset is None
            else ffi.new("size_t[]", dispatch.global_offset)
        )
        first = not self._kernels
        status = self._ndrange(
            self._handle,
            ffi.NULL,
            ffi.NULL,
            ffi.cast("cl_kernel", kernel.int_ptr),
            dims,
            off,
            gws,
            lws,
            0 if first else 1,
            ffi.NULL if first else self._sync,
            self._sync + 1,
            ffi.NULL,
        )
        check(status, "clCommandNDRangeKernelKHR")
        self._sync[0] = self._sync[1]
        self._kernels.append(kernel)
        self._dispatches.append(dispatch)

    def end(self) -> None:
        if not self._direct_only:
            check(self._finalize(self._handle), "clFinalizeCommandBufferKHR")

    def _direct_backend(self) -> ReplayBackend:
        if self._direct is None:
            direct = ReplayBackend()  # its own kernels: never touched while a buffer runs
            for dispatch in self._dispatches:
                direct.add(dispatch)
            direct.end()
            self._direct = direct
        return self._direct

    def replay(self, queue: cl.CommandQueue, updates: Updates, wait_for: Any) -> cl.Event:
        if updates or self._direct_only:
            self.last_path = "replay"
            return self._direct_backend().replay(queue, updates, wait_for)
        if self._previous is not None:
            self._previous.wait()
            self._previous = None
        count, events = _cast_events(wait_for)
        same = queue is self._queue
        if not same:
            self._queues[0] = ffi.cast("cl_command_queue", queue.int_ptr)
        status = self._enqueue(
            0 if same else 1,
            ffi.NULL if same else self._queues,
            self._handle,
            count,
            events,
            self._event,
        )
        if status == C.CL_INCOMPATIBLE_COMMAND_QUEUE_KHR:
            self.last_path = "replay"
            return self._direct_backend().replay(queue, updates, wait_for)
        check(status, "clEnqueueCommandBufferKHR")
        self.last_path = self.path
        event = wrap_event(self._event[0])
        if self._wait_previous:
            self._previous = event
        return event

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if self._direct is not None:
            self._direct.release()
            self._direct = None
        self._kernels.clear()
        self._dispatches.clear()
        self._previous = None
        if handle is not None:
            status = self._release(handle)
            if status != 0:
                raise CLError("clReleaseCommandBufferKHR", status)
