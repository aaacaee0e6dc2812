"""8 threads at once: probe(), build_program with its program cache (cold and warm),
tune with its tuning cache, and recordings give the results a serial run gives, raise
nothing, and leave only whole cache entries (each program entry passes its checksum and
metadata check, each tuning entry parses and matches its key). 8 processes building and
tuning into one empty cache directory leave the same.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pytest
from fakes.recording import FakeRecordingDriver, native_caps

import qcom_ext
import qcom_ext.ext.context as context_module
import qcom_ext.ext.recording as recording_module
from qcom_ext import _context_cache
from qcom_ext.device.probe import clear_cache
from qcom_ext.ext.accelerated import whole_image as image_ops
from qcom_ext.ext.program import build as program
from qcom_ext.ext.program import cache as program_cache
from qcom_ext.ops import tuning
from qcom_ext.ops.tuning import TuningCache, kernel_identity

THREADS = 8
ROOT = Path(__file__).resolve().parents[1]
mf = cl.mem_flags
BITREVERSE = """__kernel void reverse(__global uint *out)
{ out[get_global_id(0)] = qcom_bitreverse((uint)VALUE + (uint)get_global_id(0)); }"""
SCALE = "__kernel void scale(__global float *a, float s) { a[get_global_id(0)] *= s; }"
ADD = "__kernel void add(__global int *a, int b) { a[get_global_id(0)] += b; }"


def together(work: Callable[[int], Any], threads: int = THREADS) -> list[Any]:
    """``work(i)`` for i in range(threads), each in its own thread, released at once by a
    barrier; the results in order. Any exception fails the test, naming its thread."""
    start = threading.Barrier(threads)
    results: list[Any] = [None] * threads
    errors: list[tuple[int, BaseException]] = []

    def run(i: int) -> None:
        try:
            start.wait()
            results[i] = work(i)
        except BaseException as exc:  # reported below
            errors.append((i, exc))

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(300)
    assert not any(thread.is_alive() for thread in pool), "a thread did not finish"
    assert not errors, errors
    return results


def reversed_bits(value: int) -> int:
    return int(f"{value & 0xFFFFFFFF:032b}"[::-1], 2)


def run_reverse(context: cl.Context, built: cl.Program) -> list[int]:
    queue = cl.CommandQueue(context)
    out = cl.Buffer(context, mf.WRITE_ONLY, 4 * 4)
    built.reverse(queue, (4,), None, out)
    host = np.empty(4, np.uint32)
    cl.enqueue_copy(queue, host, out)
    return host.tolist()


def whole_program_entries(folder: Path, expected: dict[str, dict]) -> None:
    """``folder`` holds exactly the entries of ``expected`` (key -> meta), each loading
    (checksum, layout, key and metadata checked), and no temporary file."""
    names = sorted(p.name for p in folder.iterdir())
    entries = [f"{key}{program_cache.SUFFIX}" for key in expected]
    assert names == sorted([program_cache.SECRET_NAME, *entries])  # + the HMAC key
    store = program_cache.ProgramCache(folder)
    for key, meta in expected.items():
        assert store.load(key, meta) is not None, f"entry {key} rejected"


def whole_tuning_entries(folder: Path, expected: list[tuple]) -> dict:
    """``folder`` holds exactly one JSON entry per (identity, global size, pad), each
    parsing and matching its key, and no temporary file; their results by key."""
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        f"{identity.digest(size, pad)}.json" for identity, size, pad in expected
    )
    store = TuningCache(folder)
    found = {}
    for identity, size, pad in expected:
        json.loads(store.path(identity.digest(size, pad)).read_text())
        found[(identity, size, pad)] = store.load(identity, size, pad)
        assert found[(identity, size, pad)] is not None
    return found


@pytest.fixture
def cache_root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(program_cache.DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(program_cache.DISABLE_ENV, raising=False)
    tuning.forget()
    yield tmp_path / "cache"
    tuning.forget()


# ---- probe ----


def test_probe(device_caps):
    """Every thread gets the serial reports, and one report object per device."""
    serial = (qcom_ext.probe(), qcom_ext.probe_all(), qcom_ext.probe(device_caps.device_id))
    clear_cache()
    results = together(
        lambda i: (qcom_ext.probe(), qcom_ext.probe_all(), qcom_ext.probe(device_caps.device_id))
    )
    for found in results:
        assert found == serial
    reports = [[default, *every, one] for default, every, one in results]
    for position in range(len(reports[0])):  # one cached report per device, for every thread
        assert len({id(found[position]) for found in reports}) == 1


# ---- build_program and the program cache ----


@pytest.mark.usefixtures("program_binaries_stored")
def test_build_program(kernel_context, cache_root, monkeypatch):
    """Cold: 8 threads build 4 sources (2 racing per source) into an empty cache; warm:
    8 threads load them without compiling. Every result is the serial one."""
    device = kernel_context.devices[0]
    values = [0x0F0F0F0F, 1, 0x12345678, 0xFFFFFFF0]

    def build(i: int) -> list[int]:
        built = qcom_ext.build_program(
            kernel_context, BITREVERSE, defines={"VALUE": values[i % 4]}
        )
        return run_reverse(kernel_context, built)

    serial = [[reversed_bits(v + j) for j in range(4)] for v in values]
    compiled: list[int] = []
    real_build = program._build_from_source

    def counting(*args):
        compiled.append(1)
        return real_build(*args)

    monkeypatch.setattr(program, "_build_from_source", counting)
    assert together(build) == [serial[i % 4] for i in range(THREADS)]
    assert 4 <= len(compiled) <= THREADS
    expected = {}
    for value in values:
        options = program.program_options([device], (), {"VALUE": value})
        key, meta = program.cache_identity([device], program.PRELUDE + BITREVERSE, options)
        expected[key] = meta
    whole_program_entries(cache_root / "programs", expected)
    compiled.clear()
    assert together(build) == [serial[i % 4] for i in range(THREADS)]
    assert compiled == []  # warm: every thread was served by the cache
    whole_program_entries(cache_root / "programs", expected)


# ---- tune and the tuning cache ----


def test_tune(kernel_context, cache_root):
    """Cold: 8 threads tune one kernel over two global sizes (4 racing per entry); warm:
    8 threads get the stored answers, as a serial lookup does."""
    built = qcom_ext.build_program(kernel_context, SCALE)
    sizes = [(4096,), (2048,)]
    candidates = [(32,), (64,)]

    def tune(i: int) -> tuple[int, ...] | None:
        kernel = cl.Kernel(built, "scale")  # a kernel object per thread, as OpenCL requires
        queue = cl.CommandQueue(
            kernel_context, properties=cl.command_queue_properties.PROFILING_ENABLE
        )
        buf = cl.Buffer(kernel_context, mf.READ_WRITE, 4096 * 4)
        return qcom_ext.tune(
            kernel,
            sizes[i % 2],
            [buf, np.float32(1)],
            candidates=candidates,
            repeats=2,
            queue=queue,
        )

    cold = together(tune)
    assert set(cold) <= {None, *candidates}
    identity = kernel_identity(cl.Kernel(built, "scale"), kernel_context.devices[0])
    stored = whole_tuning_entries(
        cache_root / "tuning", [(identity, size, False) for size in sizes]
    )
    tuning.forget()
    serial = [tune(i) for i in range(2)]  # served by the cache, as stored
    assert serial == [stored[(identity, size, False)].local_size for size in sizes]
    tuning.forget()
    warm = together(tune)
    assert warm == [serial[i % 2] for i in range(THREADS)]
    assert together(lambda i: tuning.cached_local_size(identity, sizes[i % 2], False)) == warm
    whole_tuning_entries(cache_root / "tuning", [(identity, size, False) for size in sizes])


# ---- recordings ----


@pytest.fixture(params=["probed", "replay", "native"])
def recording_path(request, monkeypatch, device_caps):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    if request.param == "replay":
        monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_recordable_queues")
    elif request.param == "native":
        monkeypatch.setattr(recording_module, "probe", lambda device: native_caps(device_caps))
        with FakeRecordingDriver():
            yield request.param
        return
    yield request.param


def test_recordings(kernel_context, recording_path):
    """8 threads record the same kernel object into their own recordings (a recording
    never sets arguments on the caller's kernel) and replay them 20 times with updates."""
    kernel = cl.Kernel(cl.Program(kernel_context, ADD).build(), "add")
    n = 64

    def record_and_replay(i: int) -> tuple[str, list[int]]:
        queue = cl.CommandQueue(kernel_context)
        buf = cl.Buffer(
            kernel_context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(n, np.int32)
        )
        rec = qcom_ext.Recording(queue)
        with rec:
            rec.enqueue(kernel, (n,), None, buf, np.int32(i + 1))
            rec.enqueue(kernel, (n // 2,), None, buf, np.int32(100))
        for j in range(20):
            updates = {(1, 1): j * (i + 1)} if j % 3 else None
            rec.replay(queue, args=updates, global_size={0: (n // 2,)} if j % 5 == 0 else None)
        out = np.empty(n, np.int32)
        cl.enqueue_copy(queue, out, buf)
        path = rec.path
        rec.release()
        return path, out.tolist()

    def expected(i: int) -> list[int]:
        out = np.zeros(n, np.int64)
        for j in range(20):
            out[: n // 2 if j % 5 == 0 else n] += i + 1
            out[: n // 2] += j * (i + 1) if j % 3 else 100
        return out.tolist()

    serial = [record_and_replay(i) for i in range(THREADS)]
    assert [values for _, values in serial] == [expected(i) for i in range(THREADS)]
    assert together(record_and_replay) == serial
    assert {path for path, _ in serial} == {
        {"replay": "replay", "native": "native"}.get(recording_path, serial[0][0])
    }


# ---- finalizers that run inside a locked block ----


class Cyclic:
    """Holds a context in a reference cycle: only the cyclic collector frees it."""

    def __init__(self, context: cl.Context) -> None:
        self.context, self.me = context, self


def collecting_first(monkeypatch, owner: Any, name: str) -> None:
    """``owner.name(...)`` runs a full collection first, as the collector may at any
    allocation (here: inside a block that holds a module lock)."""
    real = getattr(owner, name)

    def collect_then_call(*args, **kwargs):
        gc.collect()
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, collect_then_call)


def finishes(work: Callable[[], Any], seconds: float = 10) -> bool:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def test_a_context_collected_inside_the_context_registry_lock(cl_device, monkeypatch):
    """set_perf_hint allocates while it holds the registry lock; a context collected
    there runs its finalizer in that thread (it waited on itself forever before)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
        alive = qcom_ext.create_context(cl_device, perf_hint="low")
        doomed = qcom_ext.create_context(cl_device, perf_hint="high")
        handle = doomed.int_ptr
        Cyclic(doomed)
        del doomed
        collecting_first(monkeypatch, dataclasses, "replace")
        assert finishes(lambda: qcom_ext.set_perf_hint(alive, "normal")), "deadlocked"
    assert qcom_ext.context_info(alive).perf_hint == "normal"
    assert context_module._lookup(handle) is None  # the collected context's state is gone


def test_a_context_collected_inside_the_context_cache_lock(cl_context, device_caps, monkeypatch):
    """image_ops.sampler caches per context; a context collected while the cache makes
    a new entry under its table lock drops its own entry without waiting on that lock."""
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    doomed, fresh = cl.Context(cl_context.devices), cl.Context(cl_context.devices)
    image_ops.sampler(doomed)
    handle = doomed.int_ptr
    Cyclic(doomed)
    del doomed
    collecting_first(monkeypatch, _context_cache, "Entries")
    assert finishes(lambda: image_ops.sampler(fresh, "clamp")), "deadlocked"
    assert handle not in _context_cache.live_handles()  # the collected context's entries


# ---- 8 processes, one cache directory ----

WORKER = textwrap.dedent("""
    import faulthandler, json, sys
    faulthandler.dump_traceback_later(280, exit=True)  # a hung worker shows where, then ends
    import numpy as np, pyopencl as cl, qcom_ext
    from qcom_ext.ext.program import build  # qcom_ext's store under test, on pocl too
    build.drivers_cache_builds = lambda devices: False
    context = cl.Context([qcom_ext.probe().device()])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    out = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4096 * 4)
    values = []
    for value in (7, 0x80000001):
        built = qcom_ext.build_program(context, sys.argv[1], defines={"VALUE": value})
        built.reverse(queue, (4,), None, out)
        host = np.empty(4, np.uint32)
        cl.enqueue_copy(queue, host, out)
        values.append(host.tolist())
    scale = cl.Kernel(qcom_ext.build_program(context, sys.argv[2]), "scale")
    local = qcom_ext.tune(scale, (4096,), [out, np.float32(1)], candidates=[(32,), (64,)],
                          repeats=2, queue=queue)
    print(json.dumps({"values": values, "local": local}))
""")


@pytest.mark.slow
@pytest.mark.usefixtures("program_binaries_stored")
def test_processes_share_the_caches(kernel_context, device_caps, cache_root):
    """8 processes build the same programs and tune the same kernel into one empty cache
    directory at once: right values, whole entries, and the parent is served by both."""
    from test_samples import device_spec

    paths = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {
        **os.environ,
        "PYTHONPATH": paths,
        "PYOPENCL_CTX": device_spec(device_caps),
        "OPENBLAS_NUM_THREADS": "1",
    }
    # Each worker gets its own pocl kernel cache: what is under test is qcom_ext's shared
    # cache. Eight cold pocl 3.1 caches racing in one directory once failed a build with
    # an empty log (a full run from empty caches on a loaded 2-CPU machine).
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, BITREVERSE, SCALE],
            env={**env, "POCL_CACHE_DIR": str(cache_root.parent / f"pocl-{i}")},
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(THREADS)
    ]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err[-4000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    expected = [[reversed_bits(v + j) for j in range(4)] for v in (7, 0x80000001)]
    assert all(report["values"] == expected for report in reports)
    device = kernel_context.devices[0]
    entries = {}
    for defines in ({"VALUE": 7}, {"VALUE": 0x80000001}, None):
        source = SCALE if defines is None else BITREVERSE
        options = program.program_options([device], (), defines)
        key, meta = program.cache_identity([device], program.PRELUDE + source, options)
        entries[key] = meta
    whole_program_entries(cache_root / "programs", entries)
    scale = cl.Kernel(qcom_ext.build_program(kernel_context, SCALE), "scale")
    identity = kernel_identity(scale, device)
    stored = whole_tuning_entries(cache_root / "tuning", [(identity, (4096,), False)])
    local = stored[(identity, (4096,), False)].local_size
    assert local in {None, (32,), (64,)}
    assert tuning.cached_local_size(identity, (4096,), False) == local
    assert {None if r["local"] is None else tuple(r["local"]) for r in reports} <= {
        None,
        (32,),
        (64,),
    }
