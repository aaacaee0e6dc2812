"""Leak measurement for tests/test_leaks.py: RSS, Python objects and live OpenCL handles.

:func:`measure` runs ``cycle(i)`` ``warmup`` times, settles (garbage collection, freed heap
handed back to the system), reads the resident set size, the Python object count and
the live handle count, runs the remaining cycles and reads all three again.
:meth:`Measurement.problems` compares the two readings with the limits below; the same
helper must report a deliberately leaking loop (tests/test_leaks.py checks that it does).

Live handles are counted by the OpenCL runtime itself, two ways:

* a long-lived *parent*'s ``CL_*_REFERENCE_COUNT`` (the spec keeps it for finding leaks):
  a context is retained by each of its queues, memory objects, samplers and programs, a
  program by each of its kernels, a queue by its command-buffers and pending events;
* :class:`ContextCounter`: ``clCreateContext`` of qcom_ext's driver table wrapped, each
  new context given a ``clSetContextDestructorCallback``; live = created - destroyed.

Python objects are counted as well: ``sys.getallocatedblocks()`` (pymalloc's live blocks,
every small object and cffi cdata among them).

Limits: the handle count must come back exactly to its warm-up value (handles are
counted, not estimated). The object count may grow by fewer than :data:`BLOCK_LIMIT` =
1,000 (a leak of one object every 9 cycles crosses it; refilling caches move it by
~150). RSS may grow by :data:`RSS_LIMIT` = 8 MiB over the 9,500 measured cycles, ~880
bytes a cycle: a leaked buffer or driver allocation a cycle crosses it, while allocator
noise after a warm-up stays under 100 KiB (docs/RELIABILITY.md lists the measured growth
of every kind). Where the driver itself grows (pocl's program builds,
tests/leak_programs.py), RSS gets an allowance measured from the bare API in the same
process; the object and handle counts keep their limits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from qcom_ext.binding.lib import driver, ffi

#: Cycles per kind; QCOM_EXT_LEAK_CYCLES lowers it while debugging (the leak tests
#: themselves assert on 10,000 in CI: docs/RELIABILITY.md).
CYCLES = int(os.environ.get("QCOM_EXT_LEAK_CYCLES", "10000"))
WARMUP = min(500, CYCLES // 4)  # fewer with QCOM_EXT_LEAK_CYCLES (a GPU driver: ~0.2 s a context)
RSS_LIMIT = 8 << 20
BLOCK_LIMIT = 1000
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_libc = ctypes.CDLL(ctypes.util.find_library("c")) if sys.platform.startswith("linux") else None


def rss_bytes() -> int:
    """The resident set size of this process now (``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE


def settle() -> None:
    """Collect garbage and give freed heap back to the system (glibc ``malloc_trim``), so
    RSS reflects what is still allocated rather than what the allocator kept."""
    gc.collect()
    gc.collect()
    if _libc is not None and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)


@dataclass
class Measurement:
    """RSS, Python objects and live handles after the warm-up and at the end of a run."""

    kind: str
    cycles: int
    warmup: int
    seconds: float
    rss_warm: int
    rss_end: int
    live_warm: int
    live_end: int
    blocks_warm: int = 0
    blocks_end: int = 0
    #: RSS the driver itself gains over the same cycles, measured with the bare API in
    #: the same process (added to the limit; see tests/leak_programs.py), and why.
    allowance: int = 0
    allowance_note: str = ""

    @property
    def rss_growth(self) -> int:
        return self.rss_end - self.rss_warm

    @property
    def live_growth(self) -> int:
        return self.live_end - self.live_warm

    @property
    def block_growth(self) -> int:
        return self.blocks_end - self.blocks_warm

    def problems(self, rss_limit: int = RSS_LIMIT) -> list[str]:
        """What exceeds the limits (empty: bounded)."""
        found = []
        measured = self.cycles - self.warmup
        if self.rss_growth >= rss_limit + self.allowance:
            allowed = f" + {self.allowance / 2**20:.1f} MiB" if self.allowance else ""
            found.append(
                f"{self.kind}: RSS grew {self.rss_growth / 2**20:.1f} MiB over {measured} "
                f"cycles after warm-up (limit {rss_limit / 2**20:.0f} MiB{allowed})"
            )
        if self.block_growth >= BLOCK_LIMIT:
            found.append(
                f"{self.kind}: {self.block_growth} more Python objects allocated after "
                f"{measured} cycles than after warm-up (limit {BLOCK_LIMIT})"
            )
        if self.live_growth != 0:
            found.append(
                f"{self.kind}: {self.live_growth:+d} live OpenCL handles over {measured} "
                f"cycles after warm-up ({self.live_warm} -> {self.live_end})"
            )
        return found

    def summary(self) -> str:
        per_cycle = self.seconds / max(1, self.cycles - self.warmup) * 1e6
        allowed = (
            f" ({self.allowance_note}: {self.allowance / 2**10:.0f} KiB)" if self.allowance else ""
        )
        return (
            f"{self.kind}: {self.cycles} cycles, RSS {self.rss_growth / 2**10:+.0f} KiB{allowed}"
            f", objects {self.block_growth:+d}, handles {self.live_warm} -> {self.live_end}, "
            f"{per_cycle:.0f} us/cycle"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure(
    kind: str,
    cycle: Callable[[int], Any],
    *,
    live: Callable[[], int] = lambda: 0,
    drain: Callable[[], Any] = lambda: None,
    cycles: int = CYCLES,
    warmup: int = WARMUP,
) -> Measurement:
    """Run ``cycle(0) .. cycle(cycles - 1)``; read RSS, Python's allocated blocks and
    ``live()`` after ``warmup`` cycles and at the end (``drain()`` first: finish queues so
    pending events let go)."""
    for i in range(warmup):
        cycle(i)
    drain()
    settle()
    rss_warm, blocks_warm, live_warm = rss_bytes(), sys.getallocatedblocks(), live()
    start = time.perf_counter()
    for i in range(warmup, cycles):
        cycle(i)
    seconds = time.perf_counter() - start
    drain()
    settle()
    rss_end, blocks_end, live_end = rss_bytes(), sys.getallocatedblocks(), live()
    return Measurement(
        kind,
        cycles,
        warmup,
        seconds,
        rss_warm,
        rss_end,
        live_warm,
        live_end,
        blocks_warm,
        blocks_end,
    )


def reference_total(*parents: Any) -> int:
    """The sum of the ``reference_count`` of long-lived pyopencl objects (see module doc)."""
    return sum(int(p.reference_count) for p in parents)


def wait_for_driver_release(
    context: Any, references: int, queue: Any, timeout: float = 30.0
) -> None:
    """Wait until the driver has dropped what its finished commands held: ``queue`` back
    to one reference (ours: a command's event holds its queue) and ``context`` back to
    ``references``, so that the last release of the context happens on this thread.

    A driver's worker thread drops a finished command's references a little after the
    host saw it finish (pocl's ``clReleaseContext`` explains it), so it may make the last
    release of a context; pocl 3.1 then runs the destructor callbacks there, holding a
    pocl lock, and :class:`ContextCounter`'s callback needs the GIL, which this thread
    holds while pyopencl releases a buffer and waits for that lock: a deadlock (seen, with
    gdb, in a clean-clone CI run).
    """
    deadline = time.monotonic() + timeout
    while int(queue.reference_count) > 1 or int(context.reference_count) > references:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the driver still holds the queue ({queue.reference_count} references) or "
                f"the context ({context.reference_count}, expected {references}) {timeout} s "
                "after its commands finished"
            )
        time.sleep(0.0001)


_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_CALLBACKS: list[Any] = []  # a context may outlive its counter: its callback must not die


class ContextCounter:
    """Contexts made through qcom_ext's driver table that the runtime has not destroyed.

    ``with ContextCounter() as contexts:`` wraps ``clCreateContext``; ``contexts.live`` is
    the number created minus the number whose destructor callback has run.
    """

    def __init__(self) -> None:
        self.created = 0
        self.destroyed = 0
        self._real = driver.function("clCreateContext")
        setter = driver.library.address("clSetContextDestructorCallback")
        if setter is None:
            raise LookupError(f"{driver.library.path} lacks clSetContextDestructorCallback")
        self._set = ctypes.CFUNCTYPE(
            ctypes.c_int32, ctypes.c_void_p, _DESTRUCTOR, ctypes.c_void_p
        )(setter)
        self._on_destroy = _DESTRUCTOR(self._destroyed)
        _CALLBACKS.append(self._on_destroy)

    @property
    def live(self) -> int:
        return self.created - self.destroyed

    def _destroyed(self, context: int, user_data: int) -> None:
        self.destroyed += 1

    def _create(self, properties, num_devices, devices, notify, user_data, errcode):
        context = self._real(properties, num_devices, devices, notify, user_data, errcode)
        if context != ffi.NULL:
            self.created += 1
            status = self._set(int(ffi.cast("uintptr_t", context)), self._on_destroy, None)
            assert status == 0, f"clSetContextDestructorCallback returned {status}"
        return context

    @contextmanager
    def counting(self) -> Iterator[ContextCounter]:
        with driver.substitute(clCreateContext=self._create):
            yield self
