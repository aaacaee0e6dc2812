"""The one rule that picks the path of a ``cl_qcom_*`` extension on a device.

A path is, in order of preference:

``native``
    the device advertises the Qualcomm extension (and ``QCOM_EXT_DISABLE`` does not
    name it);
``khr:<extension>``
    a Khronos (or Khronos-registered) extension with the same semantics is usable;
``fallback``
    qcom_ext's portable implementation, in Python and OpenCL C;
``unavailable``
    none of the above can keep the extension's guarantees (the reason says why).

What qcom_ext knows about each extension is the registry (:mod:`qcom_ext.device.registry`,
re-exported here).

>>> resolve("cl_qcom_recordable_queues", {"cl_khr_command_buffer"}).path
'khr:cl_khr_command_buffer'
>>> resolve("cl_qcom_protected_context", set()).path
'unavailable'
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from qcom_ext.device.registry import REGISTRY, TIER_BASES, Extension, LimitQuery, khronos_names
from qcom_ext.errors import ConfigError, UnknownExtension

__all__ = [
    "KNOWN_BROKEN",
    "REGISTRY",
    "Extension",
    "ExtensionStatus",
    "LimitQuery",
    "broken_reason",
    "khronos_names",
    "khronos_problem",
    "known_broken",
    "resolve",
]

#: ``(extension, reason)`` pairs: advertised extensions not to be used on a device.
Broken = Collection[tuple[str, str]]


@dataclass(frozen=True)
class ExtensionStatus:
    """The path an extension takes on one device, and why."""

    path: str
    reason: str

    @property
    def tier(self) -> str:
        """``native``, ``khr``, ``fallback`` or ``unavailable``."""
        return self.path.split(":", 1)[0]

    @property
    def usable(self) -> bool:
        return self.path != "unavailable"


#: Khronos extensions some drivers advertise but get wrong badly enough that the portable
#: path is the better choice: (platform name substring, driver version prefix, extension,
#: what goes wrong). Each entry was seen on a real device; the date says when.
KNOWN_BROKEN: tuple[tuple[str, str, str, str], ...] = (
    (
        "Portable Computing Language",
        "5.0",
        "cl_khr_subgroup_shuffle",
        "pocl 5.0 kills the process (SIGSEGV/SIGABRT) running sub_group_shuffle kernels "
        "(seen 2026-11-22)",
    ),
    (
        "Portable Computing Language",
        "5.0",
        "cl_intel_required_subgroup_size",
        "pocl 5.0 runs a required sub-group size larger than the work-group "
        "(get_sub_group_size() 128 in a work-group of 64; seen 2026-11-22)",
    ),
)


def known_broken(platform_name: str, driver_version: str) -> tuple[tuple[str, str], ...]:
    """``(extension, reason)`` for the Khronos extensions this driver gets wrong.

    >>> [ext for ext, _ in known_broken("Portable Computing Language", "5.0+debian")]
    ['cl_khr_subgroup_shuffle', 'cl_intel_required_subgroup_size']
    >>> known_broken("Portable Computing Language", "6.0")
    ()
    """
    return tuple(
        (ext, reason)
        for platform, version, ext, reason in KNOWN_BROKEN
        if platform in platform_name and driver_version.startswith(version)
    )


def khronos_problem(
    tier: str,
    available: Collection[str],
    *,
    disabled: Collection[str] = (),
    limits: Mapping[str, object] | None = None,
    broken: Broken = (),
) -> str | None:
    """Why Khronos extension ``tier`` cannot be used, or None when it can.

    >>> khronos_problem("cl_khr_image2d_from_buffer", {"cl_khr_image2d_from_buffer"},
    ...                 limits={"image_pitch_alignment": 0})
    'cl_khr_image2d_from_buffer advertised, but CL_DEVICE_IMAGE_PITCH_ALIGNMENT is 0'
    >>> dma_buf = "cl_khr_external_memory_dma_buf"  # a tier that needs its base too
    >>> khronos_problem(dma_buf, {dma_buf}).split(", but ")[1]
    'its base cl_khr_external_memory is not advertised'
    """
    if tier not in available:
        return f"{tier} not advertised"
    if tier in disabled:
        return f"{tier} disabled by QCOM_EXT_DISABLE"
    base = TIER_BASES.get(tier)
    if base and base not in available:
        return f"{tier} advertised, but its base {base} is not advertised"
    limits = _limits(limits)
    if tier == "cl_khr_image2d_from_buffer" and not limits.get("image_pitch_alignment"):
        return f"{tier} advertised, but CL_DEVICE_IMAGE_PITCH_ALIGNMENT is 0"
    if tier == "cl_intel_required_subgroup_size" and not limits.get("sub_group_sizes"):
        return f"{tier} advertised, but CL_DEVICE_SUB_GROUP_SIZES_INTEL is empty"
    reason = broken_reason(tier, broken)
    if reason:
        return f"{tier} advertised, but {reason}"
    return None


def _limits(limits: Mapping[str, object] | None) -> Mapping[str, object]:
    if limits and "broken" in limits:  # where the broken list lived before DeviceCaps.broken
        raise ConfigError(
            "limits['broken'] is not a limit: pass the (extension, reason) pairs as broken=..."
        )
    return limits or {}


def broken_reason(name: str, broken: Broken) -> str | None:
    """Why advertised extension ``name`` is not to be used on this device, or None.

    ``broken`` holds ``(extension, reason)`` pairs (``DeviceCaps.broken``): the Khronos
    tiers of :data:`KNOWN_BROKEN` and every extension whose trial failed or crashed
    (:mod:`qcom_ext.device.verdicts`). A broken extension is treated as absent.

    >>> broken_reason("cl_khr_command_buffer", [("cl_khr_command_buffer", "no")])
    'no'
    """
    for ext, reason in broken or ():
        if ext == name:
            return str(reason)
    return None


def _extension(name: str) -> Extension:
    ext = REGISTRY.get(name) if isinstance(name, str) else None
    if ext is None:
        raise UnknownExtension(
            f"{name!r} is not a cl_qcom_* extension qcom_ext knows; "
            f"known: {', '.join(sorted(REGISTRY))}"
        )
    return ext


def resolve(
    name: str,
    extensions: Collection[str],
    *,
    khronos_available: Collection[str] | None = None,
    versions: Mapping[str, str] | None = None,
    limits: Mapping[str, object] | None = None,
    image_support: bool = True,
    disabled: Collection[str] = (),
    posix: bool | None = None,
    broken: Broken = (),
) -> ExtensionStatus:
    """The path extension ``name`` takes on a device with these facts.

    ``extensions`` is the device's extension set; ``khronos_available`` adds extensions
    only the platform lists (pocl lists some hints there). ``disabled`` comes from
    ``QCOM_EXT_DISABLE``. An advertised extension listed in ``broken`` (a known driver
    bug, or a failed trial: :mod:`qcom_ext.device.verdicts`) takes the path it would take
    without it, and the reason says why:

    >>> status = resolve("cl_qcom_recordable_queues", {"cl_qcom_recordable_queues"},
    ...                  broken=[("cl_qcom_recordable_queues", "the trial recording crashed")])
    >>> status.path, status.reason.split(";")[0]
    ('fallback', 'cl_qcom_recordable_queues advertised, but the trial recording crashed')
    """
    ext = _extension(name)
    limits = _limits(limits)
    advertised = name in extensions
    reason = broken_reason(name, broken) if advertised else None
    if advertised and name not in disabled and reason is None:
        return ExtensionStatus("native", f"{name} is advertised by the device")
    if name in disabled or not advertised:
        why = "disabled by QCOM_EXT_DISABLE" if advertised else "not advertised"
    else:  # advertised but broken: the path it would take without it
        why = f"{name} advertised, but {reason}"
    # Disabling a Qualcomm extension forces its portable fallback: its tiers go too.
    off = {*disabled, *ext.khronos} if name in disabled else disabled
    available = set(extensions) | set(khronos_available or ())
    notes: list[str] = []
    for tier in (t for t in ext.khronos if t in available):
        problem = khronos_problem(tier, available, disabled=off, limits=limits, broken=broken)
        if problem is None:
            version = f" {versions[tier]}" if versions and tier in versions else ""
            return ExtensionStatus(f"khr:{tier}", f"{why}; Khronos equivalent {tier}{version}")
        notes.append(problem)
    return _portable(
        ext, why, notes, image_support, os.name == "posix" if posix is None else posix
    )


def _portable(
    ext: Extension, why: str, notes: list[str], image_support: bool, posix: bool
) -> ExtensionStatus:
    """The fallback of ``ext``, or ``unavailable`` when it has none here."""
    if ext.fallback is None:
        return ExtensionStatus("unavailable", "; ".join([why, *notes, ext.no_fallback_reason]))
    if ext.needs_images and not image_support:
        return ExtensionStatus(
            "unavailable", f"{why}; the fallback needs images (CL_DEVICE_IMAGE_SUPPORT is 0)"
        )
    if ext.needs_posix and not posix:
        return ExtensionStatus("unavailable", f"{why}; the fallback needs mmap (POSIX)")
    notes.append(f"portable fallback: {ext.fallback}")
    return ExtensionStatus("fallback", f"{why}; " + "; ".join(notes))
