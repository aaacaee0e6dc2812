"""A lock for module-level caches that ``weakref.finalize`` callbacks clean up.

A finalizer runs wherever the garbage collector does: in any thread, at any allocation,
also inside a ``with lock:`` block of the thread that holds the lock. A finalizer that
takes a plain ``threading.Lock`` then waits on itself forever (an ``RLock`` would let it
change a dict while the holder iterates it). :class:`FinalizerLock` never blocks a
finalizer: :meth:`~FinalizerLock.defer` runs the cleanup at once when the lock is free,
and otherwise leaves it to the holder, who runs every deferred cleanup on entering and
before leaving ``with lock:`` (so nothing read under the lock is stale).

>>> lock, seen = FinalizerLock(), []
>>> with lock:
...     lock.defer(seen.append, "later")  # as a finalizer inside the block: not run now
...     seen.append("inside")
>>> seen
['inside', 'later']
>>> lock.defer(seen.append, "now"); seen[-1]
'now'
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["FinalizerLock"]


class FinalizerLock:
    """A non-reentrant lock with cleanups deferred by finalizers (see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: collections.deque[tuple[Callable[..., Any], tuple[Any, ...]]]
        self._pending = collections.deque()

    def defer(self, cleanup: Callable[..., Any], *args: Any) -> None:
        """Run ``cleanup(*args)`` under the lock: now if it is free, else when the holder
        leaves it. Never blocks (safe in a finalizer)."""
        self._pending.append((cleanup, args))
        self._run_if_free()

    def _run_pending(self) -> None:  # the lock is held
        while self._pending:
            cleanup, args = self._pending.popleft()
            cleanup(*args)

    def _run_if_free(self) -> None:
        while self._pending and self._lock.acquire(blocking=False):
            try:
                self._run_pending()
            finally:
                self._lock.release()

    def __enter__(self) -> FinalizerLock:
        self._lock.acquire()
        try:
            self._run_pending()
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._run_pending()
        finally:
            self._lock.release()
        self._run_if_free()  # deferred by another thread between the two lines above
