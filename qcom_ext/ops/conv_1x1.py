"""1x1 conv2d on NHWC buffers (kernels/conv_1x1.cl, MACE design: register tiles).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext import ops
>>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
>>> x = np.ones((1, 3, 3, 5), np.float32)             # NHWC
>>> w = np.full((6, 5), 0.5, np.float32)             # (Co, Ci)
>>> y = ops.conv2d_1x1(queue, x, w, layout="NHWC", activation="relu6")
>>> y.shape, float(y.max())                          # 5 * 0.5 = 2.5
((1, 3, 3, 6), 2.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._layer import Layer
from qcom_ext.ops._params import (
    activation_code,
    bias_vector,
    is_int,
    pair,
    slope_value,
    weight_array,
)
from qcom_ext.ops._programs import kernel_for
from qcom_ext.ops._tensor import BufferTensor, storage_dtype
from qcom_ext.ops.buffer_io import buffer_call

__all__ = ["TILES", "Conv2d1x1", "conv2d_1x1", "default_tile"]

#: Register tiles a work-item may own: (output pixels, output channels).
TILES = tuple((p, c) for p in (1, 2, 4, 8) for c in (4, 8))


def default_tile(device: Any) -> tuple[int, int]:
    """(2, 4), MACE's tile, on Adreno and CPUs; (4, 8) on other GPUs, whose larger
    register files pay back the extra reuse."""
    from qcom_ext.device.probe import probe

    caps = probe(device)
    if caps.is_adreno or caps.device_type != "gpu":
        return 2, 4
    return 4, 8


def pack_weights(w: np.ndarray, cov: int, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """(Co, Ci) weights -> [ceil(Ci/4)][COB][4 ci][4 co] and COB (a multiple of ``cov``)."""
    co, ci = w.shape
    steps = -(-ci // 4)
    blocks = -(-co // (4 * cov)) * cov  # ceil(Co/4) rounded up to a multiple of cov
    padded = np.zeros((steps * 4, blocks * 4), np.float64)
    padded[:ci, :co] = w.T
    packed = padded.reshape(steps, 4, blocks, 4).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(packed, dtype=dtype), blocks


class Conv2d1x1(Layer):
    """A 1x1 conv2d on NHWC :class:`BufferTensor`s with its weights packed on the device.

    ``weight``: (Co, Ci) or (Co, Ci, 1, 1); ``bias``: (Co,) or None; ``stride``: int or
    (h, w); ``tile``: (pixels, channels) per work-item from :data:`TILES` (default
    :func:`default_tile`); ``dtype``: float32 or float16 storage.
    """

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        stride: Any = 1,
        activation: str | None = None,
        negative_slope: float = 0.01,
        dtype: Any = np.float32,
        tile: tuple[int, int] | None = None,
    ) -> None:
        w = weight_array(weight, "1x1 weight", (2, 4))
        if w.ndim == 4:
            if w.shape[2:] != (1, 1):
                raise ConfigError(
                    f"1x1 weight must be (Co, Ci, 1, 1), got {w.shape}; use "
                    "ops.conv2d for larger kernels"
                )
            w = w[:, :, 0, 0]
        self.out_channels, self.in_channels = w.shape
        self.stride = pair(stride, "stride", 1)
        self.dtype = storage_dtype(dtype, "dtype")
        self.slope = slope_value(negative_slope)
        if tile is None:
            self.tile = default_tile(queue.device)
        else:  # ints only: (2.0, 4) would become a -DPIX=2.0 build
            ints = isinstance(tile, (tuple, list)) and all(is_int(v) for v in tile)
            self.tile = tuple(int(v) for v in tile) if ints else None
            if self.tile not in TILES:
                raise ConfigError(f"tile {tile!r} is not one of {TILES}")
        pixels, channels = self.tile
        packed, self.co_blocks = pack_weights(w, channels // 4, self.dtype)
        bias_padded = np.zeros(self.co_blocks * 4, np.float32)
        bias_padded[: self.out_channels] = bias_vector(bias, self.out_channels)
        import pyopencl as cl

        mf = cl.mem_flags
        self.weights = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=packed)
        self.bias = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=bias_padded)
        defines = {
            "PIX": pixels,
            "COV": channels // 4,
            "STORAGE_HALF": self.dtype == np.float16,
            "ACTIVATION": activation_code(activation, negative_slope),
            "IN_ALIGNED": int(self.in_channels % 4 == 0),
            "OUT_ALIGNED": int(self.out_channels % 4 == 0),
        }
        self.launcher = kernel_for(queue, queue.device, "conv_1x1.cl", "conv2d_1x1", defines)

    def output_shape(self, nhwc: Sequence[int]) -> tuple[int, int, int, int]:
        """NHWC output shape for an NHWC input shape."""
        n, h, w, c = nhwc
        if c != self.in_channels:
            raise ConfigError(f"input has {c} channels; this 1x1 conv takes {self.in_channels}")
        sh, sw = self.stride
        return n, (h - 1) // sh + 1, (w - 1) // sw + 1, self.out_channels

    def output_for(self, queue: Any, x: BufferTensor) -> BufferTensor:
        return BufferTensor.empty(queue.context, self.output_shape(x.shape), self.dtype, "NHWC")

    def launch_args(self, x: BufferTensor, out: BufferTensor) -> tuple[Sequence[int], list]:
        for name, t in (("input", x), ("out", out)):
            if not isinstance(t, BufferTensor) or t.layout != "NHWC":
                raise ConfigError(f"Conv2d1x1 takes NHWC BufferTensors; {name} is not one")
            if t.dtype != self.dtype:
                raise ConfigError(f"{name} is {t.dtype.name}; the layer stores {self.dtype.name}")
        want = self.output_shape(x.shape)
        if out.shape != want:
            raise ConfigError(f"out has shape {out.shape}; expected {want} (NHWC)")
        n, h, w, c = x.shape
        _, oh, ow, co = want
        pixels = n * oh * ow
        ints = [np.int32(v) for v in (h, w, c, co, oh, ow, *self.stride, pixels, self.co_blocks)]
        per_item, channels = self.tile
        global_size = (self.co_blocks // (channels // 4), -(-pixels // per_item))
        return global_size, [x.buffer, self.weights, self.bias, out.buffer, *ints, self.slope]


def conv2d_1x1(
    queue: Any,
    x: Any,
    weight: Any,
    bias: Any = None,
    *,
    stride: Any = 1,
    activation: str | None = None,
    negative_slope: float = 0.01,
    layout: str = "NCHW",
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    tile: tuple[int, int] | None = None,
) -> Any:
    """1x1 conv2d. ``x``: numpy array in ``layout`` (returned in ``layout``; NCHW is
    transposed on the host), or an NHWC :class:`BufferTensor` / pyopencl Buffer with
    ``shape`` and ``dtype`` (returned as an NHWC BufferTensor). See :class:`Conv2d1x1`."""
    return buffer_call(
        queue,
        x,
        layout,
        shape,
        dtype,
        "NHWC",
        lambda storage: Conv2d1x1(
            queue,
            weight,
            bias,
            stride=stride,
            activation=activation,
            negative_slope=negative_slope,
            dtype=storage,
            tile=tile,
        ),
    )
