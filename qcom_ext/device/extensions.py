"""Every ``cl_qcom_*`` extension qcom_ext knows, and the one rule that picks its path.

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

>>> resolve("cl_qcom_recordable_queues", {"cl_khr_command_buffer"}).path
'khr:cl_khr_command_buffer'
>>> resolve("cl_qcom_protected_context", set()).path
'unavailable'
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from qcom_ext.errors import UnknownExtension

__all__ = [
    "REGISTRY",
    "Extension",
    "ExtensionStatus",
    "broken_reason",
    "khronos_names",
    "khronos_problem",
    "known_broken",
    "resolve",
]


@dataclass(frozen=True)
class Extension:
    """What qcom_ext knows about one Qualcomm extension."""

    name: str
    section: str  # in ../shared/reference/qcom-extensions.md
    side: str  # "host", "kernel" or "host+kernel"
    summary: str
    khronos: tuple[str, ...] = ()  # equivalents, in order of preference
    fallback: str | None = None  # what the portable path does; None: no fallback
    no_fallback_reason: str = ""
    needs_images: bool = False
    needs_posix: bool = False


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


_NO_OP = "recorded no-op: the hint is kept on the context and never reaches the driver"
_VENDOR_ONLY = "only the Qualcomm driver can import {what}; no portable object exists"

REGISTRY: dict[str, Extension] = {
    e.name: e
    for e in (
        Extension(
            "cl_qcom_perf_hint",
            "1",
            "host",
            "context performance (clock) hint",
            khronos=("cl_khr_throttle_hints",),
            fallback=_NO_OP,
        ),
        Extension(
            "cl_qcom_priority_hint",
            "2",
            "host",
            "context scheduling priority",
            khronos=("cl_khr_priority_hints",),
            fallback=_NO_OP,
        ),
        Extension(
            "cl_qcom_recordable_queues",
            "3",
            "host",
            "record NDRange sequences once, replay with cheap updates",
            khronos=("cl_khr_command_buffer",),
            fallback="host-side replay of pre-resolved dispatches",
        ),
        Extension(
            "cl_qcom_protected_context",
            "4",
            "host",
            "contexts whose memory is hardware content-protected",
            no_fallback_reason="protected contexts never fall back: a fallback "
            "would silently drop the hardware protection",
        ),
        Extension(
            "cl_qcom_create_buffer_from_image",
            "5",
            "host",
            "a buffer aliasing an image's storage",
            khronos=("cl_khr_image2d_from_buffer",),
            fallback="separate buffer kept in sync by explicit copies",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_onchip_global_memory",
            "6",
            "host",
            "buffers in on-chip (GMEM) memory",
            fallback="ordinary global memory (same lifetime rules enforced)",
        ),
        Extension(
            "cl_qcom_extended_query_image_info",
            "7",
            "host",
            "image pitch/size/alignment without creating the image",
            fallback="computed from the standard image rules and pitch alignment",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_reqd_sub_group_size",
            "8",
            "kernel",
            'kernel attribute qcom_reqd_sub_group_size("half"|"full")',
            khronos=("cl_intel_required_subgroup_size",),
            fallback="attribute dropped; the device's own sub-group size is used",
        ),
        Extension(
            "cl_qcom_subgroup_shuffle",
            "9",
            "kernel",
            "qcom_sub_group_shuffle_{up,down,rotate_up,rotate_down,xor}",
            khronos=("cl_khr_subgroup_shuffle",),
            fallback="shuffles emulated in portable OpenCL C",
        ),
        Extension(
            "cl_qcom_accelerated_image_ops",
            "10",
            "host+kernel",
            "weight-image convolution, box filter, block matching",
            fallback="the same operations in portable OpenCL C",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_filter_bicubic",
            "10",
            "host+kernel",
            "bicubic sampler filter (CL_FILTER_BICUBIC_QCOM)",
            fallback="4x4 bicubic weights computed in the kernel",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_vector_image_ops",
            "11",
            "kernel",
            "2x2/4x1 vector image reads and vector writes",
            fallback="composed from read_image/write_image",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_compressed_image",
            "12",
            "host",
            "UBWC-compressed images",
            fallback="uncompressed images (same kernel semantics)",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_compressed_yuv_image_read",
            "12",
            "host",
            "reads of compressed planar YUV images",
            fallback="uncompressed plane images",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_other_image",
            "13",
            "host",
            "planar YUV, Bayer and MIPI-packed image formats",
            fallback="one single-plane image per plane",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_extract_image_plane",
            "13",
            "host",
            "single-plane child images of a planar image",
            fallback="the plane images of the portable planar layout",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_ext_host_ptr",
            "14.1",
            "host",
            "import external memory (base of the host-pointer family)",
            fallback="page-aligned host memory through CL_MEM_USE_HOST_PTR",
        ),
        Extension(
            "cl_qcom_ext_host_ptr_iocoherent",
            "14.2",
            "host",
            "I/O-coherent cache policy for imported memory",
            fallback="write-back memory made coherent by map/unmap",
        ),
        Extension(
            "cl_qcom_ion_host_ptr",
            "14.3",
            "host",
            "import ION allocations",
            no_fallback_reason=_VENDOR_ONLY.format(what="an ION buffer")
            + " (ION is gone since Android 12: use dma-buf heaps)",
        ),
        Extension(
            "cl_qcom_android_native_buffer_host_ptr",
            "14.4",
            "host",
            "import ANativeWindowBuffer (gralloc) buffers",
            no_fallback_reason=_VENDOR_ONLY.format(what="an ANativeWindowBuffer"),
        ),
        Extension(
            "cl_qcom_android_ahardwarebuffer_host_ptr",
            "14.5",
            "host",
            "import AHardwareBuffer objects",
            no_fallback_reason=_VENDOR_ONLY.format(what="an AHardwareBuffer"),
        ),
        Extension(
            "cl_qcom_ahardwarebuffer_direct_import",
            "14.5",
            "host",
            "direct AHardwareBuffer import (no public specification)",
            no_fallback_reason="no public specification or tokens exist",
        ),
        Extension(
            "cl_qcom_dmabuf_host_ptr",
            "14.6",
            "host",
            "import dma-buf file descriptors",
            fallback="mmap the dma-buf and wrap it with CL_MEM_USE_HOST_PTR",
            needs_posix=True,
        ),
        Extension(
            "cl_qcom_dot_product8",
            "15",
            "kernel",
            "qcom_udot8_acc / qcom_dot8_acc packed 8-bit dot products",
            khronos=("cl_khr_integer_dot_product",),
            fallback="byte-lane arithmetic in portable OpenCL C",
        ),
        Extension(
            "cl_qcom_bitreverse",
            "16",
            "kernel",
            "qcom_bitreverse(uint)",
            khronos=("cl_khr_extended_bit_ops",),
            fallback="bit swaps in portable OpenCL C",
        ),
        Extension(
            "cl_qcom_ml_ops",
            "17",
            "host",
            "CLML machine-learning operators",
            fallback="qcom_ext's own convolution kernels (no CLML interface)",
        ),
        Extension(
            "cl_qcom_bfloat16_product",
            "18",
            "kernel",
            "qcom_mad32_bf16",
            fallback="bf16 widened to float, fused multiply-add",
        ),
        Extension(
            "cl_qcom_limited_printf",
            "19",
            "kernel",
            "printf with a bounded buffer",
            fallback="standard OpenCL C printf",
        ),
        Extension(
            "cl_qcom_extended_images",
            "19",
            "host",
            "larger image dimensions",
            fallback="the standard image size limits",
        ),
        Extension(
            "cl_qcom_large_buffer",
            "19",
            "host",
            "buffers larger than CL_DEVICE_MAX_MEM_ALLOC_SIZE",
            fallback="buffers limited to CL_DEVICE_MAX_MEM_ALLOC_SIZE",
        ),
    )
}


def khronos_names() -> frozenset[str]:
    """Every Khronos/Intel extension used as a tier."""
    return frozenset(k for e in REGISTRY.values() for k in e.khronos)


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
) -> str | None:
    """Why Khronos extension ``tier`` cannot be used, or None when it can.

    >>> khronos_problem("cl_khr_image2d_from_buffer", {"cl_khr_image2d_from_buffer"},
    ...                 limits={"image_pitch_alignment": 0})
    'cl_khr_image2d_from_buffer advertised, but CL_DEVICE_IMAGE_PITCH_ALIGNMENT is 0'
    """
    if tier not in available:
        return f"{tier} not advertised"
    if tier in disabled:
        return f"{tier} disabled by QCOM_EXT_DISABLE"
    limits = limits or {}
    if tier == "cl_khr_image2d_from_buffer" and not limits.get("image_pitch_alignment"):
        return f"{tier} advertised, but CL_DEVICE_IMAGE_PITCH_ALIGNMENT is 0"
    if tier == "cl_intel_required_subgroup_size" and not limits.get("sub_group_sizes"):
        return f"{tier} advertised, but CL_DEVICE_SUB_GROUP_SIZES_INTEL is empty"
    reason = broken_reason(tier, limits)
    if reason:
        return f"{tier} advertised, but {reason}"
    return None


def broken_reason(name: str, limits: Mapping[str, object] | None) -> str | None:
    """Why advertised extension ``name`` is not to be used on this device, or None.

    ``limits["broken"]`` holds ``(extension, reason)`` pairs: the Khronos tiers of
    :data:`KNOWN_BROKEN` and every extension whose trial failed or crashed
    (:mod:`qcom_ext.tools.verify.runner`). A broken extension is treated as absent.

    >>> broken_reason("cl_khr_command_buffer", {"broken": [("cl_khr_command_buffer", "no")]})
    'no'
    """
    for ext, reason in (limits or {}).get("broken") or ():  # type: ignore[attr-defined]
        if ext == name:
            return str(reason)
    return None


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
) -> ExtensionStatus:
    """The path extension ``name`` takes on a device with these facts.

    ``extensions`` is the device's extension set; ``khronos_available`` adds extensions
    only the platform lists (pocl lists some hints there). ``disabled`` comes from
    ``QCOM_EXT_DISABLE``. An advertised extension listed in ``limits["broken"]`` (a
    known driver bug, or a failed trial of :mod:`qcom_ext.tools.verify.runner`) takes the path it
    would take without it, and the reason says why:

    >>> broken = {"broken": [("cl_qcom_recordable_queues", "the trial recording crashed")]}
    >>> status = resolve("cl_qcom_recordable_queues", {"cl_qcom_recordable_queues"},
    ...                  limits=broken)
    >>> status.path, status.reason.split(";")[0]
    ('fallback', 'cl_qcom_recordable_queues advertised, but the trial recording crashed')
    """
    ext = REGISTRY.get(name) if isinstance(name, str) else None
    if ext is None:
        raise UnknownExtension(
            f"{name!r} is not a cl_qcom_* extension qcom_ext knows; "
            f"known: {', '.join(sorted(REGISTRY))}"
        )
    limits = limits or {}
    versions = versions or {}
    available = set(extensions) | set(khronos_available or ())
    posix = os.name == "posix" if posix is None else posix
    advertised = name in extensions
    broken = broken_reason(name, limits) if advertised else None
    if advertised and name not in disabled and broken is None:
        return ExtensionStatus("native", f"{name} is advertised by the device")
    if name in disabled or not advertised:
        why = "disabled by QCOM_EXT_DISABLE" if advertised else "not advertised"
    else:  # advertised but broken: the path it would take without it
        why = f"{name} advertised, but {broken}"
    notes: list[str] = []
    # Disabling a Qualcomm extension forces its portable fallback: its tiers go too.
    off = {*disabled, *ext.khronos} if name in disabled else disabled
    for tier in ext.khronos:
        if tier not in available:
            continue
        problem = khronos_problem(tier, available, disabled=off, limits=limits)
        if problem:
            notes.append(problem)
            continue
        version = f" {versions[tier]}" if tier in versions else ""
        return ExtensionStatus(f"khr:{tier}", f"{why}; Khronos equivalent {tier}{version}")
    if ext.fallback is None:
        return ExtensionStatus("unavailable", f"{why}; {ext.no_fallback_reason}")
    if ext.needs_images and not image_support:
        return ExtensionStatus(
            "unavailable", f"{why}; the fallback needs images (CL_DEVICE_IMAGE_SUPPORT is 0)"
        )
    if ext.needs_posix and not posix:
        return ExtensionStatus("unavailable", f"{why}; the fallback needs mmap (POSIX)")
    notes.append(f"portable fallback: {ext.fallback}")
    return ExtensionStatus("fallback", f"{why}; " + "; ".join(notes))
