"""Probe OpenCL devices: ``probe()`` for one, ``probe_all()`` for every device.

Everything is read through cffi (no kernel is compiled), and each report is cached
per device and ``QCOM_EXT_DISABLE`` value, so repeated calls cost a dict lookup. The
cached verdicts of :mod:`qcom_ext.tools.verify.runner` are applied; ``probe(verify=True)`` runs the
missing trials in child processes first.

>>> caps = probe()                      # the device pyopencl would pick
>>> caps.path("cl_qcom_recordable_queues") in ("native", "khr:cl_khr_command_buffer",
...                                              "fallback")
True
"""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Any

from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import C, driver, handle_int
from qcom_ext.device import clml as _clml
from qcom_ext.device.caps import DISABLE_ENV, DeviceCaps, Limits
from qcom_ext.errors import CLError, ConfigError, EntryPointMissing, NoPlatformError, QcomExtError
from qcom_ext.tools.verify import runner as _verify

__all__ = ["clear_cache", "default_device", "probe", "probe_all"]

_lock = threading.Lock()
_cache: dict[tuple[int, str], DeviceCaps] = {}
_default: dict[str, int] = {}
_verified: set[tuple[int, str]] = set()  # probe(verify=True) ran for these keys

# (Limits field, what must be present to ask, query token names). "images" means
# CL_DEVICE_IMAGE_SUPPORT; None means every device. A failed query of an advertised
# extension is reported in DeviceCaps.problems (advertised is not always usable).
_LIMIT_QUERIES: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("max_mem_alloc_size", None, ("CL_DEVICE_MAX_MEM_ALLOC_SIZE",)),
    (
        "image2d_max_size",
        "images",
        ("CL_DEVICE_IMAGE2D_MAX_WIDTH", "CL_DEVICE_IMAGE2D_MAX_HEIGHT"),
    ),
    ("image_pitch_alignment", "images", ("CL_DEVICE_IMAGE_PITCH_ALIGNMENT",)),
    ("image_base_address_alignment", "images", ("CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT",)),
    ("page_size", "cl_qcom_ext_host_ptr", ("CL_DEVICE_PAGE_SIZE_QCOM",)),
    ("ext_mem_padding", "cl_qcom_ext_host_ptr", ("CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM",)),
    (
        "recordable_queue_max_size",
        "cl_qcom_recordable_queues",
        ("CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE",),
    ),
    (
        "onchip_global_mem_size",
        "cl_qcom_onchip_global_memory",
        ("CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM",),
    ),
    (
        "hof_max_filter_size",
        "cl_qcom_accelerated_image_ops",
        ("CL_DEVICE_HOF_MAX_FILTER_SIZE_X_QCOM", "CL_DEVICE_HOF_MAX_FILTER_SIZE_Y_QCOM"),
    ),
    (
        "hof_max_num_phases",
        "cl_qcom_accelerated_image_ops",
        ("CL_DEVICE_HOF_MAX_NUM_PHASES_QCOM",),
    ),
    (
        "block_matching_max_region",
        "cl_qcom_accelerated_image_ops",
        (
            "CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_X_QCOM",
            "CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_Y_QCOM",
        ),
    ),
    (
        "extended_image2d_max_size",
        "cl_qcom_extended_images",
        (
            "CL_DEVICE_EXTENDED_IMAGE2D_MAX_WIDTH_QCOM",
            "CL_DEVICE_EXTENDED_IMAGE2D_MAX_HEIGHT_QCOM",
        ),
    ),
    (
        "extended_image3d_max_size",
        "cl_qcom_extended_images",
        (
            "CL_DEVICE_EXTENDED_IMAGE3D_MAX_WIDTH_QCOM",
            "CL_DEVICE_EXTENDED_IMAGE3D_MAX_HEIGHT_QCOM",
            "CL_DEVICE_EXTENDED_IMAGE3D_MAX_DEPTH_QCOM",
        ),
    ),
    ("printf_buffer_size", "cl_qcom_limited_printf", ("CL_DEVICE_PRINTF_BUFFER_SIZE_QCOM",)),
    ("sub_group_sizes", "cl_intel_required_subgroup_size", ("CL_DEVICE_SUB_GROUP_SIZES_INTEL",)),
    ("max_num_sub_groups", "cl_khr_subgroups", ("CL_DEVICE_MAX_NUM_SUB_GROUPS",)),
    (
        "command_buffer_capabilities",
        "cl_khr_command_buffer",
        ("CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR",),
    ),
    (
        "integer_dot_product_capabilities",
        "cl_khr_integer_dot_product",
        ("CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR",),
    ),
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


def _read_limits(device: int, extensions: frozenset[str], images: bool) -> tuple[Limits, list]:
    values: dict[str, Any] = {}
    problems: list[str] = []
    for field_name, needs, tokens in _LIMIT_QUERIES:
        if (needs == "images" and not images) or needs not in (None, "images", *extensions):
            continue
        try:
            if field_name == "sub_group_sizes":
                value: Any = _info.device_sizes(device, getattr(C, tokens[0]))
            else:
                numbers = tuple(_info.device_uint(device, getattr(C, t)) for t in tokens)
                value = numbers[0] if len(numbers) == 1 else numbers
        except (CLError, ValueError) as exc:
            if needs not in (None, "images"):  # optional core queries may just be absent
                problems.append(f"{needs} is advertised but {tokens[0]} failed: {exc}")
            continue
        values[field_name] = value
    return Limits(**values), problems


def read_device(device: Any) -> DeviceCaps:
    """Probe one device (uncached); ``device`` is a pyopencl.Device or a raw handle."""
    dev = handle_int(device)
    platform = _info.device_uint(dev, C.CL_DEVICE_PLATFORM)
    extensions = frozenset(_info.device_str(dev, C.CL_DEVICE_EXTENSIONS).split())
    device_version = _info.device_str(dev, C.CL_DEVICE_VERSION)
    images = bool(_info.device_uint(dev, C.CL_DEVICE_IMAGE_SUPPORT))
    versions: dict[str, str] = {}
    if _opencl_major(device_version) >= 3:
        try:
            packed = _info.device_name_versions(dev, C.CL_DEVICE_EXTENSIONS_WITH_VERSION)
            versions = {name: _info.version_string(v) for name, v in packed.items()}
        except CLError:
            pass  # optional: 3.0 drivers are allowed to get this wrong
    limits, problems = _read_limits(dev, extensions, images)
    if "cl_qcom_ml_ops" in extensions:
        try:
            versions_ml = _clml.ml_interface_versions(platform)
            limits = dataclasses.replace(limits, ml_interface_versions=versions_ml)
        except (CLError, EntryPointMissing) as exc:
            problems.append(f"cl_qcom_ml_ops is advertised but {_clml.ENTRY_POINT} failed: {exc}")
    return DeviceCaps.from_info(
        extensions=extensions,
        device_version=device_version,
        driver_version=_info.device_str(dev, C.CL_DRIVER_VERSION),
        device_name=_info.device_str(dev, C.CL_DEVICE_NAME),
        vendor_id=_info.device_uint(dev, C.CL_DEVICE_VENDOR_ID),
        opencl_c_version=_info.device_str(dev, C.CL_DEVICE_OPENCL_C_VERSION),
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


def _require_platforms() -> list[int]:
    platforms = _info.platform_ids()
    if not platforms:
        raise NoPlatformError(driver.library.path)
    return platforms


def _pick(handles: list[int], answer: str, name_of: Any, what: str, last: bool) -> int:
    """pyopencl's rule: an index, else a case-insensitive name substring."""
    if not answer:
        return handles[0]
    if answer.isascii() and answer.isdigit() and int(answer) < len(handles):
        return handles[int(answer)]
    matches = [h for h in handles if answer.lower() in name_of(h).lower()]
    if not matches:
        names = ", ".join(f"{i}: {name_of(h)}" for i, h in enumerate(handles))
        raise ConfigError(f"PYOPENCL_CTX: {answer!r} matches no {what} (have {names})")
    return matches[-1] if last else matches[0]


def default_device() -> int:
    """The device ``pyopencl.create_some_context(interactive=False)`` would use.

    Follows ``PYOPENCL_CTX`` (``"<platform>:<device>"``, indices or name substrings) by
    pyopencl's rules, on qcom_ext's own enumeration, so it also works when qcom_ext had
    to open a library other than pyopencl's (an Android vendor library).
    """
    spec = os.environ.get("PYOPENCL_CTX", "")
    if spec not in _default:
        answers = spec.split(":") if spec else []
        if len(answers) > 2:
            raise ConfigError(f"PYOPENCL_CTX={spec!r}: expected '<platform>:<device>'")
        platform = _pick(
            _require_platforms(),
            answers[0] if answers else "",
            lambda p: _info.platform_str(p, C.CL_PLATFORM_NAME),
            "platform",
            last=True,  # pyopencl keeps the last platform whose name matches
        )
        devices = _info.device_ids(platform)
        if not devices:
            raise QcomExtError(f"PYOPENCL_CTX={spec!r}: the chosen platform has no device")
        _default[spec] = _pick(
            devices,
            answers[1].split(",")[0] if len(answers) > 1 else "",
            lambda d: _info.device_str(d, C.CL_DEVICE_NAME),
            "device",
            last=False,
        )
    return _default[spec]


def probe(device: Any = None, *, verify: bool = False) -> DeviceCaps:
    """The capability report of ``device`` (default: the device pyopencl would pick).

    Cached trial verdicts (:mod:`qcom_ext.verify`) are applied: an advertised extension
    whose trial crashed or failed takes the path it would take without it.
    ``verify=True`` first runs, in child processes, the trials that have no cached
    verdict yet (once per device and process), so a driver crash cannot end the caller.

    >>> import qcom_ext
    >>> caps = qcom_ext.probe()  # PYOPENCL_CTX or the first device
    >>> caps.path("cl_qcom_ion_host_ptr") in ("native", "unavailable")  # never a fallback
    True
    """
    handle = default_device() if device is None else handle_int(device)
    key = (handle, os.environ.get(DISABLE_ENV, ""))
    caps = _cache.get(key)
    if verify and key not in _verified:
        caps = _verify.verify(read_device(handle))
        with _lock:
            _cache[key] = caps
            _verified.add(key)
    elif caps is None:
        caps = _verify.apply_cached(read_device(handle))
        with _lock:
            caps = _cache.setdefault(key, caps)
    return caps


def probe_all(*, verify: bool = False) -> list[DeviceCaps]:
    """Reports for every device of every platform, in platform order (``verify``: as
    for :func:`probe`).

    >>> import qcom_ext
    >>> every = qcom_ext.probe_all()
    >>> len(every) >= 1 and all(isinstance(c, qcom_ext.DeviceCaps) for c in every)
    True
    """
    return [probe(d, verify=verify) for p in _require_platforms() for d in _info.device_ids(p)]


def clear_cache() -> None:
    """Forget cached reports (for example after changing drivers in-process)."""
    with _lock:
        _cache.clear()
        _default.clear()
        _verified.clear()
