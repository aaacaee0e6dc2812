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
from fakes.claiming import claiming, real
from fakes.driver import addr, u32
from fakes.recording import FakeRecordingDriver, native_caps

import qcom_ext
import qcom_ext.ext.context as context_module
import qcom_ext.ext.recording as recording_module
from qcom_ext import DeviceCaps, QcomExtWarning, Recording, WeightImage
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
    with context_module._lock:  # runs the removals finalizers deferred
        return len(context_module._registry)


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
    """The one device the cycles run on: the first that builds kernels, one with a Khronos
    recording tier first (it has one more path to cycle through)."""
    usable = []
    for caps in DEVICES:
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
        if chosen is not None and caps.device_id != chosen.device_id:
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


# ---- weight images ----

WEIGHTS = (  # (weights, center, separable)
    (np.arange(9.0).reshape(3, 3), (1, 1), False),
    (np.ones((4, 3, 5)), (2, 1), False),
    (np.array([[1.0, 2, 1, 0, 0], [1, 0, -1, 0, 0]]), (1, 1), True),
)


class WeightImageDriver:
    """Native weight images made real: clCreateImage of CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM
    becomes a real 2D image of the same bytes (rows of every phase stacked)."""

    def __init__(self):
        self._formats = real("clGetSupportedImageFormats")
        self._create = real("clCreateImage")
        self.created = 0

    def formats(self, ctx, flags, image_type, num_entries, formats, num_formats):
        if image_type != C.CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM:
            return self._formats(ctx, flags, image_type, num_entries, formats, num_formats)
        answer = [(C.CL_R, C.CL_HALF_FLOAT), (C.CL_R, C.CL_FLOAT)]
        if num_formats != ffi.NULL:
            num_formats[0] = len(answer)
        for i, (order, data_type) in enumerate(answer[:num_entries]):
            formats[i].image_channel_order, formats[i].image_channel_data_type = order, data_type
        return 0

    def create(self, ctx, flags, fmt, desc, host, errcode):
        if desc.image_type != C.CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM:
            return self._create(ctx, flags, fmt, desc, host, errcode)
        weight = ffi.cast("cl_weight_image_desc_qcom *", desc)
        fx, fy, phases = desc.image_width, desc.image_height, desc.image_array_size
        separable = weight.weight_desc.flags & C.CL_WEIGHT_IMAGE_SEPARABLE_QCOM
        rows, cols = (2, max(fx, fy)) if separable else (fy, fx)
        plain = ffi.new("cl_image_desc *")
        plain.image_type = C.CL_MEM_OBJECT_IMAGE2D
        plain.image_width, plain.image_height = cols, rows * phases
        self.created += 1
        return self._create(ctx, flags, fmt, plain, host, errcode)

    def substitutes(self):
        return {"clGetSupportedImageFormats": self.formats, "clCreateImage": self.create}


HOF_LIMITS = {0x4111: u32(16), 0x4112: u32(16), 0x4113: u32(16), 0x4114: u32(32), 0x4115: u32(32)}


@pytest.mark.parametrize("path", ["probed", "native"])
def test_weight_images(cl_context, device_caps, path):
    """WeightImage of 2-D, multi-phase and separable filters, read back, released."""
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    queue = cl.CommandQueue(cl_context)
    expected: dict[int, bytes] = {}
    paths = set()

    def cycle(i: int) -> None:
        weights, center, separable = WEIGHTS[i % len(WEIGHTS)]
        w = WeightImage(cl_context, weights, center=center, separable=separable)
        image = w.image
        host = np.empty(image.width * image.height * image.element_size, np.uint8)
        cl.enqueue_copy(queue, host, image, origin=(0, 0), region=(image.width, image.height))
        assert expected.setdefault(i % len(WEIGHTS), host.tobytes()) == host.tobytes()
        paths.add(w.path)
        w.release()

    live = lambda: reference_total(cl_context)  # noqa: E731
    if path == "native":
        fake = WeightImageDriver()
        with claiming(
            device_caps.device_id,
            extensions=["cl_qcom_accelerated_image_ops"],
            info=HOF_LIMITS,
            **fake.substitutes(),
        ):
            measurement = measure("weight images", cycle, live=live, drain=queue.finish)
        assert fake.created == CYCLES
    else:
        measurement = measure("weight images", cycle, live=live, drain=queue.finish)
    measurement.kind = f"weight images ({'/'.join(sorted(paths))})"
    check(measurement)
    assert paths == (
        {"native"}
        if path == "native"
        else {device_caps.path("cl_qcom_accelerated_image_ops").split(":")[0]}
    )


# ---- image-buffer pairs ----


class PairDriver:
    """clCreateBufferFromImageQCOM made real: a real buffer as large as the image at the
    64-byte-aligned row pitch that clGetDeviceImageInfoQCOM reports."""

    def __init__(self, context):
        self.context = context
        self._create_buffer = real("clCreateBuffer")
        self.created = 0

    @staticmethod
    def pitch(width: int, element: int) -> int:
        return -(-width * element // 64) * 64

    def create(self, image, flags, errcode):
        wrapped = cl.Image.from_int_ptr(addr(image), retain=True)
        size = self.pitch(wrapped.width, wrapped.element_size) * wrapped.height
        self.created += 1
        ctx = ffi.cast("cl_context", self.context.int_ptr)
        return self._create_buffer(ctx, flags, size, ffi.NULL, errcode)

    def pitches(self, device, width, height, fmt, param, size, value, size_ret):
        assert fmt.image_channel_order == C.CL_RGBA and param == 0x40C0  # 2D, 8-bit RGBA
        ffi.memmove(value, u32(self.pitch(width, 4)), 4)
        if size_ret != ffi.NULL:
            size_ret[0] = 4
        return 0

    def substitutes(self):
        return {
            "clCreateBufferFromImageQCOM": self.create,
            "clGetDeviceImageInfoQCOM": self.pitches,
        }


@pytest.mark.parametrize("path", ["probed", "native"])
def test_image_buffer_pairs(cl_context, device_caps, path):
    """image_with_buffer written through the buffer, buffer_from_image of a long-lived
    image synced, both released."""
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    queue = cl.CommandQueue(cl_context)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
    parent = cl.create_image(cl_context, mf.READ_WRITE, fmt, (21, 9))
    pixels = np.random.default_rng(0).integers(0, 256, (4, 8, 4), dtype=np.uint8)
    paths = set()

    def cycle(i: int) -> None:
        pair = qcom_ext.image_with_buffer(cl_context, (8, 4), "RGBA/UNSIGNED_INT8")
        pair.write_buffer(queue, pixels)
        pair.sync_to_image(queue)
        view = qcom_ext.buffer_from_image(parent)
        view.sync_to_buffer(queue)
        paths.update((pair.path, view.path))
        if i % 97 == 0:
            assert (pair.read_buffer(queue) == pixels).all()
        pair.buffer.release()
        pair.image.release()
        view.buffer.release()

    live = lambda: reference_total(cl_context, parent)  # noqa: E731
    if path == "native":
        fake = PairDriver(cl_context)
        with claiming(
            device_caps.device_id,
            extensions=["cl_qcom_create_buffer_from_image"],
            **fake.substitutes(),
        ):
            measurement = measure("image-buffer pairs", cycle, live=live, drain=queue.finish)
        assert fake.created == 2 * CYCLES
    else:
        measurement = measure("image-buffer pairs", cycle, live=live, drain=queue.finish)
    measurement.kind = f"image-buffer pairs ({'/'.join(sorted(paths))})"
    check(measurement)
    assert path != "native" or paths == {"native"}


# ---- programs, in two child processes ----

CHILDREN = 2
BASELINE = 300  # bare pyopencl builds that measure the driver's own growth per build


def _device_spec(caps) -> str:
    from test_samples import device_spec

    return device_spec(caps)


@pytest.fixture(scope="module", autouse=True)
def program_children(request):
    """Start the program cycles of every selected test_programs instance at once, so they
    run while the other kinds run here (each child: CYCLES / CHILDREN cycles)."""
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
                str(CYCLES // CHILDREN),
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
    both dropped: 2 x 5,000 cycles in child processes (tests/leak_programs.py: the
    driver's own growth per build and the allowance it gets)."""
    results = []
    for child, log in program_children[device_caps.device_id]:
        out, _ = child.communicate(timeout=600)
        log.seek(0)
        assert child.returncode == 0, log.read()[-4000:]
        results.append(Measurement(**json.loads(out.strip().splitlines()[-1])))
    assert sum(m.cycles for m in results) == CYCLES
    for measurement in results:
        check(measurement)
