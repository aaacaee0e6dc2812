"""What one OpenCL device can do, as qcom_ext sees it: :class:`DeviceCaps`.

``DeviceCaps.from_info`` builds the report from strings alone, so Adreno behaviour
can be checked without an Adreno device:

>>> caps = DeviceCaps.from_info(
...     extensions="cl_khr_fp16 cl_qcom_perf_hint cl_qcom_recordable_queues",
...     device_version="OpenCL 3.0 Adreno(TM) 740",
...     driver_version="OpenCL 3.0 QUALCOMM build: commit #16c1863 Compiler E031.38.11.12",
...     vendor_id=0x5143, disabled=())
>>> caps.is_adreno, caps.adreno_model, caps.adreno_compiler
(True, '740', 'E031.38.11.12')
>>> caps.path("cl_qcom_recordable_queues"), caps.path("cl_qcom_priority_hint")
('native', 'fallback')
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from qcom_ext.device.extensions import (
    REGISTRY,
    ExtensionStatus,
    khronos_names,
    khronos_problem,
    known_broken,
    resolve,
)
from qcom_ext.errors import ConfigError, UnknownExtension

__all__ = ["DISABLE_ENV", "DeviceCaps", "Limits", "parse_disabled"]

DISABLE_ENV = "QCOM_EXT_DISABLE"
QUALCOMM_VENDOR_ID = 0x5143  # "QC"

# Both patterns take linear time on any text (a driver string is not trusted to be short):
# no two adjacent parts can match the same characters, and a number starts after a non-digit.
_ADRENO_MODEL = re.compile(r"Adreno\s*(?:\(TM\)\s*)?(X\d+-\d+|\d{3,4}[A-Za-z]?)\b")
_ADRENO_COMPILER = re.compile(r"Compiler\s+([A-Z]+\d*(?:\.[0-9A-Za-z]+)+)")
_VERSION_NUMBER = re.compile(r"(?<!\d)\d+(?:\.\d+)+")
_SHORT_NAMES = (
    ("portable computing", "pocl"),
    ("pocl", "pocl"),
    ("oclgrind", "oclgrind"),
    ("nvidia", "nvidia"),
    ("intel", "intel"),
    ("rusticl", "rusticl"),
    ("amd", "amd"),
)


@dataclass(frozen=True)
class Limits:
    """Device limits read where the extension that defines them is present (else None)."""

    max_mem_alloc_size: int | None = None
    image2d_max_size: tuple[int, int] | None = None
    image_pitch_alignment: int | None = None  # pixels; 0: no image2d_from_buffer
    image_base_address_alignment: int | None = None
    page_size: int | None = None  # cl_qcom_ext_host_ptr
    ext_mem_padding: int | None = None  # cl_qcom_ext_host_ptr
    recordable_queue_max_size: int | None = None  # cl_qcom_recordable_queues
    onchip_global_mem_size: int | None = None  # cl_qcom_onchip_global_memory
    hof_max_filter_size: tuple[int, int] | None = None  # cl_qcom_accelerated_image_ops
    hof_max_num_phases: int | None = None
    block_matching_max_region: tuple[int, int] | None = None
    extended_image2d_max_size: tuple[int, int] | None = None  # cl_qcom_extended_images
    extended_image3d_max_size: tuple[int, int, int] | None = None
    printf_buffer_size: int | None = None  # cl_qcom_limited_printf
    sub_group_sizes: tuple[int, ...] | None = None  # cl_intel_required_subgroup_size
    max_num_sub_groups: int | None = None  # cl_khr_subgroups / OpenCL 2.1+
    command_buffer_capabilities: int | None = None  # cl_khr_command_buffer
    integer_dot_product_capabilities: int | None = None  # cl_khr_integer_dot_product
    #: (extension, reason) for advertised extensions not to be used on this device: the
    #: Khronos tiers this driver is known to get wrong (extensions.KNOWN_BROKEN) and every
    #: extension whose trial failed or crashed (qcom_ext.verify). Each takes the path it
    #: would take if the device did not advertise it.
    broken: tuple[tuple[str, str], ...] | None = None
    ml_interface_versions: tuple[tuple[int, int], ...] | None = None  # cl_qcom_ml_ops

    def to_dict(self) -> dict[str, Any]:
        return {k: _listed(v) for k, v in self.items()}

    def items(self) -> list[tuple[str, Any]]:
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)]


def _listed(value: Any) -> Any:
    return [_listed(v) for v in value] if isinstance(value, tuple) else value


def parse_disabled(value: str | None) -> frozenset[str]:
    """The extensions ``QCOM_EXT_DISABLE`` forces off: ``all`` or a comma-separated list.

    Qualcomm names force their fallback; Khronos names remove that Khronos tier.

    >>> sorted(parse_disabled("cl_qcom_bitreverse, cl_khr_command_buffer"))
    ['cl_khr_command_buffer', 'cl_qcom_bitreverse']
    >>> len(parse_disabled("all")) == len(REGISTRY)
    True
    """
    items = {item for item in re.split(r"[,\s]+", value or "") if item}
    if "all" in items:
        items = (items - {"all"}) | set(REGISTRY)
    unknown = items - set(REGISTRY) - khronos_names()
    if unknown:
        known = ", ".join(sorted(set(REGISTRY) | khronos_names()))
        raise ConfigError(
            f"{DISABLE_ENV} names unknown extension(s) {', '.join(sorted(unknown))}; "
            f"expected 'all' or a comma-separated list of: {known}"
        )
    return frozenset(items)


def _split_extensions(extensions: str | Iterable[str]) -> frozenset[str]:
    # Whitespace split, never substring search: cl_qcom_ext_host_ptr is a prefix of
    # cl_qcom_ext_host_ptr_iocoherent.
    if isinstance(extensions, str):
        return frozenset(extensions.split())
    return frozenset(e for item in extensions for e in str(item).split())


def parse_adreno_model(*texts: str) -> str | None:
    """``"740"`` from ``"OpenCL 3.0 Adreno(TM) 740"``, ``"X1-85"`` from a Windows name."""
    for text in texts:
        match = _ADRENO_MODEL.search(text or "")
        if match:
            return match.group(1)
    return None


def parse_adreno_compiler(*texts: str) -> str | None:
    """``"E031.38.11.12"`` from a driver string ending ``"Compiler E031.38.11.12"``."""
    for text in texts:
        match = _ADRENO_COMPILER.search(text or "")
        if match:
            return match.group(1)
    return None


def _label(
    platform_name: str,
    device_name: str,
    driver: str,
    device_type: str,
    model: str | None,
    is_adreno: bool,
) -> str:
    if is_adreno:
        return f"adreno-{(model or 'unknown').lower()}-{device_type}"
    lowered = f"{platform_name} {device_name}".lower()
    short = next((short for needle, short in _SHORT_NAMES if needle in lowered), None)
    if short is None:
        short = re.sub(r"[^a-z0-9]+", "-", platform_name.lower()).strip("-") or "opencl"
    number = _VERSION_NUMBER.search(driver or "")
    version = f"-{number.group(0)}" if number else ""
    return f"{short}{version}-{device_type}"


def _resolve(
    name: str,
    extensions: frozenset[str],
    platform_extensions: frozenset[str],
    versions: Mapping[str, str],
    limits: Limits,
    image_support: bool,
    disabled: frozenset[str],
) -> ExtensionStatus:
    """The one call of the path rule that every DeviceCaps answer goes through."""
    return resolve(
        name,
        extensions,
        khronos_available=platform_extensions,
        versions=versions,
        limits=dict(limits.items()),
        image_support=image_support,
        disabled=disabled,
    )


def _statuses(
    extensions: frozenset[str],
    platform_extensions: frozenset[str],
    versions: Mapping[str, str],
    limits: Limits,
    image_support: bool,
    disabled: frozenset[str],
) -> Mapping[str, ExtensionStatus]:
    """The path of every extension of the registry."""
    return MappingProxyType(
        {
            name: _resolve(
                name, extensions, platform_extensions, versions, limits, image_support, disabled
            )
            for name in REGISTRY
        }
    )


@dataclass(frozen=True)
class DeviceCaps:
    """A frozen capability report for one device. Build with ``probe()`` or ``from_info``."""

    device_name: str
    device_version: str
    driver_version: str
    opencl_c_version: str
    vendor_id: int
    device_type: str
    platform_name: str
    platform_version: str
    extensions: frozenset[str]
    platform_extensions: frozenset[str]
    extension_versions: Mapping[str, str] = field(hash=False)
    image_support: bool
    is_adreno: bool
    adreno_model: str | None
    adreno_compiler: str | None
    limits: Limits
    statuses: Mapping[str, ExtensionStatus] = field(hash=False)
    disabled: frozenset[str]
    problems: tuple[str, ...] = ()
    label: str = ""
    #: Extension -> the :class:`~qcom_ext.verify.Verdict` of its trial in a child process
    #: (empty until ``probe(verify=True)`` ran or cached verdicts exist).
    verdicts: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}), hash=False, compare=False
    )
    platform_id: int = field(default=0, compare=False, repr=False)
    device_id: int = field(default=0, compare=False, repr=False)

    @classmethod
    def from_info(
        cls,
        *,
        extensions: str | Iterable[str],
        device_version: str = "",
        driver_version: str = "",
        device_name: str = "",
        vendor_id: int = 0,
        opencl_c_version: str = "",
        device_type: str = "gpu",
        platform_name: str = "",
        platform_version: str = "",
        platform_extensions: str | Iterable[str] = "",
        extension_versions: Mapping[str, str] | None = None,
        image_support: bool = True,
        limits: Limits | None = None,
        disabled: Iterable[str] | None = None,
        problems: Iterable[str] = (),
        platform_id: int = 0,
        device_id: int = 0,
    ) -> DeviceCaps:
        """Build the report from the device's strings (no device needed).

        ``disabled`` defaults to the ``QCOM_EXT_DISABLE`` environment variable.
        """
        exts = _split_extensions(extensions)
        platform_exts = _split_extensions(platform_extensions)
        limits = limits or Limits()
        if limits.broken is None:
            limits = dataclasses.replace(
                limits, broken=known_broken(platform_name, driver_version)
            )
        versions = dict(extension_versions or {})
        off = (
            parse_disabled(os.environ.get(DISABLE_ENV))
            if disabled is None
            else parse_disabled(",".join(disabled))
        )
        adreno = vendor_id == QUALCOMM_VENDOR_ID or "adreno" in (
            f"{device_name} {device_version} {opencl_c_version}".lower()
        )
        model = parse_adreno_model(device_version, device_name, opencl_c_version)
        statuses = _statuses(exts, platform_exts, versions, limits, image_support, off)
        return cls(
            device_name=device_name,
            device_version=device_version,
            driver_version=driver_version,
            opencl_c_version=opencl_c_version,
            vendor_id=vendor_id,
            device_type=device_type,
            platform_name=platform_name,
            platform_version=platform_version,
            extensions=exts,
            platform_extensions=platform_exts,
            extension_versions=MappingProxyType(versions),
            image_support=image_support,
            is_adreno=adreno,
            adreno_model=model if adreno else None,
            adreno_compiler=(
                parse_adreno_compiler(driver_version, platform_version) if adreno else None
            ),
            limits=limits,
            statuses=statuses,
            disabled=off,
            problems=tuple(problems),
            label=_label(platform_name, device_name, driver_version, device_type, model, adreno),
            platform_id=platform_id,
            device_id=device_id,
        )

    def has(self, extension: str) -> bool:
        """Whether the device advertises ``extension`` (exact name match)."""
        return extension in self.extensions

    def status(self, extension: str) -> ExtensionStatus:
        """Path and reason for a ``cl_qcom_*`` extension; :class:`UnknownExtension` (a
        KeyError) names the known ones."""
        try:
            return self.statuses[extension]
        except (KeyError, TypeError):  # TypeError: an unhashable name
            raise UnknownExtension(
                f"{extension!r} is not a cl_qcom_* extension qcom_ext knows; "
                f"known: {', '.join(sorted(self.statuses))}"
            ) from None

    def path(self, extension: str) -> str:
        """``native``, ``khr:<ext>``, ``fallback`` or ``unavailable``."""
        return self.status(extension).path

    def khronos_usable(self, tier: str) -> bool:
        """Whether Khronos extension ``tier`` is usable (listed, not disabled, not blocked)."""
        available = self.extensions | self.platform_extensions
        limits = dict(self.limits.items())
        return khronos_problem(tier, available, disabled=self.disabled, limits=limits) is None

    def status_without(self, extension: str) -> ExtensionStatus:
        """The path ``extension`` takes if treated as absent: for a driver that advertises
        it but lacks its entry points.

        >>> caps = DeviceCaps.from_info(extensions="cl_qcom_recordable_queues "
        ...                             "cl_khr_command_buffer", disabled=())
        >>> caps.path("cl_qcom_recordable_queues")
        'native'
        >>> caps.status_without("cl_qcom_recordable_queues").path
        'khr:cl_khr_command_buffer'
        """
        self.status(extension)  # a KeyError naming the known extensions
        return _resolve(
            extension,
            self.extensions - {extension},
            self.platform_extensions,
            self.extension_versions,
            self.limits,
            self.image_support,
            self.disabled,
        )

    def with_verdicts(self, verdicts: Mapping[str, Any]) -> DeviceCaps:
        """This report with trial verdicts (:mod:`qcom_ext.verify`) applied: each extension
        whose trial failed, crashed or timed out joins ``limits.broken`` and takes the path
        it would take without it (a protected context becomes ``unavailable``, never a
        fallback).

        >>> from qcom_ext.tools.verify.runner import Verdict
        >>> caps = DeviceCaps.from_info(extensions="cl_qcom_recordable_queues", disabled=())
        >>> crashed = Verdict("cl_qcom_recordable_queues", "the trial recording", "crashed",
        ...                   "SIGSEGV", "2026-01-02")
        >>> status = caps.with_verdicts({crashed.extension: crashed}).status(crashed.extension)
        >>> status.path
        'fallback'
        >>> status.reason.split(";")[0]  # doctest: +NORMALIZE_WHITESPACE
        'cl_qcom_recordable_queues advertised, but the trial recording crashed (SIGSEGV)
         in a child process (verified 2026-01-02)'
        """
        merged = {**self.verdicts, **verdicts}
        earlier = {v.reason for v in self.verdicts.values()}  # replaced by the new verdicts
        broken = {e: r for e, r in self.limits.broken or () if r not in earlier}
        for name, verdict in merged.items():
            if verdict.broken:
                broken.setdefault(name, verdict.reason)
        limits = dataclasses.replace(self.limits, broken=tuple(broken.items()))
        statuses = _statuses(
            self.extensions,
            self.platform_extensions,
            self.extension_versions,
            limits,
            self.image_support,
            self.disabled,
        )
        return dataclasses.replace(
            self, limits=limits, statuses=statuses, verdicts=MappingProxyType(merged)
        )

    def compiler_options(self) -> tuple[str, ...]:
        """The ``-D`` flags that pick each kernel-side path in ``kernels/qcom_ext.h``.

        ``QCOM_EXT_NATIVE_<ext>`` for native, ``QCOM_EXT_KHR_<ext>`` for the Khronos tier,
        nothing for the portable fallback. With cl_intel_required_subgroup_size, also the
        sizes ``"half"`` and ``"full"`` stand for (``QCOM_EXT_SUB_GROUP_SIZE_HALF/FULL``).
        Device quirks, here and nowhere else: ``USE_MAD24`` on Adreno (index arithmetic
        through mad24/mul24, fast there; emulated and slower elsewhere) and
        ``QCOM_EXT_QUIRK_OCLGRIND`` on Oclgrind.
        """
        options = []
        for name, status in sorted(self.statuses.items()):
            if "kernel" in REGISTRY[name].side and status.tier in ("native", "khr"):
                options.append(f"-DQCOM_EXT_{status.tier.upper()}_{name}")
        if self.is_adreno:
            options.append("-DUSE_MAD24")
        if "oclgrind" in f"{self.platform_name} {self.device_name}".lower():
            # Oclgrind cannot execute some LLVM intrinsics (llvm.bitreverse) that clang
            # makes of portable idioms; the compat header then uses plainer code.
            options.append("-DQCOM_EXT_QUIRK_OCLGRIND")
        if self.path("cl_qcom_reqd_sub_group_size") == "khr:cl_intel_required_subgroup_size":
            from qcom_ext.ext.program.subgroups import half_and_full

            half, full = half_and_full(self.limits.sub_group_sizes or ())
            options += [
                f"-DQCOM_EXT_SUB_GROUP_SIZE_HALF={half}",
                f"-DQCOM_EXT_SUB_GROUP_SIZE_FULL={full}",
            ]
        return tuple(options)

    def device(self) -> Any:
        """The ``pyopencl.Device`` this report describes (needs a probed device)."""
        import pyopencl

        if not self.device_id:
            raise ValueError("this DeviceCaps was built from strings, not from a device")
        return pyopencl.Device.from_int_ptr(self.device_id)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole report."""
        return {
            "label": self.label,
            "platform": {
                "name": self.platform_name,
                "version": self.platform_version,
                "extensions": sorted(self.platform_extensions),
            },
            "device": {
                "name": self.device_name,
                "version": self.device_version,
                "driver_version": self.driver_version,
                "opencl_c_version": self.opencl_c_version,
                "vendor_id": self.vendor_id,
                "type": self.device_type,
                "image_support": self.image_support,
            },
            "adreno": {
                "is_adreno": self.is_adreno,
                "model": self.adreno_model,
                "compiler": self.adreno_compiler,
            },
            "extensions": sorted(self.extensions),
            "extension_versions": dict(sorted(self.extension_versions.items())),
            "limits": self.limits.to_dict(),
            "qcom": {
                name: {"path": s.path, "reason": s.reason}
                for name, s in sorted(self.statuses.items())
            },
            "disabled": sorted(self.disabled),
            "problems": list(self.problems),
            "verdicts": {name: v.to_dict() for name, v in sorted(self.verdicts.items())},
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def summary(self) -> str:
        """One line: label and how many extensions take each path."""
        counts: dict[str, int] = {}
        for status in self.statuses.values():
            counts[status.tier] = counts.get(status.tier, 0) + 1
        order = ("native", "khr", "fallback", "unavailable")
        parts = ", ".join(f"{counts[t]} {t}" for t in order if t in counts)
        return f"{self.label} ({self.device_name.strip()}): {parts}"

    def __str__(self) -> str:
        lines = [self.summary()]
        width = max(len(n) for n in self.statuses)
        for name, status in sorted(self.statuses.items()):
            lines.append(f"  {name:<{width}}  {status.path:<28} {status.reason}")
        return "\n".join(lines)
