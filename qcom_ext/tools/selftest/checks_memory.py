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
LARGE = "cl_qcom_large_buffer"
LARGE_N = 1 << 16  # uints: 256 KiB (a check must not allocate gigabytes)


def large_buffer_pattern(base: int, n: int) -> np.ndarray:
    """What ``fill_pattern`` of kernels/large_buffer.cl writes for elements ``base`` ..
    ``base + n - 1`` of the whole array."""
    index = np.arange(base, base + n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (index ^ (index >> np.uint64(32))).astype(np.uint32) * np.uint32(2654435761)


def _large_program(env: Env) -> Any:
    """kernels/large_buffer.cl built with ``large_buffer=True`` (``-qcom-enable-large-buffer``
    natively), once per run; kept in ``env.store`` as the run's other programs are."""
    from qcom_ext._resources import kernels_dir
    from qcom_ext.ext.program.build import build_program

    key = ("program", "large_buffer.cl", "large_buffer")
    if key not in env.store:
        source = (kernels_dir() / "large_buffer.cl").read_text()
        env.store[key] = build_program(env.context, source, large_buffer=True)
    return env.store[key]


@case(
    LARGE,
    "buffer from create_large_buffer filled and changed by kernels built for large buffers",
    trial="the trial buffer with CL_LARGE_BUFFER_QCOM and a kernel built with "
    "-qcom-enable-large-buffer, run on it",
)
def _large_buffer(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.memory.large_buffer import create_large_buffer

    buffer = create_large_buffer(env.context, cl.mem_flags.READ_WRITE, LARGE_N * 4)
    program = _large_program(env)
    scale, bias = (int(v) for v in env.rng.integers(1, 2**32, 2, dtype=np.uint64))
    cl.Kernel(program, "fill_pattern")(env.queue, (LARGE_N,), None, buffer, np.uint64(0))
    cl.Kernel(program, "affine")(
        env.queue, (LARGE_N,), None, buffer, np.uint32(scale), np.uint32(bias)
    )
    got = env.read(buffer, np.empty(LARGE_N, np.uint32))
    with np.errstate(over="ignore"):
        want = large_buffer_pattern(0, LARGE_N) * np.uint32(scale) + np.uint32(bias)
    return Outcome(got, want, ran_as=buffer.path)


@case(LARGE, "a request over the device's limit is refused before any allocation")
def _large_refused(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.errors import BufferTooLargeError
    from qcom_ext.ext.memory.large_buffer import create_large_buffer, large_buffer_limit

    limit = large_buffer_limit(env.context)
    if limit is None:
        raise Skip("the driver reported no limit to exceed")
    key = "BufferTooLargeError naming the size and the limit"
    try:
        create_large_buffer(env.context, cl.mem_flags.READ_WRITE, limit + 1)
    except BufferTooLargeError as exc:
        named = exc.size == limit + 1 and exc.limit == limit and str(limit) in str(exc)
        return Outcome({key: named}, {key: True}, note=str(exc))
    return Outcome({key: False}, {key: True}, note=f"{limit + 1} bytes were allocated")


@case(LARGE, "the same data in chunks from allocate_chunked", tiers=("fallback",))
def _large_chunked(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.memory.large_buffer import allocate_chunked

    # 3 * 16 KiB: a multiple of every base-address alignment up to 16 KiB; 5 chunks and a rest
    chunks = allocate_chunked(env.context, LARGE_N * 4, chunk=3 << 14)
    fill = cl.Kernel(_large_program(env), "fill_pattern")
    parts = []
    for part in chunks:
        n = part.size // 4
        fill(env.queue, (n,), None, part, np.uint64(part.chunk_offset // 4))
        parts.append(env.read(part, np.empty(n, np.uint32)))
    note = f"{len(chunks)} chunks"
    return Outcome(np.concatenate(parts), large_buffer_pattern(0, LARGE_N), note=note)
