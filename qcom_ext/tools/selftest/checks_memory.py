"""Checks of the external-memory family (qcom-extensions.md section 14): host memory,
dma-bufs and their cache policies imported as buffers a kernel works on in place.

The Android-only imports (ION, AHardwareBuffer, ANativeWindowBuffer) need buffers only
an app's graphics stack allocates; where the device has no path for them, the checks
are that the import is refused rather than faked.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np

from qcom_ext.tools.selftest._memory import dma_buf
from qcom_ext.tools.selftest._registry import Env, Outcome, Skip, case, refused, unchecked

BASE = "cl_qcom_ext_host_ptr"
IOCOHERENT = "cl_qcom_ext_host_ptr_iocoherent"
DMABUF = "cl_qcom_dmabuf_host_ptr"
ION = "cl_qcom_ion_host_ptr"
AHB = "cl_qcom_android_ahardwarebuffer_host_ptr"
ANB = "cl_qcom_android_native_buffer_host_ptr"

INCREMENT = """
__kernel void scale_inc(__global uint *x) { size_t i = get_global_id(0); x[i] = x[i] * 3u + 1u; }
"""
N = 4096  # uints: 16 KiB, whole pages


def _scale_inc(env: Env, buffer: Any, n: int = N) -> None:
    import pyopencl as cl

    cl.Kernel(env.program(INCREMENT), "scale_inc")(env.queue, (n,), None, buffer)
    env.queue.finish()


def _expected(values: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return values * np.uint32(3) + np.uint32(1)


@case(BASE, "page-aligned host array as a buffer (host_buffer), changed in place")
def _host_buffer(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.memory.host_ptr import aligned_empty, host_buffer

    array = aligned_empty(N, np.uint32, context=env.context)
    values = env.rng.integers(0, 2**32, N, dtype=np.uint32)
    array[:] = values
    buffer = host_buffer(env.context, array)
    _scale_inc(env, buffer)
    mapped, event = cl.enqueue_map_buffer(env.queue, buffer, cl.map_flags.READ, 0, (N,), np.uint32)
    event.wait()
    got = mapped.copy()
    mapped.base.release(env.queue)
    return Outcome(got, _expected(values), note="the kernel wrote the numpy array itself")


def _import(env: Env, fd: int, cache_policy: str) -> Any:
    from qcom_ext.ext.memory.host_ptr import ExternalMemory, import_memory

    memory = ExternalMemory.dmabuf(fd, cache_policy=cache_policy)
    return import_memory(env.context, memory, N * 4)


def _route(buffer: Any) -> str:
    """The path the import took, as the object it made says: a Khronos import is marked,
    a native one keeps its host_ptr struct, a mapped one is a plain USE_HOST_PTR buffer."""
    from qcom_ext.ext.memory import khr_external, memobj

    tier = getattr(buffer, khr_external.MARK, None)
    if tier:
        return f"khr:{tier}"
    return "native" if hasattr(buffer, memobj.KEEPALIVE) else "fallback"


@case(DMABUF, "dma-buf written by the host, changed in place by a kernel")
def _dmabuf(env: Env) -> Outcome:
    values = env.rng.integers(0, 2**32, N, dtype=np.uint32)
    with dma_buf(env, N * 4) as fd:
        with mmap.mmap(fd, N * 4) as view:
            view[:] = values.tobytes()
        buffer = _import(env, fd, "writeback")
        _scale_inc(env, buffer)
        got = np.empty(N, np.uint32)
        env.read(buffer, got)
    return Outcome(got, _expected(values), ran_as=_route(buffer))


@case(
    DMABUF, "dma-buf handed back and forth (release_external / acquire_external)", tiers=("khr",)
)
def _dmabuf_handoff(env: Env) -> Outcome:
    """The Khronos import's acquire/release protocol: a kernel changes the dma-buf,
    :func:`release_external` hands it to the host, which changes it through its own
    mapping, :func:`acquire_external` takes it back and a kernel changes it again; the
    caller's fd stays open throughout (the import owns a dup of it)."""
    from qcom_ext.ext.memory.khr_external import acquire_external, release_external

    values = env.rng.integers(0, 2**32, N, dtype=np.uint32)
    with dma_buf(env, N * 4) as fd, mmap.mmap(fd, N * 4) as view:
        view[:] = values.tobytes()
        buffer = _import(env, fd, "writeback")
        _scale_inc(env, buffer)
        release_external(env.queue, buffer)
        host = np.frombuffer(view, np.uint32)
        host ^= np.uint32(0x5A5A5A5A)  # the other user's turn: through its own mapping
        del host
        acquire_external(env.queue, buffer)
        _scale_inc(env, buffer)
        got = np.empty(N, np.uint32)
        env.read(buffer, got)
        os.fstat(fd)  # still the caller's: OSError if the import had closed it
    want = _expected(_expected(values) ^ np.uint32(0x5A5A5A5A))
    return Outcome(got, want, ran_as=_route(buffer), note="kernel, host, kernel")


@case(IOCOHERENT, "dma-buf with the io-coherent policy (write-back + map elsewhere)")
def _iocoherent(env: Env) -> Outcome:
    import pyopencl as cl

    values = env.rng.integers(0, 2**32, N, dtype=np.uint32)
    coherent = env.tier == "native"
    with dma_buf(env, N * 4) as fd, mmap.mmap(fd, N * 4) as view:
        view[:] = values.tobytes()
        buffer = _import(env, fd, "iocoherent" if coherent else "writeback")
        _scale_inc(env, buffer)
        if coherent:  # io-coherent: the host sees the result without a map
            got = np.frombuffer(view, np.uint32).copy()
        else:  # write-back: mapping makes it coherent
            mapped, event = cl.enqueue_map_buffer(
                env.queue, buffer, cl.map_flags.READ, 0, (N,), np.uint32
            )
            event.wait()
            got = mapped.copy()
            mapped.base.release(env.queue)
    how = "read through the host mapping, no map/unmap" if coherent else "read by map/unmap"
    return Outcome(got, _expected(values), note=how)


def _scratch_fd() -> int:
    """A harmless fd for an import that must be refused before it reaches a driver."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("qcom-ext-selftest-refusal")
        os.ftruncate(fd, N * 4)
        return fd
    return os.open(os.devnull, os.O_RDWR)


@case(ION, "import_ion is refused where ION has no path", tiers=("unavailable",))
def _ionrefused(env: Env) -> Outcome:
    from qcom_ext.ext.memory.host_ptr import import_ion

    fd = _scratch_fd()
    try:
        return refused(ION, lambda: import_ion(env.context, fd, None, N * 4))
    finally:
        os.close(fd)


@case(ION, "import of an ION buffer", tiers=("native",))
def _ion(env: Env) -> Outcome:
    raise Skip(
        "the selftest allocates no ION buffer (the /dev/ion ioctls differ per kernel "
        "version and ION is gone since Android 12); qcom_ext.import_ion takes one "
        "from the app"
    )


def _android_refusal(env: Env, extension: str, importer: str) -> Outcome:
    from qcom_ext.binding.lib import ffi
    from qcom_ext.ext.memory import host_ptr

    stand_in = ffi.new("char[]", 256)  # a valid address, should a bug pass it on
    function = getattr(host_ptr, importer)
    return refused(extension, lambda: function(env.context, stand_in, N * 4))


@case(AHB, "import_ahardwarebuffer is refused where it has no path", tiers=("unavailable",))
def _ahbrefused(env: Env) -> Outcome:
    return _android_refusal(env, AHB, "import_ahardwarebuffer")


@case(AHB, "import of an AHardwareBuffer", tiers=("native", "khr"))
def _ahb(env: Env) -> Outcome:
    raise Skip(
        "an AHardwareBuffer comes from an app's AHardwareBuffer_allocate (Android "
        "NDK), which the selftest does not call; qcom_ext.import_ahardwarebuffer "
        "takes one from the app"
    )


@case(ANB, "import_android_native_buffer is refused where it has no path", tiers=("unavailable",))
def _anbrefused(env: Env) -> Outcome:
    return _android_refusal(env, ANB, "import_android_native_buffer")


@case(ANB, "import of an ANativeWindowBuffer", tiers=("native",))
def _anb(env: Env) -> Outcome:
    raise Skip(
        "an ANativeWindowBuffer comes from the app's graphics stack (GraphicBuffer, "
        "C++ only), which the selftest cannot allocate; "
        "qcom_ext.import_android_native_buffer takes one from the app"
    )


unchecked(
    "cl_qcom_ahardwarebuffer_direct_import",
    "no public specification or tokens exist: qcom_ext has no call for it",
)
unchecked(
    "cl_qcom_large_buffer",
    "qcom_ext creates no buffer beyond CL_DEVICE_MAX_MEM_ALLOC_SIZE (CL_LARGE_BUFFER_QCOM "
    "has no public specification; a check would allocate gigabytes)",
)
