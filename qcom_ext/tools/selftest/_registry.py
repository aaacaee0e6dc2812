"""The selftest's registry: the checks of each extension, or why it has none.

A *case* is one small computation of an extension, run on one path with the inputs of
its own random generator, that returns an :class:`Outcome`: the device's result, the
numpy reference and the tolerance. The check modules (``checks_*.py``) register cases
with :func:`case` and extensions without a computation to check with :func:`unchecked`.

>>> from qcom_ext.tools.selftest import _registry
>>> [c.name for c in _registry.cases_for("cl_qcom_bitreverse")]
['qcom_bitreverse of 4096 uints']
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.extensions import REGISTRY

__all__ = [
    "Case",
    "Env",
    "Outcome",
    "Skip",
    "case",
    "cases_for",
    "refused",
    "unchecked",
    "unchecked_reason",
]

#: The tiers a case runs on unless it says otherwise (``unavailable`` runs refusal checks).
USABLE = ("native", "khr", "fallback")
TIERS = (*USABLE, "unavailable")


class Skip(Exception):
    """Raised by a case that cannot run on this device or path; the message says why."""


@dataclass(frozen=True)
class Outcome:
    """What a case measured: ``got`` against ``want`` (arrays, numbers, or mappings of
    named numbers), within ``tolerance`` (absolute). ``ran_as`` is the path the library
    reports having taken where it says (a missing entry point can move it); ``note`` is
    shown with the result."""

    got: Any
    want: Any
    tolerance: float = 0.0
    ran_as: str | None = None
    note: str = ""


@dataclass
class Env:
    """What a case gets: the device report under this run's ``QCOM_EXT_DISABLE``, a
    context and queue on the device, and a random generator seeded per case."""

    caps: DeviceCaps
    extension: str
    path: str
    context: Any
    queue: Any
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    store: dict[Any, Any] = field(default_factory=dict)  # shared by the cases of one run

    @property
    def tier(self) -> str:
        """``native``, ``khr``, ``fallback`` or ``unavailable``."""
        return self.path.split(":", 1)[0]

    def for_case(self, name: str, seed: int) -> Env:
        """This run's environment with the generator of case ``name`` (same on every path)."""
        rng = np.random.default_rng([seed, zlib.crc32(f"{self.extension}/{name}".encode())])
        return dataclasses.replace(self, rng=rng)

    def program(self, source: str, **defines: Any) -> Any:
        """``qcom_ext.build_program`` of ``source`` (or of ``kernels/<source>`` when it
        names a file there), built once per run."""
        from qcom_ext._resources import kernels_dir
        from qcom_ext.ext.program.build import build_program

        key = ("program", source, tuple(sorted(defines.items())))
        if key not in self.store:
            text = (kernels_dir() / source).read_text() if source.endswith(".cl") else source
            self.store[key] = build_program(self.context, text, defines=defines or None)
        return self.store[key]

    def to_device(self, array: np.ndarray) -> Any:
        """A read-write buffer holding a copy of ``array``."""
        import pyopencl as cl

        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        return cl.Buffer(self.context, flags, hostbuf=np.ascontiguousarray(array))

    def empty(self, shape: Any, dtype: Any) -> tuple[Any, np.ndarray]:
        """A read-write buffer for ``shape`` x ``dtype`` and the host array to read it into."""
        import pyopencl as cl

        host = np.empty(shape, dtype)
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(host.nbytes, 1)), host

    def read(self, buffer: Any, host: np.ndarray) -> np.ndarray:
        """``host`` filled from ``buffer`` (blocking)."""
        import pyopencl as cl

        cl.enqueue_copy(self.queue, host, buffer)
        return host


def refused(extension: str, attempt: Callable[[], Any]) -> Outcome:
    """The outcome of ``attempt()``, a call that must raise ExtensionUnavailable naming
    ``extension`` (where it has no path, qcom_ext refuses rather than fakes it)."""
    from qcom_ext.errors import ExtensionUnavailable

    key = "refused, naming the extension"
    try:
        attempt()
    except ExtensionUnavailable as exc:
        return Outcome({key: exc.extension == extension}, {key: True}, note=str(exc))
    return Outcome(
        {key: False}, {key: True}, note="the call succeeded where the extension has no path"
    )


CaseFunction = Callable[[Env], Outcome]


@dataclass(frozen=True)
class Case:
    """One registered computation of an extension."""

    extension: str
    name: str
    run: CaseFunction
    tiers: tuple[str, ...] = USABLE
    compare: bool = True  # compare the paths' results with each other

    def applies(self, path: str) -> bool:
        return path.split(":", 1)[0] in self.tiers


_CASES: dict[str, list[Case]] = {}
_UNCHECKED: dict[str, str] = {}


def _known(extension: str) -> None:
    if extension not in REGISTRY:
        raise ValueError(f"{extension!r} is not in qcom_ext.device.extensions.REGISTRY")


def case(
    extension: str, name: str, *, tiers: tuple[str, ...] = USABLE, compare: bool = True
) -> Callable[[CaseFunction], CaseFunction]:
    """Register the decorated function as a case of ``extension``.

    ``tiers`` are the paths it runs on (``("unavailable",)``: a refusal check, run where
    the extension has no path); ``compare=False`` where the paths may rightly differ
    (a layout the driver chooses, a sub-group size each path defines).
    """
    _known(extension)
    unknown = set(tiers) - set(TIERS)
    if unknown or not tiers:
        raise ValueError(f"case {name!r}: tiers {tiers!r}; expected some of {TIERS}")
    if extension in _UNCHECKED:
        raise ValueError(f"{extension} is registered as unchecked")

    def register(run: CaseFunction) -> CaseFunction:
        cases = _CASES.setdefault(extension, [])
        if any(c.name == name for c in cases):
            raise ValueError(f"{extension} has two cases named {name!r}")
        cases.append(Case(extension, name, run, tuple(tiers), compare))
        return run

    return register


def unchecked(extension: str, reason: str) -> None:
    """Record that ``extension`` has no computation to check, and why."""
    _known(extension)
    if extension in _CASES or not reason:
        raise ValueError(f"{extension}: unchecked needs a reason and no registered cases")
    _UNCHECKED[extension] = reason


def cases_for(extension: str) -> tuple[Case, ...]:
    """The registered cases of ``extension``, in registration order."""
    return tuple(_CASES.get(extension, ()))


def unchecked_reason(extension: str) -> str | None:
    """Why ``extension`` has no check (None when it has cases)."""
    return _UNCHECKED.get(extension)


def coverage() -> Mapping[str, str]:
    """Every registry extension -> ``"checked"`` or the reason it is not."""
    return {name: ("checked" if name in _CASES else _UNCHECKED.get(name, "")) for name in REGISTRY}
