"""What the devices of one context share: their reports, the path an extension takes on
all of them, how they are named, and the entry points a native path needs.

Every host module asks here instead of computing these itself:

* :func:`route`: the one decision of a host entry point, made once: a frozen
  :class:`Route` (the devices' reports, the extensions, the shared path and its reason,
  the labels) with :meth:`Route.refuse` (the typed error) and :meth:`Route.downgrade`
  (a native entry point turned out missing: one warning, then the path without it);
* :func:`caps_of`: the :class:`DeviceCaps` of a context's devices (from the probe's cache);
* :func:`shared_path`: the path every device can take (devices that disagree get the
  fallback), :func:`absent_path` the one taken when the entry point turns out missing;
* :func:`label` / :func:`labels`: ``pocl-3.1-cpu``, as the CLI, the pytest plugin, the
  selftest and the benchmarks name devices;
* :func:`require`: the entry point of a native path, or the typed error.

>>> a = DeviceCaps.from_info(extensions="cl_qcom_perf_hint", disabled=())
>>> b = DeviceCaps.from_info(extensions="", disabled=())
>>> shared_path([a], "cl_qcom_perf_hint"), shared_path([a, b], "cl_qcom_perf_hint")
('native', 'fallback')
>>> require(b, "cl_qcom_perf_hint", "clSetPerfHintQCOM")
Traceback (most recent call last):
...
qcom_ext.errors.ExtensionUnavailable: cl_qcom_perf_hint is not available on opencl-gpu: ...
>>> hint = Route.of([a, b], "cl_qcom_perf_hint")
>>> hint.path, hint.native, hint.label
('fallback', False, 'opencl-gpu, opencl-gpu')
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, NoReturn

from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import C, check, driver, ffi, handle_int
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.extensions import REGISTRY
from qcom_ext.device.probe import probe
from qcom_ext.errors import ConfigError, EntryPointMissing, ExtensionUnavailable, QcomExtWarning

__all__ = [
    "Route",
    "absent_path",
    "all_native",
    "caps_of",
    "context_caps",
    "context_devices",
    "device_handle",
    "label",
    "labels",
    "require",
    "require_all",
    "route",
    "shared_path",
    "why_not_native",
]

_ABSENT = object()


def caps_of(where: Any = None) -> tuple[DeviceCaps, ...]:
    """The reports of the devices ``where`` names, from the probe's cache.

    ``where``: None (the default device), a ``pyopencl.Context`` (its devices), a
    ``pyopencl.CommandQueue`` (its device), a ``pyopencl.Device``, a raw ``cl_device_id``,
    a :class:`DeviceCaps`, or a list of devices for one context (from one platform, none
    twice).

    >>> import pyopencl as cl, qcom_ext
    >>> device = qcom_ext.probe().device()
    >>> caps_of(cl.Context([device])) == caps_of(device) == caps_of([device])
    True
    """
    if where is None:
        return (probe(),)
    if isinstance(where, DeviceCaps):
        return (where,)
    if isinstance(where, (list, tuple)):
        return _members(where)
    if hasattr(where, "devices") and hasattr(where, "int_ptr"):
        return context_caps(where)
    if hasattr(where, "device") and hasattr(where, "int_ptr"):  # a CommandQueue
        return (probe(where.device),)
    return (probe(device_handle(where)),)


def context_caps(context: Any) -> tuple[DeviceCaps, ...]:
    """The reports of the devices of ``context`` (a ``pyopencl.Context``); ConfigError
    for anything else."""
    devices = getattr(context, "devices", _ABSENT)
    if devices is _ABSENT or not hasattr(context, "int_ptr"):
        raise ConfigError(f"expected a pyopencl.Context, got {type(context).__name__}")
    if devices is None:  # a stand-in that only has a handle: ask the driver
        devices = context_devices(handle_int(context))
    return tuple(probe(d) for d in devices)


def context_devices(context: int) -> list[int]:
    """The device handles of the context ``context``, asked through cffi."""
    size = ffi.new("size_t *")
    get, handle = driver.clGetContextInfo, ffi.cast("cl_context", context)
    check(get(handle, C.CL_CONTEXT_DEVICES, 0, ffi.NULL, size), "clGetContextInfo")
    count = size[0] // ffi.sizeof("cl_device_id")
    devices = ffi.new("cl_device_id[]", count)
    check(get(handle, C.CL_CONTEXT_DEVICES, size[0], devices, ffi.NULL), "clGetContextInfo")
    return [int(ffi.cast("uintptr_t", devices[i])) for i in range(count)]


def device_handle(device: Any) -> int:
    """The ``cl_device_id`` of a ``pyopencl.Device`` or a handle the platform enumeration
    lists (:func:`qcom_ext.binding.info.known_device`); ConfigError else."""
    return _info.known_device(device)


def _members(devices: Sequence[Any]) -> tuple[DeviceCaps, ...]:
    """The reports of the devices of one context to be: some, distinct, one platform."""
    if not devices:
        raise ConfigError("devices is empty; pass None for the default device")
    found = tuple(d if isinstance(d, DeviceCaps) else probe(device_handle(d)) for d in devices)
    if len({c.device_id for c in found}) != len(found):
        raise ConfigError("devices lists the same device more than once")
    if len({c.platform_id for c in found}) > 1:
        raise ConfigError(
            f"devices span several platforms ({labels(found)}); "
            "one context takes the devices of one platform"
        )
    return found


def shared_path(caps: Iterable[DeviceCaps], extension: str) -> str:
    """The path of ``extension`` that every device takes; devices that disagree get the
    fallback (the one path all of them can run): :attr:`Route.path`."""
    return Route.of(caps, extension).path


def absent_path(caps: Iterable[DeviceCaps], extension: str) -> str:
    """The shared path ``extension`` takes when its entry point turns out to be missing."""
    paths = {c.status_without(extension).path for c in caps}
    return paths.pop() if len(paths) == 1 else "fallback"


def all_native(caps: Iterable[DeviceCaps], *extensions: str) -> bool:
    """Whether every device takes the native path of every extension
    (:attr:`Route.native`)."""
    return Route.of(caps, *extensions).native


def why_not_native(caps: Sequence[DeviceCaps], *extensions: str) -> tuple[str, str]:
    """(extension, reason) of the first extension some device lacks (the reason names
    that device when there are several): :attr:`Route.reason`."""
    route = Route.of(caps, *extensions)
    if route.native:
        raise ValueError("every extension is native")
    return route.lacking, route.reason


def label(where: Any = None) -> str:
    """The short name of a device (``pocl-3.1-cpu``, ``adreno-740-gpu``) from its report,
    a ``pyopencl.Device`` or a handle (None: the default device).

    >>> label(DeviceCaps.from_info(extensions="", platform_name="Portable Computing "
    ...       "Language", driver_version="3.1", device_type="cpu", disabled=()))
    'pocl-3.1-cpu'
    """
    return where.label if isinstance(where, DeviceCaps) else caps_of(where)[0].label


def labels(caps: Iterable[DeviceCaps], *, names: bool = True) -> str:
    """``label (device name)`` of each device, for messages (``names=False``: the
    labels alone, ``pocl-3.1-cpu, pocl-3.0-cpu``)."""
    if not names:
        return ", ".join(c.label for c in caps)
    return ", ".join(f"{c.label} ({c.device_name.strip()})" for c in caps)


def require(caps: DeviceCaps, extension: str, entry_point: str) -> Any:
    """The entry point ``entry_point`` of ``extension`` on ``caps``'s platform.

    :class:`ExtensionUnavailable` (with the probe's reason) when the device does not
    take the extension's native path (for a Khronos name: does not advertise it);
    :class:`EntryPointMissing` when it does but the driver lacks the entry point.
    """
    return require_all(caps, extension, (entry_point,))[entry_point]


def require_all(caps: DeviceCaps, extension: str, entry_points: Iterable[str]) -> dict[str, Any]:
    """:func:`require` of several entry points: name -> function; the error names every
    one the driver lacks."""
    if extension in REGISTRY:
        status = caps.status(extension)
        if status.path != "native":
            raise ExtensionUnavailable(extension, caps.label, status.reason)
    elif extension not in caps.extensions | caps.platform_extensions:
        raise ExtensionUnavailable(extension, caps.label, "the device does not advertise it")
    found = {name: driver.extension_function(caps.platform_id, name) for name in entry_points}
    missing = [name for name, function in found.items() if function is None]
    if missing:
        raise EntryPointMissing(
            f"{extension} is advertised by {caps.label}, but the driver lacks "
            + ", ".join(missing)
        )
    return found


class Route(NamedTuple):
    """The path ``extensions`` take on the devices ``caps`` of one context, decided once.

    ``path`` is ``native`` when every device takes every extension's native path; else
    the shared path of the first extension that is not native everywhere (devices that
    disagree: ``fallback``), with ``reason`` saying why. A public entry point makes it
    with :func:`route` and hands it down; nothing below asks the context again.
    """

    extensions: tuple[str, ...]
    caps: tuple[DeviceCaps, ...]
    path: str
    reason: str
    #: the first of ``extensions`` some device does not take natively ("" when native)
    lacking: str = ""

    @classmethod
    def of(cls, caps: Iterable[DeviceCaps], *extensions: str) -> Route:
        """The route of ``extensions`` over ``caps`` (a context's reports): the one rule
        that combines the devices' paths (:func:`shared_path`, :func:`all_native` and
        :func:`why_not_native` ask it too)."""
        caps = tuple(caps)
        if not caps or not extensions:
            raise ConfigError("a route needs at least one device and one extension")
        for ext in extensions:
            paths, first = set(), None
            for c in caps:
                status = c.status(ext)
                paths.add(status.path)
                if first is None and status.path != "native":
                    first = (c.label, status.reason)
            if first is not None:  # devices that disagree: the one path all can run
                path = paths.pop() if len(paths) == 1 else "fallback"
                why = first[1] if len(caps) == 1 else f"{first[0]}: {first[1]}"
                return cls(tuple(extensions), caps, path, why, ext)
        if len(extensions) == 1 and len(caps) == 1:
            reason = caps[0].status(extensions[0]).reason
        else:
            names = ", ".join(c.label for c in caps)
            reason = f"{' and '.join(extensions)} native on {names}"
        return cls(tuple(extensions), caps, "native", reason)

    @property
    def extension(self) -> str:
        """The extension the route is named after (the first)."""
        return self.extensions[0]

    @property
    def tier(self) -> str:
        """``native``, ``khr``, ``fallback`` or ``unavailable``."""
        return self.path.split(":", 1)[0]

    @property
    def native(self) -> bool:
        return self.path == "native"

    @property
    def label(self) -> str:
        """The devices' short labels (``pocl-3.1-cpu, pocl-3.0-cpu``)."""
        return labels(self.caps, names=False)

    @property
    def labels(self) -> str:
        """``label (device name)`` of each device, for error messages."""
        return labels(self.caps)

    def unavailable(self, extension: str | None = None) -> bool:
        """Whether some device has no path at all for ``extension`` (default: the first)."""
        return any(c.path(extension or self.extension) == "unavailable" for c in self.caps)

    def require(self, *entry_points: str) -> Any:
        """The entry point (one name) or name -> entry point (several) of this route's
        extension on the native path, of its Khronos tier on a ``khr:`` path; the typed
        errors of :func:`require_all`."""
        extension = self.path.split(":", 1)[1] if self.tier == "khr" else self.extension
        found = require_all(self.caps[0], extension, entry_points)
        return found[entry_points[0]] if len(entry_points) == 1 else found

    def refuse(
        self, detail: str = "", *, extension: str | None = None, reason: str | None = None
    ) -> NoReturn:
        """Raise the one typed error of a route that cannot serve:
        :class:`~qcom_ext.errors.ExtensionUnavailable` naming the extension (default: the
        first), the devices and the reason (default: the route's; ``; detail`` appended
        when given)."""
        reason = self.reason if reason is None else reason
        raise ExtensionUnavailable(
            extension or self.extension, self.labels, f"{reason}; {detail}" if detail else reason
        )

    def downgrade(
        self,
        exc: EntryPointMissing,
        instead: str | Callable[[Route], str],
        *,
        stacklevel: int = 2,
    ) -> Route:
        """The one way a native path whose entry point is missing falls back: the route
        the devices take without the extension (:func:`absent_path`; its reason is
        ``exc``), and one :class:`~qcom_ext.errors.QcomExtWarning` ``label: exc; instead``
        (``instead`` may be a function of the new route), attributed ``stacklevel``
        frames above the caller (2: the caller's caller).

        >>> import warnings
        >>> native = Route.of([DeviceCaps.from_info(extensions="cl_qcom_perf_hint",
        ...                                         disabled=())], "cl_qcom_perf_hint")
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     after = native.downgrade(EntryPointMissing("no clSetPerfHintQCOM"),
        ...                              lambda new: f"the hint takes the {new.path} path")
        >>> after.path, str(seen[0].message)
        ('fallback', 'opencl-gpu: no clSetPerfHintQCOM; the hint takes the fallback path')
        """
        path = absent_path(self.caps, self.extension)
        after = self._replace(path=path, reason=str(exc), lacking=self.extension)
        text = instead if isinstance(instead, str) else instead(after)
        warnings.warn(f"{self.label}: {exc}; {text}", QcomExtWarning, stacklevel=stacklevel + 1)
        return after


def route(where: Any, *extensions: str) -> Route:
    """The :class:`Route` of ``extensions`` on the devices ``where`` names (as
    :func:`caps_of`: a context, a queue, a device, reports): the one call a public entry
    point makes.

    >>> route(DeviceCaps.from_info(extensions="", disabled=()), "cl_qcom_perf_hint").path
    'fallback'
    """
    return Route.of(caps_of(where), *extensions)
