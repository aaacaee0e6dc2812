"""Device tensors of the convolution ops and the checks every op applies to its inputs.

:class:`ImageTensor` is an N x C x H x W tensor in the RGBA image layout of guide section
8.1 (width W * ceil(C/4), height H * N, four channels per texel); :class:`BufferTensor`
is one in a buffer, NCHW or NHWC. Both hold float32 or float16 (storage; the kernels
compute in float).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qcom_ext import _context_cache
from qcom_ext.errors import ConfigError, ExtensionUnavailable
from qcom_ext.ext.program.launch import copy
from qcom_ext.ops._casting import FLOAT_DTYPES, cast_array, compute_dtype, storage_dtype

__all__ = ["LAYOUTS", "BufferTensor", "ImageTensor", "upload"]

LAYOUTS = ("NCHW", "NHWC")
#: The most elements a tensor may have: the kernels index with 32-bit ints.
MAX_ELEMENTS = 2**31 - 1


def held_dtype(dtype: Any, what: str) -> np.dtype:
    """The dtype of data already on the device: float32 or float16 exactly (its bytes
    cannot be converted, so float64 is refused, not read as float32)."""
    try:
        held = np.dtype(dtype)
    except (TypeError, ValueError):
        raise ConfigError(f"{what}: {dtype!r} is not a numpy dtype") from None
    if held not in FLOAT_DTYPES:
        raise ConfigError(
            f"{what} has dtype {held}; a device tensor holds float32 or float16 "
            "(convert float64 data on the host first)"
        )
    return held


def check_layout(layout: str) -> str:
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ConfigError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    return layout


def nchw_of(shape: Sequence[int], layout: str) -> tuple[int, int, int, int]:
    n, a, b, c = (int(v) for v in shape)
    return (n, a, b, c) if layout == "NCHW" else (n, c, a, b)


def shape_in(nchw: Sequence[int], layout: str) -> tuple[int, int, int, int]:
    n, c, h, w = (int(v) for v in nchw)
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def check_shape4(shape: Any, what: str) -> tuple[int, int, int, int]:
    """4 positive ints (a float, even 2.0, or a bool is refused: never truncated)."""
    try:
        items = tuple(shape)
    except TypeError:
        raise ConfigError(f"{what} must be 4 sizes (N, C, H, W), not {shape!r}") from None
    if len(items) != 4 or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items
    ):
        raise ConfigError(f"{what} must be 4 ints (N, C, H, W), not {shape!r}")
    dims = tuple(int(v) for v in items)
    if min(dims) < 1:
        raise ConfigError(f"{what} must be 4 positive sizes, not {dims}")
    elements = math.prod(dims)
    if elements > MAX_ELEMENTS:
        raise ConfigError(
            f"{what} {dims} has {elements} elements, more than the 2**31 - 1 the kernels' "
            "32-bit indices reach; split the batch or the channels"
        )
    return dims  # type: ignore[return-value]


def check_allocation(context: Any, nbytes: int, what: str) -> None:
    """Refuse ``nbytes`` for ``what`` up front when a device of ``context`` cannot
    allocate that much in one object (CL_DEVICE_MAX_MEM_ALLOC_SIZE)."""
    limit = min(device.max_mem_alloc_size for device in context.devices)
    if nbytes > limit:
        raise ConfigError(
            f"{what} needs {nbytes} bytes, more than the device's "
            f"CL_DEVICE_MAX_MEM_ALLOC_SIZE of {limit} bytes; split the batch or the channels"
        )


def allocate(context: Any, nbytes: int, what: str) -> Any:
    """A new read-write buffer of ``nbytes`` for ``what`` (checked first)."""
    import pyopencl as cl

    check_allocation(context, nbytes, what)
    return cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)


def upload(context: Any, array: np.ndarray, what: str = "the array") -> Any:
    """A read-only buffer on ``context`` holding a copy of ``array``."""
    import pyopencl as cl

    check_allocation(context, array.nbytes, what)
    mf = cl.mem_flags
    return cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=array)


def memory_of(tensor: Any) -> Any:
    """The pyopencl memory object of an :class:`ImageTensor` or :class:`BufferTensor`."""
    return tensor.image if isinstance(tensor, ImageTensor) else tensor.buffer


def check_contexts(context: Any, where: str, **tensors: Any) -> None:
    """Refuse a tensor (by its argument name) that lives in another context than
    ``context`` (the queue's, or a layer's: ``where`` says which)."""
    for name, tensor in tensors.items():
        if tensor is not None and memory_of(tensor).context != context:
            raise ConfigError(
                f"{name} belongs to another context than {where}; tensors, layers and "
                "queues of one op must share a pyopencl Context"
            )


def image_format(dtype: np.dtype) -> Any:
    import pyopencl as cl

    kind = cl.channel_type.HALF_FLOAT if dtype == np.float16 else cl.channel_type.FLOAT
    return cl.ImageFormat(cl.channel_order.RGBA, kind)


def image_dims(nchw: Sequence[int]) -> tuple[int, int]:
    """(width, height) of the RGBA image of an N x C x H x W tensor."""
    n, c, h, w = nchw
    return w * -(-c // 4), h * n


def require_images(context: Any, device: Any, dtype: np.dtype, dims: tuple[int, int]) -> None:
    """Clear errors for devices without images, the RGBA format or room for ``dims``."""
    if not device.image_support:
        raise ExtensionUnavailable(
            "image support",
            device.name.strip(),
            "CL_DEVICE_IMAGE_SUPPORT is 0; use the buffer ops "
            "(conv2d_1x1, conv2d(method='tiled'))",
        )
    fmt = image_format(dtype)
    formats = _supported_formats(context)
    if (fmt.channel_order, fmt.channel_data_type) not in formats:
        raise ExtensionUnavailable(
            f"RGBA {np.dtype(dtype).name} images",
            device.name.strip(),
            "the device does not list this image format",
        )
    width, height = dims
    max_w, max_h = device.image2d_max_width, device.image2d_max_height
    if width > max_w or height > max_h:
        raise ConfigError(
            f"the image layout needs a {width} x {height} image (W*ceil(C/4) x H*N), more "
            f"than the device's {max_w} x {max_h}; split the batch or the channels"
        )


def _supported_formats(context: Any) -> set[tuple[int, int]]:
    """The read-write 2D image formats of ``context``, once per context (the one
    per-context cache, :mod:`qcom_ext._context_cache`)."""
    return _context_cache.cached(context, ("ops", "image2d formats"), _query_formats)


def _query_formats(context: Any) -> set[tuple[int, int]]:
    import pyopencl as cl

    flags = cl.mem_flags.READ_WRITE
    found = cl.get_supported_image_formats(context, flags, cl.mem_object_type.IMAGE2D)
    return {(f.channel_order, f.channel_data_type) for f in found}


@dataclass(frozen=True)
class ImageTensor:
    """An N x C x H x W tensor in an RGBA image (see the module docstring)."""

    image: Any
    shape: tuple[int, int, int, int]
    dtype: np.dtype

    @property
    def channel_blocks(self) -> int:
        return -(-self.shape[1] // 4)

    @property
    def image_size(self) -> tuple[int, int]:
        """(width, height) of the image."""
        return image_dims(self.shape)

    @classmethod
    def empty(cls, context: Any, device: Any, shape: Sequence[int], dtype: Any) -> ImageTensor:
        """A new image for a tensor of ``shape`` (N, C, H, W); contents undefined."""
        import pyopencl as cl

        shape = check_shape4(shape, "image tensor shape")
        dtype = storage_dtype(dtype, "image tensor")
        dims = image_dims(shape)
        require_images(context, device, dtype, dims)
        check_allocation(
            context, dims[0] * dims[1] * 4 * dtype.itemsize, f"an image tensor of {shape}"
        )
        image = cl.create_image(context, cl.mem_flags.READ_WRITE, image_format(dtype), shape=dims)
        return cls(image, shape, dtype)

    @classmethod
    def wrap(cls, image: Any, shape: Sequence[int]) -> ImageTensor:
        """An existing RGBA FLOAT or HALF_FLOAT image holding a tensor of ``shape``."""
        import pyopencl as cl

        shape = check_shape4(shape, "image tensor shape")
        fmt = image.format
        kinds = {cl.channel_type.FLOAT: np.float32, cl.channel_type.HALF_FLOAT: np.float16}
        if fmt.channel_order != cl.channel_order.RGBA or fmt.channel_data_type not in kinds:
            raise ConfigError("the image must be RGBA with FLOAT or HALF_FLOAT channels")
        dims = image_dims(shape)
        have = (
            image.get_image_info(cl.image_info.WIDTH),
            image.get_image_info(cl.image_info.HEIGHT),
        )
        if have != dims:
            raise ConfigError(
                f"a {shape} tensor needs a {dims[0]} x {dims[1]} image "
                f"(W*ceil(C/4) x H*N), not {have[0]} x {have[1]}"
            )
        return cls(image, shape, np.dtype(kinds[fmt.channel_data_type]))


@dataclass(frozen=True)
class BufferTensor:
    """A tensor in a buffer. ``shape`` is in ``layout`` order, like a numpy array's."""

    buffer: Any
    shape: tuple[int, int, int, int]
    dtype: np.dtype
    layout: str = "NCHW"

    @property
    def nchw(self) -> tuple[int, int, int, int]:
        """(N, C, H, W) whatever the layout."""
        return nchw_of(self.shape, self.layout)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @classmethod
    def empty(
        cls, context: Any, shape: Sequence[int], dtype: Any, layout: str = "NCHW"
    ) -> BufferTensor:
        """A new tensor of ``shape`` (in ``layout`` order); contents undefined."""
        shape = check_shape4(shape, "buffer tensor shape")
        dtype = storage_dtype(dtype, "buffer tensor")
        what = f"a {layout} {shape} {dtype.name} tensor"
        buffer = allocate(context, math.prod(shape) * dtype.itemsize, what)
        return cls(buffer, shape, dtype, check_layout(layout))

    @classmethod
    def wrap(
        cls, buffer: Any, shape: Sequence[int], dtype: Any, layout: str = "NCHW"
    ) -> BufferTensor:
        shape = check_shape4(shape, "buffer tensor shape")
        dtype = held_dtype(dtype, "buffer tensor")
        tensor = cls(buffer, shape, dtype, check_layout(layout))
        if buffer.size < tensor.nbytes:
            raise ConfigError(
                f"a {layout} {shape} {dtype.name} tensor needs {tensor.nbytes} "
                f"bytes; the buffer has {buffer.size}"
            )
        return tensor

    @classmethod
    def from_numpy(cls, context: Any, array: np.ndarray, layout: str = "NCHW") -> BufferTensor:
        """A tensor in a new read-only buffer holding a copy of the 4-D ``array`` (in
        ``layout`` order)."""
        shape = check_shape4(array.shape, "tensor shape")
        what = f"a {layout} {shape} {array.dtype.name} tensor"
        return cls(upload(context, array, what), shape, array.dtype, check_layout(layout))

    def to_numpy(self, queue: Any) -> np.ndarray:
        """The tensor read back to the host (blocking), in its layout."""

        check_contexts(queue.context, "the queue", tensor=self)
        out = np.empty(self.shape, self.dtype)
        copy(queue, out, self.buffer)
        return out


def as_array4(value: Any, what: str, dtype: Any = None) -> np.ndarray:
    """A contiguous 4-D array in its compute dtype: ``dtype`` (float32 or float16;
    float64 means float32) when given, else float16 for float16 data and float32 for
    other float data; cast as :func:`~qcom_ext.ops._casting.cast_array` does."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nesting and the like
        raise ConfigError(f"{what} must be a 4-D float array: {exc}") from None
    if array.ndim != 4:
        raise ConfigError(f"{what} must be 4-D, got shape {array.shape}")
    if 0 in array.shape:
        raise ConfigError(f"{what} has an empty dimension: shape {array.shape}")
    target = storage_dtype(dtype, "dtype") if dtype is not None else compute_dtype(array.dtype)
    return np.ascontiguousarray(cast_array(array, what, target))
