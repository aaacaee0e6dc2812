"""A fake Adreno recording driver and a shared pipeline, for recording tests.

:class:`FakeRecordingDriver` installs substitutes for the ``cl_qcom_recordable_queues``
entry points (and for ``clSetKernelArg`` / ``clEnqueueNDRangeKernel``, to see what is
recorded): ``with FakeRecordingDriver() as fake:``. It decodes every update array from
its raw bytes, as a C driver would read it (LP64 layouts of qcom-extensions.md §3), and
replays the recorded launches on the real queue it is given, so the native marshalling
is checked end to end by results.
"""

from __future__ import annotations

import dataclasses
import struct
from types import MappingProxyType
from typing import Any

import numpy as np
import pyopencl as cl

from qcom_ext import DeviceCaps, ExtensionStatus
from qcom_ext.binding.lib import C, driver, ffi

from .driver import addr, raw

EXT = "cl_qcom_recordable_queues"


def native_caps(caps: DeviceCaps, max_size: int | None = 64) -> DeviceCaps:
    """``caps`` of a real device, claiming the native recording path."""
    statuses = dict(caps.statuses)
    statuses[EXT] = ExtensionStatus("native", "claimed by the test's fake driver")
    limits = dataclasses.replace(caps.limits, recordable_queue_max_size=max_size)
    return dataclasses.replace(caps, statuses=MappingProxyType(statuses), limits=limits)


@dataclasses.dataclass
class FakeDispatch:
    kernel: int
    args: dict[int, tuple]  # index -> ("bytes", size, data | None) or ("svm", pointer)
    dims: int
    offset: tuple[int, ...] | None
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None


@dataclasses.dataclass
class FakeRecording:
    queue: int
    dispatches: list[FakeDispatch] = dataclasses.field(default_factory=list)
    ended: bool = False
    refs: int = 1


class FakeRecordingDriver:
    """Records launches made on a recordable queue; replays them with the updates.

    ``persistent=True`` models a driver that keeps an update for later replays
    (the reference does not say which kind Adreno is); the results must not change.
    """

    def __init__(self, persistent: bool = False) -> None:
        self.persistent = persistent
        names = (
            "clSetKernelArg",
            "clSetKernelArgSVMPointer",
            "clEnqueueNDRangeKernel",
            "clCreateCommandQueue",
            "clReleaseCommandQueue",
        )
        self.real = {name: driver.function(name) for name in names}
        self.kernel_args: dict[int, dict[int, tuple]] = {}
        self.recordable_queues: set[int] = set()
        self.recordings: dict[int, FakeRecording] = {}
        self.replays: list[dict[str, Any]] = []  # decoded update arrays, one per replay
        self.queue_properties: list[int] = []
        self._next = 0xBEE0
        self._blocks: list[Any] = []  # installed substitutes, innermost last

    def substitutes(self) -> dict[str, Any]:
        """Entry point name -> substitute."""
        return {
            "clCreateCommandQueue": self.create_queue,
            "clReleaseCommandQueue": self.release_queue,
            "clSetKernelArg": self.set_arg,
            "clSetKernelArgSVMPointer": self.set_arg_svm,
            "clEnqueueNDRangeKernel": self.enqueue_ndrange,
            "clNewRecordingQCOM": self.new_recording,
            "clEndRecordingQCOM": self.end_recording,
            "clRetainRecordingQCOM": self.retain_recording,
            "clReleaseRecordingQCOM": self.release_recording,
            "clEnqueueRecordingQCOM": self.enqueue_recording,
            "clEnqueueRecordingSVMQCOM": self.enqueue_recording_svm,
        }

    def __enter__(self) -> FakeRecordingDriver:
        block = driver.substitute(**self.substitutes())
        self._blocks.append(block)
        block.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._blocks.pop().__exit__(*exc)

    # ---- queues and arguments ----
    def create_queue(self, context, device, properties, errcode):
        self.queue_properties.append(properties)
        queue = self.real["clCreateCommandQueue"](
            context, device, properties & ~C.CL_QUEUE_RECORDABLE_QCOM, errcode
        )
        if properties & C.CL_QUEUE_RECORDABLE_QCOM and errcode[0] == 0:
            self.recordable_queues.add(addr(queue))
        return queue

    def release_queue(self, queue):
        # the address may come back as an ordinary queue: forget it was recordable
        self.recordable_queues.discard(addr(queue))
        return self.real["clReleaseCommandQueue"](queue)

    def set_arg(self, kernel, index, size, value):
        data = None if value == ffi.NULL else raw(value, size)
        self.kernel_args.setdefault(addr(kernel), {})[index] = ("bytes", size, data)
        return self.real["clSetKernelArg"](kernel, index, size, value)

    def set_arg_svm(self, kernel, index, pointer):
        self.kernel_args.setdefault(addr(kernel), {})[index] = ("svm", addr(pointer))
        return self.real["clSetKernelArgSVMPointer"](kernel, index, pointer)

    def enqueue_ndrange(self, queue, kernel, dims, offset, gws, lws, n_events, events, event):
        if addr(queue) not in self.recordable_queues:
            return self.real["clEnqueueNDRangeKernel"](
                queue, kernel, dims, offset, gws, lws, n_events, events, event
            )
        open_ = [r for r in self.recordings.values() if r.queue == addr(queue) and not r.ended]
        if len(open_) != 1 or n_events or event != ffi.NULL:
            return C.CL_INVALID_OPERATION
        args = self.current_args(kernel)
        if args is None:
            return C.CL_INVALID_KERNEL_ARGS
        open_[0].dispatches.append(
            FakeDispatch(
                addr(kernel),
                args,
                dims,
                None if offset == ffi.NULL else tuple(offset[i] for i in range(dims)),
                tuple(gws[i] for i in range(dims)),
                None if lws == ffi.NULL else tuple(lws[i] for i in range(dims)),
            )
        )
        return 0

    def current_args(self, kernel) -> dict[int, tuple] | None:
        """The arguments set on ``kernel``, or None when one is unset.

        Arguments are seen by address; a kernel released earlier may have left
        entries at the same address (the CI once saw a 4-argument kernel's index 3
        replayed on a 3-argument kernel), so only this kernel's indices count.
        """
        num_args = cl.Kernel.from_int_ptr(addr(kernel)).num_args
        seen = self.kernel_args.get(addr(kernel), {})
        if any(index not in seen for index in range(num_args)):
            return None
        return {index: seen[index] for index in range(num_args)}

    # ---- recordings ----
    def new_recording(self, queue, errcode):
        if addr(queue) not in self.recordable_queues:
            errcode[0] = C.CL_INVALID_COMMAND_QUEUE
            return ffi.NULL
        self._next += 0x10
        self.recordings[self._next] = FakeRecording(addr(queue))
        errcode[0] = 0
        return ffi.cast("cl_recording_qcom", self._next)

    def end_recording(self, recording):
        rec = self.recordings.get(addr(recording))
        if rec is None or rec.ended:
            return C.CL_INVALID_OPERATION
        rec.ended = True
        return 0

    def retain_recording(self, recording):
        self.recordings[addr(recording)].refs += 1
        return 0

    def release_recording(self, recording):
        rec = self.recordings.get(addr(recording))
        if rec is None:
            return C.CL_INVALID_VALUE
        rec.refs -= 1
        if rec.refs == 0:
            del self.recordings[addr(recording)]
        return 0

    def enqueue_recording(
        self,
        queue,
        recording,
        n_args,
        args,
        n_off,
        offs,
        n_gwg,
        gwg,
        n_lwg,
        lwg,
        n_events,
        events,
        event,
    ):
        return self._replay(
            queue,
            recording,
            (n_args, args),
            (0, ffi.NULL),
            (n_off, offs),
            (n_gwg, gwg),
            (n_lwg, lwg),
            n_events,
            events,
            event,
        )

    def enqueue_recording_svm(
        self,
        queue,
        recording,
        n_args,
        args,
        n_svm,
        svm,
        n_off,
        offs,
        n_gwg,
        gwg,
        n_lwg,
        lwg,
        n_exec,
        exec_info,
        n_events,
        events,
        event,
    ):
        if n_exec:
            return C.CL_INVALID_VALUE
        return self._replay(
            queue,
            recording,
            (n_args, args),
            (n_svm, svm),
            (n_off, offs),
            (n_gwg, gwg),
            (n_lwg, lwg),
            n_events,
            events,
            event,
        )

    def _replay(self, queue, recording, args, svm, offs, gwg, lwg, n_events, events, event):
        rec = self.recordings.get(addr(recording))
        if rec is None or not rec.ended:
            return C.CL_INVALID_OPERATION
        if addr(queue) in self.recordable_queues:  # must be a different, live queue
            return C.CL_INVALID_COMMAND_QUEUE
        decoded = {
            "args": [
                struct.unpack("<IIQQ", raw(args[1], args[0] * 24)[i * 24 : i * 24 + 24])
                for i in range(args[0])
            ],
            "svm": [
                struct.unpack("<IIQQ", raw(svm[1], svm[0] * 24)[i * 24 : i * 24 + 24])
                for i in range(svm[0])
            ],
            "offsets": [
                struct.unpack("<I4xQQQ", raw(offs[1], offs[0] * 32)[i * 32 : i * 32 + 32])
                for i in range(offs[0])
            ],
            "global": [
                struct.unpack("<I4xQ", raw(gwg[1], gwg[0] * 16)[i * 16 : i * 16 + 16])
                for i in range(gwg[0])
            ],
            "local": [
                struct.unpack("<I4xQ", raw(lwg[1], lwg[0] * 16)[i * 16 : i * 16 + 16])
                for i in range(lwg[0])
            ],
            "events": n_events,
            "values": {},
        }
        base = rec.dispatches
        work = [dataclasses.replace(d, args=dict(d.args)) for d in base]
        for d, a, size, pointer in decoded["args"]:
            if d >= len(work) or a not in work[d].args:
                return C.CL_INVALID_VALUE
            data = None if pointer == 0 else raw(pointer, size)
            decoded["values"][(d, a)] = data
            work[d].args[a] = ("bytes", size, data)
        for d, a, size, pointer in decoded["svm"]:
            if d >= len(work) or size != 0:
                return C.CL_INVALID_VALUE
            work[d].args[a] = ("svm", pointer)
        for d, *offsets in decoded["offsets"]:
            work[d].offset = tuple(offsets[: work[d].dims])
        for key, field in (("global", "global_size"), ("local", "local_size")):
            for d, pointer in decoded[key]:
                sizes = ffi.cast("size_t *", pointer)
                setattr(work[d], field, tuple(sizes[i] for i in range(work[d].dims)))
        if self.persistent:
            rec.dispatches = work
        self.replays.append(decoded)
        return self._launch(queue, work, n_events, events, event)

    def _launch(self, queue, work, n_events, events, event):
        for i, d in enumerate(work):
            kernel = ffi.cast("cl_kernel", d.kernel)
            for index, value in d.args.items():
                if value[0] == "svm":
                    status = self.real["clSetKernelArgSVMPointer"](
                        kernel, index, ffi.cast("void *", value[1])
                    )
                else:
                    _, size, data = value
                    pointer = ffi.NULL if data is None else ffi.from_buffer(data)
                    status = self.real["clSetKernelArg"](kernel, index, size, pointer)
                if status:
                    return status
            off = ffi.NULL if d.offset is None else ffi.new("size_t[]", d.offset)
            lws = ffi.NULL if d.local_size is None else ffi.new("size_t[]", d.local_size)
            first, last = i == 0, i == len(work) - 1
            status = self.real["clEnqueueNDRangeKernel"](
                queue,
                kernel,
                d.dims,
                off,
                ffi.new("size_t[]", d.global_size),
                lws,
                n_events if first else 0,
                events if first else ffi.NULL,
                event if last else ffi.NULL,
            )
            if status:
                return status
        return 0


# ---- a pipeline exercising every kind of argument and update ----

PIPELINE_SOURCE = """
__kernel void scale_add(__global const int *src, __global int *dst, int mul, int add)
{ size_t i = get_global_id(0); dst[i] = src[i] * mul + add; }

__kernel void rotate_xor(__global const int *a, __global const int *b, __global int *out,
                         __local int *tmp)
{
    size_t i = get_global_id(0), l = get_local_id(0), n = get_local_size(0);
    tmp[l] = a[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = tmp[(l + 1) % n] ^ b[i];
}

__kernel void fill_index(__global int *dst, int base)
{ size_t i = get_global_id(0); dst[i] = base + (int)i; }

__kernel void grid(__global int *dst, int width, float scale)
{
    size_t x = get_global_id(0), y = get_global_id(1);
    dst[y * width + x] = (int)((float)(x * 1000 + y) * scale);
}
"""

N = 64


class Pipeline:
    """Buffers and kernels of a 5-dispatch recording, and a list of update steps."""

    def __init__(self, context: cl.Context) -> None:
        mf = cl.mem_flags
        self.context = context
        program = cl.Program(context, PIPELINE_SOURCE).build()
        self.kernels = {
            name: cl.Kernel(program, name)
            for name in ("scale_add", "rotate_xor", "fill_index", "grid")
        }
        rng = np.random.default_rng(7)
        self.src = cl.Buffer(
            context,
            mf.READ_ONLY | mf.COPY_HOST_PTR,
            hostbuf=rng.integers(-999, 999, N, dtype=np.int32),
        )
        self.other = cl.Buffer(
            context,
            mf.READ_ONLY | mf.COPY_HOST_PTR,
            hostbuf=rng.integers(-999, 999, N, dtype=np.int32),
        )
        self.outputs = [cl.Buffer(context, mf.READ_WRITE, N * 4) for _ in range(4)]
        self.grid_out = cl.Buffer(context, mf.READ_WRITE, 16 * 8 * 4)

    def dispatches(self) -> list[tuple]:
        """(kernel, global, local, args, offset) in dispatch_index order."""
        k, (o0, o1, o2, o3) = self.kernels, self.outputs
        return [
            (k["scale_add"], (N,), (16,), (self.src, o0, np.int32(3), np.int32(-5)), None),
            (k["rotate_xor"], (N,), (16,), (o0, self.src, o1, cl.LocalMemory(64)), None),
            (k["fill_index"], (N // 2,), None, (o2, np.int32(100)), (8,)),
            (k["scale_add"], (N,), (8,), (o1, o3, np.int32(-2), np.int32(9)), None),  # shared
            (k["grid"], (16, 8), (4, 2), (self.grid_out, np.int32(16), np.float32(0.5)), None),
        ]

    def steps(self) -> list[dict[str, Any]]:
        """Replay updates in order; each step's updates last that replay only."""
        return [
            {},
            {
                "args": {(0, 3): 7, (1, 1): self.other, (3, 2): np.int32(5)},
                "global_offset": {2: (16,)},
            },
            {},
            {
                "global_size": {0: (32,), 4: (8, 8)},
                "local_size": {1: (8,), 4: (2, 4)},
                "args": {(1, 3): cl.LocalMemory(32), (4, 2): np.float32(1.75)},
            },
            {"args": {(2, 0): self.outputs[3], (0, 2): -1}, "global_offset": {2: (0,)}},
            {},
        ]

    def reset(self, queue: cl.CommandQueue) -> None:
        for buf in (*self.outputs, self.grid_out):
            cl.enqueue_fill_buffer(queue, buf, np.int32(0), 0, buf.size)
        queue.finish()

    def read(self, queue: cl.CommandQueue) -> list[np.ndarray]:
        out = []
        for buf in (*self.outputs, self.grid_out):
            host = np.empty(buf.size // 4, np.int32)
            cl.enqueue_copy(queue, host, buf)
            out.append(host)
        return out

    def direct(self, queue: cl.CommandQueue, step: dict[str, Any]) -> None:
        """The step with plain pyopencl calls: what a replay must reproduce."""
        for d, (kernel, gws, lws, args, off) in enumerate(self.dispatches()):
            values = list(args)
            for (dd, a), value in step.get("args", {}).items():
                if dd == d:
                    values[a] = value if not isinstance(value, int) else type(args[a])(value)
            kernel.set_args(*values)
            cl.enqueue_nd_range_kernel(
                queue,
                kernel,
                step.get("global_size", {}).get(d, gws),
                step.get("local_size", {}).get(d, lws),
                step.get("global_offset", {}).get(d, off),
            )

    def record(self, rec: Any) -> None:
        with rec:
            for kernel, gws, lws, args, off in self.dispatches():
                rec.enqueue(kernel, gws, lws, *args, global_offset=off)

    def run_steps(self, rec: Any, queue: cl.CommandQueue) -> list[list[np.ndarray]]:
        results = []
        for step in self.steps():
            self.reset(queue)
            rec.replay(queue, **step).wait()
            results.append(self.read(queue))
        return results

    def expected(self, queue: cl.CommandQueue) -> list[list[np.ndarray]]:
        results = []
        for step in self.steps():
            self.reset(queue)
            self.direct(queue, step)
            queue.finish()
            results.append(self.read(queue))
        return results
