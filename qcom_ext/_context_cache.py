"""One cache per OpenCL context for what qcom_ext builds (programs, kernels, samplers)
and what it records about a context (the hints it was made with), made so that it never
keeps a context alive.

The values of one ``cl_context`` live in an :class:`Entries` object that rides, as an
attribute, on each pyopencl ``Context`` or ``CommandQueue`` that asked for them (their
*owners*: the objects the user holds). A table finds the entries by handle only while
an owner holds them (a weak reference), so when the user drops the last owner the
entries die with it, and with them the programs, kernels and samplers they hold: the
context is then released as plain pyopencl would release it. :attr:`Entries.facts`
holds what is recorded rather than built (:mod:`qcom_ext.ext.context`'s hints), which
:func:`clear` keeps; :func:`find` looks entries up by handle without making any.

Why not key by the pyopencl object: pyopencl makes a new wrapper for the same handle on
each ``queue.context`` (equal, with the same hash, but another object), so a
``WeakKeyDictionary`` keyed by a temporary wrapper loses its entries at once, and one
keyed by the wrapper a cached ``pyopencl.Program`` holds (``Program._context``) never
lets go of the context. Hence two rules: callers pass the object the user holds (the
queue they launch on, the context they made), and builders get the entries' own
wrapper of the context (:attr:`Entries.context`), never an owner, so that no value
refers back to an owner.

>>> import gc, weakref, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> built = []
>>> def build(context):
...     built.append(1)
...     return cl.Sampler(context, False, cl.addressing_mode.CLAMP, cl.filter_mode.NEAREST)
>>> first = cached(queue, ("doctest", "sampler"), build)
>>> cached(ctx, ("doctest", "sampler"), build) is first, len(built)  # one context: one entry
(True, 1)
>>> handle, alive = ctx.int_ptr, weakref.ref(ctx)
>>> del ctx, queue, first; _ = gc.collect()
>>> alive() is None, handle in live_handles()  # the entries died with their owners
(True, False)
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from qcom_ext.errors import ConfigError

__all__ = ["ATTRIBUTE", "Entries", "cached", "clear", "entries", "find", "live_handles"]

T = TypeVar("T")
_MISSING: Any = object()

#: The attribute each owner carries its context's entries in.
ATTRIBUTE = "_qcom_ext_context_cache"


class Entries:
    """The cached values of one context, its recorded facts, and (made on first use) a
    wrapper of that context for builders, holding one reference to it."""

    __slots__ = ("__weakref__", "_context", "facts", "handle", "lock", "values")

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.values: dict[Hashable, Any] = {}
        #: What was recorded about the context (not rebuilt on a miss: :func:`clear` keeps it).
        self.facts: dict[Hashable, Any] = {}
        self.lock = threading.Lock()
        self._context: Any = None

    @property
    def context(self) -> Any:
        """A ``pyopencl.Context`` of the handle that is no owner (see the module doc)."""
        if self._context is None:
            import pyopencl

            with self.lock:
                if self._context is None:
                    self._context = pyopencl.Context.from_int_ptr(self.handle, retain=True)
        return self._context

    def __repr__(self) -> str:
        return f"<context cache {self.handle:#x}: {len(self.values)} entries>"


# handle -> the entries some owner still holds; no finalizer of ours ever runs, so a
# collection inside a locked block never waits on the lock (as a finalizer taking it would)
_table: weakref.WeakValueDictionary[int, Entries] = weakref.WeakValueDictionary()
_table_lock = threading.Lock()


def _handle_of(owner: Any) -> int:
    import pyopencl

    if isinstance(owner, pyopencl.CommandQueue):
        return int(owner.context.int_ptr)
    if isinstance(owner, pyopencl.Context):
        return int(owner.int_ptr)
    raise ConfigError(
        f"expected a pyopencl.Context or pyopencl.CommandQueue, got {type(owner).__name__}"
    )


def entries(owner: Any, handle: int | None = None) -> Entries:
    """The entries of ``owner``'s context (a Context or CommandQueue; ``handle``: its
    context's, for an owner already checked), which from now on live at least as long
    as ``owner``."""
    found = getattr(owner, ATTRIBUTE, None)
    if found is not None:
        return found
    handle = _handle_of(owner) if handle is None else handle
    with _table_lock:
        found = _table.get(handle)
        if found is None:
            found = _table[handle] = Entries(handle)
    with contextlib.suppress(AttributeError, TypeError):  # no attributes: no caching
        setattr(owner, ATTRIBUTE, found)
    return found


def find(handle: int) -> Entries | None:
    """The entries of the context ``handle`` while some owner holds them, else None
    (nothing is made)."""
    with _table_lock:
        return _table.get(handle)


def cached(owner: Any, key: Hashable, build: Callable[[Any], T]) -> T:
    """The value cached under ``key`` for the context of ``owner``; on a miss
    ``build(context)`` makes it, given the entries' own wrapper of the context (keep
    ``owner`` out of the value: see the module docstring). Two threads missing at once
    may both build; the first value stored wins."""
    found = entries(owner)
    value = found.values.get(key, _MISSING)
    if value is _MISSING:
        value = build(found.context)
        with found.lock:
            value = found.values.setdefault(key, value)
    return value


def live_handles() -> list[int]:
    """The handles of the contexts whose entries some owner still holds."""
    with _table_lock:
        return list(_table.keys())


def clear() -> None:
    """Forget every cached value (the entries stay with their owners, their facts kept)."""
    with _table_lock:
        found = list(_table.values())
    for item in found:
        with item.lock:
            item.values.clear()
