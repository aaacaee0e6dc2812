"""onchip_buffer and the on-chip lifetime rule on the local devices, against numpy."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import qcom_ext
from qcom_ext import ConfigError, Recording, onchip_buffer, scrub_onchip
from qcom_ext._resources import kernels_dir
from qcom_ext.ext.memory.onchip import SCRUB_BYTE

EXTENSION = "cl_qcom_onchip_global_memory"
mf = cl.mem_flags

# Breaks the lifetime rule on purpose: reads on-chip contents written by an earlier replay.
FAULTY = """
__kernel void accumulate(__global const int *src, __global int *staged) {
    size_t i = get_global_id(0);
    staged[i] += src[i];
}
__kernel void publish(__global const int *staged, __global int *dst) {
    size_t i = get_global_id(0);
    dst[i] = staged[i];
}
"""


def reference(src: np.ndarray, scale: int, bias: int) -> np.ndarray:
    staged = src.astype(np.int64) * scale + bias
    padded = np.concatenate([staged[:1], staged, staged[-1:]])
    return (padded[:-2] + 2 * padded[1:-1] + padded[2:]).astype(np.int32)


def test_buffer_attributes(device_caps, cl_context):
    buffer = onchip_buffer(cl_context, 1000, flags=mf.READ_ONLY | mf.HOST_NO_ACCESS)
    native = device_caps.path(EXTENSION) == "native"
    assert isinstance(buffer, cl.Buffer) and buffer.size == 1000
    assert (buffer.onchip, buffer.path) == (native, "native" if native else "fallback")
    assert buffer.onchip_offset == (0 if native else None)
    assert buffer.flags & (mf.READ_ONLY | mf.HOST_NO_ACCESS) == mf.READ_ONLY | mf.HOST_NO_ACCESS


def test_forced_fallback(device_caps, cl_context, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", EXTENSION)
    buffer = onchip_buffer(cl_context, 64, offset=4096)
    assert (buffer.onchip, buffer.onchip_offset, buffer.path) == (False, None, "fallback")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 0}, "size must be an int >= 1, got 0"),
        ({"size": 10.0}, "size must be an int >= 1, got 10.0"),
        ({"size": True}, "size must be an int >= 1, got True"),
        ({"offset": -4}, "offset must be an int >= 0, got -4"),
        ({"flags": mf.READ_WRITE | mf.COPY_HOST_PTR}, "on-chip buffers take no host pointer"),
        ({"flags": mf.USE_HOST_PTR}, "CL_MEM_USE_HOST_PTR is not accepted"),
        ({"flags": mf.READ_ONLY | mf.WRITE_ONLY}, "at most one device-access flag"),
    ],
)
def test_bad_arguments(cl_context, kwargs, message):
    arguments = {"size": 256, **kwargs}
    with pytest.raises(ConfigError) as caught:
        onchip_buffer(cl_context, **arguments)
    assert message in str(caught.value)


def test_not_a_context(cl_queue):
    with pytest.raises(ConfigError, match=r"expected a pyopencl\.Context, got CommandQueue"):
        onchip_buffer(cl_queue, 256)


def test_scrub(device_caps, cl_context, cl_queue):
    buffer = onchip_buffer(cl_context, 64)
    event = scrub_onchip(cl_queue, buffer)
    if buffer.onchip:
        assert event is None
        return
    out = np.zeros(64, np.uint8)
    cl.enqueue_copy(cl_queue, out, buffer, wait_for=[event])
    assert (out == SCRUB_BYTE).all()
    with pytest.raises(ConfigError, match=r"a buffer made by qcom_ext\.onchip_buffer"):
        scrub_onchip(cl_queue, cl.Buffer(cl_context, mf.READ_WRITE, 64))


def test_two_kernels_chained_in_one_replay(device_caps, kernel_context):
    """The rule kept: stage 1 writes everything stage 2 reads, in every replay."""
    queue = cl.CommandQueue(kernel_context)
    program = qcom_ext.build_program(kernel_context, (kernels_dir() / "onchip.cl").read_text())
    n = 777
    src_host = np.random.default_rng(5).integers(-500, 500, n, dtype=np.int32)
    src = cl.Buffer(kernel_context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src_host)
    dst = cl.Buffer(kernel_context, mf.WRITE_ONLY, src_host.nbytes)
    staged = onchip_buffer(kernel_context, src_host.nbytes)
    with Recording(queue) as rec:
        rec.enqueue(
            cl.Kernel(program, "scale_bias"), (n,), None, src, staged, np.int32(1), np.int32(0)
        )
        rec.enqueue(cl.Kernel(program, "smooth3"), (n,), None, staged, dst, np.int32(n))
    out = np.empty_like(src_host)
    for scale, bias in ((3, -7), (-2, 40), (5, 0)):
        event = rec.replay(queue, args={(0, 2): scale, (0, 3): bias})
        cl.enqueue_copy(queue, out, dst, wait_for=[event])
        assert np.array_equal(out, reference(src_host, scale, bias)), (scale, bias)
        scrub_onchip(queue, staged)
    rec.release()


def test_scrub_exposes_a_pipeline_that_breaks_the_rule(device_caps, kernel_context):
    """Global memory would hide the bug (contents survive); the scrub makes it fail."""
    if device_caps.path(EXTENSION) == "native":
        pytest.skip("natively the hardware itself loses the contents")
    queue = cl.CommandQueue(kernel_context)
    program = cl.Program(kernel_context, FAULTY).build()
    n = 64
    src_host = np.arange(n, dtype=np.int32)
    src = cl.Buffer(kernel_context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src_host)
    dst = cl.Buffer(kernel_context, mf.WRITE_ONLY, src_host.nbytes)
    staged = onchip_buffer(kernel_context, src_host.nbytes)
    with Recording(queue) as rec:
        rec.enqueue(cl.Kernel(program, "accumulate"), (n,), None, src, staged)
        rec.enqueue(cl.Kernel(program, "publish"), (n,), None, staged, dst)

    def two_replays(scrub: bool) -> np.ndarray:
        cl.enqueue_fill_buffer(queue, staged, np.int32(0), 0, staged.size).wait()
        rec.replay(queue).wait()
        if scrub:
            scrub_onchip(queue, staged)
        rec.replay(queue).wait()
        out = np.empty_like(src_host)
        cl.enqueue_copy(queue, out, dst)
        return out

    assert np.array_equal(two_replays(scrub=False), 2 * src_host)  # the bug stays hidden
    assert np.array_equal(two_replays(scrub=True), src_host - 1)  # 0xFFFFFFFF + src: exposed
    rec.release()
