"""How the buffer ops take numpy arrays, BufferTensors or bare buffers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._layer import Layer
from qcom_ext.ops._tensor import BufferTensor, ImageTensor, as_array4, check_layout, storage_dtype

__all__ = ["buffer_call"]


def buffer_call(
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
    array = as_array4(x, "input")
    if dtype is not None:
        array = array.astype(storage_dtype(dtype, "dtype"))
    order = {("NCHW", "NHWC"): (0, 2, 3, 1), ("NHWC", "NCHW"): (0, 3, 1, 2)}
    host = (
        array
        if layout == wanted
        else np.ascontiguousarray(array.transpose(order[(layout, wanted)]))
    )
    mf = cl.mem_flags
    source = BufferTensor(
        cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host),
        tuple(host.shape),
        host.dtype,
        wanted,
    )
    result = make_layer(host.dtype)(queue, source).to_numpy(queue)
    if layout == wanted:
        return result
    return np.ascontiguousarray(result.transpose(order[(wanted, layout)]))
