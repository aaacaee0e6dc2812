"""Recording on real devices: the Khronos and replay paths, updates, errors, lifetime."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest
from fakes.recording import FakeRecordingDriver, N, Pipeline, native_caps

import qcom_ext
import qcom_ext.ext.recording as recording
from qcom_ext import ConfigError, Recording
from qcom_ext.errors import RecordingStateError

ROOT = Path(__file__).resolve().parent.parent
EXPECTED_PATH = {
    "native": "native",
    "khr:cl_khr_command_buffer": "khr_command_buffer",
    "fallback": "replay",
}
ADD = "__kernel void add(__global int *a, int b) { a[get_global_id(0)] += b; }"


@pytest.fixture(params=["probed", "replay", "native"])
def path_env(request, monkeypatch, device_caps):
    """The device's own path; the replay path forced through QCOM_EXT_DISABLE; the native
    path through the fake driver of fakes.recording (which replays for real)."""
    if request.param == "replay":
        monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_recordable_queues")
        yield "replay"
    elif request.param == "native":
        monkeypatch.setattr(recording, "probe", lambda device: native_caps(device_caps, None))
        with FakeRecordingDriver():
            yield "native"
    else:
        yield EXPECTED_PATH[device_caps.path("cl_qcom_recordable_queues")]


def adder(context):
    return cl.Kernel(cl.Program(context, ADD).build(), "add")


def zeros(context, n=N):
    mf = cl.mem_flags
    return cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(n, np.int32))


def read(queue, buf, n=N):
    out = np.empty(n, np.int32)
    cl.enqueue_copy(queue, out, buf)
    return out


def test_replays_match_direct_pyopencl(kernel_context, path_env):
    pipeline = Pipeline(kernel_context)
    queue = cl.CommandQueue(kernel_context)
    expected = pipeline.expected(queue)
    rec = Recording(kernel_context)
    assert rec.path == path_env
    pipeline.record(rec)
    assert len(rec) == 5
    results = pipeline.run_steps(rec, queue)
    for step, (got, want) in enumerate(zip(results, expected, strict=True)):
        for buf, (g, w) in enumerate(zip(got, want, strict=True)):
            np.testing.assert_array_equal(g, w, err_msg=f"step {step} buffer {buf}")
    assert any(out.any() for out in results[0])
    rec.release()


def test_khr_replays_the_command_buffer_and_updates_directly(kernel_context, device_caps):
    if not device_caps.path("cl_qcom_recordable_queues").startswith("khr:"):
        pytest.skip(f"{device_caps.label} has no cl_khr_command_buffer")
    queue = cl.CommandQueue(kernel_context)
    a = zeros(kernel_context)
    with Recording(queue) as rec:
        rec.enqueue(adder(kernel_context), (N,), None, a, np.int32(1))
    rec.replay(queue)
    assert rec.last_path == "khr_command_buffer"
    rec.replay(queue, args={(0, 1): 10})
    assert rec.last_path == "replay"
    other = cl.CommandQueue(kernel_context)  # not the queue it was recorded on
    other.finish()
    queue.finish()
    rec.replay(other).wait()
    assert rec.last_path == "khr_command_buffer"
    assert (read(queue, a) == 12).all()


def test_many_replays_in_flight(kernel_context, path_env, device_caps, monkeypatch):
    queue = cl.CommandQueue(kernel_context)
    a = zeros(kernel_context)
    with Recording(kernel_context) as rec:
        rec.enqueue(adder(kernel_context), (N,), (8,), a, np.int32(1))
        rec.enqueue(adder(kernel_context), (N,), (8,), a, np.int32(2))
    for _ in range(20):  # no waiting: 0.9.0 drivers need simultaneous use (or a wait)
        event = rec.replay(queue)
    assert isinstance(event, cl.Event)
    queue.finish()
    assert (read(queue, a) == 60).all()


def test_without_simultaneous_use_the_previous_submission_is_awaited(
    kernel_context, device_caps, monkeypatch
):
    if not device_caps.path("cl_qcom_recordable_queues").startswith("khr:"):
        pytest.skip(f"{device_caps.label} has no cl_khr_command_buffer")
    import dataclasses

    limits = dataclasses.replace(device_caps.limits, command_buffer_capabilities=0)
    caps = dataclasses.replace(device_caps, limits=limits)
    monkeypatch.setattr(recording, "probe", lambda device: caps)
    queue = cl.CommandQueue(kernel_context)
    a = zeros(kernel_context)
    with Recording(queue) as rec:
        rec.enqueue(adder(kernel_context), (N,), None, a, np.int32(3))
    assert rec.path == "khr_command_buffer" and not rec._backend.simultaneous
    for _ in range(10):
        rec.replay(queue)
    queue.finish()
    assert (read(queue, a) == 30).all()


def test_wait_for_holds_the_replay(kernel_context, path_env):
    queue = cl.CommandQueue(kernel_context)
    a = zeros(kernel_context)
    with Recording(kernel_context) as rec:
        rec.enqueue(adder(kernel_context), (N,), None, a, np.int32(5))
    gate = cl.UserEvent(kernel_context)
    event = rec.replay(queue, wait_for=[gate])
    queue.flush()
    time.sleep(0.05)
    assert event.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    event.wait()
    assert (read(queue, a) == 5).all()


def test_recorded_arguments_are_a_snapshot(kernel_context, path_env):
    queue = cl.CommandQueue(kernel_context)
    a, b = zeros(kernel_context), zeros(kernel_context)
    kernel = adder(kernel_context)
    kernel.set_args(b, np.int32(1000))  # the caller's own arguments ...
    with Recording(kernel_context) as rec:
        rec.enqueue(kernel, (N,), None, a, np.int32(1))
        rec.enqueue(kernel, (N,), None, a, np.int32(2))
    cl.enqueue_nd_range_kernel(queue, kernel, (N,), None)  # ... are left alone
    kernel.set_args(b, np.int32(50))  # and changing them later does not reach the recording
    rec.replay(queue).wait()
    assert (read(queue, a) == 3).all()
    assert (read(queue, b) == 1000).all()


def test_local_memory_null_buffer_and_bytes_arguments(kernel_context, path_env):
    source = """
    __kernel void k(__global int *out, __global const int *maybe, __local int *tmp,
                    int2 pair) {
        size_t l = get_local_id(0);
        tmp[l] = pair.x * (int)l + pair.y;
        barrier(CLK_LOCAL_MEM_FENCE);
        out[get_global_id(0)] = tmp[get_local_size(0) - 1 - l] + (maybe ? maybe[0] : -1);
    }"""
    kernel = cl.Kernel(cl.Program(kernel_context, source).build(), "k")
    queue = cl.CommandQueue(kernel_context)
    out, one = zeros(kernel_context), zeros(kernel_context, 1)
    cl.enqueue_fill_buffer(queue, one, np.int32(100), 0, 4)
    pair = np.array([2, 5], np.int32).tobytes()
    with Recording(kernel_context) as rec:
        rec.enqueue(kernel, (N,), (8,), out, None, cl.LocalMemory(32), pair)
    rec.replay(queue).wait()
    lane = np.arange(N) % 8
    np.testing.assert_array_equal(read(queue, out), 2 * (7 - lane) + 5 - 1)
    rec.replay(
        queue,
        args={
            (0, 1): one,
            (0, 2): cl.LocalMemory(16),
            (0, 3): np.array([1, 0], np.int32).tobytes(),
        },
        local_size={0: (4,)},
    ).wait()
    np.testing.assert_array_equal(read(queue, out), (3 - np.arange(N) % 4) + 100)


def test_svm_arguments(kernel_context, path_env, device_caps):
    device = device_caps.device()
    if not device.svm_capabilities:
        pytest.skip(f"{device_caps.label} has no SVM")
    queue = cl.CommandQueue(kernel_context)
    flags = cl.svm_mem_flags.READ_WRITE
    first = cl.SVM(cl.svm_empty(kernel_context, flags, N, np.int32))
    second = cl.SVM(cl.svm_empty(kernel_context, flags, N, np.int32))
    for svm in (first, second):
        with svm.map_rw(queue) as host:
            host[:] = 0
    with Recording(kernel_context) as rec:
        rec.enqueue(adder(kernel_context), (N,), None, first, np.int32(4))
    rec.replay(queue).wait()
    rec.replay(queue, args={(0, 0): second}).wait()
    rec.replay(queue).wait()
    with first.map_ro(queue) as host:
        assert (host == 8).all()
    with second.map_ro(queue) as host:
        assert (host == 4).all()


BAD_UPDATES = [
    ({"args": {(5, 0): 1}}, "unknown dispatch index 5; the recording has 5 dispatches"),
    ({"args": {(0, 4): 1}}, r"argument index 4 of dispatch 0 \(scale_add\) is out of range"),
    ({"args": {(0, 2): np.int64(1)}}, "recorded with 4 bytes"),
    ({"args": {(0, 2): np.float32(1)}}, "recorded as int32; got float32"),
    ({"args": {(0, 2): 1.5}}, "int32; got the float 1.5"),
    ({"args": {(0, 2): 2**40}}, "out of range"),
    ({"args": {(0, 0): np.int32(1)}}, "recorded as a memory object; got a int32 scalar"),
    ({"args": {(1, 3): np.int32(1)}}, r"recorded as cl.LocalMemory\(64\)"),
    ({"args": {(0, 2): "7"}}, "has type str"),
    ({"args": {0: 1}}, r"\(dispatch_index, arg_index\) pairs"),
    ({"args": {(True, 0): 1}}, "not an integer"),
    ({"global_size": {0: (60,)}}, r"global_size \(60,\) is not a multiple of local_size"),
    ({"global_size": {0: (64, 2)}}, "has 1 dimensions, global_size"),
    ({"global_size": {0: (0,)}}, "integers >= 1"),
    ({"local_size": {2: (4,)}}, "recorded with local_size=None"),
    ({"local_size": {0: (8, 8)}}, "has 2 dimensions"),
    ({"global_size": {0: (1 << 20,)}, "local_size": {0: (1 << 20,)}}, "CL_KERNEL_WORK_GROUP_SIZE"),
    ({"global_offset": {2: (-1,)}}, "integers >= 0"),
    ({"global_offset": {7: (0,)}}, "unknown dispatch index 7"),
    ({"args": {(0, 3): 5, (9, 0): 1}}, "unknown dispatch index 9"),  # nothing half-applied
]


@pytest.mark.parametrize(("updates", "message"), BAD_UPDATES)
def test_bad_updates_raise_before_anything_is_enqueued(kernel_context, path_env, updates, message):
    pipeline = Pipeline(kernel_context)
    queue = cl.CommandQueue(kernel_context)
    rec = Recording(kernel_context)
    pipeline.record(rec)
    pipeline.reset(queue)
    with pytest.raises(ConfigError, match=message):
        rec.replay(queue, **updates)
    queue.finish()
    assert not any(out.any() for out in pipeline.read(queue))
    rec.replay(queue).wait()  # the recording is still usable, with its recorded values
    assert any(out.any() for out in pipeline.read(queue))


def test_bad_recordings_raise(kernel_context, path_env):
    kernel = adder(kernel_context)
    a = zeros(kernel_context)
    rec = Recording(kernel_context)
    with pytest.raises(RecordingStateError, match="inside 'with rec:'"):
        rec.enqueue(kernel, (N,), None, a, np.int32(1))
    with pytest.raises(RecordingStateError, match="nothing was recorded"):
        rec.replay(cl.CommandQueue(kernel_context))
    with rec:
        with pytest.raises(ConfigError, match=r"Python int .*np.int32"):
            rec.enqueue(kernel, (N,), None, a, 1)
        with pytest.raises(ConfigError, match="takes 2 arguments, got 1"):
            rec.enqueue(kernel, (N,), None, a)
        with pytest.raises(ConfigError, match="not a multiple of local_size"):
            rec.enqueue(kernel, (N,), (5,), a, np.int32(1))
        with pytest.raises(ConfigError, match=r"expected a pyopencl\.Kernel"):
            rec.enqueue("add", (N,), None, a, np.int32(1))
        with pytest.raises(ConfigError, match="pyopencl array"):
            import pyopencl.array

            queue = cl.CommandQueue(kernel_context)
            rec.enqueue(kernel, (N,), None, pyopencl.array.zeros(queue, N, np.int32), np.int32(1))
        assert rec.enqueue(kernel, (N,), None, a, np.int32(1)) == 0
        with pytest.raises(RecordingStateError, match="still recording"):
            rec.replay(cl.CommandQueue(kernel_context))
    assert len(rec) == 1
    with pytest.raises(RecordingStateError, match="records once"), rec:
        pass
    rec.release()
    rec.release()  # idempotent
    assert len(rec) == 0 and rec.path == path_env
    with pytest.raises(RecordingStateError, match="released"):
        rec.replay(cl.CommandQueue(kernel_context))


def test_empty_and_failed_recordings(kernel_context, path_env):
    empty = Recording(kernel_context)
    with pytest.raises(ConfigError, match="holds no dispatch"), empty:
        pass
    with pytest.raises(RecordingStateError, match="released"):
        empty.replay(cl.CommandQueue(kernel_context))
    failed = Recording(kernel_context)
    with pytest.raises(ZeroDivisionError), failed:
        failed.enqueue(adder(kernel_context), (N,), None, zeros(kernel_context), np.int32(1))
        1 / 0  # noqa: B018
    assert "released" in repr(failed)


def test_replay_queue_checks(kernel_context, path_env, device_caps):
    a = zeros(kernel_context)
    with Recording(kernel_context) as rec:
        rec.enqueue(adder(kernel_context), (N,), None, a, np.int32(1))
    with pytest.raises(ConfigError, match="another context"):
        rec.replay(cl.CommandQueue(cl.Context([device_caps.device()])))
    ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        out_of_order = cl.CommandQueue(kernel_context, properties=ooo)
    except cl.Error:
        out_of_order = None
    if out_of_order is not None:
        with pytest.raises(ConfigError, match="in-order"):
            rec.replay(out_of_order)
    with pytest.raises(ConfigError, match="Context or CommandQueue"):
        Recording("context")


def test_context_argument_and_repr(kernel_context, path_env):
    rec = Recording(kernel_context)
    assert rec.context == kernel_context and rec.device == kernel_context.devices[0]
    assert repr(rec) == f"<Recording path={path_env} dispatches=0 new>"
    assert rec.max_dispatches is None


GC_SCRIPT = """
import gc, numpy as np, pyopencl as cl, qcom_ext
ctx = cl.Context([qcom_ext.probe().device()])
queue = cl.CommandQueue(ctx)
k = cl.Kernel(cl.Program(ctx, "__kernel void k(__global int *a) { a[0] = 1; }").build(), "k")
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
recs = []
for i in range(20):
    rec = qcom_ext.Recording(queue if i % 2 else ctx)
    with rec:
        rec.enqueue(k, (1,), None, buf)
    rec.replay(queue)
    recs.append(rec)
del recs[:10]; gc.collect()   # collected while replays may still run
kept = recs                    # left to interpreter exit, queue not finished
print("done", qcom_ext.Recording(ctx).path)
"""


@pytest.mark.slow
def test_no_crash_when_collected_or_left_at_exit(kernel_context, path_env, device_caps):
    from test_samples import device_spec

    if path_env == "native":
        pytest.skip("the fake native driver lives in this process only")

    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PYOPENCL_CTX": device_spec(device_caps)}
    result = subprocess.run(
        [sys.executable, "-c", GC_SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"done {path_env}"
    assert "Exception ignored" not in result.stderr


def test_public_name():
    assert qcom_ext.Recording is Recording and "Recording" in qcom_ext.__all__


def test_docs_example_runs(kernel_context, device_caps, monkeypatch, capsys):
    import re

    from test_samples import device_spec

    doc = ROOT / "docs" / "recording.md"
    if not doc.is_file():
        pytest.skip("not running from a source checkout")
    code = re.search(r"```python\n(.*?)```", doc.read_text(), re.S).group(1)
    monkeypatch.setenv("PYOPENCL_CTX", device_spec(device_caps))
    namespace: dict = {}
    exec(compile(code, str(doc), "exec"), namespace)
    assert (
        capsys.readouterr().out.strip()
        == EXPECTED_PATH[device_caps.path("cl_qcom_recordable_queues")]
    )
    out = np.empty(1024, np.int32)
    cl.enqueue_copy(namespace["queue"], out, namespace["a"])
    assert (out[:512] == 11 + 1 + 100).all() and (out[512:] == 11 + 100).all()


def test_khr_incompatible_queue_replays_directly_and_errors_surface(kernel_context, device_caps):
    from qcom_ext import CLError
    from qcom_ext.binding.lib import C, driver

    if not device_caps.path("cl_qcom_recordable_queues").startswith("khr:"):
        pytest.skip(f"{device_caps.label} has no cl_khr_command_buffer")
    queue = cl.CommandQueue(kernel_context)
    a = zeros(kernel_context)
    answer = [C.CL_INCOMPATIBLE_COMMAND_QUEUE_KHR]
    with driver.substitute(clEnqueueCommandBufferKHR=lambda *args: answer[0]):
        with Recording(kernel_context) as rec:
            rec.enqueue(adder(kernel_context), (N,), None, a, np.int32(2))
        rec.replay(queue).wait()
        assert rec.last_path == "replay"
        answer[0] = C.CL_OUT_OF_RESOURCES
        with pytest.raises(CLError, match="clEnqueueCommandBufferKHR failed: CL_OUT_OF_RES"):
            rec.replay(queue)
    queue.finish()
    assert (read(queue, a) == 2).all()
    rec.release()


def test_a_failure_to_end_the_recording_releases_it(kernel_context, path_env, monkeypatch):
    from qcom_ext import CLError

    backend = Recording(kernel_context)._backend
    monkeypatch.setattr(
        type(backend), "end", lambda self: (_ for _ in ()).throw(CLError("clEndRecording", -5))
    )
    rec = Recording(kernel_context)
    with pytest.raises(CLError, match="CL_OUT_OF_RESOURCES"), rec:
        rec.enqueue(adder(kernel_context), (N,), None, zeros(kernel_context), np.int32(1))
    assert "released" in repr(rec) and len(rec) == 0


def test_missing_native_entry_points_take_the_next_path(kernel_context, monkeypatch):
    # The device claims native recordings but its driver lacks clNewRecordingQCOM & co:
    # the recording warns and takes the path the extension has without them.
    caps = native_caps(qcom_ext.probe(kernel_context.devices[0]))
    monkeypatch.setattr(recording, "probe", lambda device: caps)
    expected = {"khr": "khr_command_buffer", "fallback": "replay"}[
        caps.status_without("cl_qcom_recordable_queues").tier
    ]
    queue = cl.CommandQueue(kernel_context)
    program = cl.Program(kernel_context, "__kernel void inc(__global int *a) { a[0] += 1; }")
    inc = cl.Kernel(program.build(), "inc")
    buffer = cl.Buffer(kernel_context, cl.mem_flags.READ_WRITE, 4)
    cl.enqueue_fill_buffer(queue, buffer, np.int32(0), 0, 4)
    with pytest.warns(qcom_ext.QcomExtWarning, match="driver lacks clNewRecordingQCOM"):
        rec = Recording(queue)
    assert rec.path == expected
    with rec:
        rec.enqueue(inc, (1,), None, buffer)
    rec.replay(queue)
    rec.replay(queue).wait()
    out = np.empty(1, np.int32)
    cl.enqueue_copy(queue, out, buffer)
    assert out[0] == 2
    rec.release()
