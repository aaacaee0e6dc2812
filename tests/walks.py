"""Walks: a parameter followed through the calls that pass it on (docs/ARCHITECTURE.md).

:func:`walk` runs a call with a trace function and records each *stay*: a call of a
function of ``qcom_ext/`` that receives the followed value as an argument (not as
``self``): the context, the reports (``DeviceCaps``) of its devices, a tuple or list of
them, or a ``Route`` over them. A *climb back* is a stay in a file the walk had already
left. ``python tests/walks.py`` prints the walks the architecture document quotes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import qcom_ext

PACKAGE = str(Path(qcom_ext.__file__).resolve().parent)


@dataclass(frozen=True)
class Walk:
    stays: tuple[tuple[str, str], ...]  # (file relative to the package, function)

    @property
    def files(self) -> int:
        return len({file for file, _ in self.stays})

    @property
    def climbs(self) -> int:
        """Stays in a file left before (returning to it after a stay elsewhere)."""
        count, seen = 0, set()
        for index, (file, _) in enumerate(self.stays):
            if index and file != self.stays[index - 1][0] and file in seen:
                count += 1
            seen.add(file)
        return count

    def __str__(self) -> str:
        steps = "\n".join(f"  {i:2} {file}:{name}" for i, (file, name) in enumerate(self.stays, 1))
        return f"{len(self.stays)} stays, {self.files} files, {self.climbs} climbs back\n{steps}"


def _followed(context: Any) -> Callable[[Any], bool]:
    from qcom_ext.device.probe import probe

    reports = {id(probe(device)) for device in context.devices}

    def carries(value: Any, depth: int = 0) -> bool:
        if value is context or id(value) in reports:
            return True
        if type(value).__name__ == "Route" and hasattr(value, "caps"):
            return carries(value.caps, depth)
        if depth == 0 and isinstance(value, (tuple, list)):
            return any(carries(item, 1) for item in value)
        return False

    return carries


def walk(context: Any, call: Callable[[], Any]) -> Walk:
    """The stays of ``context`` while ``call()`` runs (run it once before: caches)."""
    carries = _followed(context)
    stays: list[tuple[str, str]] = []

    def trace(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(PACKAGE):
            return None
        count = code.co_argcount + code.co_kwonlyargcount
        names = code.co_varnames[: count + bool(code.co_flags & 4) + bool(code.co_flags & 8)]
        values = [frame.f_locals.get(n) for n in names if n not in ("self", "cls")]
        flat = [v for value in values for v in (value if isinstance(value, dict) else [value])]
        if any(carries(value) for value in flat):
            file = code.co_filename[len(PACKAGE) + 1 :]
            stays.append((file, code.co_qualname))
        return None

    sys.settrace(trace)
    try:
        call()
    finally:
        sys.settrace(None)
    return Walk(tuple(stays))


def _main() -> None:  # pragma: no cover - a report for people
    import os
    import warnings

    import pyopencl as cl

    context = cl.Context([qcom_ext.probe().device()])
    fd = os.memfd_create("walk")
    os.ftruncate(fd, 1 << 16)
    memory = qcom_ext.ExternalMemory.dmabuf(fd)
    calls = {
        "nv12_image(context)": lambda: qcom_ext.nv12_image(context, (64, 32)),
        "nv12_image(context, memory=dma-buf)": lambda: qcom_ext.nv12_image(
            context, (64, 32), memory=memory
        ),
        "import_memory(context, dma-buf)": lambda: qcom_ext.import_memory(context, memory, 4096),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, call in calls.items():
            call()  # caches filled
            print(f"{name}: {walk(context, call)}")
    os.close(fd)


if __name__ == "__main__":
    _main()
