"""Record a sequence of kernel launches once; replay it many times with cheap updates.

:class:`Recording` is ``cl_qcom_recordable_queues`` on Adreno, ``cl_khr_command_buffer``
where a device has it, and a pre-resolved replay loop everywhere else; the same
recording with the same updates gives the same results on each path.

>>> import numpy as np, pyopencl as cl
>>> ctx = cl.Context([probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> src = "__kernel void add(__global int *a, int b) { a[get_global_id(0)] += b; }"
>>> add = cl.Kernel(cl.Program(ctx, src).build(), "add")
>>> mf = cl.mem_flags
>>> a = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(4, np.int32))
>>> with Recording(queue) as rec:
...     rec.enqueue(add, (4,), None, a, np.int32(1))    # returns its dispatch_index
...     rec.enqueue(add, (4,), None, a, np.int32(10))
0
1
>>> len(rec), rec.path in ("native", "khr_command_buffer", "replay")
(2, True)
>>> rec.replay(queue).wait()                            # a += 1 + 10
>>> rec.replay(queue, args={(1, 1): 100}).wait()        # this replay only: a += 1 + 100
>>> out = np.empty(4, np.int32)
>>> _ = cl.enqueue_copy(queue, out, a)
>>> out.tolist()
[112, 112, 112, 112]
>>> rec.release()
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pyopencl as cl

from qcom_ext.device import shared
from qcom_ext.device.probe import probe
from qcom_ext.errors import (
    CLError,
    ConfigError,
    EntryPointMissing,
    RecordingStateError,
)
from qcom_ext.ext.recording.args import Dispatch, normalize_updates
from qcom_ext.ext.recording.khr import KhrBackend
from qcom_ext.ext.recording.native import NativeBackend
from qcom_ext.ext.recording.replay import ReplayBackend

__all__ = ["Recording"]

PATHS = ("native", "khr_command_buffer", "replay")
_EXTENSION = "cl_qcom_recordable_queues"
_exiting = False


@atexit.register
def _mark_exit() -> None:  # after this, __del__ leaves handles to process exit
    global _exiting
    _exiting = True


class Recording:
    """NDRange launches recorded once (``with rec: rec.enqueue(...)``), replayed often.

    ``context_or_queue`` is a ``pyopencl.Context`` (of one device, or pass ``device``)
    or a ``pyopencl.CommandQueue`` (its context and device; the Khronos path records
    on it). The path comes from :func:`qcom_ext.probe`, so ``QCOM_EXT_DISABLE`` applies:
    ``native``, ``khr_command_buffer`` or ``replay`` (:attr:`path`).

    ``dispatch_index`` is the 0-based order of :meth:`enqueue` calls. Arguments are
    snapshotted when recorded, and the recording holds an OpenCL reference to every
    recorded memory object and sampler until it is released; a recording never sets
    arguments on the caller's kernel objects. Replays (and :meth:`release`) from several
    threads are serialized by a per-recording lock; record from one thread.
    """

    _backend: Any = None

    def __init__(
        self, context_or_queue: cl.Context | cl.CommandQueue, *, device: cl.Device | None = None
    ) -> None:
        queue: cl.CommandQueue | None = None
        if isinstance(context_or_queue, cl.CommandQueue):
            queue = context_or_queue
            context, device = queue.context, queue.device
        elif isinstance(context_or_queue, cl.Context):
            context = context_or_queue
            if device is None:
                if len(context.devices) != 1:
                    raise ConfigError(
                        f"the context has {len(context.devices)} devices; pass device= or a queue"
                    )
                device = context.devices[0]
        else:
            raise ConfigError(
                f"Recording needs a pyopencl Context or CommandQueue, got {context_or_queue!r}"
            )
        self.context: cl.Context = context
        self.device: cl.Device = device
        self.caps = probe(device)
        self._dispatches: list[Dispatch] = []
        self._state = "new"
        self._checked_queue: cl.CommandQueue | None = None
        self._lock = threading.Lock()  # one replay (or release) at a time: backends keep state
        self._backend = self._choose_backend(queue)

    def _choose_backend(self, queue: cl.CommandQueue | None) -> Any:
        route = shared.route(self.caps, _EXTENSION)
        if route.native:
            try:
                return NativeBackend(self.caps, self.context, self.device)
            except EntryPointMissing as exc:
                route = route.downgrade(exc, "recordings replay directly", stacklevel=3)
        if route.tier == "khr":
            try:
                return KhrBackend(self.caps, queue or cl.CommandQueue(self.context, self.device))
            except EntryPointMissing as exc:
                route.downgrade(exc, "recordings replay directly", stacklevel=3)
        return ReplayBackend()

    @property
    def path(self) -> str:
        """``native``, ``khr_command_buffer`` or ``replay``: how this recording runs."""
        return self._backend.path

    @property
    def last_path(self) -> str:
        """How the latest replay ran (the Khronos path replays updates directly)."""
        return self._backend.last_path

    @property
    def max_dispatches(self) -> int | None:
        """The most dispatches one recording may hold (``CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE``
        on the native path), or None for no limit."""
        return getattr(self._backend, "max_dispatches", None)

    def __len__(self) -> int:
        return len(self._dispatches)

    def __repr__(self) -> str:
        return f"<Recording path={self.path} dispatches={len(self)} {self._state}>"

    def __enter__(self) -> Recording:
        if self._state != "new":
            raise RecordingStateError(f"a Recording records once; this one is {self._state}")
        if hasattr(self._backend, "begin"):
            self._backend.begin()
        self._state = "recording"
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self._release_after_error()
            return
        if not self._dispatches:
            self.release()
            raise ConfigError("the recording holds no dispatch: call rec.enqueue(...) inside with")
        try:
            self._backend.end()
        except BaseException:
            self._release_after_error()
            raise
        self._state = "ready"

    def _release_after_error(self) -> None:
        """:meth:`release` while another error is on its way out: that one is reported
        (every handle is given back either way)."""
        with contextlib.suppress(CLError):
            self.release()

    def enqueue(
        self,
        kernel: cl.Kernel,
        global_size: int | Sequence[int],
        local_size: int | Sequence[int] | None,
        *args: Any,
        global_offset: int | Sequence[int] | None = None,
    ) -> int:
        """Record one NDRange launch of ``kernel(*args)``; returns its ``dispatch_index``.

        ``args`` are numpy scalars (or bytes), pyopencl memory objects, SVM pointers or
        samplers, ``cl.LocalMemory`` and ``None`` (a NULL buffer), as pyopencl's
        ``set_arg`` takes them. A global size must be a multiple of the local size.
        """
        if self._state != "recording":
            raise RecordingStateError(
                f"rec.enqueue() records only inside 'with rec:' (the recording is {self._state})"
            )
        index = len(self._dispatches)
        limit = self.max_dispatches
        if limit is not None and index >= limit:
            raise ConfigError(
                f"dispatch {index} would exceed CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE = {limit} "
                f"of {self.caps.label}; split the work into several Recordings (qcom_ext does "
                "not split one, which would end on-chip memory lifetimes mid-recording)"
            )
        dispatch = Dispatch.record(
            index, kernel, global_size, local_size, args, global_offset, self.device, self.context
        )
        try:
            self._backend.add(dispatch)
        except BaseException:
            dispatch.release()
            raise
        self._dispatches.append(dispatch)
        return index

    def replay(
        self,
        queue: cl.CommandQueue,
        *,
        args: Mapping[tuple[int, int], Any] | None = None,
        global_size: Mapping[int, int | Sequence[int]] | None = None,
        local_size: Mapping[int, int | Sequence[int]] | None = None,
        global_offset: Mapping[int, int | Sequence[int]] | None = None,
        wait_for: Sequence[cl.Event] | None = None,
    ) -> cl.Event:
        """Enqueue the recording on the in-order ``queue``; returns the event of its end.

        Updates apply to this replay only (later replays use the recorded values unless
        they update again): ``args={(dispatch_index, arg_index): value}`` (a plain
        number takes the recorded dtype), ``global_size`` / ``local_size`` /
        ``global_offset`` ``{dispatch_index: sizes}``. Every update is checked before
        anything is enqueued; a bad one raises ConfigError. A driver failure at dispatch
        k of a direct replay raises :class:`~qcom_ext.errors.PartialEnqueueError`
        (dispatches 0..k-1 are enqueued). Safe to call from several threads.
        """
        with self._lock:
            return self._replay(queue, args, global_size, local_size, global_offset, wait_for)

    def _replay(
        self,
        queue: Any,
        args: Any,
        global_size: Any,
        local_size: Any,
        global_offset: Any,
        wait_for: Any,
    ) -> cl.Event:
        if self._state != "ready":
            what = {
                "new": "nothing was recorded yet",
                "recording": "still recording",
                "released": "it was released",
            }[self._state]
            raise RecordingStateError(f"cannot replay this Recording: {what}")
        if queue is not self._checked_queue:
            self._check_queue(queue)
        updates = normalize_updates(self._dispatches, args, global_size, local_size, global_offset)
        return self._backend.replay(queue, updates, list(wait_for) if wait_for else None)

    def _check_queue(self, queue: cl.CommandQueue) -> None:
        if not isinstance(queue, cl.CommandQueue):
            raise ConfigError(f"replay needs a pyopencl CommandQueue, got {queue!r}")
        if queue.context != self.context or queue.device != self.device:
            raise ConfigError("the replay queue belongs to another context or device")
        if queue.properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE:
            raise ConfigError("the replay queue must be in-order (recordings replay in order)")
        self._checked_queue = queue  # held, so its handle cannot be reused by another queue

    def release(self) -> None:
        """Free the recording's OpenCL objects now (idempotent; the GC does it too)."""
        with self._lock:
            if self._state == "released":
                return
            self._state = "released"
            dispatches, self._dispatches = self._dispatches, []
            self._checked_queue = None
            backend, self._backend = self._backend, _Released(self._backend.path)
            try:
                if backend is not None:
                    backend.release()
            finally:  # the arguments' references go after the kernels that use them
                for dispatch in dispatches:
                    dispatch.release()

    def __del__(self) -> None:
        if _exiting or sys.is_finalizing() or self._backend is None:
            return  # the driver may be gone; the process exit frees everything
        with contextlib.suppress(CLError, AttributeError, TypeError):
            self.release()


class _Released:
    """Stands in for a released backend: keeps ``path`` answering."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.last_path = path

    def release(self) -> None:
        pass
