"""How the image-layout ops take numpy arrays, ImageTensors or bare images."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from qcom_ext.errors import ConfigError
from qcom_ext.ops._layer import Layer
from qcom_ext.ops._tensor import BufferTensor, ImageTensor, as_array4, check_layout, storage_dtype
from qcom_ext.ops.layout import from_image, to_image

__all__ = ["image_call"]


def image_call(
    queue: Any,
    x: Any,
    layout: str,
    shape: Sequence[int] | None,
    make_layer: Callable[[Any], Layer],
    dtype: Any = None,
) -> Any:
    """Run the layer ``make_layer(dtype)`` on ``x``: numpy in, numpy out (same layout;
    ``dtype`` converts it first); ImageTensor (or pyopencl Image with ``shape``) in,
    ImageTensor out (the image's own storage type)."""
    import pyopencl as cl

    check_layout(layout)
    if isinstance(x, cl.Image):
        if shape is None:
            raise ConfigError("a pyopencl Image needs shape= (N, C, H, W)")
        x = ImageTensor.wrap(x, shape)
    if isinstance(x, ImageTensor):
        return make_layer(x.dtype)(queue, x)
    if isinstance(x, (BufferTensor, cl.Buffer)):
        raise ConfigError(
            "this op works on the image layout: convert the buffer with "
            "ops.to_image first, or pass a numpy array"
        )
    array = as_array4(x, "input")
    if dtype is not None:
        array = array.astype(storage_dtype(dtype, "dtype"))
    layer = make_layer(array.dtype)
    result = layer(queue, to_image(queue, array, layout=layout))
    return from_image(queue, result, layout=layout)
