"""Compile in a child process, so that a compiler crash is an error instead of the end.

Real Adreno compilers assert (Adreno 663), run out of memory or segfault on large
programs (A6x): ``build_program(..., isolate=True)`` compiles first in a child process
(``python -m qcom_ext.ext.program.compile_child``). The child finds the same devices
(:mod:`qcom_ext.device.location`: indices, platform name, device name and driver
version), builds the exact source and options the parent would, and stores the binaries
in the program cache (:mod:`qcom_ext.ext.program.cache`); the parent reads them back
through the cache's own checked reader (HMAC, key, device strings) and
:func:`~qcom_ext.ext.program.build.build_program` builds its program from them. This side
needs the runner only; the child's side is :mod:`qcom_ext.ext.program.compile_child`.
Where the persistent cache is off (``QCOM_EXT_NO_CACHE``) or not trusted, the hand-over
goes through a private temporary cache directory, removed after.

What the child's end becomes here:

* the compiler killed it (SIGSEGV, SIGABRT, the out-of-memory killer's SIGKILL):
  :class:`~qcom_ext.errors.CompilerCrashError` naming the signal, the device label and
  the options;
* the source does not compile: the :class:`~qcom_ext.BuildError` the same build raises
  in-process, with the build log;
* no end within ``timeout`` seconds: :class:`~qcom_ext.errors.DriverTimeoutError` (the
  child's process group is killed);
* it died elsewhere (finding the device, creating the context):
  :class:`~qcom_ext.errors.DriverCrashError` naming that step.

>>> import pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> src = "__kernel void twice(__global uint *v) { v[0] = qcom_bitreverse(v[0]) * 2; }"
>>> qcom_ext.build_program(ctx, src, isolate=True).twice.function_name
'twice'
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from qcom_ext._cache_dir import check_dir
from qcom_ext._isolation import ChildRun, module_command, run_child
from qcom_ext.device import shared
from qcom_ext.device.location import location
from qcom_ext.errors import (
    BuildError,
    CompilerCrashError,
    ConfigError,
    DriverTimeoutError,
    QcomExtError,
)
from qcom_ext.ext.program import cache as program_cache

__all__ = ["CHILD_COMMAND", "COMPILE_STAGE", "DEFAULT_TIMEOUT", "compile_isolated"]

#: Seconds an isolated compile may take, from the child's start to its report.
DEFAULT_TIMEOUT = 300.0
#: The stage in which a death is the compiler's.
COMPILE_STAGE = "clBuildProgram"
#: The child's command line (tests put a child with a substitute compiler here).
CHILD_COMMAND: tuple[str, ...] = tuple(module_command("qcom_ext.ext.program.compile_child"))


def compile_isolated(
    devices: Sequence[Any],
    text: str,
    options: Sequence[str],
    identity: tuple[str, dict[str, Any]] | None,
    *,
    timeout: float | None = None,
) -> list[bytes]:
    """The binaries of ``text`` built with ``options`` (the full list) for ``devices``,
    compiled in a child process and read back from the program cache under ``identity``
    (``(key, meta)`` of :func:`~qcom_ext.ext.program.build.cache_identity`; None: a
    private hand-over key) through its checked reader. ``timeout``:
    :data:`DEFAULT_TIMEOUT` when None."""
    where = [location(d) for d in devices]
    if any(w is None for w in where):
        raise ConfigError(
            "isolate=True needs devices a child process can find (listed by qcom_ext's "
            "platform enumeration)"
        )
    labels = shared.labels(shared.caps_of(list(devices)), names=False)
    with _handoff(identity) as (cache, key, meta):
        request = {
            "devices": where,
            "source": text,
            "options": list(options),
            "cache": str(cache.directory),
            "key": key,
            "meta": meta,
        }
        limit = DEFAULT_TIMEOUT if timeout is None else timeout
        run = run_child(CHILD_COMMAND, request, timeout=limit)
        _raise_failure(run, labels, options)
        binaries = cache.load(key, meta)
    if binaries is None:
        raise QcomExtError(
            f"the isolated compile for {labels} stored binaries the program cache "
            f"({cache.directory}) does not give back"
        )
    return binaries


def _raise_failure(run: ChildRun, labels: str, options: Sequence[str]) -> None:
    """The typed error of a child that did not store the binaries, if it did not."""
    if run.stage == COMPILE_STAGE and run.result is None:
        stage = f"the compile for {labels} with options {' '.join(options)}"
        if run.timed_out:
            raise DriverTimeoutError(stage, run.timeout, run.log)
        raise CompilerCrashError(labels, options, run.status or 0, run.log)
    result = run.raise_failure()
    outcome = result.get("outcome")
    if outcome == "build_error":
        raise BuildError(str(result.get("log")), [str(o) for o in result.get("options", ())])
    if outcome != "ok":
        reasons = {
            "no_binary": "the driver gives no program binary to hand back",
            "not_stored": f"the program cache would not store the binaries: {run.log}",
        }
        raise QcomExtError(
            f"the isolated compile for {labels} could not hand its program back: "
            + reasons.get(str(outcome), repr(result))
        )


@contextlib.contextmanager
def _handoff(
    identity: tuple[str, dict[str, Any]] | None,
) -> Iterator[tuple[program_cache.ProgramCache, str, dict[str, Any]]]:
    """The cache, key and meta the child stores under: the persistent cache when it is
    on and trusted (the next build hits it), else a private temporary directory."""
    cache = program_cache.default_cache()
    if cache is not None and identity is not None:
        try:
            check_dir(cache.directory, create=True)
        except OSError:  # untrusted (warned) or unusable: a private hand-over instead
            pass
        else:
            yield cache, identity[0], identity[1]
            return
    folder = tempfile.mkdtemp(prefix="qcom-ext-isolated-")
    try:
        key, meta = identity or (program_cache.key_of({"hand-over": folder}), {})
        yield program_cache.ProgramCache(folder), key, meta
    finally:
        shutil.rmtree(folder, ignore_errors=True)
