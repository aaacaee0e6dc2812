"""The native path (cl_qcom_recordable_queues) through a fake driver that really replays.

No Adreno device is needed: :class:`FakeRecordingDriver` receives exactly what an
Adreno driver would (recordable queue property, ``clSetKernelArg`` bytes, the update
arrays read from raw LP64 bytes) and replays the recorded launches on the real queue,
so results can be compared bit for bit with the Khronos and replay paths.
"""

from __future__ import annotations

import struct
import sys

import numpy as np
import pyopencl as cl
import pytest
from fakes.recording import FakeRecordingDriver, N, Pipeline, native_caps

import qcom_ext.ext.recording as recording
from qcom_ext import CLError, ConfigError, QcomExtWarning, Recording
from qcom_ext.binding.lib import C, driver, ffi

pytestmark = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little",
    reason="the fake driver decodes the LP64 little-endian layouts",
)
ADD = "__kernel void add(__global int *a, int b) { a[get_global_id(0)] += b; }"


@pytest.fixture
def fake(device_caps, kernel_context, monkeypatch):
    monkeypatch.setattr(recording, "probe", lambda device: native_caps(device_caps))
    return FakeRecordingDriver()


def run_pipeline(context, queue, pipeline):
    rec = Recording(context)
    pipeline.record(rec)
    results = pipeline.run_steps(rec, queue)
    path = rec.path
    rec.release()
    return path, results


@pytest.mark.parametrize("persistent", [False, True], ids=["per-replay", "persistent"])
def test_native_is_bit_identical_to_the_other_paths(
    kernel_context, device_caps, monkeypatch, persistent
):
    pipeline = Pipeline(kernel_context)
    queue = cl.CommandQueue(kernel_context)
    expected = pipeline.expected(queue)
    outcomes = {}
    path, outcomes["probed"] = run_pipeline(kernel_context, queue, pipeline)
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_recordable_queues")
    path, outcomes[path] = run_pipeline(kernel_context, queue, pipeline)
    monkeypatch.delenv("QCOM_EXT_DISABLE")
    fake = FakeRecordingDriver(persistent=persistent)
    monkeypatch.setattr(recording, "probe", lambda device: native_caps(device_caps))
    with fake:
        path, outcomes[path] = run_pipeline(kernel_context, queue, pipeline)
    assert path == "native" and len(fake.replays) == len(pipeline.steps())
    assert not fake.recordings  # released
    for name, results in outcomes.items():
        for step, (got, want) in enumerate(zip(results, expected, strict=True)):
            for buf, (g, w) in enumerate(zip(got, want, strict=True)):
                np.testing.assert_array_equal(g, w, err_msg=f"{name} step {step} buffer {buf}")


def test_update_arrays_reach_the_driver_as_the_reference_lays_them_out(fake, kernel_context):
    pipeline = Pipeline(kernel_context)
    queue = cl.CommandQueue(kernel_context)
    with fake:
        rec = Recording(kernel_context)
        pipeline.record(rec)
        assert fake.queue_properties == [0x40000000]  # CL_QUEUE_RECORDABLE_QCOM, 1.x API
        recorded = next(iter(fake.recordings.values())).dispatches
        assert [d.dims for d in recorded] == [1, 1, 1, 1, 2]
        assert recorded[1].args[3] == ("bytes", 64, None)  # cl.LocalMemory(64)
        assert recorded[0].args[2] == ("bytes", 4, struct.pack("<i", 3))
        assert recorded[0].args[0] == ("bytes", 8, struct.pack("<Q", pipeline.src.int_ptr))
        assert recorded[2].offset == (8,) and recorded[2].local_size is None
        assert recorded[4].global_size == (16, 8) and recorded[4].local_size == (4, 2)

        gate = cl.UserEvent(kernel_context)
        rec.replay(
            queue,
            args={
                (0, 3): 7,
                (1, 1): pipeline.other,
                (1, 3): cl.LocalMemory(32),
                (2, 0): pipeline.outputs[3],
            },
            global_size={4: (8, 8)},
            local_size={4: (2, 4), 1: (8,)},
            global_offset={2: (16,), 4: (1, 0)},
            wait_for=[gate],
        )
        gate.set_status(cl.command_execution_status.COMPLETE)
        queue.finish()
        sent = fake.replays[-1]
        assert [(d, a, size) for d, a, size, _ in sent["args"]] == [
            (0, 3, 4),
            (1, 1, 8),
            (1, 3, 32),
            (2, 0, 8),
        ]
        assert sent["values"] == {
            (0, 3): struct.pack("<i", 7),
            (1, 1): struct.pack("<Q", pipeline.other.int_ptr),
            (1, 3): None,  # local memory: a size and a NULL value
            (2, 0): struct.pack("<Q", pipeline.outputs[3].int_ptr),
        }
        assert sent["offsets"] == [(2, 16, 0, 0), (4, 1, 0, 0)]  # inline size_t[3]
        assert [d for d, _ in sent["global"]] == [4]
        assert sorted(d for d, _ in sent["local"]) == [1, 4]
        assert sent["events"] == 1 and sent["svm"] == []

        rec.replay(queue).wait()  # what the last replay changed goes back
        back = fake.replays[-1]
        assert sorted((d, a) for d, a, _, _ in back["args"]) == [(0, 3), (1, 1), (1, 3), (2, 0)]
        assert back["values"][(0, 3)] == struct.pack("<i", -5)
        sizes = {(d, a): size for d, a, size, _ in back["args"]}
        assert back["values"][(1, 3)] is None and sizes[(1, 3)] == 64
        assert back["offsets"] == [(2, 8, 0, 0), (4, 0, 0, 0)]
        rec.replay(queue).wait()  # and then nothing is sent at all
        assert fake.replays[-1]["args"] == fake.replays[-1]["offsets"] == []
        assert fake.replays[-1]["global"] == fake.replays[-1]["local"] == []
        rec.release()


def test_svm_updates_use_clEnqueueRecordingSVMQCOM(fake, kernel_context, device_caps):
    if not device_caps.device().svm_capabilities:
        pytest.skip(f"{device_caps.label} has no SVM")
    queue = cl.CommandQueue(kernel_context)
    flags = cl.svm_mem_flags.READ_WRITE
    first, second = (cl.SVM(cl.svm_empty(kernel_context, flags, N, np.int32)) for _ in "ab")
    for svm in (first, second):
        with svm.map_rw(queue) as host:
            host[:] = 0
    add = cl.Kernel(cl.Program(kernel_context, ADD).build(), "add")
    with fake:
        with Recording(kernel_context) as rec:
            rec.enqueue(add, (N,), None, first, np.int32(4))
            rec.enqueue(add, (N,), None, first, np.int32(1))
        recorded = next(iter(fake.recordings.values())).dispatches
        assert recorded[0].args[0] == ("svm", first.svm_ptr)
        rec.replay(queue, args={(0, 0): second, (1, 1): 2}).wait()
        sent = fake.replays[-1]
        assert sent["svm"] == [(0, 0, 0, second.svm_ptr)]  # arg_size 0, the pointer itself
        assert [(d, a) for d, a, _, _ in sent["args"]] == [(1, 1)]
        rec.replay(queue).wait()
        assert fake.replays[-1]["svm"] == [(0, 0, 0, first.svm_ptr)]
        rec.release()
    with first.map_ro(queue) as host:
        assert (host == 2 + 5).all()
    with second.map_ro(queue) as host:
        assert (host == 4).all()


def test_recordable_queue_max_size_is_refused_with_its_name(
    device_caps, kernel_context, monkeypatch
):
    monkeypatch.setattr(recording, "probe", lambda device: native_caps(device_caps, 3))
    fake = FakeRecordingDriver()
    add = cl.Kernel(cl.Program(kernel_context, ADD).build(), "add")
    buf = cl.Buffer(kernel_context, cl.mem_flags.READ_WRITE, N * 4)
    with fake, Recording(kernel_context) as rec:
        assert rec.max_dispatches == 3
        for _ in range(3):
            rec.enqueue(add, (N,), None, buf, np.int32(1))
        with pytest.raises(ConfigError, match="CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE = 3"):
            rec.enqueue(add, (N,), None, buf, np.int32(1))
        assert len(next(iter(fake.recordings.values())).dispatches) == 3
    assert len(rec) == 3
    rec.release()


def test_driver_errors_surface_and_are_sent_again(fake, kernel_context):
    add = cl.Kernel(cl.Program(kernel_context, ADD).build(), "add")
    queue = cl.CommandQueue(kernel_context)
    buf = cl.Buffer(kernel_context, cl.mem_flags.READ_WRITE, N * 4)
    calls = []

    def failing(*args):
        calls.append(args[2])  # num_args
        return C.CL_OUT_OF_RESOURCES

    with fake:
        with Recording(kernel_context) as rec:
            rec.enqueue(add, (N,), None, buf, np.int32(1))
        with driver.substitute(clEnqueueRecordingQCOM=failing):
            rec._backend._enqueue = driver.extension_function(0, "clEnqueueRecordingQCOM")
            with pytest.raises(CLError, match=r"clEnqueueRecordingQCOM failed: CL_OUT_OF_RES"):
                rec.replay(queue, args={(0, 1): 9})
        rec._backend._enqueue = driver.extension_function(0, "clEnqueueRecordingQCOM")
        rec.replay(queue).wait()  # the driver may hold the failed update: reverted
        assert calls == [1]
        assert fake.replays[-1]["values"] == {(0, 1): struct.pack("<i", 1)}
        rec.release()


def test_fake_driver_ignores_arguments_left_at_a_reused_kernel_address(fake, kernel_context):
    """A released 4-argument kernel's entries must not be replayed on the 2-argument
    kernel the allocator put at its address (a CI run failed with CL_INVALID_ARG_INDEX)."""
    add = cl.Kernel(cl.Program(kernel_context, ADD).build(), "add")
    queue = cl.CommandQueue(kernel_context)
    host = np.arange(N, dtype=np.int32)
    buf = cl.Buffer(kernel_context, cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    stale = ("bytes", 4, struct.pack("<i", 99))

    class EveryAddressUsedBefore(dict):
        def setdefault(self, address, default):
            return super().setdefault(address, {1: stale, 2: stale, 3: stale})

    fake.kernel_args = EveryAddressUsedBefore()
    with fake:
        with Recording(kernel_context) as rec:
            rec.enqueue(add, (N,), None, buf, np.int32(5))
        rec.replay(queue).wait()
        rec.release()
    got = np.empty_like(host)  # index 1 was set again: its stale 99 must not come back
    cl.enqueue_copy(queue, got, buf)
    np.testing.assert_array_equal(got, host + 5)


def test_missing_entry_points_warn_and_take_the_next_path(
    device_caps, kernel_context, monkeypatch
):
    monkeypatch.setattr(recording, "probe", lambda device: native_caps(device_caps))
    with pytest.warns(QcomExtWarning, match="driver lacks clNewRecordingQCOM"):
        rec = Recording(kernel_context)  # pocl exports no clNewRecordingQCOM
    expected = "khr_command_buffer" if device_caps.has("cl_khr_command_buffer") else "replay"
    assert rec.path == expected
