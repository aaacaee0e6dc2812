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
from qcom_ext.ops._functional import on_buffers
from qcom_ext.ops._layer import Pointwise
from qcom_ext.ops._programs import kernel_for
from qcom_ext.ops._tensor import BufferTensor, upload
from qcom_ext.ops._weights import bias_vector, weight_array
from qcom_ext.ops.options import ConvOptions, is_int

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


def tile_of(tile: Any, device: Any) -> tuple[int, int]:
    """``tile`` checked against :data:`TILES` (ints only: (2.0, 4) would become a
    -DPIX=2.0 build); :func:`default_tile` for None."""
    if tile is None:
        return default_tile(device)
    ints = isinstance(tile, (tuple, list)) and all(is_int(v) for v in tile)
    checked = tuple(int(v) for v in tile) if ints else None
    if checked not in TILES:
        raise ConfigError(f"tile {tile!r} is not one of {TILES}")
    return checked  # type: ignore[return-value]


def pack_weights(w: np.ndarray, cov: int, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """(Co, Ci) weights -> [ceil(Ci/4)][COB][4 ci][4 co] and COB (a multiple of ``cov``)."""
    co, ci = w.shape
    steps = -(-ci // 4)
    blocks = -(-co // (4 * cov)) * cov  # ceil(Co/4) rounded up to a multiple of cov
    padded = np.zeros((steps * 4, blocks * 4), np.float64)
    padded[:ci, :co] = w.T
    packed = padded.reshape(steps, 4, blocks, 4).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(packed, dtype=dtype), blocks


class Conv2d1x1(Pointwise):
    """A 1x1 conv2d on NHWC :class:`BufferTensor`s with its weights packed on the device.

    ``weight``: (Co, Ci) or (Co, Ci, 1, 1); ``bias``: (Co,) or None; ``tile``: (pixels,
    channels) per work-item from :data:`TILES` (default :func:`default_tile`). The
    options (``stride``: int or (h, w), ``activation``, ``negative_slope``, ``dtype``:
    float32 or float16 storage) come as keywords or as ``options=``, a
    :class:`~qcom_ext.ops.ConvOptions`.
    """

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        tile: tuple[int, int] | None = None,
        options: ConvOptions | None = None,
        **settings: Any,
    ) -> None:
        self.take_options(options, settings)
        w = weight_array(weight, "1x1 weight", (2, 4), self.dtype)
        if w.ndim == 4:
            if w.shape[2:] != (1, 1):
                raise ConfigError(
                    f"1x1 weight must be (Co, Ci, 1, 1), got {w.shape}; use "
                    "ops.conv2d for larger kernels"
                )
            w = w[:, :, 0, 0]
        self.out_channels, self.in_channels = w.shape
        self.tile = tile_of(tile, queue.device)
        pixels, channels = self.tile
        packed, self.co_blocks = pack_weights(w, channels // 4, self.dtype)
        bias_padded = bias_vector(bias, self.out_channels, self.co_blocks * 4)
        self.weights = upload(queue.context, packed, "the 1x1 weights")
        self.bias = upload(queue.context, bias_padded, "the bias")
        defines = {
            **self.options.defines(),
            "PIX": pixels,
            "COV": channels // 4,
            "IN_ALIGNED": int(self.in_channels % 4 == 0),
            "OUT_ALIGNED": int(self.out_channels % 4 == 0),
        }
        self.launcher = kernel_for(queue, queue.device, "conv_1x1.cl", "conv2d_1x1", defines)

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
        pixels, ints = self.pixel_args(x.shape, want)
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
    options = ConvOptions(stride=stride, activation=activation, negative_slope=negative_slope)
    return on_buffers(
        queue,
        x,
        layout,
        shape,
        dtype,
        "NHWC",
        lambda storage: Conv2d1x1(queue, weight, bias, tile=tile, options=options, dtype=storage),
    )
