"""The native backend of :class:`qcom_ext.Recording`: ``cl_qcom_recordable_queues``.

Protocol (qcom-extensions.md §3, as the Qualcomm sample, MNN and TVM use it): a
private queue made with ``clCreateCommandQueue(ctx, dev, CL_QUEUE_RECORDABLE_QCOM)``,
``clNewRecordingQCOM`` on it, then per dispatch ``clSetKernelArg`` and
``clEnqueueNDRangeKernel`` on that queue, ``clEndRecordingQCOM``; each replay is one
``clEnqueueRecordingQCOM`` on the caller's in-order queue with ``cl_array_arg_qcom`` /
``cl_offset_qcom`` / ``cl_workgroup_qcom`` update arrays (``clEnqueueRecordingSVMQCOM``
when an update or revert is an SVM pointer). ``dispatch_index`` is the position of
the ``enqueue`` call.

Updates last one replay on every path. The reference does not say whether the driver
keeps an update for later replays, so any value a previous replay changed is sent
back with its recorded value until the driver is known to hold it again.
"""

from __future__ import annotations

from typing import Any

import pyopencl as cl

from qcom_ext.binding.lib import C, check, check_handle, driver, ffi
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import CLError, ExtensionUnavailable
from qcom_ext.ext.recording.args import Dispatch, KernelArg, Updates
from qcom_ext.ext.recording.khr import _cast_events, wrap_event

__all__ = ["NativeBackend", "c_arg", "set_kernel_arg"]

_FUNCTIONS = (
    "clNewRecordingQCOM",
    "clEndRecordingQCOM",
    "clReleaseRecordingQCOM",
    "clEnqueueRecordingQCOM",
)


def c_arg(arg: KernelArg) -> tuple[int, Any]:
    """``(arg_size, arg_value)`` as ``clSetKernelArg`` takes them; keep the cdata alive."""
    if arg.kind == "mem":
        return arg.size, ffi.new("cl_mem *", ffi.cast("cl_mem", arg.handle))
    if arg.kind == "null":
        return arg.size, ffi.new("cl_mem *")
    if arg.kind == "sampler":
        return arg.size, ffi.new("cl_sampler *", ffi.cast("cl_sampler", arg.handle))
    if arg.kind == "local":
        return arg.size, ffi.NULL
    if arg.kind == "svm":  # cl_array_arg_qcom of an SVM argument: size 0, the pointer itself
        return 0, ffi.cast("void *", arg.handle)
    return arg.size, ffi.from_buffer(arg.raw)


def set_kernel_arg(kernel: Any, index: int, arg: KernelArg) -> None:
    """``clSetKernelArg`` (``clSetKernelArgSVMPointer`` for SVM) through cffi."""
    if arg.kind == "svm":
        status = driver.clSetKernelArgSVMPointer(kernel, index, ffi.cast("void *", arg.handle))
        check(status, "clSetKernelArgSVMPointer")
    else:
        size, value = c_arg(arg)
        check(driver.clSetKernelArg(kernel, index, size, value), "clSetKernelArg")


def _arg_arrays(sent: Updates, keep: list) -> list[tuple[int, Any]]:
    """(count, cl_array_arg_qcom[]) of the plain and of the SVM argument updates."""
    arrays = []
    for svm in (False, True):
        items = [(k, v) for k, v in sent.args.items() if (v.kind == "svm") == svm]
        array = ffi.new("cl_array_arg_qcom[]", len(items)) if items else ffi.NULL
        for item, ((d, a), arg) in zip(array, items, strict=True) if items else ():
            item.dispatch_index, item.arg_index = d, a
            item.arg_size, value = c_arg(arg)
            item.arg_value = value
            keep.append(value)
        arrays.append((len(items), array))
    return arrays


def _offsets(sent: Updates) -> Any:
    """The cl_offset_qcom[] of the global-offset updates (NULL without any)."""
    if not sent.global_offset:
        return ffi.NULL
    offsets = ffi.new("cl_offset_qcom[]", len(sent.global_offset))
    for item, (d, off) in zip(offsets, sent.global_offset.items(), strict=True):
        item.dispatch_index = d
        item.offsets = (*off, 0, 0, 0)[:3]
    return offsets


def _workgroups(table: dict[int, tuple[int, ...]], keep: list) -> tuple[int, Any]:
    if not table:
        return 0, ffi.NULL
    array = ffi.new("cl_workgroup_qcom[]", len(table))
    for item, (d, sizes) in zip(array, table.items(), strict=True):
        item.dispatch_index = d
        item.workgroup_size = sizes_c = ffi.new("size_t[]", sizes)
        keep.append(sizes_c)
    return len(table), array


class NativeBackend:
    """One recording on a private recordable queue, replayed with update arrays."""

    path = "native"

    def __init__(self, caps: DeviceCaps, context: cl.Context, device: cl.Device) -> None:
        fns = shared.require_all(caps, "cl_qcom_recordable_queues", _FUNCTIONS)
        self._new, self._end, self._release, self._enqueue = (fns[n] for n in _FUNCTIONS)
        self._enqueue_svm = driver.extension_function(
            caps.platform_id, "clEnqueueRecordingSVMQCOM"
        )
        self.max_dispatches = caps.limits.recordable_queue_max_size
        self.last_path = self.path
        self._device_name = caps.device_name
        self._context, self._device = context, device
        self._queue: Any = None
        self._recording: Any = None
        self._kernels: list[cl.Kernel] = []
        self._dispatches: list[Dispatch] = []
        self._dirty: dict[str, set] = {
            "args": set(),
            "global_size": set(),
            "local_size": set(),
            "global_offset": set(),
        }
        self._event = ffi.new("cl_event *")

    def begin(self) -> None:
        """The private recordable queue and a recording on it; on failure neither is kept
        (the Recording can begin again)."""
        err = ffi.new("cl_int *")
        queue = driver.clCreateCommandQueue(
            ffi.cast("cl_context", self._context.int_ptr),
            ffi.cast("cl_device_id", self._device.int_ptr),
            C.CL_QUEUE_RECORDABLE_QCOM,
            err,
        )
        check_handle(
            queue,
            err,
            "clCreateCommandQueue(CL_QUEUE_RECORDABLE_QCOM)",
            release=driver.clReleaseCommandQueue,
        )
        try:
            recording = self._new(queue, err)
            check_handle(recording, err, "clNewRecordingQCOM", release=self._release)
        except BaseException:
            driver.clReleaseCommandQueue(queue)
            raise
        self._queue, self._recording = queue, recording

    def add(self, dispatch: Dispatch) -> None:
        kernel = dispatch.private_kernel(set_args=False)
        handle = ffi.cast("cl_kernel", kernel.int_ptr)
        for i, arg in enumerate(dispatch.args):
            set_kernel_arg(handle, i, arg)
        gws = ffi.new("size_t[]", dispatch.global_size)
        lws = ffi.NULL if dispatch.local_size is None else ffi.new("size_t[]", dispatch.local_size)
        off = (
            ffi.NULL
            if dispatch.global_offset is None
            else ffi.new("size_t[]", dispatch.global_offset)
        )
        status = driver.clEnqueueNDRangeKernel(
            self._queue, handle, len(dispatch.global_size), off, gws, lws, 0, ffi.NULL, ffi.NULL
        )
        check(status, "clEnqueueNDRangeKernel (recording)")
        self._kernels.append(kernel)
        self._dispatches.append(dispatch)

    def end(self) -> None:
        check(self._end(self._recording), "clEndRecordingQCOM")

    def _with_reverts(self, updates: Updates) -> Updates:
        """The updates plus recorded values for whatever an earlier replay changed."""
        out = Updates(
            dict(updates.args),
            dict(updates.global_size),
            dict(updates.local_size),
            dict(updates.global_offset),
        )
        for d, a in self._dirty["args"]:
            out.args.setdefault((d, a), self._dispatches[d].args[a])
        for d in self._dirty["global_size"]:
            out.global_size.setdefault(d, self._dispatches[d].global_size)
        for d in self._dirty["local_size"]:
            out.local_size.setdefault(d, self._dispatches[d].local_size)  # type: ignore[arg-type]
        for d in self._dirty["global_offset"]:
            dims = len(self._dispatches[d].global_size)
            out.global_offset.setdefault(d, self._dispatches[d].global_offset or (0,) * dims)
        return out

    def _changed(self, updates: Updates) -> dict[str, set]:
        ds = self._dispatches
        return {
            "args": {k for k, v in updates.args.items() if not ds[k[0]].args[k[1]].same_as(v)},
            "global_size": {d for d, v in updates.global_size.items() if v != ds[d].global_size},
            "local_size": {d for d, v in updates.local_size.items() if v != ds[d].local_size},
            "global_offset": {
                d
                for d, v in updates.global_offset.items()
                if v != (ds[d].global_offset or (0,) * len(ds[d].global_size))
            },
        }

    def replay(self, queue: cl.CommandQueue, updates: Updates, wait_for: Any) -> cl.Event:
        sent = self._with_reverts(updates) if any(self._dirty.values()) else updates
        svm = any(v.kind == "svm" for v in sent.args.values())
        if svm and self._enqueue_svm is None:
            raise ExtensionUnavailable(
                "cl_qcom_recordable_queues",
                self._device_name,
                "the driver lacks clEnqueueRecordingSVMQCOM, needed to update SVM arguments",
            )
        keep: list[Any] = []  # every buffer the driver reads, alive until the call returns
        (n_plain, plain), (n_svm, svm_array) = _arg_arrays(sent, keep)
        offsets = _offsets(sent)
        sizes = (*_workgroups(sent.global_size, keep), *_workgroups(sent.local_size, keep))
        n_events, events = _cast_events(wait_for)
        q = ffi.cast("cl_command_queue", queue.int_ptr)
        head = (q, self._recording, n_plain, plain)
        tail = (len(sent.global_offset), offsets, *sizes)
        done = (n_events, events, self._event)
        if svm:
            routine = "clEnqueueRecordingSVMQCOM"
            status = self._enqueue_svm(*head, n_svm, svm_array, *tail, 0, ffi.NULL, *done)
        else:
            routine = "clEnqueueRecordingQCOM"
            status = self._enqueue(*head, *tail, *done)
        if status != 0:  # the driver may hold any of these now: send them back next time
            for name in self._dirty:
                self._dirty[name].update(getattr(sent, name))
            raise CLError(routine, status)
        self._dirty = self._changed(sent)
        return wrap_event(self._event[0])

    def release(self) -> None:
        """Release the recording, then its queue (even when the first release fails; the
        first failure is raised once both were given back)."""
        recording, self._recording = self._recording, None
        queue, self._queue = self._queue, None
        self._kernels.clear()
        self._dispatches.clear()
        statuses = []
        if recording is not None:
            statuses.append(("clReleaseRecordingQCOM", self._release(recording)))
        if queue is not None:
            statuses.append(("clReleaseCommandQueue", driver.clReleaseCommandQueue(queue)))
        for routine, status in statuses:
            check(status, routine)
