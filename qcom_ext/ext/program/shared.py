"""The programs qcom_ext builds for itself from ``kernels/``: built once per context and
shared by every caller (the one cache of them; docs/ARCHITECTURE.md).

An entry is keyed by the source file, the ``-D`` defines, the devices and the probe's
kernel-side flags for those devices (:meth:`~qcom_ext.DeviceCaps.compiler_options`), so
that code running inside ``disabling(...)`` or after ``QCOM_EXT_DISABLE`` changed gets a
program built for the paths the probe now gives, never one built for other paths. The
entries live in :mod:`qcom_ext._context_cache` (released with the context's last owner).
Their kernels are shared objects: launch them through
:func:`qcom_ext.ext.program.launch.enqueue`, which sets arguments and enqueues under one
lock.

>>> import pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> first = shared_program(ctx, "bitreverse.cl")
>>> shared_program(ctx, "bitreverse.cl") is first  # built once
True
>>> sorted(first.kernels)
['bitreverse_u32']
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from qcom_ext import _context_cache
from qcom_ext._resources import kernels_dir

__all__ = [
    "SharedProgram",
    "defines_key",
    "kernels_digest",
    "shared_program",
    "source_text",
]

T = TypeVar("T")


@cache
def kernels_digest(*names: str) -> str:
    """The SHA-256 of ``kernels/<name>`` for each of ``names`` (in order) and of every
    header they may include: the identity of their programs in the tuning and variant
    caches (read once a process)."""
    folder = kernels_dir()
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes())
    for header in sorted(folder.glob("*.h")) + sorted((folder / "compat").glob("*.h")):
        digest.update(header.name.encode() + b"\0" + header.read_bytes())
    return digest.hexdigest()


@cache
def source_text(filename: str) -> str:
    """The text of ``kernels/<filename>``, read once per process (its identity:
    :func:`kernels_digest`)."""
    return (kernels_dir() / filename).read_text()


def defines_key(defines: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """A hashable form of ``defines`` (those set to False or None define nothing).

    >>> defines_key({"B": 2, "A": True, "C": False})
    (('A', 'True'), ('B', '2'))
    """
    return tuple(
        sorted((k, str(v)) for k, v in (defines or {}).items() if v is not False and v is not None)
    )


@dataclass
class SharedProgram:
    """One built program of the cache: the program, the build options the driver reports
    (what the tuning identities hash) and every kernel, by name."""

    program: Any
    options: str
    kernels: dict[str, Any]
    _derived: dict[Hashable, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def derived(self, key: Hashable, make: Callable[[], T]) -> T:
        """The value of ``make()`` kept with this program under ``key`` (made once; two
        threads missing at once may both make one, the first stored wins), for objects
        that live exactly as long as the program (e.g. a kernel's tuning identity)."""
        found = self._derived.get(key)
        if found is None:
            value = make()
            with self._lock:
                found = self._derived.setdefault(key, value)
        return found


def _probe_flags(devices: Sequence[Any]) -> tuple[tuple[str, ...], ...]:
    from qcom_ext.device.probe import probe

    return tuple(probe(device).compiler_options() for device in devices)


def shared_program(
    owner: Any,
    filename: str,
    defines: Mapping[str, Any] | None = None,
    *,
    devices: Sequence[Any] | None = None,
) -> SharedProgram:
    """``kernels/<filename>`` built with ``defines`` for ``devices`` (all devices of the
    context by default), cached for the context of ``owner``: the queue or context the
    caller holds (see :mod:`qcom_ext._context_cache`). A build failure raises
    :class:`~qcom_ext.BuildError` and caches nothing."""
    import pyopencl as cl

    if devices is None:
        context = owner if isinstance(owner, cl.Context) else owner.context
        devices = context.devices
    devices = list(devices)
    key = (
        __name__,
        filename,
        defines_key(defines),
        tuple(device.int_ptr for device in devices),
        _probe_flags(devices),
    )

    def build(context: Any) -> SharedProgram:
        from qcom_ext.ext.program.build import build_program, kernels

        program = build_program(context, source_text(filename), devices=devices, defines=defines)
        options = program.get_build_info(devices[0], cl.program_build_info.OPTIONS) or ""
        return SharedProgram(program, options, kernels(program))

    return _context_cache.cached(owner, key, build)
