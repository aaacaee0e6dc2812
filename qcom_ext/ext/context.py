"""Contexts and queues with Qualcomm performance/priority hints and protected memory.

``create_context`` and ``create_queue`` return real pyopencl objects. Natively the
vendor properties go through cffi (pyopencl rejects unknown context keys) and the
handle is wrapped with ``from_int_ptr(..., retain=False)``. Where the Qualcomm
extension is absent a hint maps to the Khronos queue hints (``cl_khr_throttle_hints``
for perf, ``cl_khr_priority_hints`` for priority) applied by ``create_queue``, or
else is a recorded no-op; ``context_info`` tells which path each hint took, and one
:class:`~qcom_ext.QcomExtWarning` per call says so when it was not native.

>>> import warnings, qcom_ext
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
...     ctx = qcom_ext.create_context(perf_hint="low")
>>> info = qcom_ext.context_info(ctx)
>>> info.perf_hint, info.perf_hint_path in ("native", "khr:cl_khr_throttle_hints", "fallback")
('low', True)
>>> queue = qcom_ext.create_queue(ctx, profiling=True)
>>> queue.context == ctx
True
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from qcom_ext import _context_cache
from qcom_ext.binding.lib import C, check, check_handle, driver, ffi
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.probe import _opencl_major, probe
from qcom_ext.errors import ConfigError, EntryPointMissing, ExtensionUnavailable, QcomExtWarning
from qcom_ext.ext import hints as _hints

if TYPE_CHECKING:
    import pyopencl

# a pyopencl.Device, a raw cl_device_id, or the device's report (passed down: no probe)
DeviceLike = Union["pyopencl.Device", int, DeviceCaps]

__all__ = ["ContextInfo", "context_info", "create_context", "create_queue", "set_perf_hint"]

PERF, PRIORITY = "cl_qcom_perf_hint", "cl_qcom_priority_hint"
PROTECTED, RECORDABLE = "cl_qcom_protected_context", "cl_qcom_recordable_queues"
# context hint -> (Qualcomm extension, context property key, queue-hint kind, Khronos tier)
_CONTEXT_HINTS = {
    "perf_hint": (PERF, "CL_CONTEXT_PERF_HINT_QCOM", "throttle", "cl_khr_throttle_hints"),
    "priority_hint": (
        PRIORITY,
        "CL_CONTEXT_PRIORITY_HINT_QCOM",
        "priority",
        "cl_khr_priority_hints",
    ),
}
_QUEUE_HINTS = {"priority": "cl_khr_priority_hints", "throttle": "cl_khr_throttle_hints"}
_QUEUE_BITS = (
    ("out_of_order", "CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE"),
    ("profiling", "CL_QUEUE_PROFILING_ENABLE"),
    ("recordable", "CL_QUEUE_RECORDABLE_QCOM"),
)


@dataclass(frozen=True)
class ContextInfo:
    """The hints a context was given and the path each took (``DeviceCaps.path`` strings).

    A path is None when that hint was not given; contexts not made by
    :func:`create_context` report no hints.
    """

    perf_hint: str | None = None
    perf_hint_path: str | None = None
    priority_hint: str | None = None
    priority_hint_path: str | None = None
    protected: bool = False


_PLAIN = ContextInfo()  # what a context without hints was made with


class _State:
    """What a context was made with; rides on the context's pyopencl object."""

    def __init__(self, info: ContextInfo, platform: int, devices: tuple[DeviceCaps, ...]):
        self.info, self.platform, self.devices = info, platform, devices


# The state rides in the context's entries of the one per-context cache
# (qcom_ext._context_cache: never keeps the context alive), as a fact: clear() keeps it.
# _lock only orders updates of a state.
_FACT = "qcom_ext.ext.context state"
_lock = threading.Lock()


def _register(context: Any, state: _State) -> None:
    _context_cache.entries(context, _context_handle(context)).facts[_FACT] = state


def _lookup(handle: int) -> _State | None:
    found = _context_cache.find(handle)
    return None if found is None else found.facts.get(_FACT)


def _context_handle(context: Any) -> int:
    handle = getattr(context, "int_ptr", None)
    if not isinstance(handle, int):
        raise ConfigError(f"expected a pyopencl.Context, got {type(context).__name__}")
    return handle


def _device_caps(devices: Any) -> tuple[DeviceCaps, ...]:
    """The reports of the devices a context is made for (see :func:`shared.caps_of`)."""
    if devices is None or isinstance(devices, (list, tuple)):
        return shared.caps_of(devices)
    if isinstance(devices, DeviceCaps):
        return (devices,)
    return (probe(shared.device_handle(devices)),)  # one device: nothing to compare


def _explain(kind: str, level: str, path: str, devices: Sequence[DeviceCaps]) -> str:
    extension, _, queue_kind, _ = _CONTEXT_HINTS[kind]
    if path.startswith("khr:"):
        key = _hints.QUEUE_KEYS[queue_kind]
        how = f"{key}={_hints.token_name(queue_kind, level)} on queues from qcom_ext.create_queue"
    else:
        how = next(
            (c.status(extension).reason for c in devices if c.path(extension) != "native"),
            f"{extension} entry point missing",
        )
    return f"{kind}={level!r} -> {path} ({how})"


def _properties_text(items: Sequence[tuple[str, str | None]]) -> str:
    return ", ".join(key if value is None else f"{key}={value}" for key, value in items) or "none"


def _wrap_context(handle: int) -> Any:
    import pyopencl

    return pyopencl.Context.from_int_ptr(handle, retain=False)  # we hand our reference over


def _wrap_queue(handle: int) -> Any:
    import pyopencl

    return pyopencl.CommandQueue.from_int_ptr(handle, retain=False)


def _adopt(handle: int, wrap: Any, release: str, ctype: str) -> Any:
    """Wrap a fresh handle; if wrapping fails, release it so nothing leaks."""
    try:
        return wrap(handle)
    except BaseException:
        getattr(driver, release)(ffi.cast(ctype, handle))
        raise


def create_context(
    devices: DeviceLike | Sequence[DeviceLike] | None = None,
    *,
    perf_hint: str | int | None = None,
    priority_hint: str | int | None = None,
    protected: bool = False,
) -> pyopencl.Context:
    """A ``pyopencl.Context`` carrying Qualcomm hints (natively or mapped, see module doc).

    ``devices``: None (the device ``qcom_ext.probe()`` picks), a ``pyopencl.Device``
    (or its :class:`DeviceCaps`) or a list of them from one platform. Hints:
    ``"high" | "normal" | "low"`` or the ``CL_PERF_HINT_*_QCOM`` /
    ``CL_PRIORITY_HINT_*_QCOM`` tokens. ``protected=True`` never falls back:
    :class:`ExtensionUnavailable` where it is not native.

    >>> import qcom_ext
    >>> ctx = qcom_ext.create_context()  # the probed default device, no hints
    >>> len(ctx.devices), qcom_ext.context_info(ctx).perf_hint
    (1, None)
    """
    levels = {
        "perf_hint": _hints.parse("perf_hint", perf_hint),
        "priority_hint": _hints.parse("priority_hint", priority_hint),
    }
    if not isinstance(protected, bool):
        raise ConfigError(f"protected must be True or False, got {protected!r}")
    found = _device_caps(devices)
    if protected:
        _refuse_unprotected(found)
    paths = {
        kind: shared.shared_path(found, _CONTEXT_HINTS[kind][0]) if level else None
        for kind, level in levels.items()
    }
    properties = _context_properties(levels, paths, protected)
    platform = found[0].platform_id
    handle = _cl_create_context(platform, found, properties)
    context = _adopt(handle, _wrap_context, "clReleaseContext", "cl_context")
    info = _PLAIN
    if protected or any(levels.values()):
        hints = (levels["perf_hint"], paths["perf_hint"])
        hints += (levels["priority_hint"], paths["priority_hint"])
        info = ContextInfo(*hints, protected)
    _register(context, _State(info, platform, found))
    _warn_not_native("create_context", levels, paths, found)
    return context


def _refuse_unprotected(found: Sequence[DeviceCaps]) -> None:
    refused = [c for c in found if c.path(PROTECTED) != "native"]
    if refused:
        reason = refused[0].status(PROTECTED).reason
        raise ExtensionUnavailable(PROTECTED, shared.labels(refused), reason)


def _context_properties(
    levels: dict[str, str | None], paths: dict[str, str | None], protected: bool
) -> list[tuple[str, int, str]]:
    """(key name, value, value name) of each vendor property the context is made with."""
    properties = []
    for kind, level in levels.items():
        if level and paths[kind] == "native":
            name = _hints.token_name(kind, level)
            properties.append((_CONTEXT_HINTS[kind][1], _hints.token(kind, level), name))
    if protected:
        properties.append(("CL_CONTEXT_PROTECTED_QCOM", 1, "CL_TRUE"))
    return properties


def _warn_not_native(
    where: str,
    levels: dict[str, str | None],
    paths: dict[str, str | None],
    found: Sequence[DeviceCaps],
) -> None:
    notes = [
        _explain(kind, level, paths[kind] or "", found)
        for kind, level in levels.items()
        if level and paths[kind] != "native"
    ]
    if notes:
        warnings.warn(
            f"{where} on {shared.labels(found)}: " + "; ".join(notes),
            QcomExtWarning,
            stacklevel=3,
        )


_device_arrays: dict[tuple[int, ...], Any] = {}  # device ids -> cl_device_id[] (a few)


def _cl_create_context(
    platform: int, found: Sequence[DeviceCaps], properties: Sequence[tuple[str, int, str]]
) -> int:
    if properties:  # vendor keys need the list; without them, pass none (as pyopencl does)
        words = [C.CL_CONTEXT_PLATFORM, platform]
        for key, value, _ in properties:
            words += [getattr(C, key), value]
        plist = ffi.new("cl_context_properties[]", [*words, 0])
    else:
        plist = ffi.NULL
    key = tuple(c.device_id for c in found)
    ids = _device_arrays.get(key)
    if ids is None:
        ids = ffi.new("cl_device_id[]", [ffi.cast("cl_device_id", d) for d in key])
        if len(_device_arrays) < 64:
            _device_arrays[key] = ids
    err = ffi.new("cl_int *")
    handle = driver.function("clCreateContext")(plist, len(key), ids, ffi.NULL, ffi.NULL, err)
    if err[0] == 0 and handle != ffi.NULL:  # the message below is for failures only
        return int(ffi.cast("intptr_t", handle))
    shown = [("CL_CONTEXT_PLATFORM", hex(platform))] if properties else []
    shown += [(key, name) for key, _, name in properties]
    detail = f"properties: {_properties_text(shown)}; devices: {shared.labels(found)}"
    return check_handle(handle, err, "clCreateContext", detail, driver.clReleaseContext)


def context_info(context: pyopencl.Context) -> ContextInfo:
    """Which hints ``context`` was given and the path each took.

    >>> import pyopencl
    >>> context_info(pyopencl.create_some_context(interactive=False)) == ContextInfo()
    True
    """
    state = _lookup(_context_handle(context))
    return state.info if state else ContextInfo()


def _state_of(context: Any) -> tuple[_State, bool]:
    """The registered state, or a new one for a plain pyopencl context (and whether it
    is new: the caller registers it once it holds something)."""
    state = _lookup(_context_handle(context))
    if state is not None:
        return state, False
    found = shared.caps_of(context)
    return _State(ContextInfo(), found[0].platform_id, found), True


def set_perf_hint(context: pyopencl.Context, hint: str | int) -> None:
    """Change the performance hint of ``context`` (``clSetPerfHintQCOM`` natively).

    Elsewhere the recorded hint changes (queues created afterwards get the mapped
    Khronos throttle hint where there is one) and a QcomExtWarning says so.

    >>> import pyopencl, warnings
    >>> ctx = pyopencl.create_some_context(interactive=False)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", QcomExtWarning)
    ...     set_perf_hint(ctx, "normal")
    >>> context_info(ctx).perf_hint
    'normal'
    """
    level = _hints.parse("perf_hint", hint)
    if level is None:
        raise ConfigError("set_perf_hint needs a hint: 'high', 'normal' or 'low'")
    state, new = _state_of(context)
    route, downgraded = shared.Route.of(state.devices, PERF), False
    if route.native:
        try:
            function = route.require("clSetPerfHintQCOM")
        except EntryPointMissing as exc:

            def note(new: shared.Route) -> str:
                return _explain("perf_hint", level, new.path, new.caps)

            route, downgraded = route.downgrade(exc, note), True
        else:
            status = function(
                ffi.cast("cl_context", context.int_ptr), _hints.token("perf_hint", level)
            )
            check(status, "clSetPerfHintQCOM")
    with _lock:  # only now: a failed call leaves no state behind
        state.info = dataclasses.replace(state.info, perf_hint=level, perf_hint_path=route.path)
    if new:
        _register(context, state)
    if not downgraded:  # the downgrade said it already
        paths = {"perf_hint": route.path}
        _warn_not_native("set_perf_hint", {"perf_hint": level}, paths, state.devices)


def _queue_device(context: Any, state: _State | None, device: Any) -> DeviceCaps:
    if device is None:  # the context's first device
        return state.devices[0] if state else probe(context.devices[0])
    members = state.devices if state else shared.caps_of(context)
    handle = shared.device_handle(device)
    for caps in members:
        if caps.device_id == handle:
            return caps
    raise ConfigError(
        f"device {device!r} is not a device of this context ({shared.labels(members)})"
    )


def create_queue(
    context: pyopencl.Context,
    device: DeviceLike | None = None,
    *,
    recordable: bool = False,
    profiling: bool = False,
    out_of_order: bool = False,
    priority: str | int | None = None,
    throttle: str | int | None = None,
) -> pyopencl.CommandQueue:
    """A ``pyopencl.CommandQueue`` on ``device`` (default: the context's first device).

    ``priority``/``throttle`` (``"high" | "normal" | "low"``) become
    ``CL_QUEUE_PRIORITY_KHR``/``CL_QUEUE_THROTTLE_KHR`` where the device has
    ``cl_khr_priority_hints``/``cl_khr_throttle_hints``, else a no-op with a
    QcomExtWarning; context hints mapped to those tiers apply unless overridden.
    ``recordable=True`` makes a ``CL_QUEUE_RECORDABLE_QCOM`` queue where that is
    native and an ordinary in-order queue elsewhere. A rejected property list raises
    :class:`CLError` naming the properties.

    >>> import pyopencl as cl, qcom_ext
    >>> queue = qcom_ext.create_queue(qcom_ext.create_context(), profiling=True)
    >>> bool(queue.properties & cl.command_queue_properties.PROFILING_ENABLE)
    True
    """
    handle = _context_handle(context)
    levels = {"priority": priority, "throttle": throttle}
    if priority is not None or throttle is not None:
        levels = {kind: _hints.parse(kind, value) for kind, value in levels.items()}
    flags = {"recordable": recordable, "profiling": profiling, "out_of_order": out_of_order}
    state = _lookup(handle)
    _check_queue_flags(flags, state)
    caps = _queue_device(context, state, device)
    if state:
        _inherit_context_hints(state.info, levels)
    _, native, old, tiers = _plan(caps)
    flags["recordable"] = recordable and native
    legacy = flags["recordable"] or old
    applied, dropped = _queue_hints(tiers, levels, legacy)
    queue = _cl_create_queue(handle, caps, flags, applied, legacy)
    if dropped:
        warnings.warn(
            f"create_queue on {caps.label}: " + "; ".join(dropped), QcomExtWarning, stacklevel=2
        )
    return queue


def _check_queue_flags(flags: dict[str, bool], state: _State | None) -> None:
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise ConfigError(f"{name} must be True or False, got {flag!r}")
    if flags["recordable"] and flags["out_of_order"]:
        raise ConfigError(
            "recordable=True needs an in-order queue: recordings replay in order "
            "(drop out_of_order=True)"
        )
    if state and state.info.protected and flags["profiling"]:
        raise ConfigError(
            "queues of a protected context cannot profile (the driver answers "
            "CL_INVALID_QUEUE_PROPERTIES): drop profiling=True"
        )


def _inherit_context_hints(info: ContextInfo, levels: dict[str, str | None]) -> None:
    """Context hints that took a Khronos path apply to the queue, unless given here."""
    for kind, (_, _, queue_kind, tier) in _CONTEXT_HINTS.items():
        level = getattr(info, kind)
        if levels[queue_kind] is None and getattr(info, f"{kind}_path") == f"khr:{tier}":
            levels[queue_kind] = level


# device id -> (its latest report, recordable queues native, OpenCL 1.x (no property
# list), the Khronos queue-hint tiers it can take): computed once per report
_plans: dict[int, tuple[DeviceCaps, bool, bool, frozenset[str]]] = {}


def _plan(caps: DeviceCaps) -> tuple[DeviceCaps, bool, bool, frozenset[str]]:
    plan = _plans.get(caps.device_id)
    if plan is None or plan[0] is not caps:
        tiers = frozenset(t for t in _QUEUE_HINTS.values() if caps.khronos_usable(t))
        native = caps.path(RECORDABLE) == "native"
        plan = _plans[caps.device_id] = (
            caps,
            native,
            _opencl_major(caps.platform_version) < 2,
            tiers,
        )
    return plan


def _queue_hints(
    tiers: frozenset[str], levels: dict[str, str | None], legacy: bool
) -> tuple[list[tuple[str, str]], list[str]]:
    """(property key, value name) of each hint applied, and a note on each dropped."""
    applied: list[tuple[str, str]] = []
    dropped: list[str] = []
    for kind, level in levels.items():
        if level is None:
            continue
        if legacy:
            why = "clCreateCommandQueue (recordable queue or OpenCL 1.x) takes no hint properties"
        elif _QUEUE_HINTS[kind] not in tiers:
            why = f"the device does not advertise {_QUEUE_HINTS[kind]}"
        else:
            applied.append((_hints.QUEUE_KEYS[kind], _hints.token_name(kind, level)))
            continue
        dropped.append(f"{kind}={level!r} is a no-op: {why}")
    return applied, dropped


_NO_PROPERTIES = ffi.new("cl_queue_properties[]", [0])  # the driver only reads it


def _cl_create_queue(
    context: int,
    caps: DeviceCaps,
    flags: dict[str, bool],
    hints: list[tuple[str, str]],
    legacy: bool,
) -> Any:
    bits = [bit for name, bit in _QUEUE_BITS if flags[name]]
    mask = 0
    for bit in bits:
        mask |= getattr(C, bit)
    ctx = ffi.cast("cl_context", context)
    dev = ffi.cast("cl_device_id", caps.device_id)
    err = ffi.new("cl_int *")
    if legacy:
        routine = "clCreateCommandQueue"
        handle = driver.function(routine)(ctx, dev, mask, err)
    else:
        routine = "clCreateCommandQueueWithProperties"
        words = [C.CL_QUEUE_PROPERTIES, mask] if mask else []
        for key, value in hints:
            words += [getattr(C, key), getattr(C, value)]
        plist = ffi.new("cl_queue_properties[]", [*words, 0]) if words else _NO_PROPERTIES
        handle = driver.function(routine)(ctx, dev, plist, err)
    if err[0] != 0 or handle == ffi.NULL:  # the message is for failures only
        shown = _properties_text([*hints, *((b, None) for b in bits)])
        detail = f"properties: {shown}; device {caps.label}"
        check_handle(handle, err, routine, detail, driver.clReleaseCommandQueue)
    value = int(ffi.cast("intptr_t", handle))
    return _adopt(value, _wrap_queue, "clReleaseCommandQueue", "cl_command_queue")
