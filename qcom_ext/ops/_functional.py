"""How the functional ops (``conv2d``, ``depthwise_conv2d``, ``conv2d_1x1``,
``conv2d_int8``) take their input: numpy arrays in, numpy arrays out (in the caller's
layout), or device tensors in, device tensors out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._layer import Layer
from qcom_ext.ops._tensor import (
    BufferTensor,
    ImageTensor,
    as_array4,
    check_layout,
)
from qcom_ext.ops.layout import from_image, to_image

__all__ = ["on_buffers", "on_images", "run_on_host"]

#: numpy axes that take a tensor from one layout to the other.
_TRANSPOSE = {("NCHW", "NHWC"): (0, 2, 3, 1), ("NHWC", "NCHW"): (0, 3, 1, 2)}


def _relaid(array: np.ndarray, source: str, target: str) -> np.ndarray:
    if source == target:
        return array
    return np.ascontiguousarray(array.transpose(_TRANSPOSE[(source, target)]))


def run_on_host(queue: Any, layer: Layer, array: np.ndarray, layout: str, wanted: str) -> Any:
    """Run a buffer ``layer`` that takes ``wanted`` tensors on a numpy ``array`` in
    ``layout``: uploaded (transposed on the host when the layouts differ) and read back
    in ``layout``."""
    source = BufferTensor.from_numpy(queue.context, _relaid(array, layout, wanted), wanted)
    return _relaid(layer(queue, source).to_numpy(queue), wanted, layout)


def on_buffers(
    queue: Any,
    x: Any,
    layout: str,
    shape: Sequence[int] | None,
    dtype: Any,
    wanted: str,
    make_layer: Callable[[Any], Layer],
) -> Any:
    """Run ``make_layer(dtype)`` on ``x`` held in the ``wanted`` layout ("NHWC" or "NCHW").

    numpy arrays in ``layout`` are transposed on the host when ``layout`` differs and
    come back in ``layout``; BufferTensors (or pyopencl Buffers with ``shape``, in
    ``layout`` order, and ``dtype``) must already be in ``wanted`` and come back as
    BufferTensors.
    """
    import pyopencl as cl

    check_layout(layout)
    if isinstance(x, (ImageTensor, cl.Image)):
        raise ConfigError(
            "this op works on buffers: convert the image with ops.from_image "
            "first, or pass a numpy array"
        )
    if isinstance(x, cl.Buffer):
        if shape is None:
            raise ConfigError(f"a pyopencl Buffer needs shape= (4 sizes in {layout} order)")
        x = BufferTensor.wrap(x, shape, dtype if dtype is not None else np.float32, layout)
    if isinstance(x, BufferTensor):
        if x.layout != wanted:
            raise ConfigError(
                f"this op needs an {wanted} buffer, got {x.layout}; convert on "
                f"the host or through ops.to_image/ops.from_image"
            )
        return make_layer(x.dtype)(queue, x)
    array = as_array4(x, "input", dtype)
    return run_on_host(queue, make_layer(array.dtype), array, layout, wanted)


def on_images(
    queue: Any,
    x: Any,
    layout: str,
    shape: Sequence[int] | None,
    dtype: Any,
    make_layer: Callable[[Any], Layer],
) -> Any:
    """Run the layer ``make_layer(dtype)`` on ``x``: numpy in, numpy out (same layout;
    cast to ``dtype`` when given, see :func:`as_array4`); ImageTensor (or pyopencl Image
    with ``shape``) in, ImageTensor out (the image's own storage type)."""
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
    array = as_array4(x, "input", dtype)
    layer = make_layer(array.dtype)
    result = layer(queue, to_image(queue, array, layout=layout))
    return from_image(queue, result, layout=layout)
