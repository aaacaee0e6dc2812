"""Caches as untrusted input (issue 15, findings 1, 4 and 9).

* A cache directory others could write (group/other-writable, sticky 1777 like /tmp,
  owned by another user) or a symlinked sub-directory is not used: one QcomExtWarning
  names it and the reason, and builds, tuning and probing work uncached. Missing
  directories are created 0o700.
* Program cache entries are sealed by an HMAC keyed by the directory's secret over key
  and body: an entry copied from another cache, or filed under another key, is a miss.
* Every JSON a cache reads (program headers, tuning entries, the verdict file) goes
  through ``_cache_dir.read_json``: junk nested 100,000 deep, ``1e400``, oversized files
  are a miss and the next write replaces them.
* ``tune()`` never returns a cached local size the kernel and device cannot run.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest
from conftest import default_building_context

import qcom_ext
from qcom_ext import DeviceCaps, QcomExtWarning
from qcom_ext.ext.program import build as program_module
from qcom_ext.ext.program import cache as program_cache
from qcom_ext.ops import tuning
from qcom_ext.ops.tuning import TuningCache, TuningResult

# These tests are of qcom_ext's own program store: it stores binaries on pocl too.
pytestmark = pytest.mark.usefixtures("program_binaries_stored")

posix_only = pytest.mark.skipif(os.name != "posix", reason="needs POSIX modes and owners")
as_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root to chown a directory to another user",
)
NOBODY = 65534

SOURCE = "__kernel void k(__global uint *v) { v[0] = qcom_bitreverse(v[0]); }"
SCALE = "__kernel void scale(__global float *a, float s) { a[get_global_id(0)] *= s; }"


@pytest.fixture(scope="module")
def build_context():
    return default_building_context()


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A fresh cache root (not created yet); the tuning memo is forgotten around it."""
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    tuning.forget()
    yield tmp_path / "cache"
    tuning.forget()


class Builds:
    """Counts how build_program got its program: from cached binaries or from source."""

    def __init__(self, monkeypatch):
        self.from_binaries = 0
        self.from_source = 0
        real_binaries = program_module._build_from_binaries
        real_source = program_module._build_from_source

        def from_binaries(*args):
            self.from_binaries += 1
            return real_binaries(*args)

        def from_source(*args):
            self.from_source += 1
            return real_source(*args)

        monkeypatch.setattr(program_module, "_build_from_binaries", from_binaries)
        monkeypatch.setattr(program_module, "_build_from_source", from_source)


def _run(context, program) -> int:
    queue = cl.CommandQueue(context)
    value = np.array([0x1248EDBF], np.uint32)
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=value)
    program.k(queue, (1,), None, buf)
    cl.enqueue_copy(queue, value, buf)
    return int(value[0])


def _identity(context):
    devices = list(context.devices)
    full = program_module.program_options(devices)
    return program_module.cache_identity(devices, program_module.PRELUDE + SOURCE, full)


def _trust_warnings(caught, directory: Path) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, QcomExtWarning) and f"directory {directory}:" in str(w.message)
    ]


def _scale(context):
    kernel = cl.Kernel(qcom_ext.build_program(context, SCALE), "scale")
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4096 * 4)
    return kernel, [buf, np.float32(1)]


# ---- directory trust ---------------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775, 0o757])
def test_a_cache_root_others_can_write_is_not_used(build_context, root, monkeypatch, mode):
    root.mkdir()
    root.chmod(mode)
    builds = Builds(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = qcom_ext.build_program(build_context, SOURCE)
        second = qcom_ext.build_program(build_context, SOURCE)
        kernel, args = _scale(build_context)
        local = qcom_ext.tune(kernel, (4096,), args, candidates=[(64,)], repeats=1)
    assert _run(build_context, first) == _run(build_context, second) == 0xFDB71248
    assert local in (None, (64,))
    assert builds.from_binaries == 0 and builds.from_source == 3  # uncached, still works
    assert os.listdir(root) == []  # nothing created or written there
    (message,) = _trust_warnings(caught, root)  # one warning for the directory and reason
    assert "is writable by group or others" in message
    assert ("sticky" in message) == bool(mode & 0o1000)


@posix_only
@as_root
@pytest.mark.parametrize("where", ["root", "programs"])
def test_a_cache_directory_owned_by_another_user_is_not_used(
    build_context, root, monkeypatch, where
):
    (root / "programs").mkdir(parents=True, mode=0o700)
    refused = root if where == "root" else root / "programs"
    os.chown(refused, NOBODY, NOBODY)  # root may still write there: the check must refuse
    builds = Builds(monkeypatch)
    with pytest.warns(QcomExtWarning) as caught:
        for _ in range(2):
            assert _run(build_context, qcom_ext.build_program(build_context, SOURCE)) == (
                0xFDB71248
            )
    assert builds.from_binaries == 0 and builds.from_source == 2
    assert os.listdir(root / "programs") == []
    (message,) = _trust_warnings(caught, refused)
    assert f"is not owned by the current user (owner uid {NOBODY}" in message


@posix_only
def test_missing_cache_directories_are_created_private(build_context, root):
    qcom_ext.build_program(build_context, SOURCE)
    for folder in (root, root / "programs"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    (entry,) = program_cache.ProgramCache(root / "programs").entries()
    assert entry.stat().st_mode & 0o777 == 0o600


@posix_only
def test_a_symlinked_program_subdirectory_is_not_followed(
    build_context, tmp_path, root, monkeypatch
):
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(elsewhere))
    qcom_ext.build_program(build_context, SOURCE)  # a valid entry there
    before = {p.name: p.read_bytes() for p in (elsewhere / "programs").iterdir()}
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(root))
    root.mkdir(mode=0o700)
    (root / "programs").symlink_to(elsewhere / "programs")
    builds = Builds(monkeypatch)
    with pytest.warns(QcomExtWarning) as caught:
        program = qcom_ext.build_program(build_context, SOURCE)
    assert _run(build_context, program) == 0xFDB71248
    assert builds.from_binaries == 0 and builds.from_source == 1  # not read through it
    assert {p.name: p.read_bytes() for p in (elsewhere / "programs").iterdir()} == before
    (message,) = _trust_warnings(caught, root / "programs")
    assert "is a symlink" in message


@posix_only
def test_a_symlinked_tuning_subdirectory_is_not_followed(
    kernel_context, tmp_path, root, monkeypatch
):
    kernel, args = _scale(kernel_context)
    identity = tuning.kernel_identity(kernel)
    elsewhere = tmp_path / "elsewhere"
    planted = TuningCache(elsewhere).store(identity, (4096,), False, TuningResult((64,), 1, 2))
    before = planted.read_bytes()
    root.mkdir(mode=0o700, exist_ok=True)  # building the kernel may have made it
    (root / "tuning").symlink_to(elsewhere)
    with pytest.warns(QcomExtWarning, match="is a symlink"):
        report = tuning.tune_report(kernel, (4096,), args, candidates=[(64,)], repeats=1)
    assert not report.from_cache
    assert sorted(os.listdir(elsewhere)) == [planted.name] and planted.read_bytes() == before


@posix_only
def test_a_symlinked_secret_or_entry_is_not_followed(tmp_path):
    store = program_cache.ProgramCache(tmp_path / "programs")
    key = program_cache.key_of({"source": "symlinks"})
    path = store.store(key, {}, [b"binary"])
    other = program_cache.ProgramCache(tmp_path / "other")
    other.store(key, {}, [b"another binary"])
    os.replace(path, tmp_path / "moved.clbin")
    path.symlink_to(tmp_path / "moved.clbin")
    assert store.load(key, {}) is None and not path.exists()  # the link is removed
    secret = store.directory / program_cache.SECRET_NAME
    secret.unlink()
    secret.symlink_to(other.directory / program_cache.SECRET_NAME)
    other.store(key, {}, [b"another binary"])
    os.replace(other.path(key), path)  # valid under the secret the link points at
    assert store.load(key, {}) is None


@posix_only
def test_an_untrusted_verdict_directory_is_not_read(tmp_path, monkeypatch):
    from qcom_ext.device import verdicts as verify

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    caps = DeviceCaps.from_info(
        extensions="cl_qcom_bitreverse", platform_name="pocl", driver_version="5.0", disabled=()
    )
    crashed = verify.Verdict("cl_qcom_bitreverse", "the trial kernel", "crashed", "SIGSEGV")
    verify.store_verdicts(caps, {crashed.extension: crashed})
    assert verify.cached_verdicts(caps)  # read back from a private directory
    verify.cache_path(caps).parent.chmod(0o777)
    with pytest.warns(QcomExtWarning, match="is writable by group or others"):
        assert verify.cached_verdicts(caps) == {}
    assert verify.apply_cached(caps).path("cl_qcom_bitreverse") == "native"


# ---- keyed entries -----------------------------------------------------------------------


def test_an_entry_from_another_cache_is_a_miss(tmp_path):
    key, meta = program_cache.key_of({"source": "copied"}), {"device": "pocl"}
    mine = program_cache.ProgramCache(tmp_path / "mine")
    theirs = program_cache.ProgramCache(tmp_path / "theirs")
    assert mine.store(key, meta, [b"mine"]) and mine.load(key, meta) == [b"mine"]
    theirs.store(key, meta, [b"theirs: same key, same metadata, another secret"])
    os.replace(theirs.path(key), mine.path(key))
    assert mine.load(key, meta) is None and not mine.path(key).exists()
    assert mine.store(key, meta, [b"mine"]) and mine.load(key, meta) == [b"mine"]


def test_an_entry_filed_under_another_key_is_a_miss(tmp_path):
    store = program_cache.ProgramCache(tmp_path)
    first, second = (program_cache.key_of({"source": s}) for s in ("first", "second"))
    store.store(first, {}, [b"first"])
    os.link(store.path(first), store.path(second))
    assert store.load(second, {}) is None and store.load(first, {}) == [b"first"]


def test_the_program_key_covers_source_options_device_driver_and_versions(
    build_context, monkeypatch
):
    import pyopencl

    devices = list(build_context.devices)
    text, options = program_module.PRELUDE + SOURCE, program_module.program_options(devices)
    key = program_module.cache_identity(devices, text, options)[0]
    assert program_module.cache_identity(devices, text + " ", options)[0] != key
    assert program_module.cache_identity(devices, text, [*options, "-DX=1"])[0] != key
    for field in ("device", "driver_version", "platform_version", "vendor_id"):
        real = program_module.device_identity
        with monkeypatch.context() as patch:
            patch.setattr(
                program_module,
                "device_identity",
                lambda d, f=field, real=real: {**real(d), f: "other"},
            )
            assert program_module.cache_identity(devices, text, options)[0] != key, field
    monkeypatch.setattr(pyopencl, "VERSION_TEXT", "1999.1")
    assert program_module.cache_identity(devices, text, options)[0] != key
    monkeypatch.undo()
    monkeypatch.setattr("qcom_ext._version.__version__", "0.0.0")
    assert program_module.cache_identity(devices, text, options)[0] != key


# ---- safe JSON: every cache --------------------------------------------------------------


def test_read_json_turns_junk_into_a_miss(tmp_path):
    from qcom_ext._cache_dir import read_json

    path = tmp_path / "entry.json"
    # each would pass the validator but for its junk
    junk = [
        b'{"sizes": ' + b"[" * 100_000,
        b'{"sizes": [], "a": ' + b'{"a": ' * 50_000,
        b'{"sizes": [1e400]}',
        b'{"sizes": [-1e400]}',
        b'{"sizes": [NaN]}',
        b'{"sizes": [Infinity]}',
        b'{"sizes": ["\xff\xfe"]}',
        b'{"sizes": [' + b"1" * 5000 + b"]}",  # an int over Python's digit limit
        b'{"sizes": [' + b" " * (1 << 16) + b"]}",  # over the size limit: not parsed
        b'{"sizes": "1"}',  # the validator refuses it
        b"[]",  # the validator raises on it
    ]
    for data in junk:
        path.write_bytes(data)
        assert (
            read_json(path, max_bytes=1 << 16, validate=lambda v: type(v["sizes"]) is list) is None
        )
    path.write_bytes(b'{"sizes": [1, 2.5]}')
    assert read_json(path, max_bytes=1 << 16) == {"sizes": [1, 2.5]}


def _seal(directory: Path, key: str, body: bytes) -> bytes:
    """The integrity tag of a planted entry, as the store in use computes it."""
    if hasattr(program_cache, "_seal"):  # an HMAC keyed by the directory's secret
        secret = (directory / program_cache.SECRET_NAME).read_bytes()
        return program_cache._seal(secret, key, body)
    return hashlib.sha256(body).digest()  # the layout before: anyone can recompute it


def _header_junk(header: dict, binaries: list[bytes]) -> dict[str, bytes]:
    text = json.dumps(header, sort_keys=True).encode()
    limit = getattr(program_cache, "MAX_HEADER_BYTES", 1 << 20)
    return {
        "sizes-1e400": json.dumps({**header, "sizes": ["SIZES"]})
        .encode()
        .replace(b'"SIZES"', b"1e400"),
        "nested": b"[" * 100_000,
        "oversized": text + b" " * limit,  # a valid header, padded over the limit
        "sizes-negative": json.dumps(
            {**header, "sizes": [-1, sum(map(len, binaries)) + 1]}
        ).encode(),
    }


@pytest.mark.parametrize("junk", ["sizes-1e400", "nested", "oversized", "sizes-negative"])
def test_a_junk_program_header_is_a_miss_and_replaced(build_context, root, monkeypatch, junk):
    qcom_ext.build_program(build_context, SOURCE)
    key, meta = _identity(build_context)
    store = program_cache.ProgramCache(root / "programs")
    binaries = store.load(key, meta)
    assert binaries
    header = {"format": program_cache.FORMAT, "key": key, "meta": meta}
    header["sizes"] = [len(b) for b in binaries]
    text = _header_junk(header, binaries)[junk]
    body = program_cache.MAGIC + program_cache._LENGTH.pack(len(text)) + text + b"".join(binaries)
    store.path(key).write_bytes(body + _seal(store.directory, key, body))
    builds = Builds(monkeypatch)
    program = qcom_ext.build_program(build_context, SOURCE)  # no OverflowError, RecursionError
    assert _run(build_context, program) == 0xFDB71248
    assert builds.from_binaries == 0 and builds.from_source == 1
    assert store.load(key, meta) is not None  # replaced by a valid entry


def _tuning_junk(entry: dict) -> dict[str, bytes]:
    valid = json.dumps(entry).encode()
    limit = getattr(tuning, "MAX_ENTRY_BYTES", 1 << 16)
    return {
        "nested": b"[" * 100_000,
        "nested-in-a-field": valid[:-1] + b', "x": ' + b"[" * 100_000,
        "best-1e400": json.dumps({**entry, "best_ns": "T"}).encode().replace(b'"T"', b"1e400"),
        "oversized": valid + b" " * limit,  # a valid entry, padded over the limit
    }


@pytest.mark.parametrize("junk", ["nested", "nested-in-a-field", "best-1e400", "oversized"])
def test_a_junk_tuning_entry_is_a_miss_and_replaced(kernel_context, root, junk):
    kernel, args = _scale(kernel_context)
    first = tuning.tune_report(kernel, (4096,), args, candidates=[(64,)], repeats=1)
    identity = tuning.kernel_identity(kernel)
    cache = TuningCache(root / "tuning")
    path = cache.path(identity.digest((4096,), False))
    path.write_bytes(_tuning_junk(json.loads(path.read_bytes()))[junk])
    tuning.forget()
    assert tuning.cached_local_size(identity, (4096,), pad_global=False) is None  # ops' path
    again = tuning.tune_report(kernel, (4096,), args, candidates=[(64,)], repeats=1)
    assert not again.from_cache and again.local_size in (None, (64,))
    found = cache.load(identity, (4096,), False)  # replaced by a valid entry
    assert found is not None and found.local_size == again.local_size
    assert first.local_size in (None, (64,))


@pytest.mark.parametrize("junk", ["nested", "verdict-1e400", "oversized", "not-utf8"])
def test_a_junk_verdict_file_is_a_miss_through_read_json(tmp_path, monkeypatch, junk):
    """The verdict reader's call (``read_json(cache_path(caps), ...)``): junk is a miss,
    and the next store replaces it."""
    from qcom_ext._cache_dir import read_json, write_atomically
    from qcom_ext.device import verdicts as verify

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path / "cache"))
    caps = DeviceCaps.from_info(
        extensions="cl_qcom_bitreverse", platform_name="pocl", driver_version="5.0", disabled=()
    )
    crashed = verify.Verdict("cl_qcom_bitreverse", "the trial kernel", "crashed", "SIGSEGV")
    whole = {
        "format": verify.FORMAT,
        "identity": verify.identity(caps),
        "verdicts": {crashed.extension: crashed.to_dict()},
    }
    path = verify.cache_path(caps)
    write_atomically(path, json.dumps(whole).encode())
    limit = 1 << 20

    def valid(data) -> bool:
        return isinstance(data, dict) and isinstance(data.get("verdicts"), dict)

    assert read_json(path, max_bytes=limit, validate=valid) == whole
    text = json.dumps(whole).encode()
    path.write_bytes(
        {
            "nested": b'{"verdicts": ' + b"[" * 100_000,
            "verdict-1e400": text.replace(b'"SIGSEGV"', b"1e400"),
            "oversized": text + b" " * limit,
            "not-utf8": text.replace(b"SIGSEGV", b"\xff\xfe"),
        }[junk]
    )
    assert read_json(path, max_bytes=limit, validate=valid) is None
    write_atomically(path, json.dumps(whole).encode())
    assert read_json(path, max_bytes=limit, validate=valid) == whole


# ---- tune(): cached local sizes the kernel cannot run ------------------------------------


def test_a_cached_local_size_the_kernel_cannot_run_is_retuned(kernel_context, root):
    kernel, args = _scale(kernel_context)
    device = kernel_context.devices[0]
    group = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
    identity = tuning.kernel_identity(kernel)
    cache = TuningCache(root / "tuning")
    unrunnable = [
        (1 << 40,),
        (group * 2,),  # over CL_KERNEL_WORK_GROUP_SIZE
        (device.max_work_item_sizes[0] + 1,),  # over CL_DEVICE_MAX_WORK_ITEM_SIZES
        (3,),  # does not divide 4096, and the global size may not be padded
        (0,),
        (64, 1),  # two dimensions for a 1-D launch
    ]
    for planted in unrunnable:
        cache.store(identity, (4096,), False, TuningResult(planted, 1.0, 2.0))
        tuning.forget()
        local = qcom_ext.tune(kernel, (4096,), args, candidates=[(64,)], repeats=1)
        assert local in (None, (64,)), planted
        found = cache.load(identity, (4096,), False)  # retuned and replaced
        assert found is not None and found.local_size == local, planted
