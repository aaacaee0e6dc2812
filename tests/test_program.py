"""build_program: compat header, -D flags, BuildError, and the persistent binary cache.

A cache hit is proved by making source compilation fail (``_build_from_source`` raises)
while the cache is expected to serve the build; invalidation by counting source builds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest

import qcom_ext
from qcom_ext._resources import kernels_dir
from qcom_ext.ext.program import build as program
from qcom_ext.ext.program import cache as program_cache

# These tests are of qcom_ext's own program store: it stores binaries on pocl too.
pytestmark = pytest.mark.usefixtures("program_binaries_stored")

SOURCE = """
__kernel void value(__global uint *out) { out[0] = qcom_bitreverse(VALUE) ^ (uint)EXTRA; }
"""


def run_value(context: cl.Context, built: cl.Program) -> int:
    queue = cl.CommandQueue(context)
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 4)
    built.value(queue, (1,), None, out)
    host = np.zeros(1, np.uint32)
    cl.enqueue_copy(queue, host, out)
    return int(host[0])


def expected_value(value: int, extra: int = 0) -> int:
    return int(f"{value:032b}"[::-1], 2) ^ extra


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(program_cache.DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(program_cache.DISABLE_ENV, raising=False)
    return tmp_path / "cache" / "programs"


@pytest.fixture
def source_builds(monkeypatch) -> list[tuple[str, ...]]:
    """Records the options of every build that compiles source."""
    calls: list[tuple[str, ...]] = []
    real = program._build_from_source

    def counting(context, devices, text, options):
        calls.append(tuple(options))
        return real(context, devices, text, options)

    monkeypatch.setattr(program, "_build_from_source", counting)
    return calls


@pytest.fixture
def no_compiler(monkeypatch):
    """Within the block, compiling source fails: only the cache can serve a build."""

    def refuse(context, devices, text, options):
        raise AssertionError("source was compiled although the cache should have served it")

    def install():
        monkeypatch.setattr(program, "_build_from_source", refuse)

    return install


def only_entry(folder: Path) -> Path:
    entries = program_cache.ProgramCache(folder).entries()
    assert len(entries) == 1, entries
    return entries[0]


def test_second_build_is_served_from_the_cache(kernel_context, cache_dir, no_compiler):
    defines = {"VALUE": "0x1248EDBFu", "EXTRA": 0}
    first = qcom_ext.build_program(kernel_context, SOURCE, defines=defines)
    assert run_value(kernel_context, first) == 0xFDB71248
    only_entry(cache_dir)
    no_compiler()
    second = qcom_ext.build_program(kernel_context, SOURCE, defines=defines)
    assert run_value(kernel_context, second) == 0xFDB71248
    with pytest.raises(AssertionError, match="source was compiled"):  # a miss compiles
        qcom_ext.build_program(kernel_context, SOURCE, defines={**defines, "EXTRA": 1})


def test_changed_defines_and_options_invalidate(kernel_context, cache_dir, source_builds):
    def build(options=(), **defines):
        built = qcom_ext.build_program(kernel_context, SOURCE, options, defines=defines)
        return run_value(kernel_context, built)

    assert build(VALUE=1, EXTRA=0) == expected_value(1)
    assert build(VALUE=1, EXTRA=0) == expected_value(1)
    assert len(source_builds) == 1
    assert build(VALUE=1, EXTRA=5) == expected_value(1, 5)
    assert build(["-DEXTRA=6"], VALUE=1) == expected_value(1, 6)
    assert build(["-DEXTRA=6", "-cl-opt-disable"], VALUE=1) == expected_value(1, 6)
    assert len(source_builds) == 4
    assert len(program_cache.ProgramCache(cache_dir).entries()) == 4


def test_changed_user_header_invalidates(kernel_context, cache_dir, source_builds, tmp_path):
    include = tmp_path / "include"
    (include / "nested").mkdir(parents=True)
    header = include / "nested" / "value.h"
    source = '#include "nested/value.h"\n' + SOURCE
    options = ["-I", str(include)]
    for value in (3, 3, 4, 4):
        header.write_text(f"#define VALUE {value}u\n#define EXTRA 0\n")
        built = qcom_ext.build_program(kernel_context, source, options)
        assert run_value(kernel_context, built) == expected_value(value)
    assert len(source_builds) == 2
    (include / "unrelated.h").write_text("/* any header under -I may be included */\n")
    qcom_ext.build_program(kernel_context, source, [f"-I{include}"])  # other spelling
    qcom_ext.build_program(kernel_context, source, options)
    assert len(source_builds) == 4


def test_changed_compat_header_invalidates(
    kernel_context, cache_dir, source_builds, tmp_path, monkeypatch
):
    copy = tmp_path / "kernels"
    shutil.copytree(kernels_dir(), copy)
    monkeypatch.setattr(program, "kernels_dir", lambda: copy)
    part = copy / "compat" / "cl_qcom_bitreverse.h"
    source = "#ifndef MARK\n#define MARK 0\n#endif\n" + SOURCE.replace("EXTRA", "MARK")
    built = qcom_ext.build_program(kernel_context, source, defines={"VALUE": 1})
    assert run_value(kernel_context, built) == expected_value(1)
    part.write_text(part.read_text() + "\n#define MARK 9\n")  # an edit to a compat part
    built = qcom_ext.build_program(kernel_context, source, defines={"VALUE": 1})
    assert run_value(kernel_context, built) == expected_value(1, 9)
    assert len(source_builds) == 2


def corrupt_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])


def empty(path: Path) -> None:
    path.write_bytes(b"")


def foreign_driver(path: Path) -> None:
    """A well-formed entry with a valid checksum, made by another driver version."""
    key = path.name.removesuffix(program_cache.SUFFIX)
    data = path.read_bytes()
    meta = _meta_of(data)
    binaries = program_cache.ProgramCache(path.parent).load(key, meta)
    assert binaries is not None  # a valid entry
    meta["devices"][0]["driver_version"] += "-other"
    program_cache.ProgramCache(path.parent).store(key, meta, binaries)


def _meta_of(data: bytes) -> dict:
    start = len(program_cache.MAGIC) + program_cache._LENGTH.size
    (size,) = program_cache._LENGTH.unpack_from(data, len(program_cache.MAGIC))
    return json.loads(data[start : start + size])["meta"]


def garbage_binary(path: Path) -> None:
    """A well-formed entry for this device whose binary the driver refuses."""
    key = path.name.removesuffix(program_cache.SUFFIX)
    meta = _meta_of(path.read_bytes())
    program_cache.ProgramCache(path.parent).store(key, meta, [b"not a program binary" * 4])


@pytest.mark.parametrize(
    "damage",
    [corrupt_middle, truncate, empty, foreign_driver, garbage_binary],
    ids=lambda f: f.__name__,
)
def test_bad_entries_are_rebuilt_and_replaced(
    kernel_context, cache_dir, source_builds, no_compiler, damage
):
    defines = {"VALUE": 7, "EXTRA": 0}
    qcom_ext.build_program(kernel_context, SOURCE, defines=defines)
    entry = only_entry(cache_dir)
    good = entry.read_bytes()
    damage(entry)
    assert entry.read_bytes() != good
    built = qcom_ext.build_program(kernel_context, SOURCE, defines=defines)
    assert run_value(kernel_context, built) == expected_value(7)
    assert len(source_builds) == 2
    assert only_entry(cache_dir) == entry  # the rebuild replaced it ...
    no_compiler()
    built = qcom_ext.build_program(kernel_context, SOURCE, defines=defines)  # ... and it hits
    assert run_value(kernel_context, built) == expected_value(7)


def test_no_cache_is_honoured(kernel_context, cache_dir, source_builds, monkeypatch):
    monkeypatch.setenv(program_cache.DISABLE_ENV, "1")
    for _ in range(2):
        built = qcom_ext.build_program(kernel_context, SOURCE, defines={"VALUE": 2, "EXTRA": 0})
        assert run_value(kernel_context, built) == expected_value(2)
    assert len(source_builds) == 2
    assert not cache_dir.exists()
    monkeypatch.setenv(program_cache.DISABLE_ENV, "0")  # "0" means: cache on
    qcom_ext.build_program(kernel_context, SOURCE, defines={"VALUE": 2, "EXTRA": 0})
    only_entry(cache_dir)


def test_concurrent_builds_agree(kernel_context, cache_dir, source_builds, no_compiler):
    results: list[tuple[int, bytes]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def build() -> None:
        try:
            start.wait()
            built = qcom_ext.build_program(
                kernel_context, SOURCE, defines={"VALUE": 0x0F0F, "EXTRA": 0}
            )
            binary = built.get_info(cl.program_info.BINARIES)[0]
            results.append((run_value(kernel_context, built), binary))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert {value for value, _ in results} == {expected_value(0x0F0F)}
    assert len(results) == 8 and 1 <= len(source_builds) <= 8
    entry = only_entry(cache_dir)
    secret = cache_dir / program_cache.SECRET_NAME  # the directory's HMAC key
    assert not [p for p in cache_dir.iterdir() if p not in (entry, secret)]  # no temporary
    no_compiler()
    built = qcom_ext.build_program(kernel_context, SOURCE, defines={"VALUE": 0x0F0F, "EXTRA": 0})
    assert run_value(kernel_context, built) == expected_value(0x0F0F)


WRITER = textwrap.dedent("""
    import hashlib, sys
    from qcom_ext.ext.program.cache import ProgramCache
    store, key, me = ProgramCache(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    meta = {"device": "shared"}
    payload = lambda n: [hashlib.sha256(bytes([n])).digest() * (2000 + 997 * n)] * 2
    seen = set()
    for i in range(40):
        store.store(key, meta, payload(me))
        found = store.load(key, meta)
        if found is not None:
            owner = [n for n in range(8) if payload(n) == found]
            assert len(owner) == 1, "a torn or mixed entry was read"
            seen.add(owner[0])
    print(sorted(seen))
""")


def test_concurrent_processes_never_read_a_torn_entry(tmp_path):
    key = program_cache.key_of({"test": "race"})
    paths = (str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), key, str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in range(8)
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        assert out.strip().startswith("[")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        program_cache.SECRET_NAME,  # the directory's HMAC key, made once
        f"{key}{program_cache.SUFFIX}",
    ]


def test_build_error_carries_log_and_options(kernel_context, cache_dir):
    with pytest.raises(qcom_ext.BuildError) as info:
        qcom_ext.build_program(kernel_context, "__kernel void broken( { }", ["-DMARKER=1"])
    error = info.value
    assert "-DMARKER=1" in error.options and "-I" in error.options
    assert str(kernels_dir()) in error.options
    assert "error" in error.log.lower() and kernel_context.devices[0].name in error.log
    assert "-DMARKER=1" in str(error)
    assert not program_cache.ProgramCache(cache_dir).entries()  # failures are not cached


def test_build_error_names_the_line_of_the_users_source(kernel_context, cache_dir):
    with pytest.raises(qcom_ext.BuildError) as info:
        qcom_ext.build_program(
            kernel_context, "__kernel void k(__global int *a)\n{\n  a[0] = ;\n}"
        )
    log = info.value.log
    if "NVIDIA" in kernel_context.devices[0].vendor:
        # NVIDIA's compiler ignores the prelude's #line (seen 2026-11-22, driver 580):
        # its line numbers count the two prelude lines (docs/programs.md).
        assert ":5:" in log
    else:
        assert ":3:" in log  # line 3 of the user's text, not of the prelude


def test_cache_location(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.delenv(program_cache.DIR_ENV, raising=False)
    default = Path(platformdirs.user_cache_dir("qcom_ext", appauthor=False)) / "programs"
    assert program_cache.default_dir() == default
    monkeypatch.setenv(program_cache.DIR_ENV, str(tmp_path / "x"))
    assert program_cache.default_dir() == tmp_path / "x" / "programs"
    assert program_cache.default_cache().directory == tmp_path / "x" / "programs"
    monkeypatch.setenv(program_cache.DISABLE_ENV, "yes")
    assert program_cache.default_cache() is None


def test_keys_are_validated(tmp_path):
    with pytest.raises(ValueError, match="not a hex SHA-256"):
        program_cache.ProgramCache(tmp_path).path("../../etc/passwd")


def test_unwritable_cache_warns_and_builds(kernel_context, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv(program_cache.DIR_ENV, str(blocker / "cache"))
    monkeypatch.delenv(program_cache.DISABLE_ENV, raising=False)
    with pytest.warns(qcom_ext.QcomExtWarning, match="could not write the program cache"):
        built = qcom_ext.build_program(kernel_context, SOURCE, defines={"VALUE": 1, "EXTRA": 0})
    assert run_value(kernel_context, built) == expected_value(1)


def test_include_dirs_and_key_parts(tmp_path):
    assert program.include_dirs(["-I", "rel", "-Iother", "-DI=1"]) == [
        Path("rel").resolve(),
        Path("other").resolve(),
    ]
    a = program_cache.key_of({"source": "x", "options": ["-DA"]})
    assert a != program_cache.key_of({"source": "x", "options": ["-DB"]})
    assert a != program_cache.key_of({"source": "y", "options": ["-DA"]})
