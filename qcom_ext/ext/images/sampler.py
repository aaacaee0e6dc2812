"""Samplers, including the bicubic filter of cl_qcom_filter_bicubic.

``create_sampler(context, normalized=..., addressing=..., filter="bicubic")`` returns a
``pyopencl.Sampler``. Where every device of the context has cl_qcom_filter_bicubic it is
``clCreateSampler(context, normalized, addressing, CL_FILTER_BICUBIC_QCOM)``, as in
Qualcomm's sample (qcom-extensions.md section 10); ``read_imagef`` through it returns the
4x4 Catmull-Rom weighted sum (guide 9.3.4). Elsewhere it is a nearest-filter sampler with
the same coordinates and addressing, from which ``qcom_read_imagef_bicubic`` in
``qcom_ext.h`` computes the same formula (one :class:`~qcom_ext.QcomExtWarning` says
so). Kernels do their bicubic reads with ``qcom_read_imagef_bicubic(image, sampler,
coord)``, or keep Adreno's ``read_imagef`` with ``-DQCOM_EXT_BICUBIC_READ_IMAGEF``; see
``docs/bicubic.md``.

>>> import warnings, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
...     sampler = qcom_ext.create_sampler(ctx, normalized=True, addressing="clamp")
>>> bool(sampler.normalized_coords), sampler.addressing_mode == cl.addressing_mode.CLAMP
(True, True)
>>> plain = qcom_ext.create_sampler(ctx, normalized=False, addressing="clamp_to_edge",
...                                 filter="linear")
>>> plain.filter_mode == cl.filter_mode.LINEAR
True
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from qcom_ext.binding.lib import C, check_handle, driver, ffi
from qcom_ext.device import shared
from qcom_ext.errors import ConfigError, QcomExtWarning

if TYPE_CHECKING:
    import pyopencl

__all__ = ["ADDRESSING_MODES", "FILTER_MODES", "create_sampler", "sampler_path"]

EXTENSION = "cl_qcom_filter_bicubic"
ADDRESSING_MODES = {
    "none": C.CL_ADDRESS_NONE,
    "clamp_to_edge": C.CL_ADDRESS_CLAMP_TO_EDGE,
    "clamp": C.CL_ADDRESS_CLAMP,
    "repeat": C.CL_ADDRESS_REPEAT,
    "mirrored_repeat": C.CL_ADDRESS_MIRRORED_REPEAT,
}
FILTER_MODES = {
    "nearest": C.CL_FILTER_NEAREST,
    "linear": C.CL_FILTER_LINEAR,
    "bicubic": C.CL_FILTER_BICUBIC_QCOM,
}
_NEEDS_NORMALIZED = {C.CL_ADDRESS_REPEAT, C.CL_ADDRESS_MIRRORED_REPEAT}


def _token(value: str | int, table: dict[str, int], what: str) -> int:
    if isinstance(value, str):
        key = value.strip().lower()
        for prefix in ("cl_address_", "cl_filter_"):
            key = key.removeprefix(prefix)
        key = key.removesuffix("_qcom")
        if key in table:
            return table[key]
    elif isinstance(value, int) and not isinstance(value, bool) and value in table.values():
        return int(value)
    names = ", ".join(repr(n) for n in table)
    raise ConfigError(f"{what} {value!r} is not one of {names} (or their CL_ tokens)")


def sampler_path(context: pyopencl.Context) -> str:
    """The path bicubic samplers take on ``context``: the devices' shared
    ``DeviceCaps.path`` of cl_qcom_filter_bicubic (``fallback`` when they differ)."""
    return shared.route(context, EXTENSION).path


def _handle(context: Any) -> int:
    handle = getattr(context, "int_ptr", None)
    if not isinstance(handle, int):
        raise ConfigError(f"expected a pyopencl.Context, got {type(context).__name__}")
    return handle


def _wrap_sampler(handle: int) -> Any:
    import pyopencl

    return pyopencl.Sampler.from_int_ptr(handle, retain=False)  # our reference goes over


def create_sampler(
    context: pyopencl.Context,
    *,
    normalized: bool,
    addressing: str | int,
    filter: str | int = "bicubic",
) -> pyopencl.Sampler:
    """A ``pyopencl.Sampler``; ``filter="bicubic"`` uses ``CL_FILTER_BICUBIC_QCOM``
    natively and a nearest sampler for ``qcom_read_imagef_bicubic`` elsewhere.

    ``addressing`` is ``"none"``, ``"clamp_to_edge"``, ``"clamp"``, ``"repeat"`` or
    ``"mirrored_repeat"`` (or the ``CL_ADDRESS_*`` token); ``filter`` is ``"bicubic"``,
    ``"nearest"`` or ``"linear"`` (or the ``CL_FILTER_*`` token). Raises
    :class:`~qcom_ext.ConfigError` for bad values, :class:`~qcom_ext.ExtensionUnavailable`
    when the devices have no images, :class:`~qcom_ext.CLError` when the driver refuses.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> s = qcom_ext.create_sampler(ctx, normalized=False, addressing="clamp", filter="nearest")
    >>> s.filter_mode == cl.filter_mode.NEAREST, bool(s.normalized_coords)
    (True, False)
    """
    import pyopencl as cl

    handle = _handle(context)
    if not isinstance(normalized, bool):
        raise ConfigError(f"normalized must be True or False, not {normalized!r}")
    address = _token(addressing, ADDRESSING_MODES, "addressing")
    mode = _token(filter, FILTER_MODES, "filter")
    if address in _NEEDS_NORMALIZED and not normalized:
        raise ConfigError(
            f"addressing {addressing!r} needs normalized=True "
            "(OpenCL defines the repeat modes for normalized coordinates only)"
        )
    if mode != C.CL_FILTER_BICUBIC_QCOM:
        return cl.Sampler(context, normalized, address, mode)
    route = shared.route(context, EXTENSION)
    if route.native:
        return _native(handle, normalized, address)
    if route.path == "unavailable":
        route.refuse()
    warnings.warn(
        f"create_sampler on {route.labels}: {EXTENSION} -> {route.path} ({route.reason}); "
        "returned a nearest-filter sampler: bicubic reads come from qcom_read_imagef_bicubic (or "
        "read_imagef with -DQCOM_EXT_BICUBIC_READ_IMAGEF) in programs built by "
        "qcom_ext.build_program",
        QcomExtWarning,
        stacklevel=2,
    )
    return cl.Sampler(context, normalized, address, C.CL_FILTER_NEAREST)


def _native(context: int, normalized: bool, address: int) -> Any:
    """``clCreateSampler`` with ``CL_FILTER_BICUBIC_QCOM``, wrapped for pyopencl."""
    status = ffi.new("cl_int *")
    sampler = driver.clCreateSampler(
        ffi.cast("cl_context", context), normalized, address, C.CL_FILTER_BICUBIC_QCOM, status
    )
    name = next(k for k, v in ADDRESSING_MODES.items() if v == address)
    detail = (
        f"normalized={normalized}, addressing=CL_ADDRESS_{name.upper()}, "
        "filter=CL_FILTER_BICUBIC_QCOM"
    )
    handle = check_handle(sampler, status, "clCreateSampler", detail, driver.clReleaseSampler)
    try:
        return _wrap_sampler(handle)
    except BaseException:
        driver.clReleaseSampler(sampler)
        raise
