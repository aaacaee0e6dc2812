"""What the accelerated image ops can do on a context's devices: the path they take there
(:func:`context_path`) and the limits that apply (:func:`accelerated_limits`).

The device reports its limits through the ``CL_DEVICE_HOF_*_QCOM`` and
``CL_DEVICE_BLOCK_MATCHING_*_QCOM`` queries ("HOF" is Qualcomm's token prefix for these
texture-unit filters); the portable code has the fixed :data:`FALLBACK_LIMITS`.

>>> from qcom_ext.device.caps import DeviceCaps
>>> portable = DeviceCaps.from_info(extensions="", disabled=())
>>> accelerated_limits(portable) == FALLBACK_LIMITS, context_path(portable)
(True, 'fallback')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qcom_ext.device import shared
from qcom_ext.errors import ExtensionUnavailable

__all__ = [
    "EXTENSION",
    "FALLBACK_LIMITS",
    "AcceleratedLimits",
    "HofLimits",
    "accelerated_limits",
    "context_path",
    "hof_limits",
]

EXTENSION = "cl_qcom_accelerated_image_ops"


@dataclass(frozen=True)
class AcceleratedLimits:
    """Limits of the accelerated image ops on a device (None: the driver did not say).

    ``max_filter_size`` bounds weight-image filters and box sizes (x, y);
    ``max_num_phases`` the slices of a weight image; ``max_region`` block-matching regions.
    """

    max_filter_size: tuple[int, int] | None
    max_num_phases: int | None
    max_region: tuple[int, int] | None
    native: bool

    def where(self) -> str:
        """Whose limits these are, for error messages: the device's or the portable code's."""
        return "the device's" if self.native else "the portable implementation's"


#: The former name of :class:`AcceleratedLimits` (public API; the same class).
HofLimits = AcceleratedLimits

#: The limits of the portable implementation (``kernels/compat/cl_qcom_accelerated_image_ops.h``
#: clamps its loops to the same values).
FALLBACK_LIMITS = AcceleratedLimits(
    max_filter_size=(16, 16), max_num_phases=64, max_region=(32, 32), native=False
)


def context_path(context: Any) -> str:
    """``"native"`` or ``"fallback"``: the path the accelerated image ops take on every
    device of ``context`` (a Context, Device, DeviceCaps or None: the default device).

    >>> from qcom_ext.device.caps import DeviceCaps
    >>> context_path(DeviceCaps.from_info(extensions="", disabled=()))
    'fallback'
    """
    return "native" if shared.route(context, EXTENSION).native else "fallback"


def _smallest(values: list[Any]) -> Any:
    if any(v is None for v in values):
        return None
    if isinstance(values[0], tuple):
        return tuple(min(axis) for axis in zip(*values, strict=True))
    return min(values)


def accelerated_limits(device: Any = None) -> AcceleratedLimits:
    """The limits that apply on ``device`` (a Device, Context, DeviceCaps or None: default).

    Native: the driver's values; for a context, the smallest over its devices. Where any
    device lacks the extension: :data:`FALLBACK_LIMITS`.

    >>> from qcom_ext.device.caps import DeviceCaps
    >>> accelerated_limits(DeviceCaps.from_info(extensions="", disabled=()))
    AcceleratedLimits(max_filter_size=(16, 16), max_num_phases=64, max_region=(32, 32), ...)
    """
    found = shared.caps_of(device)
    unusable = [c for c in found if not c.status(EXTENSION).usable]
    if unusable:
        raise ExtensionUnavailable(
            EXTENSION, shared.labels(unusable), unusable[0].status(EXTENSION).reason
        )
    if any(c.path(EXTENSION) != "native" for c in found):
        return FALLBACK_LIMITS
    return AcceleratedLimits(
        max_filter_size=_smallest([c.limits.hof_max_filter_size for c in found]),
        max_num_phases=_smallest([c.limits.hof_max_num_phases for c in found]),
        max_region=_smallest([c.limits.block_matching_max_region for c in found]),
        native=True,
    )


#: The former name of :func:`accelerated_limits` (public API; the same function).
hof_limits = accelerated_limits
