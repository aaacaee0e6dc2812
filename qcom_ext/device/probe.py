"""Probe OpenCL devices: ``probe()`` for one, ``probe_all()`` for every device.

Everything is read through cffi (no kernel is compiled): the strings, and the limits
the registry declares (:data:`~qcom_ext.device.limits.LIMIT_QUERIES`); for a Qualcomm
device whose strings name no model, also the kernel driver's files (KGSL or DRM,
:mod:`~qcom_ext.device.kernel_gpu`). Each report is
cached per device and ``QCOM_EXT_DISABLE`` value, so repeated calls cost a dict lookup.
The cached verdicts of :mod:`qcom_ext.device.verdicts` are applied; ``probe(verify=True)``
runs the missing trials in child processes first, through the runner the package installs
(:mod:`qcom_ext._trials`: the tools layer's :mod:`qcom_ext.tools.verify.runner`).

Paths are steered by arguments, never by rewriting the environment: ``probe(device,
disabled=names)`` is the report with ``names`` disabled on top of ``QCOM_EXT_DISABLE``
(the user's switch), and inside ``with disabling(names):`` every ``probe()`` of this
thread (the library's own calls included) sees them disabled too; other threads do not.

>>> caps = probe()                      # the device pyopencl would pick
>>> caps.path("cl_qcom_recordable_queues") in ("native", "khr:cl_khr_command_buffer",
...                                              "fallback")
True
>>> probe(disabled=["cl_qcom_bitreverse"]).path("cl_qcom_bitreverse")
'fallback'
>>> with disabling({"cl_qcom_bitreverse"}):
...     probe().path("cl_qcom_bitreverse")
'fallback'
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from qcom_ext import _trials
from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import PYOPENCL_LOADER, C, driver, handle_int, pyopencl_library
from qcom_ext.device import clml as _clml
from qcom_ext.device import kernel_gpu as _kernel_gpu
from qcom_ext.device import verdicts as _verdicts
from qcom_ext.device.caps import DISABLE_ENV, DeviceCaps, parse_disabled
from qcom_ext.device.driver_strings import QUALCOMM_VENDOR_ID, driver_kind, find_model
from qcom_ext.device.isolated import probe_isolated
from qcom_ext.device.limits import LIMIT_QUERIES, Limits
from qcom_ext.device.registry import LimitQuery
from qcom_ext.errors import CLError, ConfigError, EntryPointMissing, NoPlatformError, QcomExtError

__all__ = ["clear_cache", "default_device", "disabling", "probe", "probe_all", "read_device"]

_lock = threading.Lock()
_cache: dict[tuple[int, str], DeviceCaps] = {}
_derived: dict[tuple[int, str, frozenset[str]], tuple[DeviceCaps, DeviceCaps]] = {}
_default: dict[str, int] = {}
_verified: set[tuple[int, str]] = set()  # probe(verify=True) ran for these keys
_known: set[int] = set()  # device handles known_device accepted (until clear_cache)
#: The names ``disabling()`` adds in this thread / asyncio task.
_forced: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "qcom_ext_disabled", default=frozenset()
)

_DEVICE_TYPES = (
    ("gpu", "CL_DEVICE_TYPE_GPU"),
    ("cpu", "CL_DEVICE_TYPE_CPU"),
    ("accelerator", "CL_DEVICE_TYPE_ACCELERATOR"),
    ("custom", "CL_DEVICE_TYPE_CUSTOM"),
)


def _device_type(bits: int) -> str:
    for name, token in _DEVICE_TYPES:
        if bits & getattr(C, token):
            return name
    return "device"


def _opencl_major(version: str) -> int:
    parts = version.split()
    try:
        return int(parts[1].split(".")[0]) if len(parts) > 1 else 0
    except ValueError:
        return 0


def _read_limit(device: int, platform: int, query: LimitQuery) -> Any:
    if query.reader == "clml":
        return _clml.ml_interface_versions(platform)
    if query.reader == "sizes":
        return _info.device_sizes(device, getattr(C, query.tokens[0]))
    numbers = tuple(_info.device_uint(device, getattr(C, t)) for t in query.tokens)
    return numbers[0] if len(numbers) == 1 else numbers


def _read_limits(
    device: int, platform: int, extensions: frozenset[str], images: bool
) -> tuple[Any, list[str]]:
    """The :class:`Limits` of every query whose condition the device meets, and a problem
    for each failed query of an advertised extension (advertised is not always usable)."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for query in LIMIT_QUERIES:
        needs = query.needs
        if (needs == "images" and not images) or needs not in (None, "images", *extensions):
            continue
        try:
            values[query.field] = _read_limit(device, platform, query)
        except (CLError, EntryPointMissing, ValueError) as exc:
            if needs not in (None, "images"):  # optional core queries may just be absent
                what = query.tokens[0] if query.tokens else _clml.ENTRY_POINT
                problems.append(f"{needs} is advertised but {what} failed: {exc}")
    return Limits(**values), problems


def _extension_versions(device: int, device_version: str) -> dict[str, str]:
    if _opencl_major(device_version) < 3:
        return {}
    try:
        packed = _info.device_name_versions(device, C.CL_DEVICE_EXTENSIONS_WITH_VERSION)
    except CLError:
        return {}  # optional: 3.0 drivers are allowed to get this wrong
    return {name: _info.version_string(v) for name, v in packed.items()}


def _kernel_facts(vendor_id: int, *texts: str) -> _kernel_gpu.KernelGpu | None:
    """The kernel driver's facts (KGSL, else DRM) for a Qualcomm device whose OpenCL
    strings (device version, name, OpenCL C version) name no model; None for every
    other device."""
    if vendor_id != QUALCOMM_VENDOR_ID or find_model(*texts) is not None:
        return None
    return _kernel_gpu.read_kernel_gpu()


def read_device(device: Any) -> DeviceCaps:
    """Probe one device (uncached); ``device`` is a pyopencl.Device or a raw handle."""
    dev = handle_int(device)
    platform = _info.device_uint(dev, C.CL_DEVICE_PLATFORM)
    extensions = frozenset(_info.device_str(dev, C.CL_DEVICE_EXTENSIONS).split())
    device_version = _info.device_str(dev, C.CL_DEVICE_VERSION)
    images = bool(_info.device_uint(dev, C.CL_DEVICE_IMAGE_SUPPORT))
    versions = _extension_versions(dev, device_version)
    limits, problems = _read_limits(dev, platform, extensions, images)
    name = _info.device_str(dev, C.CL_DEVICE_NAME)
    vendor = _info.device_uint(dev, C.CL_DEVICE_VENDOR_ID)
    c_version = _info.device_str(dev, C.CL_DEVICE_OPENCL_C_VERSION)
    return DeviceCaps.from_info(
        extensions=extensions,
        device_version=device_version,
        driver_version=_info.device_str(dev, C.CL_DRIVER_VERSION),
        device_name=name,
        vendor_id=vendor,
        opencl_c_version=c_version,
        kgsl=_kernel_facts(vendor, device_version, name, c_version),
        device_type=_device_type(_info.device_uint(dev, C.CL_DEVICE_TYPE)),
        platform_name=_info.platform_str(platform, C.CL_PLATFORM_NAME),
        platform_version=_info.platform_str(platform, C.CL_PLATFORM_VERSION),
        platform_extensions=_info.platform_str(platform, C.CL_PLATFORM_EXTENSIONS),
        extension_versions=versions,
        image_support=images,
        limits=limits,
        problems=problems,
        platform_id=platform,
        device_id=dev,
    )


def no_platform_error() -> NoPlatformError:
    """The error for a library that lists no platform; on a machine whose kernel shows
    Adreno hardware it names ``qcom-ext doctor``'s verdict and fix in one line."""
    library = driver.library
    try:  # lazily: the doctor is needed on this error path only
        from qcom_ext.device.doctor import hint

        asked = pyopencl_library() if library.origin == PYOPENCL_LOADER else library.path
        line = hint(asked)
    except Exception:  # the advice must never hide the error itself
        line = None
    return NoPlatformError(library.path, doctor=line)


def _require_platforms() -> list[int]:
    platforms = _info.platform_ids()
    if not platforms:
        raise no_platform_error()
    return platforms


def _pick(
    handles: list[int], answer: str, name_of: Any, what: str, last: bool, source: str
) -> int:
    """pyopencl's rule: an index, else a case-insensitive name substring."""
    if not answer:
        return handles[0]
    if answer.isascii() and answer.isdigit() and int(answer) < len(handles):
        return handles[int(answer)]
    matches = [h for h in handles if answer.lower() in name_of(h).lower()]
    if not matches:
        names = ", ".join(f"{i}: {name_of(h)}" for i, h in enumerate(handles))
        raise ConfigError(f"{source}: {answer!r} matches no {what} (have {names})")
    return matches[-1] if last else matches[0]


def _preferred_platform(platforms: list[int]) -> int:
    """Qualcomm's platform where there is one, else the first: a Qualcomm Linux board
    shows Mesa's rusticl next to Qualcomm's driver, both on the same Adreno."""
    for platform in platforms:
        kind = driver_kind(
            platform_name=_info.platform_str(platform, C.CL_PLATFORM_NAME),
            platform_version=_info.platform_str(platform, C.CL_PLATFORM_VERSION),
        )
        if kind == "qualcomm":
            return platform
    return platforms[0]


def default_device(spec: str | None = None) -> int:
    """The device ``pyopencl.create_some_context(interactive=False)`` would use, except
    that without a platform named, Qualcomm's platform comes first where there is one
    (pyopencl takes the first platform, which may be rusticl on the same Adreno).

    ``spec`` is a ``PYOPENCL_CTX``-style choice (``"<platform>:<device>"``, indices or
    name substrings, as the CLIs' ``--device``); None reads ``PYOPENCL_CTX``. Followed
    by pyopencl's rules, on qcom_ext's own enumeration, so it also works when qcom_ext
    had to open a library other than pyopencl's (an Android vendor library).
    """
    source = "PYOPENCL_CTX" if spec is None else "device"
    spec = os.environ.get("PYOPENCL_CTX", "") if spec is None else spec
    if spec not in _default:
        answers = spec.split(":") if spec else []
        if len(answers) > 2:
            raise ConfigError(f"{source}={spec!r}: expected '<platform>:<device>'")
        platforms = _require_platforms()
        platform = (
            _pick(
                platforms,
                answers[0] if answers else "",
                lambda p: _info.platform_str(p, C.CL_PLATFORM_NAME),
                "platform",
                last=True,  # pyopencl keeps the last platform whose name matches
                source=source,
            )
            if answers and answers[0]
            else _preferred_platform(platforms)
        )
        devices = _info.device_ids(platform)
        if not devices:
            raise QcomExtError(f"{source}={spec!r}: the chosen platform has no device")
        _default[spec] = _pick(
            devices,
            answers[1].split(",")[0] if len(answers) > 1 else "",
            lambda d: _info.device_str(d, C.CL_DEVICE_NAME),
            "device",
            last=False,
            source=source,
        )
    return _default[spec]


def _names(disabled: str | Iterable[str]) -> frozenset[str]:
    """``disabled`` (a ``QCOM_EXT_DISABLE``-style string or names) as checked names."""
    if isinstance(disabled, str):
        return parse_disabled(disabled)
    return parse_disabled(",".join(disabled))


@contextlib.contextmanager
def disabling(names: str | Iterable[str]) -> Iterator[None]:
    """While the block runs, every :func:`probe` of this thread (or asyncio task) treats
    ``names`` as disabled too, on top of ``QCOM_EXT_DISABLE`` and of enclosing blocks: the
    library's own calls take the paths that leaves. Nothing outside the block (other
    threads, child processes, the environment) changes.

    >>> device = probe().device_id
    >>> with disabling("cl_qcom_bitreverse"):
    ...     "cl_qcom_bitreverse" in probe(device).disabled
    True
    >>> "cl_qcom_bitreverse" in probe(device).disabled  # unless QCOM_EXT_DISABLE names it
    False
    """
    token = _forced.set(_forced.get() | _names(names))
    try:
        yield
    finally:
        _forced.reset(token)


def _probed(handle: int, verify: bool) -> DeviceCaps:
    """The cached report of ``handle`` under ``QCOM_EXT_DISABLE`` (verdicts applied)."""
    key = (handle, os.environ.get(DISABLE_ENV, ""))
    caps = _cache.get(key)
    if verify and key not in _verified:
        caps = _trials.run(read_device(handle))
        with _lock:
            _cache[key] = caps
            _verified.add(key)
    elif caps is None:
        caps = _verdicts.apply_cached(read_device(handle))
        with _lock:
            caps = _cache.setdefault(key, caps)
    return caps


def _device_handle(device: Any) -> int:
    """:func:`~qcom_ext.binding.info.known_device`'s check (a raw handle must be a device
    the enumeration lists), made once per handle until :func:`clear_cache`."""
    if type(device) is int and device in _known:
        return device
    handle = _info.known_device(device)
    _known.add(handle)
    return handle


def probe(
    device: Any = None, *, verify: bool = False, disabled: str | Iterable[str] = ()
) -> DeviceCaps:
    """The capability report of ``device`` (default: :func:`default_device`, the device
    pyopencl would pick, Qualcomm's platform first where there is one).

    Cached trial verdicts (:mod:`qcom_ext.device.verdicts`) are applied: an advertised
    extension whose trial crashed or failed takes the path it would take without it.
    ``verify=True`` first runs, in child processes, the trial of every path not already
    known broken (a cached ``ok`` spares none; once per device and process), so a driver
    crash cannot end the caller.
    ``disabled`` names extensions to treat as disabled on top of ``QCOM_EXT_DISABLE``
    and of any :func:`disabling` block (Qualcomm names force their fallback, Khronos
    names drop that tier).

    >>> import qcom_ext
    >>> caps = qcom_ext.probe()  # PYOPENCL_CTX or the first device
    >>> caps.path("cl_qcom_ion_host_ptr") in ("native", "unavailable")  # never a fallback
    True
    """
    handle = default_device() if device is None else _device_handle(device)
    caps = _probed(handle, verify)
    extra = _forced.get() | _names(disabled) if disabled else _forced.get()
    if not extra:
        return caps
    key = (handle, os.environ.get(DISABLE_ENV, ""), extra)
    base, derived = _derived.get(key, (None, caps))
    if base is not caps:  # first time, or the base report changed (verify, clear_cache)
        derived = caps.with_disabled(extra)
        with _lock:
            _derived[key] = (caps, derived)
    return derived


def probe_all(
    *, verify: bool = False, disabled: str | Iterable[str] = (), isolated: bool = False
) -> list[DeviceCaps]:
    """Reports for every device of every platform, in platform order (``verify`` and
    ``disabled``: as for :func:`probe`).

    ``isolated=True`` makes every driver call in a child process
    (:mod:`qcom_ext.device.isolated`): a driver that crashes there raises
    :class:`~qcom_ext.errors.DriverCrashError` naming the call and the signal instead of
    ending this process. Those reports carry no device handles.

    >>> import qcom_ext
    >>> every = qcom_ext.probe_all()
    >>> len(every) >= 1 and all(isinstance(c, qcom_ext.DeviceCaps) for c in every)
    True
    """
    if isolated:
        return probe_isolated(all_devices=True, verify=verify, disabled=disabled)
    return [
        probe(d, verify=verify, disabled=disabled)
        for p in _require_platforms()
        for d in _info.device_ids(p)
    ]


def clear_cache() -> None:
    """Forget cached reports (for example after changing drivers in-process)."""
    with _lock:
        _cache.clear()
        _derived.clear()
        _default.clear()
        _verified.clear()
        _known.clear()
