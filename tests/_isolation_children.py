"""Children for the isolated compile's tests: the real child
(``qcom_ext.ext.program.compile_child``) with one driver entry point substituted, run as
``python -c "import _isolation_children as c; c.<name>(...)"`` (the parent's import path
travels with the child, so this module is found there). Each dies, hangs or misbehaves
for real, in its own process."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def command(name: str, *args: str) -> tuple[str, ...]:
    """The command line of the child ``name`` called with ``args``."""
    call = f"{name}({', '.join(map(repr, args))})"
    return (sys.executable, "-c", f"import _isolation_children as c; c.{call}")


def _real_child() -> None:
    from qcom_ext.ext.program import compile_child

    sys.exit(compile_child.main())


def _compiler_does(action) -> None:
    """The real child, with pyopencl's ``Program.build`` (clBuildProgram) replaced."""
    import pyopencl

    pyopencl.Program.build = lambda self, *a, **k: action()
    _real_child()


def _segfault() -> None:
    """A real invalid read (pocl ignores a SIGSEGV merely sent with kill())."""
    import ctypes

    ctypes.string_at(0)


def compiler_segfaults() -> None:
    _compiler_does(_segfault)


def compiler_aborts() -> None:
    _compiler_does(os.abort)


def compiler_hangs(pid_file: str) -> None:
    """Writes its pid, then never returns from the compile."""

    def hang() -> None:
        Path(pid_file).write_text(str(os.getpid()))
        time.sleep(120)

    _compiler_does(hang)


def context_segfaults() -> None:
    """The driver dies creating the context, before any compile."""
    import pyopencl

    pyopencl.Context = lambda *a, **k: _segfault()
    _real_child()


def entry_corrupted() -> None:
    """Stores the binaries, then changes one byte of the stored entry (as a disk error
    or another writer would): the parent must not load it."""
    from qcom_ext.ext.program import cache

    real = cache.ProgramCache.store

    def store(self, key, meta, binaries):
        path = real(self, key, meta, binaries)
        data = bytearray(path.read_bytes())
        data[-40] ^= 0xFF  # inside the last binary, before the HMAC
        path.write_bytes(bytes(data))
        return path

    cache.ProgramCache.store = store
    _real_child()
