"""Security checks of the reliability harness (issue 8).

* Protected contexts never fall back: wherever ``cl_qcom_protected_context`` is not
  native (absent, disabled by ``QCOM_EXT_DISABLE``, its trial failed, one device of
  several lacks it) ``create_context(protected=True)`` raises ExtensionUnavailable and
  no context is created; a driver that refuses the protected property is a CLError, and
  no unprotected context is made in its place.
* Kill switches and environment overrides are validated: unknown names are reported
  (ConfigError / a pytest usage error), never ignored; an override of the OpenCL library
  never falls back to another library.
* The persistent caches never hand over an entry made for another device, driver,
  version or key, nor a corrupt, truncated or altered one, nor anything at an entry's
  path that is not a regular file (symlinks are not followed, FIFOs do not block).

The fake-driver parts reuse ``tests/test_context_fake.py``'s FakeCL; the cache parts run
on the first local device that builds kernels (pocl here).
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import default_building_context
from fakes.driver import DEVICE, adreno740_device_info
from test_context_fake import CTX, FakeCL

import qcom_ext
from qcom_ext import CLError, ConfigError, DeviceCaps, ExtensionUnavailable
from qcom_ext.binding.lib import C
from qcom_ext.device.extensions import REGISTRY, khronos_names, resolve
from qcom_ext.ext import context as context_module
from qcom_ext.ext.program import build as program_module
from qcom_ext.ext.program.cache import MAGIC, ProgramCache, key_of

# These tests are of qcom_ext's own program store: it stores binaries on pocl too.
pytestmark = pytest.mark.usefixtures("program_binaries_stored")

pytest_plugins = ["pytester"]

PROTECTED = "cl_qcom_protected_context"
ADRENO740 = adreno740_device_info()[0x1030].rstrip(b"\0").decode()
assert PROTECTED in ADRENO740.split()  # the real Adreno 740 string lists it


@pytest.fixture
def fake_wrapping(fake_cl_objects):
    fake_cl_objects(context_module, "_wrap_context", "_wrap_queue")


# ---- protected contexts never fall back --------------------------------------------------


def test_the_registry_gives_protected_contexts_no_fallback():
    """Whatever a device lists and whatever is disabled, the path is native or nothing."""
    names = sorted(set(REGISTRY) | khronos_names())
    seen = set()
    for advertised in (set(), {PROTECTED}, set(names)):
        for disabled in ((), (PROTECTED,), tuple(REGISTRY), tuple(khronos_names())):
            for broken in ((), ((PROTECTED, "the trial crashed"),)):
                status = resolve(PROTECTED, advertised, disabled=disabled, broken=broken)
                seen.add(status.path)
                assert status.path in ("native", "unavailable"), status
                native = PROTECTED in advertised and PROTECTED not in disabled and not broken
                assert (status.path == "native") == native
    assert seen == {"native", "unavailable"}


@pytest.mark.parametrize(
    ("extensions", "disable"),
    [
        ("cl_khr_fp16 cl_qcom_perf_hint", ""),  # not advertised
        (ADRENO740, PROTECTED),
        (ADRENO740, "all"),
        (ADRENO740, "cl_qcom_perf_hint, cl_qcom_protected_context"),
    ],
)
def test_protected_context_is_refused_where_not_native(
    fake_wrapping, monkeypatch, extensions, disable
):
    if disable:
        monkeypatch.setenv("QCOM_EXT_DISABLE", disable)
    with FakeCL(extensions=extensions) as cl, pytest.raises(ExtensionUnavailable) as refused:
        qcom_ext.create_context(DEVICE, protected=True, perf_hint="high")
    assert cl.count("clCreateContext") == 0  # nothing made, protected or not
    assert refused.value.extension == PROTECTED
    assert "adreno-740" in refused.value.device
    assert "never fall back" in str(refused.value) or "QCOM_EXT_DISABLE" in str(refused.value)


def test_the_selftest_forced_paths_of_a_protected_context_end_in_a_refusal(fake_wrapping):
    """The selftest forces each path by disabling the ones before: natively, then the one
    after it, which for a protected context is no path at all."""
    from qcom_ext.device.probe import disabling
    from qcom_ext.tools.selftest._paths import plan_paths

    with FakeCL(extensions=ADRENO740) as cl:
        plan = plan_paths(qcom_ext.probe(DEVICE), PROTECTED)
        assert [path for path, _ in plan.runs] == ["native", "unavailable"]
        assert "fallback" in dict(plan.skipped)
        with disabling(plan.runs[-1][1]), pytest.raises(ExtensionUnavailable):
            qcom_ext.create_context(DEVICE, protected=True)
    assert cl.count("clCreateContext") == 0


@pytest.mark.parametrize("outcome", ["crashed", "failed", "timed_out"])
def test_protected_context_is_refused_when_its_trial_failed(
    fake_wrapping, monkeypatch, tmp_path, outcome
):
    from qcom_ext.device import verdicts as verify
    from qcom_ext.device.probe import read_device

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    with FakeCL(extensions=ADRENO740) as cl:
        caps = read_device(DEVICE)
        assert caps.path(PROTECTED) == "native"
        verdict = verify.Verdict(PROTECTED, "the trial protected context", outcome, "SIGSEGV")
        verify.store_verdicts(caps, {PROTECTED: verdict})  # what probe(verify=True) leaves
        with pytest.raises(ExtensionUnavailable, match="child process"):
            qcom_ext.create_context(DEVICE, protected=True)
    assert cl.count("clCreateContext") == 0


def test_a_driver_refusing_protection_is_an_error_not_an_unprotected_context(fake_wrapping):
    with FakeCL(extensions=ADRENO740) as cl:
        cl.status["context"] = C.CL_INVALID_PROPERTY
        with pytest.raises(CLError, match="CL_CONTEXT_PROTECTED_QCOM=CL_TRUE"):
            qcom_ext.create_context(DEVICE, protected=True)
        cl.status["context"] = 0
        ctx = qcom_ext.create_context(DEVICE, protected=True)
    calls = cl.calls["clCreateContext"]
    assert len(calls) == 2  # one refused attempt, no retry without the property
    assert all(call[0][2:4] == (C.CL_CONTEXT_PROTECTED_QCOM, 1) for call in calls)
    assert qcom_ext.context_info(ctx).protected and ctx.int_ptr == CTX


def test_one_device_without_protection_refuses_the_whole_context(fake_wrapping, monkeypatch):
    with_it = DeviceCaps.from_info(extensions=PROTECTED, device_name="a", device_id=1, disabled=())
    without = DeviceCaps.from_info(extensions="", device_name="b", device_id=2, disabled=())
    monkeypatch.setattr(context_module, "_device_caps", lambda devices: (with_it, without))
    made = []
    monkeypatch.setattr(context_module, "_cl_create_context", lambda *a: made.append(a))
    with pytest.raises(ExtensionUnavailable, match=r"\(b\)"):
        qcom_ext.create_context([1, 2], protected=True)
    assert made == []


@pytest.mark.parametrize("value", [1, "yes", "False", None, [True]])
def test_protected_must_be_a_bool(fake_wrapping, value):
    with FakeCL(extensions=ADRENO740) as cl, pytest.raises(ConfigError):
        qcom_ext.create_context(DEVICE, protected=value)
    assert cl.count("clCreateContext") == 0


def test_protected_contexts_refuse_profiling_queues(fake_wrapping):
    with FakeCL(extensions=ADRENO740) as cl:
        ctx = qcom_ext.create_context(DEVICE, protected=True)
        with pytest.raises(ConfigError, match="protected context cannot profile"):
            qcom_ext.create_queue(ctx, profiling=True)
    assert cl.count("clCreateCommandQueueWithProperties") == 0


def test_protected_context_on_a_local_device_never_falls_back():
    try:
        caps = qcom_ext.probe()
    except qcom_ext.OpenCLUnavailable as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    if caps.path(PROTECTED) == "native":
        pytest.skip(f"{caps.label} has protected contexts")
    with pytest.raises(ExtensionUnavailable, match=PROTECTED):
        qcom_ext.create_context(caps.device(), protected=True)


# ---- kill switches and overrides are validated -------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "cl_qcom_typo",
        "CL_QCOM_BITREVERSE",
        "cl_qcom_ext_host",
        "cl_qcom_bitreverse.",
        "ALL",
        "none",
        "cl_qcom_bitreverse,cl_khr_fp16",
        "-cl_qcom_bitreverse",
    ],
)
def test_unknown_kill_switch_names_are_reported_by_probe(monkeypatch, value):
    monkeypatch.setenv("QCOM_EXT_DISABLE", value)
    unknown = [v for v in value.split(",") if v not in REGISTRY]
    with pytest.raises(ConfigError) as raised:
        qcom_ext.probe()
    for name in unknown:
        assert name in str(raised.value)
    assert "QCOM_EXT_DISABLE" in str(raised.value)


def test_the_kill_switch_applies_to_every_probe(monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    before = qcom_ext.probe()
    monkeypatch.setenv("QCOM_EXT_DISABLE", "all")
    after = qcom_ext.probe()
    assert after.disabled == frozenset(REGISTRY)
    assert all(after.path(n) in ("fallback", "unavailable") for n in REGISTRY)
    assert before.disabled == frozenset()


def test_a_device_selector_that_matches_nothing_is_an_error():
    from qcom_ext.tools.pytest_plugin import filter_devices

    found = [
        DeviceCaps.from_info(
            extensions="", platform_name="pocl", driver_version="3.1", device_type="cpu"
        )
    ]
    with pytest.raises(
        ConfigError,
        match=r"QCOM_EXT_TEST_DEVICES='pcol' matches no device.*"
        r"pocl-3\.1-cpu",
    ):
        filter_devices(found, "pcol")
    with pytest.warns(qcom_ext.QcomExtWarning, match="'nvidia'"):
        assert filter_devices(found, "pocl, nvidia") == found


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('fallback_and_native("cl_qcom_bitrevers")', "*fallback_and_native takes one extension*"),
        ('fallback_and_native("cl_khr_fp16")', "*fallback_and_native takes one extension*"),
        ('requires_ext("qcom_bitreverse")', "*requires_ext takes extension names*"),
        ("requires_ext()", "*requires_ext takes extension names*"),
        ('requires_ext("cl_qcom_bitreverse", 3)', "*requires_ext takes extension names*"),
    ],
)
def test_markers_naming_unknown_extensions_are_usage_errors(pytester, marker, message):
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.{marker}
        def test_it(device_caps, {"qcom_path" if "fallback" in marker else "request"}):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines([message])


def test_markers_naming_extensions_of_any_vendor_are_accepted(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.requires_ext("cl_khr_fp16", "cl_ARM_printf", "cl_qcom_bitreverse")
        def test_it(device_caps):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 0  # runs, or skips where a device lacks one: no usage error


def test_cache_dir_with_an_unknown_home_is_reported(monkeypatch):
    from qcom_ext._cache_dir import cache_root

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", "~no-such-user-qcom-ext/cache")
    with pytest.raises(ConfigError, match="QCOM_EXT_CACHE_DIR='~no-such-user-qcom-ext/cache'"):
        cache_root()


@pytest.mark.parametrize("target", ["missing", "not_opencl"])
def test_a_library_override_never_falls_back_to_another_library(monkeypatch, tmp_path, target):
    import ctypes.util

    from qcom_ext.binding.lib import ENV_LIBRARY, open_library

    path = str(tmp_path / "libOpenCL.so") if target == "missing" else ctypes.util.find_library("m")
    if path is None:
        pytest.skip("no libm to stand in for a library without OpenCL")
    monkeypatch.setenv(ENV_LIBRARY, path)
    with pytest.raises(qcom_ext.LibraryNotFound) as raised:
        open_library()
    assert ENV_LIBRARY in str(raised.value) and path in str(raised.value)
    assert [origin for origin, _ in raised.value.tried] == [ENV_LIBRARY]  # nothing else tried


# ---- the program binary cache ------------------------------------------------------------

SOURCE = "__kernel void k(__global uint *v) { v[0] = qcom_bitreverse(v[0]); }"


@pytest.fixture(scope="module")
def build_context():
    return default_building_context()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    return tmp_path


class Builds:
    """Counts how build_program got its program: from cached binaries or from source."""

    def __init__(self, monkeypatch):
        self.from_binaries: list[list[bytes]] = []
        self.from_source = 0
        real_binaries, real_source = (
            program_module._build_from_binaries,
            program_module._build_from_source,
        )

        def from_binaries(context, devices, binaries, options):
            self.from_binaries.append(list(binaries))
            return real_binaries(context, devices, binaries, options)

        def from_source(*args):
            self.from_source += 1
            return real_source(*args)

        monkeypatch.setattr(program_module, "_build_from_binaries", from_binaries)
        monkeypatch.setattr(program_module, "_build_from_source", from_source)


def _identity(context, source=SOURCE):
    devices = list(context.devices)
    full = program_module.program_options(devices)
    return program_module.cache_identity(devices, program_module.PRELUDE + source, full)


def _entry(cache_dir: Path, key: str) -> Path:
    return cache_dir / "programs" / f"{key}.clbin"


def _run(context, program) -> int:
    import pyopencl as cl

    queue = cl.CommandQueue(context)
    value = np.array([0x1248EDBF], np.uint32)
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=value)
    program.k(queue, (1,), None, buf)
    cl.enqueue_copy(queue, value, buf)
    return int(value[0])


def test_a_valid_entry_is_loaded_and_runs(build_context, cache_dir, monkeypatch):
    builds = Builds(monkeypatch)
    first = qcom_ext.build_program(build_context, SOURCE)
    second = qcom_ext.build_program(build_context, SOURCE)
    assert builds.from_source == 1 and len(builds.from_binaries) == 1
    assert _run(build_context, first) == _run(build_context, second) == 0xFDB71248


def _rebuilt(build_context, cache_dir, monkeypatch, alter) -> Builds:
    """Build once, ``alter(entry_path, key, meta, binaries)``, build again."""
    qcom_ext.build_program(build_context, SOURCE)
    key, meta = _identity(build_context)
    path = _entry(cache_dir, key)
    binaries = ProgramCache(path.parent).load(key, meta)
    assert binaries
    alter(path, key, meta, binaries)
    builds = Builds(monkeypatch)
    program = qcom_ext.build_program(build_context, SOURCE)
    assert _run(build_context, program) == 0xFDB71248
    return builds


def _foreign(field: str, value):
    def alter(path, key, meta, binaries):
        other = json.loads(json.dumps(meta))
        if field in ("qcom_ext", "pyopencl"):
            other[field] = value
        else:
            other["devices"][0][field] = value
        ProgramCache(path.parent).store(key, other, [b"\x7fELF not for this device"])

    return alter


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("device", "Adreno (TM) 740"),
        ("driver_version", "OpenCL 3.0 QUALCOMM build 999"),
        ("platform_version", "OpenCL 3.0 pocl 9.9"),
        ("vendor_id", 0x5143),
        ("opencl_c_version", "OpenCL C 1.2"),
        ("qcom_ext", "0.0.1"),
        ("pyopencl", "2020.1"),
    ],
)
def test_an_entry_for_another_device_driver_or_version_is_never_loaded(
    build_context, cache_dir, monkeypatch, field, value
):
    builds = _rebuilt(build_context, cache_dir, monkeypatch, _foreign(field, value))
    assert builds.from_binaries == [] and builds.from_source == 1
    key, meta = _identity(build_context)
    assert ProgramCache(cache_dir / "programs").load(key, meta)  # replaced by a valid entry


def _flip_payload(path, key, meta, binaries):
    data = bytearray(path.read_bytes())
    data[-40] ^= 0x01  # inside the last binary, before the checksum
    path.write_bytes(bytes(data))


def _forge(path, key, meta, binaries):
    """A well-formed entry (valid checksum, this key) that claims no device."""
    ProgramCache(path.parent).store(key, {**meta, "devices": [{}]}, binaries)


def _another_key(path, key, meta, binaries):
    other = key_of({"other": "program"})
    cache = ProgramCache(path.parent)
    cache.store(other, meta, [b"another program"])
    os.replace(cache.path(other), path)


def _old_format(path, key, meta, binaries):
    """A whole, checksummed entry in another layout version."""
    from qcom_ext.ext.program import cache as program_cache

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(program_cache, "FORMAT", program_cache.FORMAT + 1)
        ProgramCache(path.parent).store(key, meta, binaries)


@pytest.mark.parametrize(
    "alter",
    [
        _flip_payload,
        _forge,
        _another_key,
        _old_format,
        lambda path, *_: path.write_bytes(path.read_bytes()[:100]),  # truncated
        lambda path, *_: path.write_bytes(b""),  # emptied
        lambda path, *_: path.write_bytes(MAGIC + b"\xff" * 64),  # a header that is not JSON
        lambda path, *_: path.write_bytes(os.urandom(4096)),
    ],
    ids=[
        "flipped-bit",
        "forged-meta",
        "another-key",
        "old-format",
        "truncated",
        "empty",
        "bad-header",
        "random",
    ],
)
def test_corrupt_or_altered_entries_are_never_loaded(build_context, cache_dir, monkeypatch, alter):
    builds = _rebuilt(build_context, cache_dir, monkeypatch, alter)
    assert builds.from_binaries == [] and builds.from_source == 1


def test_a_symlinked_entry_is_not_followed(build_context, cache_dir, monkeypatch):
    target = cache_dir / "elsewhere.clbin"

    def link(path, key, meta, binaries):
        os.replace(path, target)  # the very entry this build would load
        path.symlink_to(target)

    builds = _rebuilt(build_context, cache_dir, monkeypatch, link)
    assert builds.from_binaries == [] and builds.from_source == 1
    assert target.exists()  # the link was replaced, what it pointed at left alone
    assert not _entry(cache_dir, _identity(build_context)[0]).is_symlink()


def _in_thread(call, timeout: float = 20):
    result: list = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked reading a cache entry"
    return result[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_directory_at_an_entry_path_is_a_miss(tmp_path):
    from qcom_ext.ops.tuning import KernelIdentity, TuningCache

    store = ProgramCache(tmp_path / "programs")
    key = key_of({"fifo": True})
    store.directory.mkdir()
    os.mkfifo(store.path(key))
    assert _in_thread(lambda: store.load(key, {})) is None
    store.path(key).unlink(missing_ok=True)
    store.path(key).mkdir()
    assert store.load(key, {}) is None
    tuning = TuningCache(tmp_path / "tuning")
    identity = KernelIdentity("p", "d", "1", "k", "0" * 64, "")
    tuning.directory.mkdir()
    os.mkfifo(tuning.path(identity.digest((8,), False)))
    assert _in_thread(lambda: tuning.load(identity, (8,), False)) is None


def test_no_cache_reads_and_writes_nothing(build_context, cache_dir, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_NO_CACHE", "1")
    builds = Builds(monkeypatch)
    qcom_ext.build_program(build_context, SOURCE)
    qcom_ext.build_program(build_context, SOURCE)
    assert builds.from_source == 2 and builds.from_binaries == []
    assert not (cache_dir / "programs").exists()


# ---- the tuning cache --------------------------------------------------------------------


def _tuning(tmp_path):
    from qcom_ext.ops.tuning import KernelIdentity, TuningCache, TuningResult

    cache = TuningCache(tmp_path)
    identity = KernelIdentity("pocl", "cpu", "3.1", "k", "0" * 64, "-DX")
    path = cache.store(identity, (256,), False, TuningResult((64,), 1.0, 2.0))
    return cache, identity, path


@pytest.mark.parametrize(
    "change",
    [
        {"driver": "3.2"},
        {"device": "gpu"},
        {"platform": "NVIDIA CUDA"},
        {"options": ""},
        {"source_sha256": "1" * 64},
        {"global_size": [512]},
        {"pad_global": True},
    ],
)
def test_a_tuning_entry_for_another_key_is_ignored(tmp_path, change):
    cache, identity, path = _tuning(tmp_path)
    assert cache.load(identity, (256,), False).local_size == (64,)
    entry = json.loads(path.read_text())
    entry["key"].update(change)
    path.write_text(json.dumps(entry))  # the file of this key, holding another key's result
    assert cache.load(identity, (256,), False) is None


@pytest.mark.parametrize(
    "content",
    ["", "{", "[]", "null", '{"format": "qcom_ext-tuning"}', "\xff\xfe", "{" * 10000],
)
def test_a_corrupt_tuning_entry_is_ignored(tmp_path, content):
    cache, identity, path = _tuning(tmp_path)
    path.write_text(content, errors="surrogateescape")
    assert cache.load(identity, (256,), False) is None


def test_a_symlinked_tuning_entry_is_not_followed(tmp_path):
    cache, identity, path = _tuning(tmp_path)
    target = tmp_path / "elsewhere.json"
    os.replace(path, target)
    path.symlink_to(target)
    assert cache.load(identity, (256,), False) is None


def test_a_cached_local_size_the_kernel_cannot_take_is_not_used(build_context, cache_dir):
    from qcom_ext.ops import tuning
    from qcom_ext.ops._programs import kernel_for

    device = build_context.devices[0]
    launcher = kernel_for(
        build_context,
        device,
        "layout.cl",
        "tensor_to_image",
        {"STORAGE_HALF": False, "TENSOR_NHWC": False},
    )
    cache = tuning.TuningCache(tuning.tuning_dir())
    too_big = (device.max_work_group_size * 2,)
    for global_size, local in (((4096,), too_big), ((64,), (1, 1)), ((128,), (32,))):
        cache.store(launcher.identity, global_size, True, tuning.TuningResult(local, 1.0, 2.0))
    tuning.forget()
    assert launcher.local_size((4096,)) is None  # more work-items than the kernel takes
    assert launcher.local_size((64,)) is None  # two dimensions for a 1-D launch
    assert launcher.local_size((128,)) == (32,)


# ---- the verdict cache -------------------------------------------------------------------


def test_verdicts_of_another_driver_or_forged_ok_verdicts_change_nothing(tmp_path, monkeypatch):
    from qcom_ext.device import verdicts as verify

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    caps = DeviceCaps.from_info(
        extensions="cl_qcom_bitreverse",
        platform_name="pocl",
        driver_version="5.0",
        disabled=(),
        broken=(("cl_khr_command_buffer", "bug"),),
    )
    crashed = verify.Verdict("cl_qcom_bitreverse", "the trial kernel", "crashed", "SIGSEGV")
    other = DeviceCaps.from_info(
        extensions="cl_qcom_bitreverse", platform_name="pocl", driver_version="6.0", disabled=()
    )
    verify.store_verdicts(other, {crashed.extension: crashed})  # another driver's verdict
    assert verify.apply_cached(caps).path("cl_qcom_bitreverse") == "native"
    forged = {n: verify.Verdict(n, "t", "ok") for n in (PROTECTED, "cl_khr_command_buffer")}
    path = verify.cache_path(caps)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "format": verify.FORMAT,
                "identity": verify.identity(caps),
                "verdicts": {n: v.to_dict() for n, v in forged.items()},
            }
        )
    )
    applied = verify.apply_cached(caps)
    assert applied.path(PROTECTED) == "unavailable"  # an "ok" never grants what is absent
    assert dict(applied.broken)["cl_khr_command_buffer"] == "bug"  # nor lifts a block
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(
        json.dumps(
            {
                "format": verify.FORMAT,
                "identity": verify.identity(caps),
                "verdicts": {crashed.extension: crashed.to_dict()},
            }
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert verify.cached_verdicts(caps) == {}  # a symlinked verdict file is not read
