"""Depthwise conv2d on the RGBA image layout (kernels/conv_depthwise.cl, MNN design).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext import ops
>>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
>>> x = np.ones((1, 6, 5, 5), np.float32)
>>> w = np.ones((6, 1, 3, 3), np.float32)
>>> y = ops.depthwise_conv2d(queue, x, w, padding=1)
>>> y.shape, float(y[0, 0, 2, 2]), float(y[0, 0, 0, 0])   # 9 taps inside, 4 at a corner
((1, 6, 5, 5), 9.0, 4.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._functional import on_images
from qcom_ext.ops._layer import Layer
from qcom_ext.ops._programs import kernel_for
from qcom_ext.ops._tensor import ImageTensor
from qcom_ext.ops._weights import bias_vector, weight_array
from qcom_ext.ops.layout import to_image
from qcom_ext.ops.options import ConvOptions, choice

__all__ = ["DepthwiseConv2d", "depthwise_conv2d"]

#: Outputs per work-item the kernel can be built for (4: the MNN design).
PIXELS = (1, 2, 4, 8)
#: Output rows per work-item (1: the MNN design).
ROWS = (1, 2, 4)


class DepthwiseConv2d(Layer):
    """A depthwise conv2d (one filter per channel) with its weights in images.

    ``weight``: (C, 1, KH, KW) or (C, KH, KW); ``bias``: (C,) or None. The options
    (``stride``, ``padding``, ``dilation``, ``activation``, ``negative_slope``, ``dtype``:
    float32 or float16 storage of the weights and of the tensors it takes) come as
    keywords or as ``options=``, a :class:`~qcom_ext.ops.ConvOptions`. ``pixels`` x
    ``rows``: the outputs one work-item computes.
    """

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        pixels: int = 4,
        rows: int = 1,
        options: ConvOptions | None = None,
        **settings: Any,
    ) -> None:
        self.take_options(options, settings)
        self.pixels = choice(pixels, PIXELS, "pixels")  # outputs per work-item
        self.rows = choice(rows, ROWS, "rows")  # output rows per work-item
        w = weight_array(weight, "depthwise weight", (3, 4), self.dtype)
        if w.ndim == 4:
            if w.shape[1] != 1:
                raise ConfigError(
                    f"depthwise weight must be (C, 1, KH, KW), got {w.shape}; "
                    "a channel multiplier other than 1 is not supported"
                )
            w = w[:, 0]
        self.channels, kh, kw = w.shape
        self.geometry = self.options.geometry((kh, kw))
        self.weights = to_image(queue, w.reshape(1, self.channels, kh, kw))
        self.bias = to_image(queue, bias_vector(bias, self.channels).reshape(1, -1, 1, 1))
        defines = {
            **self.geometry.defines(),
            **self.options.defines(),
            "PIXELS": self.pixels,
            "ROWS": self.rows,
        }
        self.launcher = kernel_for(
            queue, queue.device, "conv_depthwise.cl", "depthwise_conv2d", defines
        )

    def output_shape(self, shape: Sequence[int]) -> tuple[int, int, int, int]:
        n, c, h, w = shape
        if c != self.channels:
            raise ConfigError(f"input has {c} channels; this depthwise conv has {self.channels}")
        oh, ow = self.geometry.output_size(h, w)
        return n, c, oh, ow

    def output_for(self, queue: Any, x: ImageTensor) -> ImageTensor:
        return ImageTensor.empty(
            queue.context, queue.device, self.output_shape(x.shape), self.dtype
        )

    def launch_args(self, x: ImageTensor, out: ImageTensor) -> tuple[Sequence[int], list[Any]]:
        if not isinstance(x, ImageTensor) or not isinstance(out, ImageTensor):
            raise ConfigError("DepthwiseConv2d takes ImageTensors (see ops.to_image)")
        if out.shape != self.output_shape(x.shape):
            raise ConfigError(f"out has shape {out.shape}; expected {self.output_shape(x.shape)}")
        if x.dtype != self.dtype or out.dtype != self.dtype:
            raise ConfigError(
                f"tensors must be {self.dtype.name} like the layer, got "
                f"{x.dtype.name} -> {out.dtype.name}"
            )
        n, c, h, w = x.shape
        _, _, oh, ow = out.shape
        blocks, out_w_blocks = -(-c // 4), -(-ow // self.pixels)
        (ph, pw) = self.geometry.padding
        ints = (np.int32(v) for v in (w, h, ow, oh, pw, ph, blocks, out_w_blocks, n))
        args = [x.image, self.weights.image, self.bias.image, out.image, *ints, self.slope]
        return (out_w_blocks * blocks, -(-oh // self.rows) * n), args


def depthwise_conv2d(
    queue: Any,
    x: Any,
    weight: Any,
    bias: Any = None,
    *,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    activation: str | None = None,
    negative_slope: float = 0.01,
    layout: str = "NCHW",
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    pixels: int = 4,
    rows: int = 1,
) -> Any:
    """Depthwise conv2d of ``x`` (numpy NCHW/NHWC array -> array of the same layout;
    :class:`ImageTensor` or pyopencl Image with ``shape`` -> ImageTensor).

    ``weight`` (C, 1, KH, KW), ``bias`` (C,); ``stride``, ``padding``, ``dilation``: int
    or (h, w); ``activation``: None, "relu", "relu6" or "leaky_relu" (``negative_slope``);
    ``dtype``: float32 or float16 storage for a numpy input (default: its own);
    ``pixels`` x ``rows``: the outputs one work-item computes (4 x 1: the MNN design;
    8 or more rows read fewer texels per output, fewer give more work-items).
    """
    options = ConvOptions(
        stride=stride,
        padding=padding,
        dilation=dilation,
        activation=activation,
        negative_slope=negative_slope,
    )
    return on_images(
        queue,
        x,
        layout,
        shape,
        dtype,
        lambda storage: DepthwiseConv2d(
            queue, weight, bias, pixels=pixels, rows=rows, options=options, dtype=storage
        ),
    )
