"""10,000 create/use/release cycles of each kind of object qcom_ext makes: contexts (with
hints), queues, recordings, weight images, image-buffer pairs and programs. RSS and the
live OpenCL handle count must stay bounded (tests/_leakcheck.py: how both are measured,
the limits and why), and the same measurement must report a loop that does leak.

Each kind runs on the device's own path and, where the device has no native path, on
the native one through cffi stand-ins that hand back real objects of the real driver
(tests/fakes/claiming.py, fakes.recording.FakeRecordingDriver), so the native code's
handles are created, wrapped and released for real. Objects are released the way a user
would: ``release()`` where qcom_ext or pyopencl offers it, else dropping the last
reference (CPython frees pyopencl objects at once). Program cycles cost ~8 ms each on
pocl (``clBuildProgram`` from a cached binary), so they run as two child processes of
5,000 cycles, started when this module starts (when test_programs, marked slow, is
selected) and checked by :func:`test_programs`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pytest
from _leakcheck import (
    CYCLES,
    WARMUP,
    ContextCounter,
    Measurement,
    measure,
    reference_total,
    wait_for_driver_release,
)
from conftest import DEVICES
from fakes.claiming import claiming
from fakes.recording import FakeRecordingDriver, native_caps

import qcom_ext
import qcom_ext.ext.recording as recording_module
from qcom_ext import DeviceCaps, QcomExtWarning, Recording, _context_cache
from qcom_ext.binding.lib import C, ffi

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc/self/statm (Linux)"
)
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
LEVELS = ("high", "normal", "low")
mf = cl.mem_flags
ADD = "__kernel void add(__global int *a, int b) { a[get_global_id(0)] += b; }"
N = 16


def check(measurement: Measurement) -> None:
    print(measurement.summary())
    assert not measurement.problems(), measurement.problems()


def counter() -> ContextCounter:
    try:
        return ContextCounter()
    except LookupError as exc:
        pytest.skip(str(exc))


def registered_contexts() -> int:
    """The contexts whose state (or cached values) an owner still holds."""
    return len(_context_cache.live_handles())


def child_environment() -> dict[str, str]:
    paths = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": paths, "OPENBLAS_NUM_THREADS": "1"}


@pytest.fixture(autouse=True)
def quiet():
    """Hints that are not native warn on every call; pytest would keep all 10,000."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QcomExtWarning)
        yield


@pytest.fixture(autouse=True)
def own_path(monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)


@functools.cache
def leak_device() -> DeviceCaps | None:
    """The one device the cycles run on: the first CPU device that builds kernels, one with
    a Khronos recording tier first (it has one more path to cycle through). GPU drivers
    are left out: a context costs ~0.2 s and ~200 MB there, and the detector's self-check
    keeps one per cycle on purpose (250 of them filled 53 GB of an H200); GPU memory across
    cycles is measured by tests/gpu_memory_cycles.py and tests/test_context_release.py."""
    usable = []
    for caps in DEVICES:
        if caps.device_type != "cpu":
            continue
        try:
            cl.Program(cl.Context([caps.device()]), ADD).build()
        except cl.Error:
            continue
        usable.append(caps)
    usable.sort(key=lambda c: not c.path("cl_qcom_recordable_queues").startswith("khr"))
    return usable[0] if usable else None


@pytest.fixture(autouse=True)
def one_device(request):
    """10,000 cycles cost seconds per kind; what they measure is qcom_ext's host code and
    the driver calls it makes, the same on every device, so they run on one."""
    if "device_caps" in request.fixturenames:
        caps, chosen = request.getfixturevalue("device_caps"), leak_device()
        if chosen is None:
            pytest.skip(f"the leak cycles run on a CPU OpenCL device; {caps.label} is not one")
        if caps.device_id != chosen.device_id:
            pytest.skip(f"the leak cycles run on one device, {chosen.label}, not {caps.label}")


# ---- the measurement reports leaks ----


def test_four_kilobytes_kept_per_cycle_are_reported():
    """4 KiB, not 1: late in a long test session the heap's free fragments absorb 1 KiB a
    cycle (+8.0 MiB over 9,500 cycles, under the limit), never 4 KiB whole pages."""
    kept: list[bytearray] = []
    leaking = measure(
        "4 KiB kept per cycle", lambda i: kept.append(bytearray(4096)), cycles=10_000, warmup=500
    )
    print(leaking.summary())
    assert [p for p in leaking.problems() if "RSS grew" in p], leaking.summary()
    clean = measure(
        "4 KiB dropped per cycle", lambda i: bytearray(4096), cycles=10_000, warmup=500
    )
    print(clean.summary())
    assert clean.problems() == [], clean.summary()


def test_a_queue_kept_per_cycle_is_reported(cl_context):
    kept = []
    leaking = measure(
        "queues kept",
        lambda i: kept.append(qcom_ext.create_queue(cl_context)),
        live=lambda: reference_total(cl_context),
        cycles=2000,
        warmup=100,
    )
    assert leaking.live_growth == 1900
    assert [p for p in leaking.problems() if "+1900 live OpenCL handles" in p]


def test_a_context_kept_per_cycle_is_reported(cl_device):
    contexts = counter()
    kept = []
    with contexts.counting():
        leaking = measure(
            "contexts kept",
            lambda i: kept.append(qcom_ext.create_context(cl_device)),
            live=lambda: contexts.live,
            cycles=300,
            warmup=50,
        )
    assert leaking.live_growth == 250 and leaking.problems()
    kept.clear()
    assert contexts.live == 0  # the runtime reports each destruction


def test_an_object_kept_per_cycle_is_reported():
    """16 bytes a cycle is far too little for RSS; the object count reports it."""
    kept: list[object] = []
    leaking = measure(
        "an object kept per cycle", lambda i: kept.append(object()), cycles=10_000, warmup=500
    )
    assert [p for p in leaking.problems() if "more Python objects" in p], leaking.summary()
    assert not [p for p in leaking.problems() if "RSS" in p]


# ---- contexts and queues ----


def test_contexts(cl_device):
    """create_context with perf and priority hints, a queue, a buffer round trip."""
    contexts = counter()
    data = np.arange(N, dtype=np.int32)
    out = np.empty_like(data)
    registered = registered_contexts()

    def cycle(i: int) -> None:
        ctx = qcom_ext.create_context(
            cl_device, perf_hint=LEVELS[i % 3], priority_hint=LEVELS[(i + 1) % 3]
        )
        queue = qcom_ext.create_queue(ctx)
        idle = ctx.reference_count
        buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=data)
        cl.enqueue_copy(queue, out, buf)
        buf.release()
        wait_for_driver_release(ctx, idle, queue)  # so the context dies on this thread

    with contexts.counting():
        check(measure("contexts", cycle, live=lambda: contexts.live))
    assert contexts.created == CYCLES and contexts.live == 0
    assert registered_contexts() <= registered  # hint records die with their contexts
    assert (out == data).all()


def test_native_contexts(cl_device, device_caps):
    """The native hint path: the vendor properties reach clCreateContext (stripped there
    before the real driver sees them)."""
    contexts = counter()
    create = contexts._create
    seen = set()

    def vendor_create(properties, num_devices, devices, notify, user_data, errcode):
        words, i = [], 0
        while properties[i] != 0:
            key, value = properties[i], properties[i + 1]
            if key in (C.CL_CONTEXT_PERF_HINT_QCOM, C.CL_CONTEXT_PRIORITY_HINT_QCOM):
                seen.add((key, value))
            else:
                words += [key, value]
            i += 2
        plain = ffi.new("cl_context_properties[]", [*words, 0])
        return create(plain, num_devices, devices, notify, user_data, errcode)

    contexts._create = vendor_create
    claims = ["cl_qcom_perf_hint", "cl_qcom_priority_hint"]

    def cycle(i: int) -> None:
        ctx = qcom_ext.create_context(
            cl_device, perf_hint=LEVELS[i % 3], priority_hint=LEVELS[(i + 1) % 3]
        )
        qcom_ext.create_queue(ctx).finish()

    with claiming(device_caps.device_id, extensions=claims), contexts.counting():
        assert qcom_ext.probe(cl_device).path("cl_qcom_perf_hint") == "native"
        check(measure("contexts (native hints)", cycle, live=lambda: contexts.live))
    assert len(seen) == 6 and contexts.live == 0


def test_queues(cl_context):
    """create_queue with every flag and hint combination, a buffer round trip each."""
    data = np.arange(N, dtype=np.int32)
    buf = cl.Buffer(cl_context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=data)
    out = np.empty_like(data)
    variants = (
        {},
        {"profiling": True, "priority": "high"},
        {"out_of_order": True, "throttle": "low"},
        {"recordable": True, "priority": "low", "throttle": "normal"},
    )

    def cycle(i: int) -> None:
        queue = qcom_ext.create_queue(cl_context, **variants[i % 4])
        cl.enqueue_copy(queue, out, buf)

    check(measure("queues", cycle, live=lambda: reference_total(cl_context)))
    assert (out == data).all()


# ---- recordings ----


@pytest.fixture(params=["probed", "replay", "native"])
def recording_path(request, monkeypatch, device_caps):
    """The device's own path (cl_khr_command_buffer on pocl 3.1), the replay path forced
    through QCOM_EXT_DISABLE, the native path through the fake recording driver."""
    if request.param == "replay":
        monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_recordable_queues")
        yield None
    elif request.param == "native":
        monkeypatch.setattr(recording_module, "probe", lambda device: native_caps(device_caps))
        fake = FakeRecordingDriver()
        with fake:
            yield fake
    else:
        yield None


def test_recordings(kernel_context, recording_path):
    """Record a dispatch, replay it as recorded (and with an update every other cycle),
    release."""
    fake = recording_path
    program = cl.Program(kernel_context, ADD).build()
    kernel = cl.Kernel(program, "add")
    queue = cl.CommandQueue(kernel_context)
    buf = cl.Buffer(
        kernel_context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(N, np.int32)
    )
    paths = set()

    def cycle(i: int) -> None:
        rec = Recording(queue)
        with rec:
            rec.enqueue(kernel, (N,), None, buf, np.int32(1))
        rec.replay(queue)  # += 1
        if i % 2:
            rec.replay(queue, args={(0, 1): 2})  # += 2
        paths.add(rec.path)
        rec.release()
        if fake is not None:  # the fake driver's own records of released objects
            fake.kernel_args.clear()
            fake.replays.clear()
            fake.queue_properties.clear()

    def live() -> int:
        recordings = len(fake.recordings) if fake is not None else 0
        return reference_total(kernel_context, program, queue) + recordings

    measurement = measure("recordings", cycle, live=live, drain=queue.finish)
    measurement.kind = f"recordings ({'/'.join(sorted(paths))})"
    check(measurement)
    out = np.empty(N, np.int32)
    cl.enqueue_copy(queue, out, buf)
    assert (out == 2 * CYCLES).all()  # every replay ran, with its update


# ---- programs, in two child processes ----

CHILDREN = 2
BASELINE = 300  # bare pyopencl builds that measure the driver's own growth per build
#: Program cycles in all: half the other kinds' (a cycle is a build from the store, ~12 ms
#: on pocl; 10,000 took 59 s on 2 CPUs, twice the 30 s budget).
PROGRAM_CYCLES = max(2 * CHILDREN * WARMUP, CYCLES // 2)


def _device_spec(caps) -> str:
    from test_samples import device_spec

    return device_spec(caps)


@pytest.fixture(scope="module", autouse=True)
def program_children(request):
    """Start the program cycles of every selected test_programs instance at once, so they
    run while the other kinds run here (each child: PROGRAM_CYCLES / CHILDREN cycles)."""
    selected = [
        item.callspec.params["device_caps"]
        for item in request.session.items
        if item.module is request.module and item.originalname == "test_programs"
    ]
    chosen = leak_device() if selected else None
    children: dict[int, list[tuple[subprocess.Popen, Any]]] = {}
    with contextlib.ExitStack() as stack:
        for caps in selected:
            if caps is None or chosen is None or caps.device_id != chosen.device_id:
                continue
            env = {**child_environment(), "PYOPENCL_CTX": _device_spec(caps)}
            command = [
                sys.executable,
                str(TESTS / "leak_programs.py"),
                str(PROGRAM_CYCLES // CHILDREN),
                str(WARMUP),
                str(BASELINE),
            ]
            started = children.setdefault(caps.device_id, [])
            for _ in range(CHILDREN):
                log = stack.enter_context(tempfile.TemporaryFile(mode="w+"))
                child = subprocess.Popen(
                    command, stdout=subprocess.PIPE, stderr=log, text=True, env=env
                )
                stack.callback(_stop, child)
                started.append((child, log))
        yield children


def _stop(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.kill()
    child.communicate()


@pytest.mark.slow
def test_programs(kernel_context, device_caps, program_children):
    """build_program of one source (program cache hits after the first), its kernel run,
    both dropped: 2 x 2,500 cycles in child processes (tests/leak_programs.py: the
    driver's own growth per build and the allowance it gets)."""
    results = []
    for child, log in program_children[device_caps.device_id]:
        out, _ = child.communicate(timeout=600)
        log.seek(0)
        assert child.returncode == 0, log.read()[-4000:]
        results.append(Measurement(**json.loads(out.strip().splitlines()[-1])))
    assert sum(m.cycles for m in results) == PROGRAM_CYCLES
    for measurement in results:
        check(measurement)
