"""Recording under adversarial use (issue 15, findings 5, 6 and 7).

Finding 5: a kernel, memory object or sampler of another context is refused by
``enqueue`` (and by a replay update) with a ConfigError naming the argument; updates of
the wrong kind and ``cl.LocalMemory`` beyond the device's local memory are refused.
Finding 6: a recording holds OpenCL references to what it recorded (a caller's
``release()`` does not free it), and concurrent replays of one recording are serialized.
Finding 7: a replay failing at dispatch k and an NV12 write failing on its uv plane say
what was already enqueued (:class:`qcom_ext.errors.PartialEnqueueError`).

The cases that crashed the process before (a foreign kernel on the Khronos path
segfaulted in clCommandNDRangeKernelKHR, a released buffer was replayed from freed
memory, eight replaying threads aborted pocl) run in one child process per device and
path (:data:`CHILD`); the rest run here. Every test runs on each device's own path
(pocl 3.1: cl_khr_command_buffer, pocl 3.0: replay), on the forced replay path and on the
native path through the fake recording driver (tests/fakes/recording.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest
from fakes.recording import FakeRecordingDriver, native_caps

import qcom_ext
import qcom_ext.ext.recording as recording
from qcom_ext import CLError, ConfigError, Recording
from qcom_ext.errors import PartialEnqueueError

ROOT = Path(__file__).resolve().parent.parent
N = 64
SOURCE = """
__kernel void add(__global int *a, int b) { atomic_add(&a[get_global_id(0)], b); }
__kernel void copy(__global const int *src, __global int *dst, __local int *tmp)
{ size_t i = get_global_id(0); tmp[get_local_id(0)] = src[i]; dst[i] = tmp[get_local_id(0)]; }
__kernel void sample(__read_only image2d_t img, sampler_t s, __global float *out)
{ out[get_global_id(0)] = read_imagef(img, s, (int2)(get_global_id(0), 0)).x; }
"""
PATHS = ["probed", "replay", "native"]
EXPECTED = {"native": "native", "khr:cl_khr_command_buffer": "khr_command_buffer"}


@pytest.fixture(params=PATHS)
def path_env(request, monkeypatch, device_caps):
    """The device's own path, the replay path (QCOM_EXT_DISABLE), the fake native path."""
    if request.param == "replay":
        monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_recordable_queues")
        yield "replay"
    elif request.param == "native":
        monkeypatch.setattr(recording, "probe", lambda device: native_caps(device_caps, None))
        with FakeRecordingDriver() as fake:
            yield fake
    else:
        yield EXPECTED.get(device_caps.path("cl_qcom_recordable_queues"), "replay")


def kernels(context):
    program = cl.Program(context, SOURCE).build()
    return {name: cl.Kernel(program, name) for name in ("add", "copy", "sample")}


def buffer(context, values=None):
    values = np.zeros(N, np.int32) if values is None else np.asarray(values, np.int32)
    return cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=values)


def read(queue, buf):
    out = np.empty(N, np.int32)
    cl.enqueue_copy(queue, out, buf)
    return out


def image(context):
    return cl.image_from_array(context, np.arange(N, dtype=np.float32).reshape(1, N))


def sampler(context):
    return cl.Sampler(context, False, cl.addressing_mode.CLAMP, cl.filter_mode.NEAREST)


# ---- finding 5: objects of another context, checked updates ----


def test_enqueue_refuses_objects_of_another_context(kernel_context, path_env, device_caps):
    other = cl.Context([device_caps.device()])
    mine, theirs = kernels(kernel_context), kernels(other)
    cases = [
        (theirs["add"], (buffer(kernel_context), np.int32(1)), r"dispatch 0 \(add\): the kernel"),
        (mine["add"], (buffer(other), np.int32(1)), r"argument 0 \(Buffer\) belongs to another"),
        (
            mine["sample"],
            (image(other), sampler(kernel_context), buffer(kernel_context)),
            r"argument 0 \(Image\) belongs to another context",
        ),
        (
            mine["sample"],
            (image(kernel_context), sampler(other), buffer(kernel_context)),
            r"argument 1 \(Sampler\) belongs to another context",
        ),
    ]
    for kernel, args, message in cases:
        rec = Recording(kernel_context)
        with pytest.raises(ConfigError, match=message), rec:
            rec.enqueue(kernel, (N,), None, *args)
        assert "released" in repr(rec)


def test_updates_of_another_context_or_kind_are_refused(kernel_context, path_env, device_caps):
    other = cl.Context([device_caps.device()])
    k = kernels(kernel_context)
    queue = cl.CommandQueue(kernel_context)
    a, out = buffer(kernel_context), buffer(kernel_context)
    with Recording(kernel_context) as rec:
        rec.enqueue(k["add"], (N,), None, a, np.int32(1))
        rec.enqueue(k["sample"], (N,), None, image(kernel_context), sampler(kernel_context), out)
    bad = [
        ({(0, 0): buffer(other)}, r"dispatch 0 argument 0 \(Buffer\) belongs to another context"),
        ({(1, 0): image(other)}, r"dispatch 1 argument 0 \(Image\) belongs to another context"),
        ({(1, 1): sampler(other)}, r"dispatch 1 argument 1 \(Sampler\) belongs to another"),
        ({(1, 0): buffer(kernel_context)}, r"recorded as an image memory object .*got a memory"),
        ({(1, 0): None}, r"recorded as an image memory object .*got None"),
        ({(0, 0): image(kernel_context)}, r"recorded as a memory object; got an image"),
        ({(1, 2): image(kernel_context)}, r"recorded as a memory object; got an image"),
    ]
    for args, message in bad:
        with pytest.raises(ConfigError, match=message):
            rec.replay(queue, args=args)
    queue.finish()
    assert not read(queue, a).any()  # nothing of a refused replay ran
    rec.replay(queue, args={(1, 0): image(kernel_context)}).wait()  # same type: accepted
    assert (read(queue, a) == 1).all()
    rec.release()


def test_local_memory_beyond_the_device_is_refused(kernel_context, path_env, device_caps):
    k = kernels(kernel_context)["copy"]
    queue = cl.CommandQueue(kernel_context)
    src, dst = buffer(kernel_context, np.arange(N)), buffer(kernel_context)
    limit = device_caps.device().local_mem_size
    message = rf"cl.LocalMemory arguments take {limit + 4} bytes; the device and kernel leave"
    rec = Recording(kernel_context)
    with pytest.raises(ConfigError, match=message), rec:
        rec.enqueue(k, (N,), (8,), src, dst, cl.LocalMemory(limit + 4))
    rec = Recording(kernel_context)
    with pytest.raises(ConfigError, match=r"cl.LocalMemory\(0\); it needs >= 1 byte"), rec:
        rec.enqueue(k, (N,), (8,), src, dst, cl.LocalMemory(0))
    with Recording(kernel_context) as rec:
        rec.enqueue(k, (N,), (8,), src, dst, cl.LocalMemory(32))
    with pytest.raises(ConfigError, match=message):
        rec.replay(queue, args={(0, 2): cl.LocalMemory(limit + 4)})
    with pytest.raises(ConfigError, match="needs >= 1 byte"):
        rec.replay(queue, args={(0, 2): cl.LocalMemory(0)})
    queue.finish()
    assert not read(queue, dst).any()
    rec.replay(queue, args={(0, 2): cl.LocalMemory(limit // 2)}).wait()
    assert (read(queue, dst) == np.arange(N)).all()
    rec.release()


# ---- finding 6: references of its own ----


def test_a_recording_holds_references_until_released(kernel_context, path_env):
    k = kernels(kernel_context)
    queue = cl.CommandQueue(kernel_context)
    src, dst = buffer(kernel_context, np.arange(N) * 7), buffer(kernel_context)
    src_handle = src.int_ptr
    with Recording(kernel_context) as rec:
        rec.enqueue(k["copy"], (N,), (8,), src, dst, cl.LocalMemory(32))
    held = [arg.value for d in rec._dispatches for arg in d.args if arg.kind == "mem"]
    assert [b.int_ptr for b in held] == [src_handle, dst.int_ptr]
    assert all(b is not src and b is not dst for b in held)  # references of its own
    before = src.reference_count
    src.release()
    assert held[0].reference_count == before - 1  # the recording's reference is left
    rec.replay(queue).wait()
    assert (read(queue, dst) == np.arange(N) * 7).all()
    dst_refs = dst.reference_count
    rec.release()
    assert dst.reference_count <= dst_refs - 1  # given back by release()


# ---- finding 7: partial effects ----


def fail_dispatch(rec, k, device):
    """Make dispatch ``k`` of the direct replay fail in the real driver: its local size is
    made larger than the device allows (CL_INVALID_WORK_GROUP_SIZE on enqueue, on every
    driver; a kernel of another context is undefined behaviour on some drivers, and the
    NVIDIA driver crashed on it)."""
    backend = rec._backend
    direct = backend._direct_backend() if hasattr(backend, "_direct_backend") else backend
    launches = direct._launches
    too_big = (2 * device.max_work_group_size,)
    launches[k] = (launches[k][0], too_big, too_big, launches[k][3])
    direct.end()
    return direct


def test_a_replay_failing_at_dispatch_k_says_what_was_enqueued(
    kernel_context, path_env, device_caps
):
    if not isinstance(path_env, str):
        pytest.skip("the native path replays in one driver call (tested below)")
    k = kernels(kernel_context)["add"]
    queue = cl.CommandQueue(kernel_context)
    a = buffer(kernel_context)
    with Recording(kernel_context) as rec:
        for value in (1, 10, 100, 1000):
            rec.enqueue(k, (N,), None, a, np.int32(value))
    fail_dispatch(rec, 2, device_caps.device())
    with pytest.raises(PartialEnqueueError, match=r"dispatch 2 failed; .*: 0, 1$") as caught:
        rec.replay(queue, args={(3, 1): 5000})  # an update: the direct path on every tier
    error = caught.value
    assert (error.enqueued, error.failed, error.code) == ((0, 1), 2, -54)
    assert isinstance(error, CLError) and isinstance(error.__cause__, cl.Error)
    error.event.wait()
    assert (read(queue, a) == 11).all()  # dispatches 0 and 1 ran, 2 and 3 did not


def test_a_single_call_replay_that_fails_is_a_clerror(kernel_context, path_env, device_caps):
    from qcom_ext.binding.lib import C, driver

    if isinstance(path_env, str):
        if path_env != "khr_command_buffer":
            pytest.skip("only the native and Khronos paths replay in one driver call")
        name, fine = "clEnqueueCommandBufferKHR", lambda *args: C.CL_INCOMPATIBLE_COMMAND_QUEUE_KHR
    else:
        name, fine = "clEnqueueRecordingQCOM", path_env.enqueue_recording
    failing = [True]
    k = kernels(kernel_context)["add"]
    queue = cl.CommandQueue(kernel_context)
    a = buffer(kernel_context)
    with driver.substitute(**{name: lambda *args: -5 if failing[0] else fine(*args)}):
        with Recording(kernel_context) as rec:
            rec.enqueue(k, (N,), None, a, np.int32(1))
        with pytest.raises(CLError, match=f"{name} failed: CL_OUT_OF_RESOURCES") as caught:
            rec.replay(queue)
        assert not isinstance(caught.value, PartialEnqueueError)  # one call: none enqueued
        queue.finish()
        assert not read(queue, a).any()
        failing[0] = False
        rec.replay(queue).wait()
    assert (read(queue, a) == 1).all()
    rec.release()


def test_an_nv12_write_failing_on_the_uv_plane_says_the_y_plane_was_written(
    kernel_context, device_caps
):
    queue = cl.CommandQueue(kernel_context)
    frame = qcom_ext.nv12_image(kernel_context, (8, 4), flags="read_write")
    other = qcom_ext.nv12_image(cl.Context([device_caps.device()]), (8, 4), flags="read_write")
    broken = dataclasses.replace(frame, uv=other.uv)  # the driver refuses this plane
    pixels = np.arange(8 * 6, dtype=np.uint8).reshape(6, 8)
    with pytest.raises(PartialEnqueueError, match=r"plane uv failed; .*: y$") as caught:
        broken.write(queue, pixels)
    assert (caught.value.enqueued, caught.value.failed) == (("y",), "uv")
    assert isinstance(caught.value.__cause__, cl.Error)
    y = np.empty((4, 8), np.uint8)
    cl.enqueue_copy(queue, y, frame.y, origin=(0, 0), region=(8, 4))
    assert (y == pixels[:4]).all()


# ---- crashes before: in a child process ----

CHILD = r"""
import gc, json, sys, threading
import numpy as np, pyopencl as cl
import qcom_ext
import qcom_ext.ext.recording as recording
from qcom_ext import Recording
from qcom_ext.errors import QcomExtError
from test_recording_adversarial import N, buffer, kernels, read

path, threads, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = cl.create_some_context(interactive=False)
device = ctx.devices[0]
if path == "native":
    from fakes.recording import FakeRecordingDriver, native_caps
    caps = native_caps(qcom_ext.probe(device), None)
    recording.probe = lambda d: caps
    FakeRecordingDriver().__enter__()
queue = cl.CommandQueue(ctx)
k = kernels(ctx)

def foreign_kernel():
    foreign = kernels(cl.Context([device]))["add"]
    a = buffer(ctx)
    with Recording(queue) as rec:
        rec.enqueue(foreign, (N,), None, a, np.int32(1))
    rec.replay(queue).wait()
    return read(queue, a).tolist()[:2]

def released_buffer():
    src, dst = buffer(ctx, np.arange(N) * 3), buffer(ctx)
    with Recording(queue) as rec:
        rec.enqueue(k["copy"], (N,), (8,), src, dst, cl.LocalMemory(32))
    src.release(); del src; gc.collect()
    fillers = [buffer(ctx, np.full(N, -1)) for _ in range(8)]  # may take its memory
    rec.replay(queue).wait()
    rec.release()
    got = read(queue, dst)
    return "equal" if (got == np.arange(N) * 3).all() else got.tolist()[:4]

def concurrent():
    a = buffer(ctx)
    with Recording(queue) as rec:
        rec.enqueue(k["add"], (N,), None, a, np.int32(1))
        rec.enqueue(k["add"], (N,), None, a, np.int32(2))
    def work(t):
        for _ in range(rounds):
            if t % 2:
                rec.replay(queue)
            else:
                rec.replay(queue, args={(1, 1): np.int32(10 + t)})
    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    queue.finish()
    want = sum(rounds * (1 + (2 if t % 2 else 10 + t)) for t in range(threads))
    got = read(queue, a)
    return "equal" if (got == want).all() else f"{sorted(set(got.tolist()))} != {want}"

for name in ("foreign_kernel", "released_buffer", "concurrent"):
    try:
        result = f"ok {globals()[name]()}"
    except QcomExtError as exc:
        result = f"typed {type(exc).__name__}: {exc}"
    except Exception as exc:
        result = f"untyped {type(exc).__name__}: {exc}"
    print(json.dumps([name, result]), flush=True)
"""
#: 8 threads x 300 replays: before the lock this aborted pocl 3.1 (the shared event
#: wrapped twice), segfaulted the fake native path and lost updates on pocl 3.0.
THREADS, ROUNDS = 8, 300
_CHILDREN: dict[tuple[str, str], tuple[dict[str, str], str]] = {}


def child_results(device_caps, path: str) -> tuple[dict[str, str], str]:
    """What the child reported per case, and how it ended (run once per device/path)."""
    from test_samples import device_spec

    key = (device_caps.label, path)
    if key not in _CHILDREN:
        tests = str(ROOT / "tests")
        env = {**os.environ, "PYOPENCL_CTX": device_spec(device_caps)}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), tests, os.environ.get("PYTHONPATH")) if p
        )
        if path == "replay":
            env["QCOM_EXT_DISABLE"] = "cl_qcom_recordable_queues"
        command = [sys.executable, "-c", CHILD, path, str(THREADS), str(ROUNDS)]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
        ending = f"exit status {done.returncode}: {done.stderr[-600:]}"
        _CHILDREN[key] = ({name: result for name, result in lines}, ending)
    return _CHILDREN[key]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("foreign_kernel", "typed ConfigError: dispatch 0 (add): the kernel belongs to another"),
        ("released_buffer", "ok equal"),
        ("concurrent", "ok equal"),
    ],
)
@pytest.mark.parametrize("path", PATHS)
def test_cases_that_crashed_before(device_caps, kernel_context, path, case, expected):
    results, ending = child_results(device_caps, path)
    assert case in results, f"the child died before {case}: {ending}"
    assert results[case].startswith(expected)
