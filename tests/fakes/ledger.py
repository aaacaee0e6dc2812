"""A ledger of the OpenCL objects that substitutes hand out, for leak checks.

Fault-injection tests (tests/test_fault_injection.py) install substitutes for driver
entry points (vocabulary: tests/fakes/__init__.py). A substitute that must hand out a
context, queue or memory object makes a real one through the real driver and records it
here with :meth:`Ledger.real`; the ledger takes two references of its own, so the handle
stays valid (and its reference count readable) whatever qcom_ext does with it. Once
qcom_ext has let go, the count reads ``count at record time - 1`` for an object it owned
(released exactly once, by the driver call or by the pyopencl object that held it) and
the recorded count for a caller's object it must not touch; a leak reads higher, a
double release lower. Where the reference count cannot be read (a recording, fake on
pocl; a sampler, whose retain and info entry points cdefs/ does not declare) the handle
is recorded with :meth:`Ledger.counted` and its release calls are counted instead
(:meth:`Ledger.released`): exactly one each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qcom_ext.binding.lib import C, driver, ffi

from .driver import addr

# kind -> (retain, release, info query, reference-count token)
_KINDS = {
    "mem": (
        "clRetainMemObject",
        "clReleaseMemObject",
        "clGetMemObjectInfo",
        "CL_MEM_REFERENCE_COUNT",
    ),
    "queue": (
        "clRetainCommandQueue",
        "clReleaseCommandQueue",
        "clGetCommandQueueInfo",
        "CL_QUEUE_REFERENCE_COUNT",
    ),
    "context": (
        "clRetainContext",
        "clReleaseContext",
        "clGetContextInfo",
        "CL_CONTEXT_REFERENCE_COUNT",
    ),
}
_OWN = 2  # references the ledger holds on each real object


@dataclass
class Entry:
    kind: str
    handle: int
    made_by: str
    owned: bool = True  # False: a caller's object qcom_ext must leave alone
    expected: int = 0  # the reference count once qcom_ext let go
    counted: bool = False  # the release calls are counted instead
    releases: int = 0  # counted: release calls seen


class Ledger:
    """Handles made by substitutes, and whether each came back (see the module docstring)."""

    def __init__(self) -> None:
        # resolved now: a substitute installed later must not answer the ledger's own calls
        self._fn = {name: driver.function(name) for names in _KINDS.values() for name in names[:3]}
        self.entries: list[Entry] = []

    def _count(self, entry: Entry) -> int:
        _, _, info, token = _KINDS[entry.kind]
        value = ffi.new("cl_uint *")
        handle = ffi.cast("void *", entry.handle)
        status = self._fn[info](handle, getattr(C, token), 4, value, ffi.NULL)
        if status != 0:
            raise AssertionError(f"{info}({entry.made_by} {entry.handle:#x}) failed: {status}")
        return int(value[0])

    def real(self, kind: str, handle: Any, made_by: str, *, owned: bool = True) -> Any:
        """Record a real object (NULL is ignored); ``owned``: qcom_ext must release it
        exactly once, else (a caller's object) not at all. Returns ``handle``."""
        if handle == ffi.NULL:
            return handle
        entry = Entry(kind, addr(handle), made_by, owned)
        for _ in range(_OWN):
            self._fn[_KINDS[kind][0]](handle)
        entry.expected = self._count(entry) - (1 if owned else 0)
        self.entries.append(entry)
        return handle

    def counted(self, kind: str, handle: Any, made_by: str) -> Any:
        """Record a handle (NULL is ignored) that must see exactly one release call."""
        if handle != ffi.NULL:
            self.entries.append(Entry(kind, addr(handle), made_by, counted=True))
        return handle

    def released(self, handle: Any) -> bool:
        """Count a release call of a counted handle; False when the handle is not one."""
        for entry in self.entries:
            if entry.counted and entry.handle == addr(handle):
                entry.releases += 1
                return True
        return False

    def mark(self) -> int:
        """A position: :meth:`problems` can look only at what was made after it."""
        return len(self.entries)

    def problems(self, since: int = 0) -> list[str]:
        """One line per handle made after ``since`` (and per caller's object, whenever
        made) that was leaked, released twice, or released by qcom_ext though not its own."""
        found = []
        checked = [e for e in self.entries[:since] if not e.owned] + self.entries[since:]
        for entry in checked:
            if entry.counted:
                if entry.releases != 1:
                    found.append(
                        f"{entry.made_by} {entry.kind} {entry.handle:#x}: "
                        f"{entry.releases} release calls, expected 1"
                    )
                continue
            extra = self._count(entry) - entry.expected
            if extra:
                what = f"{extra} reference(s) still held" if extra > 0 else "released too often"
                found.append(f"{entry.made_by} {entry.kind} {entry.handle:#x}: {what}")
        return found

    def close(self) -> None:
        """Give back the ledger's own references (objects still held by others live on)."""
        for entry in self.entries:
            if not entry.counted:
                for _ in range(min(self._count(entry), _OWN)):
                    self._fn[_KINDS[entry.kind][1]](ffi.cast("void *", entry.handle))
        self.entries.clear()
