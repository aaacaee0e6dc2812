"""What one OpenCL device can do, as qcom_ext sees it: :class:`DeviceCaps`.

``DeviceCaps.from_info`` builds the report from strings alone, so Adreno behaviour
can be checked without an Adreno device:

>>> caps = DeviceCaps.from_info(
...     extensions="cl_khr_fp16 cl_qcom_perf_hint cl_qcom_recordable_queues",
...     device_version="OpenCL 3.0 Adreno(TM) 740",
...     driver_version="OpenCL 3.0 QUALCOMM build: commit #16c1863 Compiler E031.38.11.12",
...     vendor_id=0x5143, disabled=())
>>> caps.is_adreno, caps.adreno_model, caps.adreno_compiler, caps.driver
(True, '740', 'E031.38.11.12', 'qualcomm')
>>> caps.compiler_version >= CompilerVersion.of("E031", 38, 11)
True
>>> caps.path("cl_qcom_recordable_queues"), caps.path("cl_qcom_priority_hint")
('native', 'fallback')
>>> caps.with_disabled({"cl_qcom_recordable_queues"}).path("cl_qcom_recordable_queues")
'fallback'
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from qcom_ext.device.builds import build_problem
from qcom_ext.device.compiler_version import CompilerVersion
from qcom_ext.device.driver_strings import (
    device_facts,
    parse_adreno_compiler,
    parse_adreno_model,
    split_extensions,
    unknown_qcom,
)
from qcom_ext.device.extensions import (
    REGISTRY,
    ExtensionStatus,
    khronos_names,
    khronos_problem,
    known_broken,
    resolve,
)
from qcom_ext.device.limits import Limits
from qcom_ext.device.quirks import Quirk, applying, downgraded
from qcom_ext.device.report_text import as_text
from qcom_ext.errors import ConfigError, UnknownExtension

__all__ = [
    "DISABLE_ENV",
    "LARGEST_ADRENO_WAVE",
    "CompilerVersion",
    "DeviceCaps",
    "Limits",
    "half_and_full",
    "parse_adreno_compiler",
    "parse_adreno_model",
    "parse_disabled",
]

DISABLE_ENV = "QCOM_EXT_DISABLE"
#: Sub-group sizes range 16..128 across Adreno tiers (guide 9.2).
LARGEST_ADRENO_WAVE = 128


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


def half_and_full(sizes: Sequence[int]) -> tuple[int, int]:
    """The sizes ``"half"`` and ``"full"`` stand for on a device supporting ``sizes``
    (``CL_DEVICE_SUB_GROUP_SIZES_INTEL``): the ``-D`` flags of the
    cl_intel_required_subgroup_size tier (:meth:`DeviceCaps.compiler_options`).

    ``full`` is the largest supported size up to 128 (Adreno's largest wave; the
    smallest size if all are larger); ``half`` the largest supported size up to
    ``full / 2``, or ``full`` when there is none.

    >>> half_and_full((16,)), half_and_full((8, 16, 32))
    ((16, 16), (16, 32))
    """
    usable = sorted({int(s) for s in sizes if int(s) > 0})
    if not usable:
        raise ConfigError("no sub-group sizes given; expected CL_DEVICE_SUB_GROUP_SIZES_INTEL")
    small = [s for s in usable if s <= LARGEST_ADRENO_WAVE]
    full = small[-1] if small else usable[0]
    halves = [s for s in usable if s <= full // 2]
    return (halves[-1] if halves else full), full


_REQD = "cl_qcom_reqd_sub_group_size"
_INTEL_TIER = "khr:cl_intel_required_subgroup_size"


def _flag(name: str, status: ExtensionStatus) -> list[str]:
    """``-DQCOM_EXT_NATIVE_<name>`` / ``-DQCOM_EXT_KHR_<name>`` for a kernel-side path."""
    if "kernel" in REGISTRY[name].side and status.tier in ("native", "khr"):
        return [f"-DQCOM_EXT_{status.tier.upper()}_{name}"]
    return []


def _disabled(names: Iterable[str] | None) -> frozenset[str]:
    """``QCOM_EXT_DISABLE`` when ``names`` is None, else ``names`` (checked the same way)."""
    if names is None:
        return parse_disabled(os.environ.get(DISABLE_ENV))
    return parse_disabled(",".join(names))


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
    #: Adreno hardware, whichever OpenCL implementation runs it (see ``driver``).
    is_adreno: bool
    adreno_model: str | None
    #: The compiler's text (``"E031.38.11.12"``); ``compiler_version`` is the ordered value.
    adreno_compiler: str | None
    #: Which OpenCL string named the model (``"device_version"``, ``"device_name"``,
    #: ``"opencl_c_version"``) or the kernel driver's file (``"kgsl:gpu_model"``,
    #: ``"kgsl:chipid"``, ``"drm:compatible"``); None without a model.
    model_source: str | None
    #: The OpenCL implementation: one of :data:`~qcom_ext.device.driver_strings.DRIVERS`
    #: (``"qualcomm"``, ``"rusticl"``, ``"clvk"``, ``"pocl"``, ``"nvidia"``, ...).
    driver: str
    compiler_version: CompilerVersion | None
    #: ``CL_DEVICE_VERSION`` and ``CL_DEVICE_OPENCL_C_VERSION`` as numbers: ``(3, 0)``.
    opencl_version: tuple[int, int] | None
    opencl_c_version_number: tuple[int, int] | None
    #: Advertised ``cl_qcom_*`` names qcom_ext has no entry for (reported, not used).
    unknown_qcom: tuple[str, ...]
    limits: Any  # a Limits
    statuses: Mapping[str, ExtensionStatus] = field(hash=False)
    disabled: frozenset[str]
    problems: tuple[str, ...] = ()
    label: str = ""
    #: (extension, reason) for advertised extensions not to be used on this device: the
    #: Khronos tiers this driver is known to get wrong (extensions.KNOWN_BROKEN) and every
    #: extension whose trial failed or crashed (qcom_ext.device.verdicts). Each takes the
    #: path it would take if the device did not advertise it.
    broken: tuple[tuple[str, str], ...] = ()
    #: The known driver and compiler quirks that apply to this device
    #: (:mod:`qcom_ext.device.quirks`): their flags reach every kernel build, their
    #: downgrades are in ``broken``.
    quirks: tuple[Quirk, ...] = ()
    #: Extension -> the :class:`~qcom_ext.device.verdicts.Verdict` of its trial in a child
    #: process (empty until ``probe(verify=True)`` ran or cached verdicts exist).
    verdicts: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}), hash=False, compare=False
    )
    platform_id: int = field(default=0, compare=False, repr=False)
    device_id: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        # ``caps.limits.broken`` reads this report's broken list (where it lived before it
        # moved onto DeviceCaps): each report keeps a copy of its limits that knows it.
        limits = copy.copy(self.limits)
        object.__setattr__(limits, "_broken", self.broken)
        object.__setattr__(self, "limits", limits)

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
        limits: Any = None,
        disabled: Iterable[str] | None = None,
        problems: Iterable[str] = (),
        broken: Iterable[tuple[str, str]] | None = None,
        platform_id: int = 0,
        device_id: int = 0,
        kgsl: Any = None,
    ) -> DeviceCaps:
        """Build the report from the device's strings (no device needed). ``disabled``
        defaults to ``QCOM_EXT_DISABLE``; ``broken`` to the Khronos tiers this driver is
        known to get wrong; ``kgsl`` (:class:`~qcom_ext.device.kernel_gpu.KernelGpu`) names the
        model of a Qualcomm-driver Adreno whose strings name none."""
        strings = dict(
            device_name=device_name,
            device_version=device_version,
            driver_version=driver_version,
            opencl_c_version=opencl_c_version,
            vendor_id=vendor_id,
            device_type=device_type,
            platform_name=platform_name,
            platform_version=platform_version,
        )
        broken = known_broken(platform_name, driver_version) if broken is None else broken
        exts, platform_exts = split_extensions(extensions), split_extensions(platform_extensions)
        draft = cls(
            **strings,
            **device_facts(**strings, kgsl=kgsl),
            extensions=exts,
            platform_extensions=platform_exts,
            extension_versions=MappingProxyType(dict(extension_versions or {})),
            image_support=image_support,
            unknown_qcom=unknown_qcom(exts | platform_exts, REGISTRY),
            limits=limits or Limits(),
            statuses=MappingProxyType({}),
            disabled=_disabled(disabled),
            problems=tuple(problems),
            broken=tuple((str(e), str(r)) for e, r in broken),
            platform_id=platform_id,
            device_id=device_id,
        )
        found = applying(draft)
        return draft._resolved(quirks=found, broken=downgraded(draft.broken, found))

    def _rule(self, name: str, extensions: frozenset[str] | None = None) -> ExtensionStatus:
        """The one call of the path rule every answer of this report goes through."""
        return resolve(
            name,
            self.extensions if extensions is None else extensions,
            khronos_available=self.platform_extensions,
            versions=self.extension_versions,
            limits=dict(self.limits.items()),
            image_support=self.image_support,
            disabled=self.disabled,
            broken=self.broken,
        )

    def _resolved(self, **changes: Any) -> DeviceCaps:
        """This report with ``changes`` and the path of every registry extension resolved."""
        draft = dataclasses.replace(self, **changes) if changes else self
        statuses = MappingProxyType({name: draft._rule(name) for name in REGISTRY})
        return dataclasses.replace(draft, statuses=statuses)

    @property
    def qualcomm_driver(self) -> bool:
        """Whether Qualcomm's own driver runs this Adreno: its quirks and compiler apply
        (an Adreno under Mesa's rusticl or clvk is Adreno hardware, not this driver)."""
        return self.is_adreno and self.driver == "qualcomm"

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
        problem = khronos_problem(
            tier, available, disabled=self.disabled, limits=limits, broken=self.broken
        )
        return problem is None

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
        return self._rule(extension, self.extensions - {extension})

    def with_disabled(self, names: Iterable[str]) -> DeviceCaps:
        """This report with ``names`` disabled too, as if ``QCOM_EXT_DISABLE`` also named
        them (Qualcomm names force their fallback, Khronos names drop that tier); what
        ``probe(device, disabled=names)`` returns. ConfigError for an unknown name."""
        extra = parse_disabled(",".join(names))
        if extra <= self.disabled:
            return self
        return self._resolved(disabled=self.disabled | extra)

    def with_verdicts(self, verdicts: Mapping[str, Any]) -> DeviceCaps:
        """This report with trial verdicts (:mod:`qcom_ext.device.verdicts`) applied: each
        extension whose trial failed, crashed or timed out joins ``broken`` and takes the
        path it would take without it (a protected context becomes ``unavailable``, never
        a fallback).

        >>> from qcom_ext.device.verdicts import Verdict
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
        broken = {e: r for e, r in self.broken if r not in earlier}
        for name, verdict in merged.items():
            if verdict.broken:
                broken.setdefault(name, verdict.reason)
        return self._resolved(broken=tuple(broken.items()), verdicts=MappingProxyType(merged))

    def compiler_options(self) -> tuple[str, ...]:
        """The ``-D`` flags that pick each kernel-side path in ``kernels/qcom_ext.h``.

        ``QCOM_EXT_NATIVE_<ext>`` for native, ``QCOM_EXT_KHR_<ext>`` for the Khronos tier,
        nothing for the portable fallback; then the device's quirks. With
        cl_intel_required_subgroup_size, also the sizes ``"half"`` and ``"full"`` stand
        for (``QCOM_EXT_SUB_GROUP_SIZE_HALF/FULL``). On NVIDIA, the compute capability
        as ``QCOM_EXT_NV_SM=<10 major + minor>`` (the portable dot8 builtins use PTX
        ``dp4a`` from 61 on). Worked out once per report (a frozen one): every
        shared-program lookup keys on them.

        >>> from qcom_ext.device.limits import Limits
        >>> caps = DeviceCaps.from_info(extensions="cl_nv_device_attribute_query",
        ...     limits=Limits(nv_compute_capability=(9, 0)), disabled=())
        >>> caps.compiler_options()
        ('-DQCOM_EXT_NV_SM=90',)
        """
        return self._compiler_flags

    @functools.cached_property
    def _compiler_flags(self) -> tuple[str, ...]:
        options = [
            flag for name, status in sorted(self.statuses.items()) for flag in _flag(name, status)
        ]
        options += self._quirks()
        if self.path(_REQD) == _INTEL_TIER:
            options += self._sub_group_sizes()
        return tuple(options + self._nv_options())

    def _nv_options(self) -> list[str]:
        """``-DQCOM_EXT_NV_SM=<10 major + minor>`` where the device reported its NVIDIA compute
        capability (cl_nv_device_attribute_query), else nothing."""
        found = self.limits.nv_compute_capability
        return [f"-DQCOM_EXT_NV_SM={found[0] * 10 + found[1]}"] if found else []

    def trial_options(self, extension: str, path: str) -> tuple[str, ...]:
        """The ``-D`` flags of kernels that take ``path`` for ``extension`` and the portable
        code for every other extension (a trial: one broken builtin cannot fail another's
        trial), whatever path this report gives ``extension``.

        >>> caps = DeviceCaps.from_info(extensions="cl_qcom_dot_product8", disabled=())
        >>> caps.trial_options("cl_qcom_bitreverse", "native")
        ('-DQCOM_EXT_NATIVE_cl_qcom_bitreverse',)
        """
        options = [*_flag(extension, ExtensionStatus(path, "")), *self._quirks()]
        if extension == _REQD and path == _INTEL_TIER:
            options += self._sub_group_sizes()
        return tuple(options)

    def _quirks(self) -> list[str]:
        """The ``-D`` flags of the device's quirks (:attr:`quirks`, from the table of
        :mod:`qcom_ext.device.quirks`): the one place quirk flags are injected. Among
        them ``USE_MAD24`` on Adreno and ``QCOM_EXT_QUIRK_OCLGRIND`` on Oclgrind."""
        return [flag for quirk in self.quirks for flag in quirk.flags]

    def _sub_group_sizes(self) -> list[str]:
        half, full = half_and_full(self.limits.sub_group_sizes or ())
        return [f"-DQCOM_EXT_SUB_GROUP_SIZE_HALF={half}", f"-DQCOM_EXT_SUB_GROUP_SIZE_FULL={full}"]

    def device(self) -> Any:
        """The ``pyopencl.Device`` this report describes (needs a probed device)."""
        import pyopencl

        if not self.device_id:
            raise ValueError("this DeviceCaps was built from strings, not from a device")
        return pyopencl.Device.from_int_ptr(self.device_id)

    @property
    def build_problem(self) -> str | None:
        """Why the device builds no program (a trivial kernel's first build log line; built
        on first ask, once per device: :mod:`.builds`), or None."""
        return build_problem(self)

    @property
    def builds_programs(self) -> bool:
        """Whether the device builds programs (:attr:`build_problem` is None)."""
        return build_problem(self) is None

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
                "driver": self.driver,
                "opencl_version": _listed(self.opencl_version),
                "opencl_c_version_number": _listed(self.opencl_c_version_number),
                "vendor_id": self.vendor_id,
                "type": self.device_type,
                "image_support": self.image_support,
            },
            "adreno": {
                "is_adreno": self.is_adreno,
                "model": self.adreno_model,
                "compiler": self.adreno_compiler,
                "model_source": self.model_source,
                "compiler_version": _listed(self.compiler_version),
            },
            "unknown_qcom": list(self.unknown_qcom),
            "extensions": sorted(self.extensions),
            "extension_versions": dict(sorted(self.extension_versions.items())),
            "limits": self.limits.to_dict(),
            "broken": [list(pair) for pair in self.broken],
            "qcom": {
                name: {"path": s.path, "reason": s.reason}
                for name, s in sorted(self.statuses.items())
            },
            "disabled": sorted(self.disabled),
            "problems": list(self.problems),
            "verdicts": {name: v.to_dict() for name, v in sorted(self.verdicts.items())},
            "quirks": [quirk.to_dict() for quirk in self.quirks],
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
        """The report as text within 80 columns (:func:`~qcom_ext.device.report_text.as_text`)."""
        return as_text(self)


def _listed(value: Any) -> Any:
    """A parsed fact in JSON form: a tuple as a list, a compiler version as its dict."""
    if isinstance(value, CompilerVersion):
        return value.to_dict()
    return None if value is None else list(value)
