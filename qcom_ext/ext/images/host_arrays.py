"""Host arrays against image formats: the numpy dtype and element shape a format needs.

:func:`host_layout` maps a format (channel order + channel data type) to the numpy dtype
of one channel (of the whole word for packed types) and the trailing shape of one pixel.
:func:`check_pixels` checks an array before it is copied into an image (every
host-to-device write of qcom_ext: ``QcomImage.write``, NV12 planes,
``ImageBuffer.write_buffer``) and :func:`check_destination` one an image is read into.
Nothing is reinterpreted: a float32 array of the right byte size is not RGBA8 pixels, and
an ``object`` array would copy PyObject pointers. A mismatch is a ConfigError naming the
array's dtype and shape and what the format needs.

>>> fmt = parse_image_format("RGBA/UNORM_INT8")
>>> host_layout(fmt)
HostLayout(dtype=dtype('uint8'), pixel_shape=(4,))
>>> check_pixels(np.zeros((2, 3, 4), np.float32), fmt, (2, 3), "pixels", f"a 3x2 {fmt} image")
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: pixels of dtype float32 and shape (2, 3, 4) do not fill a 3x2 \
CL_RGBA/CL_UNORM_INT8 image: pixels must be uint8 of shape (2, 3, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ext.memory.formats import ImageFormat, parse_image_format

__all__ = ["HostLayout", "check_destination", "check_pixels", "host_layout"]


class HostLayout(NamedTuple):
    """What a host array of one format holds: ``dtype`` per channel (per packed word) and
    ``pixel_shape``, the trailing dimensions of one pixel (``()`` for one channel)."""

    dtype: np.dtype
    pixel_shape: tuple[int, ...]

    def shapes(self, lead: Sequence[int]) -> list[tuple[int, ...]]:
        """The array shapes accepted for ``lead`` pixels (a one-channel format also takes
        a trailing axis of 1, the shape reads return)."""
        exact = (*lead, *self.pixel_shape)
        return [exact] if self.pixel_shape else [exact, (*lead, 1)]


def host_layout(fmt: ImageFormat) -> HostLayout:
    """The :class:`HostLayout` of a standard format (ConfigError for Qualcomm formats,
    whose layout is the driver's)."""
    return HostLayout(fmt.dtype, fmt.pixel_shape)


def _describe(array: Any) -> str:
    if not isinstance(array, np.ndarray):
        return f"a {type(array).__name__}, not a numpy array,"
    return f"of dtype {array.dtype} and shape {array.shape}"


def _need(layout: HostLayout, lead: Sequence[int]) -> str:
    shapes = " or ".join(str(shape) for shape in layout.shapes(lead))
    return f"{layout.dtype} of shape {shapes}"


def _matches(array: Any, layout: HostLayout, lead: Sequence[int]) -> bool:
    return (
        isinstance(array, np.ndarray)
        and array.dtype == layout.dtype
        and array.shape in layout.shapes(tuple(lead))
    )


def check_pixels(array: Any, fmt: Any, lead: Sequence[int], what: str, target: str) -> np.ndarray:
    """``array`` as a C-contiguous array after checking it is ``lead`` pixels of ``fmt``
    (ConfigError naming its dtype and shape, ``target`` and what ``fmt`` needs)."""
    layout = host_layout(parse_image_format(fmt))
    if not _matches(array, layout, lead):
        raise ConfigError(
            f"{what} {_describe(array)} do not fill {target}: {what} must be {_need(layout, lead)}"
        )
    return np.ascontiguousarray(array)


def check_destination(
    out: Any, fmt: Any, lead: Sequence[int], what: str, target: str
) -> np.ndarray:
    """``out`` itself after checking it can receive ``lead`` pixels of ``fmt`` in place:
    the dtype and shape :func:`check_pixels` asks for, C-contiguous and writeable."""
    layout = host_layout(parse_image_format(fmt))
    problem = ""
    if not _matches(out, layout, lead):
        problem = f"{what} {_describe(out)} cannot receive {target}"
    elif not out.flags.c_contiguous:
        problem = f"{what} is not C-contiguous (strides {out.strides}); {target} is read in place"
    elif not out.flags.writeable:
        problem = f"{what} is not writeable; {target} is read into it"
    if problem:
        raise ConfigError(
            f"{problem}: {what} must be a writeable C-contiguous {_need(layout, lead)}"
        )
    return out
