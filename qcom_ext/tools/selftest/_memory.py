"""External memory for the checks that import it: a dma-buf where the device imports
dma-bufs natively (from a Linux dma-buf heap), a memfd where the fallback maps one.

>>> DMA_HEAP_IOCTL_ALLOC == 0xC0184800   # _IOWR('H', 0, struct dma_heap_allocation_data)
True
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator

from qcom_ext.tools.selftest._registry import Env, Skip

__all__ = ["DMA_HEAPS", "dma_buf"]

DMABUF = "cl_qcom_dmabuf_host_ptr"
#: Heaps tried in order (the generic system heap; Qualcomm kernels also name theirs).
DMA_HEAPS = ("/dev/dma_heap/system", "/dev/dma_heap/qcom,system")
# struct dma_heap_allocation_data { __u64 len; __u32 fd; __u32 fd_flags; __u64 heap_flags; }
_ALLOCATION = struct.Struct("=QIIQ")
DMA_HEAP_IOCTL_ALLOC = (3 << 30) | (_ALLOCATION.size << 16) | (ord("H") << 8) | 0


def heap_allocation(size: int) -> tuple[int | None, str]:
    """A dma-buf fd of ``size`` bytes from the first heap that gives one, or (None, why)."""
    import fcntl

    problems = []
    for heap in DMA_HEAPS:
        if not os.path.exists(heap):
            problems.append(f"no {heap}")
            continue
        try:
            heap_fd = os.open(heap, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            problems.append(f"{heap}: {exc.strerror}")
            continue
        try:
            request = bytearray(_ALLOCATION.pack(size, 0, os.O_RDWR | os.O_CLOEXEC, 0))
            fcntl.ioctl(heap_fd, DMA_HEAP_IOCTL_ALLOC, request, True)
            return _ALLOCATION.unpack(request)[1], ""
        except OSError as exc:
            problems.append(f"{heap}: DMA_HEAP_IOCTL_ALLOC failed: {exc.strerror}")
        finally:
            os.close(heap_fd)
    return None, "; ".join(problems)


@contextlib.contextmanager
def dma_buf(env: Env, size: int) -> Iterator[int]:
    """An fd of ``size`` bytes to import as a dma-buf on ``env``'s path: a real dma-buf
    where cl_qcom_dmabuf_host_ptr is native or takes its Khronos tier (Skip when no heap
    gives one), else a memfd (the fallback maps it; Skip where memfd_create does not
    exist). Closed afterwards."""
    if env.caps.path(DMABUF) != "fallback":
        fd, why = heap_allocation(size)
        if fd is None:
            raise Skip(f"needs a dma-buf to import natively and no heap gave one ({why})")
    elif hasattr(os, "memfd_create"):
        fd = os.memfd_create("qcom-ext-selftest")
        os.ftruncate(fd, size)
    else:
        raise Skip("needs os.memfd_create (Linux) to stand in for a dma-buf")
    try:
        yield fd
    finally:
        os.close(fd)
