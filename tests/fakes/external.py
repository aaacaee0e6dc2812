"""A fake driver for the Khronos external-memory imports (see tests/fakes/__init__.py).

:class:`FakeExternalDriver` is a :class:`fakes.memory.FakeMemDriver` (a fake Adreno 740,
its extension string edited per test) whose substitutes also stand in for
``clCreateBufferWithProperties`` / ``clCreateImageWithProperties`` (recording the whole
``cl_mem_properties`` list, the flags, size, format and descriptor a driver would read),
the acquire and release commands of ``cl_khr_external_memory`` and the queue they run
on, and the info queries that say what a driver inferred from an AHardwareBuffer.

The fake keeps the ownership rule of the specification: a successful dma-buf import owns
the fd it was given (the fake closes it when the memory object is released); a failed
one does not (the caller must close it). ``owned`` maps each live handle to its fd, so a
test can see that nothing is closed twice and nothing is left open.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from qcom_ext.binding.lib import C, ffi

from .driver import addr, answer_info, mem_properties, raw
from .memory import CTX, FakeMemDriver, decode_desc

KHR_DMA_BUF = "cl_khr_external_memory cl_khr_external_memory_dma_buf"
KHR_AHB = "cl_khr_external_memory cl_khr_external_memory_android_hardware_buffer"
QUEUE = 0xD0


def properties(pointer) -> list[int]:
    """The ``cl_mem_properties`` list up to its terminating 0 (the pairs, flattened)."""
    return list(mem_properties(pointer)[:-1])


@dataclass
class Import:
    """One clCreate*WithProperties call, as the driver saw it."""

    routine: str
    properties: list[int]
    flags: int
    size: int | None = None
    host_ptr: int = 0
    format: tuple[int, int] | None = None
    desc: dict | None = None
    fd_target: tuple[int, int] | None = None  # (st_dev, st_ino) behind a dma-buf fd
    commands: list = field(default_factory=list)


class FakeExternalDriver(FakeMemDriver):
    """``with FakeExternalDriver(extra=KHR_DMA_BUF, drop="cl_qcom_dmabuf_host_ptr")``.

    ``acquire_status`` makes the acquire command fail; ``inferred_size`` and
    ``inferred_image`` (order, data type, width, height) are what the AHardwareBuffer
    "holds". ``commands`` lists ``(routine, queue, [mem handles])`` in call order.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.imports: list[Import] = []
        self.commands: list[tuple] = []
        self.owned: dict[int, int] = {}  # live handle -> the fd its import owns
        self.acquire_status = 0
        self.inferred_size = 65536
        self.inferred_image = (C.CL_RGBA, C.CL_UNORM_INT8, 64, 32)

    def _imported(self, call: Import, errcode):
        self.imports.append(call)
        self.buffers.append(call)  # one handle counter with the plain creates
        handle = self._handle(errcode)
        fd = self._fd(call.properties)
        if handle != ffi.NULL and fd is not None:
            call.fd_target = _target(fd)
            self.owned[addr(handle)] = fd  # a successful import owns the fd
        elif fd is not None:
            call.fd_target = _target(fd)
        return handle

    @staticmethod
    def _fd(props: list[int]) -> int | None:
        pairs = dict(zip(props[::2], props[1::2], strict=True))
        return pairs.get(C.CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR)

    def _create_buffer_props(self, ctx, props, flags, size, host_ptr, errcode):
        assert addr(ctx) == CTX
        call = Import("clCreateBufferWithProperties", properties(props), flags, size)
        call.host_ptr = addr(host_ptr)
        return self._imported(call, errcode)

    def _create_image_props(self, ctx, props, flags, fmt, desc, host_ptr, errcode):
        assert addr(ctx) == CTX
        call = Import("clCreateImageWithProperties", properties(props), flags)
        call.host_ptr = addr(host_ptr)
        call.format = None if fmt == ffi.NULL else struct.unpack("<II", raw(fmt, 8))
        call.desc = None if desc == ffi.NULL else decode_desc(desc)
        return self._imported(call, errcode)

    def _queue(self, ctx, device, props, errcode):
        self.commands.append(("clCreateCommandQueueWithProperties", addr(ctx), addr(device)))
        errcode[0] = 0
        return ffi.cast("cl_command_queue", QUEUE)

    def _acquire(self, queue, count, mems, waits, wait_list, event):
        handles = [addr(mems[i]) for i in range(count)]
        self.commands.append(("acquire", addr(queue), handles, waits, event == ffi.NULL))
        return self.acquire_status

    def _release_external(self, queue, count, mems, waits, wait_list, event):
        handles = [addr(mems[i]) for i in range(count)]
        self.commands.append(("release", addr(queue), handles, waits, event == ffi.NULL))
        return 0

    def _finish(self, queue):
        self.commands.append(("clFinish", addr(queue)))
        return 0

    def _release_queue(self, queue):
        self.commands.append(("clReleaseCommandQueue", addr(queue)))
        return 0

    def _release(self, mem):
        fd = self.owned.pop(addr(mem), None)
        if fd is not None:
            os.close(fd)  # the driver lets go of the fd it owned
        return super()._release(mem)

    def _mem_info(self, mem, param, size, value, size_ret):
        if param != C.CL_MEM_SIZE:
            return C.CL_INVALID_VALUE
        return answer_info(struct.pack("<Q", self.inferred_size), size, value, size_ret)

    def _image_info(self, mem, param, size, value, size_ret):
        order, data_type, width, height = self.inferred_image
        table = {
            C.CL_IMAGE_FORMAT: struct.pack("<II", order, data_type),
            C.CL_IMAGE_WIDTH: struct.pack("<Q", width),
            C.CL_IMAGE_HEIGHT: struct.pack("<Q", height),
        }
        if param not in table:
            return C.CL_INVALID_VALUE
        return answer_info(table[param], size, value, size_ret)

    def substitutes(self) -> dict:
        found = super().substitutes()
        found.update(
            clCreateBufferWithProperties=self._create_buffer_props,
            clCreateImageWithProperties=self._create_image_props,
            clCreateCommandQueueWithProperties=self._queue,
            clEnqueueAcquireExternalMemObjectsKHR=self._acquire,
            clEnqueueReleaseExternalMemObjectsKHR=self._release_external,
            clFinish=self._finish,
            clReleaseCommandQueue=self._release_queue,
            clGetMemObjectInfo=self._mem_info,
            clGetImageInfo=self._image_info,
        )
        return found


def _target(fd: int) -> tuple[int, int]:
    """What an fd refers to (the fake reads it while the call runs, as a driver would)."""
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


def open_fds() -> set[int]:
    """The process's open file descriptors (Linux)."""
    return {int(name) for name in os.listdir("/proc/self/fd")}
