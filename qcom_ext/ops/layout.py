"""NCHW / NHWC tensors <-> the RGBA image layout (kernels/layout.cl).

Upload goes host -> buffer -> image: the tensor is copied as it is into a buffer and a
kernel packs four channels per texel, zero-filling past C; :func:`from_image` unpacks
into a buffer and reads it back. The round trip is exact for any N, C, H, W.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext import ops
>>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
>>> x = np.arange(2 * 5 * 3 * 2, dtype=np.float32).reshape(2, 5, 3, 2)
>>> t = ops.to_image(queue, x)
>>> t.shape, t.image_size          # (N, C, H, W); (W * ceil(C/4), H * N)
((2, 5, 3, 2), (4, 6))
>>> bool(np.array_equal(ops.from_image(queue, t), x))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._casting import storage_dtype
from qcom_ext.ops._programs import kernel_for
from qcom_ext.ops._tensor import (
    BufferTensor,
    ImageTensor,
    as_array4,
    check_contexts,
    check_layout,
    nchw_of,
    shape_in,
)

__all__ = ["as_buffer_tensor", "from_image", "nchw_shape", "to_image"]


def _defines(dtype: np.dtype, layout: str) -> dict[str, Any]:
    return {"STORAGE_HALF": dtype == np.float16, "TENSOR_NHWC": layout == "NHWC"}


def as_buffer_tensor(
    queue: Any,
    tensor: Any,
    *,
    layout: str = "NCHW",
    shape: Sequence[int] | None = None,
    dtype: Any = None,
) -> BufferTensor:
    """A :class:`BufferTensor` from a numpy array (uploaded), a BufferTensor, or a
    pyopencl Buffer with ``shape`` (in ``layout`` order) and ``dtype``."""
    import pyopencl as cl

    check_layout(layout)
    if isinstance(tensor, BufferTensor):
        return tensor
    if isinstance(tensor, cl.Buffer):
        if shape is None:
            raise ConfigError(f"a pyopencl Buffer needs shape= (4 sizes in {layout} order)")
        return BufferTensor.wrap(tensor, shape, dtype if dtype is not None else np.float32, layout)
    if isinstance(tensor, (ImageTensor, cl.Image)):
        raise ConfigError("this op takes a tensor in a buffer or a numpy array, not an image")
    array = as_array4(tensor, "tensor", dtype)
    return BufferTensor.from_numpy(queue.context, array, layout)


def to_image(
    queue: Any,
    tensor: Any,
    *,
    layout: str = "NCHW",
    shape: Sequence[int] | None = None,
    dtype: Any = None,
) -> ImageTensor:
    """The tensor in an RGBA image (:class:`ImageTensor`).

    ``tensor``: a 4-D numpy array in ``layout`` ("NCHW" or "NHWC"), a
    :class:`BufferTensor`, or a pyopencl Buffer with ``shape`` (in ``layout`` order) and
    ``dtype``. A numpy array is cast to ``dtype`` (float32 or float16) when given, else
    float16 stays and other float data becomes float32 (the dtype rule of docs/ops.md);
    a device tensor is used as it is.
    """
    if isinstance(tensor, ImageTensor):
        return tensor
    source = as_buffer_tensor(queue, tensor, layout=layout, shape=shape, dtype=dtype)
    check_contexts(queue.context, "the queue", tensor=source)
    out_dtype = storage_dtype(dtype, "dtype") if dtype is not None else source.dtype
    if out_dtype != source.dtype:
        raise ConfigError(
            f"dtype={out_dtype.name} differs from the buffer's "
            f"{source.dtype.name}; convert on the host first"
        )
    nchw = source.nchw
    device = queue.device
    image = ImageTensor.empty(queue.context, device, nchw, out_dtype)
    launch = kernel_for(
        queue,
        device,
        "layout.cl",
        "tensor_to_image",
        _defines(source.dtype, source.layout),
    )
    n, c, h, w = (np.int32(v) for v in nchw)
    launch(queue, image.image_size, source.buffer, image.image, n, c, h, w)
    return image


def from_image(
    queue: Any,
    tensor: ImageTensor | Any,
    *,
    layout: str = "NCHW",
    shape: Sequence[int] | None = None,
    out: Any = None,
) -> Any:
    """The tensor of an RGBA image back in ``layout``.

    ``tensor``: an :class:`ImageTensor`, or a pyopencl Image with ``shape`` (N, C, H, W).
    Returns a numpy array, or, when ``out`` is a pyopencl Buffer (or BufferTensor), that
    buffer filled, as a :class:`BufferTensor`.
    """
    import pyopencl as cl

    check_layout(layout)
    if isinstance(tensor, cl.Image):
        if shape is None:
            raise ConfigError("a pyopencl Image needs shape= (N, C, H, W)")
        tensor = ImageTensor.wrap(tensor, shape)
    if not isinstance(tensor, ImageTensor):
        raise ConfigError(
            f"from_image takes an ImageTensor or a pyopencl Image, not {type(tensor).__name__}"
        )
    check_contexts(queue.context, "the queue", tensor=tensor)
    target_shape = shape_in(tensor.shape, layout)
    if out is None:
        target = BufferTensor.empty(queue.context, target_shape, tensor.dtype, layout)
    elif isinstance(out, BufferTensor):
        if out.layout != layout or out.nchw != tensor.shape or out.dtype != tensor.dtype:
            raise ConfigError(
                f"out is a {out.layout} {out.shape} {out.dtype.name} tensor; "
                f"expected {layout} {target_shape} {tensor.dtype.name}"
            )
        target = out
    else:
        target = BufferTensor.wrap(out, target_shape, tensor.dtype, layout)
    check_contexts(queue.context, "the queue", out=target)
    launch = kernel_for(
        queue, queue.device, "layout.cl", "image_to_tensor", _defines(tensor.dtype, layout)
    )
    n, c, h, w = (np.int32(v) for v in tensor.shape)
    launch(queue, tensor.image_size, tensor.image, target.buffer, n, c, h, w)
    if out is None:
        return target.to_numpy(queue)
    return target


def nchw_shape(tensor: Any, layout: str) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a numpy array, BufferTensor or ImageTensor."""
    if isinstance(tensor, ImageTensor):
        return tensor.shape
    if isinstance(tensor, BufferTensor):
        return tensor.nchw
    return nchw_of(np.shape(tensor), layout)
