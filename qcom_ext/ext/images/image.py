"""Image formats with the Qualcomm flags, and compressed (UBWC) images with a fallback.

* :func:`supported_image_formats` is ``clGetSupportedImageFormats`` through cffi, with
  the ``CL_MEM_OTHER_IMAGE_QCOM`` / ``CL_MEM_COMPRESSED_IMAGE_QCOM`` /
  ``CL_MEM_COMPRESSED_YUV_IMAGE_QCOM`` flag bits (qcom-extensions.md sections 12, 13)
  where the device has those extensions; elsewhere those queries list nothing.
* :func:`create_image` makes a 2-D image, compressed (``CL_QCOM_COMPRESSED_RGBA`` ...)
  where ``cl_qcom_compressed_image`` is native and the store is external memory (as the
  extension requires), else uncompressed; :attr:`QcomImage.compressed` tells which.

Planar YUV frames: :mod:`qcom_ext.ext.images.planar`.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> fmt = qcom_ext.parse_image_format("RGBA/UNORM_INT8")
>>> fmt in qcom_ext.supported_image_formats(ctx, flags="read_write")
True
>>> img = qcom_ext.create_image(ctx, (64, 32), "RGBA/UNORM_INT8", compressed=True)
>>> img.compressed, img.image.shape                 # no external memory: uncompressed
(False, (64, 32))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qcom_ext.binding.lib import C, check, driver, ffi
from qcom_ext.device import shared
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import CLError, ConfigError
from qcom_ext.ext.images.host_arrays import check_destination, check_pixels
from qcom_ext.ext.memory.external import ExternalMemory, import_route
from qcom_ext.ext.memory.flags import access_flags, flag_names
from qcom_ext.ext.memory.formats import (  # parse_image_format: part of the public API here
    ImageFormat,
    check_image_format,
    image_extent,
    image_format_tokens,
    parse_image_format,
)
from qcom_ext.ext.memory.formats import image_type as image_type_token
from qcom_ext.ext.memory.host_ptr import import_memory
from qcom_ext.ext.program.launch import copy

__all__ = ["QcomImage", "create_image", "parse_image_format", "supported_image_formats"]

COMPRESSED = "cl_qcom_compressed_image"
# flag argument -> (cl_mem_flags bit, extension whose formats it lists)
QCOM_FLAGS = {
    "other": ("CL_MEM_OTHER_IMAGE_QCOM", "cl_qcom_other_image"),
    "compressed": ("CL_MEM_COMPRESSED_IMAGE_QCOM", COMPRESSED),
    "compressed_yuv": ("CL_MEM_COMPRESSED_YUV_IMAGE_QCOM", "cl_qcom_compressed_yuv_image_read"),
}
# uncompressed order -> its compressed equivalent (section 12)
COMPRESSED_ORDERS = {"CL_RGBA": "CL_QCOM_COMPRESSED_RGBA", "CL_RGBx": "CL_QCOM_COMPRESSED_RGBx"}


def supported_image_formats(
    context: Any,
    *,
    flags: str | int = "read_only",
    image_type: str | int = "image2d",
    other: bool = False,
    compressed: bool = False,
    compressed_yuv: bool = False,
) -> list[ImageFormat]:
    """The formats ``clGetSupportedImageFormats`` lists for ``flags`` plus the Qualcomm
    flag bits asked for (``other``: planar/packed formats, ``compressed``: UBWC,
    ``compressed_yuv``: compressed planar reads).

    A Qualcomm bit is passed only where every device of the context has its extension
    natively; elsewhere no format can carry it and the answer is ``[]``. ``image_type``:
    ``"image2d"`` (or ``"2d"``) ..., or any ``cl_mem_object_type`` token, which goes to
    the driver as it is (``CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM`` too).

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> formats = qcom_ext.supported_image_formats(ctx, flags="read_only")
    >>> qcom_ext.parse_image_format("RGBA/UNORM_INT8") in formats
    True
    """
    asked = {"other": other, "compressed": compressed, "compressed_yuv": compressed_yuv}
    return listed_formats(context, shared.context_caps(context), flags, image_type, **asked)


def listed_formats(
    context: Any,
    caps: Sequence[DeviceCaps],
    flags: str | int,
    image_type: str | int = "image2d",
    **qcom: bool,
) -> list[ImageFormat]:
    """:func:`supported_image_formats` for a context whose reports ``caps`` the caller
    holds already (``qcom``: the Qualcomm flag bits asked for, by name)."""
    flags = access_flags(flags)
    token = isinstance(image_type, int) and not isinstance(image_type, bool)
    kind = image_type if token else image_type_token(image_type)
    for wanted, (bit, extension) in QCOM_FLAGS.items():
        if qcom.get(wanted):
            if not shared.all_native(caps, extension):
                return []
            flags |= getattr(C, bit)
    ctx = ffi.cast("cl_context", context.int_ptr)  # a context: its reports are caps
    count = ffi.new("cl_uint *")
    routine = "clGetSupportedImageFormats"
    check(driver.clGetSupportedImageFormats(ctx, flags, kind, 0, ffi.NULL, count), routine)
    if count[0] == 0:
        return []
    formats = ffi.new("cl_image_format[]", count[0])
    check(
        driver.clGetSupportedImageFormats(ctx, flags, kind, count[0], formats, ffi.NULL), routine
    )
    return [
        ImageFormat(int(f.image_channel_order), int(f.image_channel_data_type)) for f in formats
    ]


def require_listed(
    context: Any,
    caps: Sequence[DeviceCaps],
    fmt: ImageFormat,
    what: str,
    flags: str | int,
    **qcom: bool,
) -> None:
    """ConfigError naming the list unless :func:`listed_formats` lists ``fmt`` (``what``
    describes the list)."""
    listed = listed_formats(context, caps, flags, **qcom)
    if fmt not in listed:
        shown = ", ".join(str(f) for f in listed) or "none"
        raise ConfigError(f"{shared.labels(caps)} cannot create {fmt} images ({what}: {shown})")


@dataclass(eq=False)
class QcomImage:
    """A 2-D image made by :func:`create_image`.

    ``image`` is the ``pyopencl.Image`` to pass to kernels; ``format`` the format the
    driver was given (``CL_QCOM_COMPRESSED_RGBA/...`` when ``compressed``); ``reason``
    says why a requested compression did not happen ("" otherwise).
    """

    image: Any
    format: ImageFormat
    shape: tuple[int, int]
    compressed: bool
    reason: str = ""

    def _host_access(self, what: str) -> tuple[int, int, int]:
        if self.compressed:
            raise ConfigError(
                f"{what}: a compressed image has no host access (only kernels "
                "read and write it); copy through an uncompressed image with "
                "a kernel"
            )
        width, height = self.shape
        return width, height, self.format.element_size

    def write(self, queue: Any, pixels: np.ndarray) -> None:
        """Copy ``(height, width[, channels])`` pixels of the format's dtype into the
        image (blocking); any other dtype or shape is a ConfigError naming both
        (:mod:`~qcom_ext.ext.images.host_arrays`): nothing is reinterpreted."""

        width, height, _ = self._host_access("write")
        target = f"a {width}x{height} {self.format} image"
        pixels = check_pixels(pixels, self.format, (height, width), "pixels", target)
        copy(queue, self.image, pixels, origin=(0, 0), region=(width, height))

    def read(self, queue: Any, out: np.ndarray | None = None) -> np.ndarray:
        """The pixels as ``(height, width, channels)`` of the channel dtype (blocking);
        into ``out`` when given (checked as :meth:`write` checks its pixels, and
        C-contiguous and writeable), which is returned."""

        width, height, _ = self._host_access("read")
        if out is None:
            out = np.empty((height, width, self.format.channels), self.format.dtype)
        target = f"a {width}x{height} {self.format} image"
        out = check_destination(out, self.format, (height, width), "out", target)
        copy(queue, out, self.image, origin=(0, 0), region=(width, height))
        return out


def compressed_format(fmt: ImageFormat) -> ImageFormat:
    """The compressed equivalent of a format: ``CL_RGBA`` -> ``CL_QCOM_COMPRESSED_RGBA``."""
    if fmt.vendor:
        raise ConfigError(f"format {fmt}: pass the uncompressed format with compressed=True")
    name = COMPRESSED_ORDERS.get(fmt.order_name)
    if name is None:
        raise ConfigError(
            f"format {fmt} has no compressed equivalent; cl_qcom_compressed_image "
            f"compresses {', '.join(COMPRESSED_ORDERS)}"
        )
    return ImageFormat(getattr(C, name), fmt.channel_data_type)


def create_image(
    context: Any,
    shape: tuple[int, int],
    image_format: Any = "RGBA/UNORM_INT8",
    *,
    compressed: bool = False,
    memory: ExternalMemory | None = None,
    flags: str | int = "read_write",
) -> QcomImage:
    """A 2-D image of ``shape=(width, height)``, compressed where the device can.

    ``compressed=True``: natively (``cl_qcom_compressed_image`` on every device and
    ``memory`` given, since compressed images live in external memory) the image is
    ``CL_QCOM_COMPRESSED_<order>`` over ``memory`` with ``CL_MEM_USE_HOST_PTR |
    CL_MEM_EXT_HOST_PTR_QCOM`` and pitch 0, and only kernels may read or write it;
    elsewhere the same image uncompressed (``.compressed`` False, ``.reason`` says why).
    Only ``CL_RGBA`` and ``CL_RGBx`` have compressed equivalents (ConfigError otherwise,
    on every device). With ``memory`` and no compression the image is imported over it
    (:func:`~qcom_ext.import_memory`).

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> img = qcom_ext.create_image(ctx, (8, 4), "RGBA/UNORM_INT8")
    >>> img.shape, img.compressed, img.format.name
    ((8, 4), False, 'CL_RGBA/CL_UNORM_INT8')
    """
    width, height, _, _ = image_extent("2d", shape)
    shape = (width, height)
    # Compression starts from the spelling alone: CL_RGBx/CL_UNORM_INT8 names the Qualcomm
    # CL_QCOM_COMPRESSED_RGBx/CL_UNORM_INT8, though the core table has no such pair.
    requested = image_format_tokens(image_format)
    flags = access_flags(flags)
    if not isinstance(compressed, bool):
        raise ConfigError(f"compressed must be True or False, got {compressed!r}")
    reason = ""
    if compressed:
        target = compressed_format(requested)
        route = shared.route(context, COMPRESSED)
        reason = _why_uncompressed(route, memory)
        if not reason:
            what = "compressed formats for this access"
            require_listed(context, route.caps, target, what, flags, compressed=True)
            image = import_memory(context, memory, flags=flags, image_format=target, shape=shape)
            return QcomImage(image, target, (width, height), True)
        fmt = _uncompressed(requested, reason)
    elif requested.vendor:
        raise ConfigError(
            f"format {requested}: Qualcomm formats are made by qcom_ext.planar_image "
            "(planar) or compressed=True (compressed)"
        )
    else:
        fmt = check_image_format(requested)
    if memory is not None:
        image = import_memory(context, memory, flags=flags, image_format=fmt, shape=shape)
    else:
        image = _create_plain(context, flags, fmt, width, height)
    return QcomImage(image, fmt, (width, height), False, reason)


def _why_uncompressed(route: shared.Route, memory: ExternalMemory | None) -> str:
    """Why a compressed image cannot be native here ("" when it can)."""
    if not route.native:
        return route.reason
    if memory is None:
        return (
            "native compressed images live in external memory: pass memory="
            "qcom_ext.ExternalMemory.dmabuf(fd) (sized with clQueryImageInfoQCOM)"
        )
    imported, _, reason = import_route(route.caps, memory)
    return "" if imported == "native" else reason


def _uncompressed(requested: ImageFormat, reason: str) -> ImageFormat:
    """The uncompressed format a compressed request falls back to."""
    try:
        return check_image_format(requested)
    except ConfigError as exc:
        raise ConfigError(
            f"{exc}; compressed=True falls back to this uncompressed format here ({reason})"
        ) from None


def _create_plain(context: Any, flags: int, fmt: ImageFormat, width: int, height: int) -> Any:
    """``pyopencl.create_image`` after the format and the device limits are checked
    (ConfigError naming the formats or the limit); a driver refusal is a CLError naming
    the image."""
    import pyopencl

    found = shared.context_caps(context)
    require_listed(context, found, fmt, "formats for this access", flags)
    check_image_size(found, width, height)
    try:
        return pyopencl.create_image(context, flags, fmt.to_pyopencl(), shape=(width, height))
    except pyopencl.Error as exc:
        code = getattr(exc, "code", None)
        detail = f"{width}x{height} {fmt} image, flags {flag_names(flags)}: {exc}"
        raise CLError("clCreateImage", code if isinstance(code, int) else -30, detail) from exc


def check_image_size(found: Sequence[DeviceCaps], width: int, height: int) -> None:
    """ConfigError naming the limit when a ``width x height`` 2-D image exceeds
    ``CL_DEVICE_IMAGE2D_MAX_WIDTH``/``HEIGHT`` (or the ``cl_qcom_extended_images`` sizes)
    of a device: the one size check of create_image and the planar frames."""
    for caps in found:
        core = caps.limits.image2d_max_size  # None: the probe could not read it
        extended = caps.limits.extended_image2d_max_size or (0, 0)  # cl_qcom_extended_images
        if core is None:
            continue
        for value, limit, token in (
            (width, max(core[0], extended[0]), "WIDTH"),
            (height, max(core[1], extended[1]), "HEIGHT"),
        ):
            if value > limit:
                raise ConfigError(
                    f"a {width}x{height} image exceeds CL_DEVICE_IMAGE2D_MAX_"
                    f"{token} = {limit} of {caps.label}"
                )
