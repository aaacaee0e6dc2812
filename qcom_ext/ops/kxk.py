"""General KxK conv2d: on the image layout (kernels/conv_kxk.cl, 4 output channels per
work-item) or on NCHW buffers through local-memory tiles (kernels/conv_tiled.cl).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext import ops
>>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
>>> x = np.ones((1, 3, 6, 6), np.float32)
>>> w = np.ones((5, 3, 3, 3), np.float32)
>>> a = ops.conv2d(queue, x, w, padding=1)                  # image layout
>>> b = ops.conv2d(queue, x, w, padding=1, method="tiled")  # local-memory tiles
>>> a.shape, float(a[0, 0, 3, 3]), float(a[0, 0, 0, 0]), bool(np.array_equal(a, b))
((1, 5, 6, 6), 27.0, 12.0, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._functional import on_buffers, on_images
from qcom_ext.ops._layer import Layer
from qcom_ext.ops._programs import kernel_for
from qcom_ext.ops._tensor import BufferTensor, ImageTensor, upload
from qcom_ext.ops._weights import bias_vector, weight_array
from qcom_ext.ops.options import ConvOptions, choice

__all__ = ["METHODS", "Conv2d", "TiledConv2d", "conv2d"]

METHODS = ("image", "tiled")


class _Conv(Layer):
    """Weights (Co, Ci, KH, KW), bias and options, checked; the options come as keywords
    (``stride``, ``padding``, ``dilation``, ``activation``, ``negative_slope``, ``dtype``)
    or as ``options=``, a :class:`~qcom_ext.ops.ConvOptions`."""

    def __init__(
        self, weight: Any, bias: Any, options: ConvOptions | None, settings: Mapping[str, Any]
    ) -> None:
        self.take_options(options, settings)
        self.w = weight_array(weight, "conv2d weight", (4,), self.dtype)
        self.out_channels, self.in_channels, kh, kw = self.w.shape
        self.geometry = self.options.geometry((kh, kw))
        self.bias_values = bias_vector(bias, self.out_channels)

    def output_nchw(self, nchw: Sequence[int]) -> tuple[int, int, int, int]:
        n, c, h, w = nchw
        if c != self.in_channels:
            raise ConfigError(
                f"input has {c} channels; the weight expects "
                f"{self.in_channels} (weight shape (Co, Ci, KH, KW))"
            )
        oh, ow = self.geometry.output_size(h, w)
        return n, self.out_channels, oh, ow

    def _checked_output(self, x: Any, out: Any) -> tuple[int, int, int, int]:
        """The NCHW output shape for ``x``, which ``out`` must have; both must hold the
        layer's dtype."""
        for t in (x, out):
            if t.dtype != self.dtype:
                raise ConfigError(f"tensor is {t.dtype.name}; the layer stores {self.dtype.name}")
        want = self.output_nchw(x.shape)
        if out.shape != want:
            raise ConfigError(f"out has shape {out.shape}; expected {want}")
        return want

    def _upload(self, queue: Any, weights: np.ndarray, channels: int) -> None:
        """Upload the packed ``weights`` and the bias zero-padded to ``channels``."""
        packed = np.ascontiguousarray(weights, dtype=self.dtype)  # exact: w is in dtype
        self.weights = upload(queue.context, packed, "the conv2d weights")
        bias = bias_vector(self.bias_values, self.out_channels, channels)
        self.bias = upload(queue.context, bias, "the bias")


class Conv2d(_Conv):
    """KxK conv2d on :class:`ImageTensor`s; weights re-packed so that the 4 weight
    vectors of one tap and input channel block are adjacent. ``pixels``: output pixels
    per work-item (1, 2, 4 or 8)."""

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        pixels: int = 4,
        options: ConvOptions | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(weight, bias, options, settings)
        self.pixels = choice(pixels, (1, 2, 4, 8), "pixels")
        co, ci, kh, kw = self.w.shape
        cob, cib = -(-co // 4), -(-ci // 4)
        padded = np.zeros((cob * 4, cib * 4, kh, kw))
        padded[:co, :ci] = self.w
        self._upload(
            queue, padded.reshape(cob, 4, cib, 4, kh, kw).transpose(0, 2, 4, 5, 1, 3), cob * 4
        )
        defines = {**self.geometry.defines(), **self.options.defines(), "PIX": self.pixels}
        self.launcher = kernel_for(queue, queue.device, "conv_kxk.cl", "conv2d_image", defines)

    def output_for(self, queue: Any, x: ImageTensor) -> ImageTensor:
        return ImageTensor.empty(
            queue.context, queue.device, self.output_nchw(x.shape), self.dtype
        )

    def launch_args(self, x: ImageTensor, out: ImageTensor) -> tuple[Sequence[int], list]:
        if not isinstance(x, ImageTensor) or not isinstance(out, ImageTensor):
            raise ConfigError("Conv2d takes ImageTensors (see ops.to_image)")
        want = self._checked_output(x, out)
        n, _, h, w = x.shape
        _, co, oh, ow = want
        out_blocks, out_w_blocks = -(-co // 4), -(-ow // self.pixels)
        ph, pw = self.geometry.padding
        ints = [
            np.int32(v)
            for v in (w, h, x.channel_blocks, ow, oh, out_blocks, out_w_blocks, n, pw, ph)
        ]
        args = [x.image, self.weights, self.bias, out.image, *ints, self.slope]
        return (out_w_blocks * out_blocks, oh * n), args


class TiledConv2d(_Conv):
    """KxK conv2d on NCHW :class:`BufferTensor`s with BS x BS local-memory tiles.

    ``block``: BS (default: 16 where 256 work-items and the tile fit, else 8, else 4);
    ``channels_per_item``: output channels per work-item (COT, default 4). The local
    size is fixed at (BS, BS, 1), so this kernel is not tuned.
    """

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        block: int | None = None,
        channels_per_item: int = 4,
        options: ConvOptions | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(weight, bias, options, settings)
        self.cot = choice(channels_per_item, (1, 2, 4, 8), "channels_per_item")
        if block is not None and (
            isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1
        ):
            raise ConfigError(f"block must be a positive int, not {block!r}")
        self.block = self._block(queue.device, block)
        co, ci, kh, kw = self.w.shape
        cop = -(-co // self.cot) * self.cot
        padded = np.zeros((cop, ci, kh, kw))
        padded[:co] = self.w
        self._upload(queue, padded, cop)
        defines = {
            **self.geometry.defines(),
            **self.options.defines(),
            "BS": self.block,
            "COT": self.cot,
        }
        self.launcher = kernel_for(queue, queue.device, "conv_tiled.cl", "conv2d_tiled", defines)

    def _block(self, device: Any, block: int | None) -> int:
        """``block``, or the first of 16, 8, 4 that fits ``device``."""
        problems = []
        for bs in (block,) if block is not None else (16, 8, 4):
            problem = self._fits(device, bs)
            if problem is None:
                return bs
            problems.append(f"BS={bs}: {problem}")
        raise ConfigError("no tile fits this device: " + "; ".join(problems))

    def region(self, bs: int) -> tuple[int, int]:
        """(RH, RW): the input region a BS x BS output tile reads."""
        (kh, kw), (sh, sw), (dh, dw) = (
            self.geometry.kernel,
            self.geometry.stride,
            self.geometry.dilation,
        )
        return (bs - 1) * sh + (kh - 1) * dh + 1, (bs - 1) * sw + (kw - 1) * dw + 1

    def _fits(self, device: Any, bs: int) -> str | None:
        if bs < 1:
            return "the block must be positive"
        if bs * bs > device.max_work_group_size or bs > device.max_work_item_sizes[1]:
            return f"{bs * bs} work-items exceed the device's work-group limits"
        rh, rw = self.region(bs)
        need = 2 * rh * rw * 4
        if need > device.local_mem_size:
            return f"{need} bytes of local memory exceed the device's {device.local_mem_size}"
        return None

    def output_for(self, queue: Any, x: BufferTensor) -> BufferTensor:
        return BufferTensor.empty(queue.context, self.output_nchw(x.nchw), self.dtype, "NCHW")

    def launch_args(self, x: BufferTensor, out: BufferTensor) -> tuple[Sequence[int], list]:
        for name, t in (("input", x), ("out", out)):
            if not isinstance(t, BufferTensor) or t.layout != "NCHW":
                raise ConfigError(f"TiledConv2d takes NCHW BufferTensors; {name} is not one")
        want = self._checked_output(x, out)
        n, ci, h, w = x.shape
        _, co, oh, ow = want
        groups = -(-co // self.cot)
        ph, pw = self.geometry.padding
        bs = self.block
        ints = [np.int32(v) for v in (ci, h, w, co, oh, ow, ph, pw, groups)]
        global_size = (-(-ow // bs) * bs, -(-oh // bs) * bs, n * groups)
        return global_size, [x.buffer, self.weights, self.bias, out.buffer, *ints, self.slope]

    def __call__(self, queue: Any, x: Any, out: Any = None, *, local_size: Any = "tuned") -> Any:
        """Enqueue with the required (BS, BS, 1) local size."""
        return super().__call__(queue, x, out, local_size=(self.block, self.block, 1))


def conv2d(
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
    method: str = "image",
    layout: str = "NCHW",
    shape: Sequence[int] | None = None,
    dtype: Any = None,
) -> Any:
    """KxK conv2d of ``x`` with ``weight`` (Co, Ci, KH, KW) and ``bias`` (Co,).

    ``method="image"``: on the RGBA image layout (numpy in ``layout`` -> numpy in
    ``layout``; ImageTensor or pyopencl Image with ``shape`` -> ImageTensor).
    ``method="tiled"``: local-memory tiles on NCHW buffers (numpy -> numpy; NCHW
    BufferTensor or pyopencl Buffer with ``shape`` and ``dtype`` -> BufferTensor).
    ``stride``, ``padding``, ``dilation``: int or (h, w); ``activation``: None, "relu",
    "relu6" or "leaky_relu" (``negative_slope``).
    """
    if method not in METHODS:
        raise ConfigError(f"method {method!r} is not one of {', '.join(METHODS)}")
    options = ConvOptions(
        stride=stride,
        padding=padding,
        dilation=dilation,
        activation=activation,
        negative_slope=negative_slope,
    )
    if method == "image":
        return on_images(
            queue,
            x,
            layout,
            shape,
            dtype,
            lambda storage: Conv2d(queue, weight, bias, options=options, dtype=storage),
        )
    return on_buffers(
        queue,
        x,
        layout,
        shape,
        dtype,
        "NCHW",
        lambda storage: TiledConv2d(queue, weight, bias, options=options, dtype=storage),
    )
