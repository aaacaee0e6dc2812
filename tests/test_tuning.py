"""qcom_ext.tune: candidates, rejection, the JSON cache (hit, invalidation, corruption,
concurrent writers) and the ops' use of tuned sizes."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import warnings

import numpy as np
import pyopencl as cl
import pytest

import qcom_ext
from qcom_ext import ConfigError, QcomExtWarning, ops
from qcom_ext.ops import tuning
from qcom_ext.ops.tuning import KernelIdentity, TuningCache, TuningResult

SOURCE = "__kernel void scale(__global float *a, float s) { a[get_global_id(0)] *= s; }"
GUARDED = """__kernel void scale(__global float *a, float s, int n)
{ int i = get_global_id(0); if (i < n) a[i] *= s; }"""


def scale_kernel(context, source=SOURCE, options=()):
    program = qcom_ext.build_program(context, source, options)
    return cl.Kernel(program, "scale")


def buffer(context, n=4096):
    return cl.Buffer(context, cl.mem_flags.READ_WRITE, n * 4)


def test_tune_picks_a_timed_candidate_and_caches_it(kernel_context, tuning_cache_dir, monkeypatch):
    kernel = scale_kernel(kernel_context)
    args = [buffer(kernel_context), np.float32(1.0)]
    report = tuning.tune_report(kernel, (4096,), args, candidates=[(32,), (64,), (128,)])
    timed = dict(report.measured)
    assert None in timed and set(timed) <= {None, (32,), (64,), (128,)}
    assert report.local_size in timed and timed[report.local_size] == min(timed.values())
    assert report.driver_ns == timed[None] and report.gain >= 1.0
    files = list(tuning_cache_dir.glob("*.json"))
    assert len(files) == 1
    entry = json.loads(files[0].read_text())
    assert entry["key"]["kernel"] == "scale" and entry["key"]["global_size"] == [4096]
    assert entry["key"]["device"] == kernel_context.devices[0].name.strip()

    def no_timing(*args, **kwargs):
        raise AssertionError("a cache hit must not time anything")

    monkeypatch.setattr(tuning, "_median_ns", no_timing)
    again = tuning.tune_report(kernel, (4096,), args, candidates=[(32,)])
    assert again.from_cache and again.local_size == report.local_size
    assert qcom_ext.tune(kernel, (4096,), args) == report.local_size


def test_source_options_and_global_size_invalidate(kernel_context, tuning_cache_dir):
    calls = []

    def tune(kernel, size, args):
        result = tuning.tune_report(kernel, size, args, candidates=[(64,)], repeats=1)
        calls.append(result.from_cache)
        return result

    data = buffer(kernel_context)
    plain = scale_kernel(kernel_context)
    tune(plain, (4096,), [data, np.float32(2)])
    tune(plain, (4096,), [data, np.float32(2)])
    tune(plain, (2048,), [data, np.float32(2)])  # another global size
    tune(scale_kernel(kernel_context, SOURCE + "\n// edited\n"), (4096,), [data, np.float32(2)])
    tune(scale_kernel(kernel_context, SOURCE, ["-DUNUSED=1"]), (4096,), [data, np.float32(2)])
    assert calls == [False, True, False, False, False]
    assert len(list(tuning_cache_dir.glob("*.json"))) == 4


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "bad_local"])
def test_corrupt_or_foreign_entries_are_ignored_and_replaced(
    kernel_context, tuning_cache_dir, damage
):
    kernel = scale_kernel(kernel_context)
    args = [buffer(kernel_context), np.float32(1)]
    tuning.tune_report(kernel, (4096,), args, candidates=[(64,)], repeats=1)
    (path,) = tuning_cache_dir.glob("*.json")
    entry = json.loads(path.read_text())
    if damage == "garbage":
        path.write_bytes(b"\x00\xffnot json")
    elif damage == "truncated":
        path.write_text(path.read_text()[:40])
    elif damage == "foreign":  # a valid entry of another key under this name
        entry["key"]["kernel"] = "other"
        path.write_text(json.dumps(entry))
    else:
        entry["local_size"] = [0]
        path.write_text(json.dumps(entry))
    tuning.forget()
    identity = tuning.kernel_identity(kernel)
    assert TuningCache(tuning_cache_dir).load(identity, (4096,), False) is None
    assert tuning.cached_local_size(identity, (4096,), pad_global=False) is None
    report = tuning.tune_report(kernel, (4096,), args, candidates=[(64,)], repeats=1)
    assert not report.from_cache
    fixed = json.loads(path.read_text())
    assert fixed["key"]["kernel"] == "scale"


def test_invalid_candidates_are_rejected_with_reasons(kernel_context, tuning_cache_dir):
    kernel = scale_kernel(kernel_context)
    device = kernel_context.devices[0]
    limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
    args = [buffer(kernel_context), np.float32(1)]
    odd = next(n for n in range(limit, 1, -1) if 4096 % n)  # within the limit, not dividing
    report = tuning.tune_report(
        kernel,
        (4096,),
        args,
        use_cache=False,
        repeats=1,
        candidates=[(64,), (limit * 2,), (64, 1), (odd,), (0,)],
    )
    reasons = dict(report.rejected)
    assert f"exceed the kernel's limit {limit}" in reasons[(limit * 2,)]
    assert "2 dimensions" in reasons[(64, 1)]
    assert f"not a multiple of {odd}" in reasons[(odd,)]
    assert "positive" in reasons[(0,)]
    assert {ls for ls, _ in report.measured} == {None, (64,)}


def test_padding_allows_non_dividing_sizes_for_guarded_kernels(kernel_context, tuning_cache_dir):
    n = 1000
    kernel = scale_kernel(kernel_context, GUARDED)
    data = np.arange(n, dtype=np.float32)
    buf = cl.Buffer(
        kernel_context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data
    )
    report = tuning.tune_report(
        kernel,
        (n,),
        [buf, np.float32(1.0), np.int32(n)],
        candidates=[(64,)],
        pad_global=True,
        repeats=1,
    )
    assert (64,) in dict(report.measured)


def test_budget_stops_after_the_driver_choice(kernel_context, tuning_cache_dir):
    kernel = scale_kernel(kernel_context)
    report = tuning.tune_report(
        kernel,
        (4096,),
        [buffer(kernel_context), np.float32(1)],
        candidates=[(32,), (64,)],
        budget_s=0,
        use_cache=False,
    )
    assert [ls for ls, _ in report.measured] == [None]
    assert all("budget" in why for _, why in report.rejected)
    assert report.local_size is None


def test_no_cache_env_writes_nothing(kernel_context, tuning_cache_dir, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_NO_CACHE", "1")
    kernel = scale_kernel(kernel_context)
    qcom_ext.tune(
        kernel, (4096,), [buffer(kernel_context), np.float32(1)], candidates=[(64,)], repeats=1
    )
    assert not tuning_cache_dir.exists()


def test_unwritable_cache_warns_and_still_answers(kernel_context, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(blocker))
    tuning.forget()
    kernel = scale_kernel(kernel_context)
    with pytest.warns(QcomExtWarning, match="could not write the tuning cache"):
        local = qcom_ext.tune(
            kernel, (4096,), [buffer(kernel_context), np.float32(1)], candidates=[(64,)], repeats=1
        )
    assert local in (None, (64,))


def _store_many(directory: str, worker: int) -> None:
    cache = TuningCache(__import__("pathlib").Path(directory))
    for i in range(60):
        identity = KernelIdentity("p", "d", "1", f"k{i % 6}", "s", "")
        result = TuningResult((worker + 1, i % 3 + 1), float(i + 1), float(i + 2))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cache.store(identity, (64, 64), True, result)


def test_concurrent_writers_leave_only_whole_entries(tmp_path):
    directory = tmp_path / "tuning"
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    workers = [context.Process(target=_store_many, args=(str(directory), w)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
        assert p.exitcode == 0
    files = sorted(os.listdir(directory))
    assert len(files) == 6 and all(f.endswith(".json") for f in files)  # no temporaries left
    cache = TuningCache(directory)
    for i in range(6):
        found = cache.load(KernelIdentity("p", "d", "1", f"k{i}", "s", ""), (64, 64), True)
        assert found is not None and found.local_size[0] in (1, 2, 3, 4)


def test_default_candidates_respect_the_limits():
    found = tuning.default_candidates((1000, 7), (1024, 1024, 64), 256)
    assert found and all(x * y in (16, 32, 64, 128, 256) for x, y in found)
    assert all(y <= 8 for _, y in found)  # 7 rounds up to 8, never further
    assert found[0] == (64, 1)
    assert tuning.default_candidates((100,), (1024,), 64) == [(64,), (32,), (16,)]
    with pytest.raises(ConfigError, match="1 to 3 dimensions"):
        tuning.default_candidates((1, 1, 1, 1), (1, 1, 1, 1), 64)


def test_ops_use_the_tuned_size_and_the_driver_choice_otherwise(
    kernel_context, tuning_cache_dir, monkeypatch
):
    queue = cl.CommandQueue(kernel_context)
    x = np.random.default_rng(0).standard_normal((1, 5, 6, 7)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((8, 7)).astype(np.float32)
    layer = ops.Conv2d1x1(queue, w, tile=(2, 4))
    src = ops.BufferTensor(
        cl.Buffer(kernel_context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x),
        x.shape,
        np.dtype(np.float32),
        "NHWC",
    )
    out = layer.output_for(queue, src)
    global_size = layer.global_size(src, out)
    seen = []
    real_enqueue = cl.enqueue_nd_range_kernel

    def spy(queue, kernel, size, local, **kwargs):
        seen.append((tuple(size), local))
        return real_enqueue(queue, kernel, size, local, **kwargs)

    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", spy)
    layer(queue, src, out)
    assert seen[-1] == (tuple(global_size), None)  # never tuned: the driver's choice
    report = layer.tune(queue, src, out, candidates=[(2, 2), (1, 4)], repeats=1)
    assert report.local_size in (None, (2, 2), (1, 4))
    layer(queue, src, out)
    want = tuning.padded(global_size, report.local_size)
    assert seen[-1] == (want, report.local_size)
    tuning.forget()  # a new process: the cached file is read back
    layer(queue, src, out)
    assert seen[-1] == (want, report.local_size)
    np.testing.assert_allclose(out.to_numpy(queue), x @ w.T, rtol=1e-5, atol=1e-5)


def test_a_cached_program_is_keyed_like_a_compiled_one(kernel_context, tuning_cache_dir):
    """build_program's second build loads binaries (no CL_PROGRAM_SOURCE): the tuner still
    keys it by its source, so both share one tuning entry (they had two before)."""
    device = kernel_context.devices[0]
    compiled = tuning.kernel_identity(scale_kernel(kernel_context), device)
    loaded = tuning.kernel_identity(scale_kernel(kernel_context), device)
    assert loaded == compiled
    other = cl.Program(kernel_context, GUARDED).build()  # never seen by build_program
    again = cl.Program(kernel_context, [device], other.binaries).build()
    identity = tuning.kernel_identity(cl.Kernel(again, "scale"), device)
    digest = "".join(hashlib.sha256(b).hexdigest() for b in again.binaries)
    assert identity.source_sha256 == hashlib.sha256(f"binary:{digest}".encode()).hexdigest()
