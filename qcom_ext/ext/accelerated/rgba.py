"""RGBA images to and from ``(height, width, 4)`` numpy arrays: the inputs and outputs of
the whole-image accelerated ops (also ``qcom_ext.image_ops.rgba_image`` and friends).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> pixels = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
>>> bool((read_rgba_image(queue, rgba_image(ctx, pixels)) == pixels).all())
True
>>> empty_rgba_image(ctx, 3, 2).shape
(3, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ext.program.launch import copy

__all__ = ["empty_rgba_image", "read_rgba_image", "rgba_image", "rgba_supported"]

_TYPES = {np.dtype(np.float32): "FLOAT", np.dtype(np.float16): "HALF_FLOAT"}


def rgba_supported(context: Any, dtype: Any) -> bool:
    """Whether every device of ``context`` can read RGBA images of ``dtype``."""
    import pyopencl as cl

    wanted = getattr(cl.channel_type, _TYPES[np.dtype(dtype)])
    formats = cl.get_supported_image_formats(
        context, cl.mem_flags.READ_ONLY, cl.mem_object_type.IMAGE2D
    )
    return any(
        f.channel_order == cl.channel_order.RGBA and f.channel_data_type == wanted for f in formats
    )


def rgba_image(context: Any, pixels: np.ndarray, dtype: Any = np.float32) -> Any:
    """A read-only RGBA image of ``pixels`` (height, width, 4), stored as ``dtype``."""
    import pyopencl as cl

    if np.dtype(dtype) not in _TYPES:
        raise ConfigError(f"dtype must be numpy.float32 or numpy.float16, got {dtype!r}")
    data = np.ascontiguousarray(pixels, dtype=dtype)
    if data.ndim != 3 or data.shape[2] != 4 or 0 in data.shape:
        raise ConfigError(f"pixels must have shape (height, width, 4), got {np.shape(pixels)}")
    fmt = cl.ImageFormat(cl.channel_order.RGBA, getattr(cl.channel_type, _TYPES[data.dtype]))
    create = getattr(cl, "create_image", cl.Image)  # create_image: pyopencl 2024.3+
    mf = cl.mem_flags
    return create(
        context,
        mf.READ_ONLY | mf.COPY_HOST_PTR,
        fmt,
        shape=(data.shape[1], data.shape[0]),
        hostbuf=data,
    )


def empty_rgba_image(context: Any, width: int, height: int) -> Any:
    """A write-only RGBA float image."""
    import pyopencl as cl

    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    create = getattr(cl, "create_image", cl.Image)
    return create(context, cl.mem_flags.WRITE_ONLY, fmt, shape=(width, height))


def read_rgba_image(queue: Any, image: Any) -> np.ndarray:
    """The pixels of an RGBA float image as (height, width, 4) float32."""

    out = np.empty((image.height, image.width, 4), np.float32)
    copy(queue, out, image, origin=(0, 0), region=(image.width, image.height))
    return out
