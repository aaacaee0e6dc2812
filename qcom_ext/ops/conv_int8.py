"""int8 1x1 conv2d through ``qcom_dot8_acc`` / ``qcom_udot8_acc`` (kernels/conv_int8.cl).

Quantisation is per tensor: ``real = scale * (q - zero_point)``. Inputs are uint8
(asymmetric); weights are int8 (zero point 0, multiplied with ``qcom_dot8_acc``, signed x
unsigned) or uint8 with a zero point (``qcom_udot8_acc`` plus a per-pixel input sum for
the correction). The output is float32 (real values) or is requantised to int8 / uint8
with ``output_scale`` and ``output_zero_point``. Bias is in real units; the activation
applies to the real value before requantisation. On Adreno the dot products are the
native builtins; elsewhere their portable or Khronos equivalents (``qcom_ext.h``).

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext import ops
>>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
>>> x = np.full((1, 2, 2, 5), 130, np.uint8)            # NHWC, real 0.1 * (130 - 128) = 0.2
>>> w = np.full((3, 5), 50, np.int8)                    # real 0.02 * 50 = 1.0
>>> y = ops.conv2d_int8(queue, x, w, input_scale=0.1, input_zero_point=128, weight_scale=0.02,
...                     layout="NHWC")
>>> y.shape, y.dtype, round(float(y[0, 0, 0, 0]), 5)     # 5 channels * 0.2 * 1.0
((1, 2, 2, 3), dtype('float32'), 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._layer import Layer
from qcom_ext.ops._params import activation_code, bias_vector, choice, pair, slope_value
from qcom_ext.ops._programs import kernel_for
from qcom_ext.ops._tensor import BufferTensor, ImageTensor, check_layout, check_shape4

__all__ = ["OUT_DTYPES", "Conv2dInt8", "conv2d_int8"]

#: Output dtypes -> the kernel's OUT_KIND.
OUT_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.uint8): 2}


def _scale(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{what} must be a positive finite number, not {value!r}")
    try:
        scale = float(value)
    except OverflowError:  # an int beyond float
        scale = math.inf
    if not np.isfinite(scale) or scale <= 0:
        raise ConfigError(f"{what} must be a positive finite number, not {value!r}")
    return scale


def _zero_point(value: Any, what: str, low: int, high: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not low <= int(value) <= high
    ):
        raise ConfigError(f"{what} must be an integer in [{low}, {high}], not {value!r}")
    return int(value)


def pack_weights(wq: np.ndarray) -> tuple[np.ndarray, int]:
    """(Co, Ci) 8-bit weights -> uint32 words [ceil(Ci/4)][COB][4] (bytes in memory order)."""
    co, ci = wq.shape
    steps, blocks = -(-ci // 4), -(-co // 4)
    padded = np.zeros((blocks * 4, steps * 4), np.uint8)
    padded[:co, :ci] = wq.view(np.uint8)
    words = padded.reshape(blocks, 4, steps, 4).transpose(2, 0, 1, 3)  # k, cob, j, byte
    return np.ascontiguousarray(words).view(np.uint32).reshape(steps, blocks, 4), blocks


class Conv2dInt8(Layer):
    """A quantised 1x1 conv2d on NHWC uint8 :class:`BufferTensor`s (see the module).

    ``weight``: (Co, Ci) or (Co, Ci, 1, 1), int8 (then ``weight_zero_point`` must be 0)
    or uint8. ``out_dtype``: float32, int8 or uint8 (these need ``output_scale``).
    ``pixels``: output pixels per work-item (1, 2, 4 or 8).
    """

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        input_scale: float,
        input_zero_point: int,
        weight_scale: float,
        weight_zero_point: int = 0,
        output_scale: float | None = None,
        output_zero_point: int = 0,
        out_dtype: Any = np.float32,
        stride: Any = 1,
        activation: str | None = None,
        negative_slope: float = 0.01,
        pixels: int = 2,
    ) -> None:
        import pyopencl as cl

        wq = np.asarray(weight)
        if wq.ndim == 4 and wq.shape[2:] == (1, 1):
            wq = wq[:, :, 0, 0]
        if wq.ndim != 2 or 0 in wq.shape:
            raise ConfigError(
                f"int8 1x1 weight must be (Co, Ci) or (Co, Ci, 1, 1), got {np.shape(weight)}"
            )
        if wq.dtype not in (np.int8, np.uint8):
            raise ConfigError(f"int8 weight must be int8 or uint8, not {wq.dtype}")
        signed = wq.dtype == np.int8
        self.weight_zero_point = _zero_point(
            weight_zero_point, "weight_zero_point", 0, 0 if signed else 255
        )
        self.input_zero_point = _zero_point(input_zero_point, "input_zero_point", 0, 255)
        acc_scale = _scale(input_scale, "input_scale") * _scale(weight_scale, "weight_scale")
        try:
            self.out_dtype = np.dtype(out_dtype)
        except (TypeError, ValueError):
            raise ConfigError(
                f"out_dtype {out_dtype!r} is not one of float32, int8, uint8"
            ) from None
        if self.out_dtype not in OUT_DTYPES:
            raise ConfigError(f"out_dtype {self.out_dtype} is not one of float32, int8, uint8")
        if self.out_dtype != np.float32:
            if output_scale is None:
                raise ConfigError(f"an {self.out_dtype} output needs output_scale")
            info = np.iinfo(self.out_dtype)
            inv_out = 1.0 / _scale(output_scale, "output_scale")
            out_zero = _zero_point(output_zero_point, "output_zero_point", info.min, info.max)
        else:
            inv_out, out_zero = 1.0, 0
        self.pixels = pixels = choice(pixels, (1, 2, 4, 8), "pixels")
        slope = slope_value(negative_slope)
        self.out_channels, self.in_channels = wq.shape
        self.stride = pair(stride, "stride", 1)
        packed, self.co_blocks = pack_weights(wq)
        sums = wq.astype(np.int64).sum(axis=1)
        offset = np.zeros(self.co_blocks * 4, np.int64)
        offset[: self.out_channels] = (
            -self.input_zero_point * sums
            + self.in_channels * self.input_zero_point * self.weight_zero_point
        )
        bias_padded = np.zeros(self.co_blocks * 4, np.float32)
        bias_padded[: self.out_channels] = bias_vector(bias, self.out_channels)
        mf = cl.mem_flags
        make = lambda a: cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)  # noqa: E731
        self.weights, self.bias = make(packed), make(bias_padded)
        self.offset = make(offset.astype(np.int32))
        self.scalars = [
            np.float32(acc_scale),
            np.int32(self.weight_zero_point),
            np.float32(inv_out),
            np.int32(out_zero),
            slope,
        ]
        defines = {
            "PIX": pixels,
            "WEIGHTS_SIGNED": int(signed),
            "OUT_KIND": OUT_DTYPES[self.out_dtype],
            "IN_ALIGNED": int(self.in_channels % 4 == 0),
            "ACTIVATION": activation_code(activation, negative_slope),
        }
        self.launcher = kernel_for(queue, queue.device, "conv_int8.cl", "conv2d_1x1_int8", defines)

    def output_shape(self, nhwc: Sequence[int]) -> tuple[int, int, int, int]:
        n, h, w, c = nhwc
        if c != self.in_channels:
            raise ConfigError(f"input has {c} channels; this conv takes {self.in_channels}")
        sh, sw = self.stride
        return n, (h - 1) // sh + 1, (w - 1) // sw + 1, self.out_channels

    def output_for(self, queue: Any, x: BufferTensor) -> BufferTensor:
        import pyopencl as cl

        shape = self.output_shape(x.shape)
        size = int(np.prod(shape)) * self.out_dtype.itemsize
        return BufferTensor(
            cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size), shape, self.out_dtype, "NHWC"
        )

    def launch_args(self, x: BufferTensor, out: BufferTensor) -> tuple[Sequence[int], list]:
        if not isinstance(x, BufferTensor) or x.layout != "NHWC" or x.dtype != np.uint8:
            raise ConfigError("Conv2dInt8 takes an NHWC uint8 BufferTensor")
        want = self.output_shape(x.shape)
        if (
            not isinstance(out, BufferTensor)
            or out.layout != "NHWC"
            or out.shape != want
            or out.dtype != self.out_dtype
        ):
            raise ConfigError(f"out must be an NHWC {self.out_dtype} BufferTensor of {want}")
        n, h, w, c = x.shape
        _, oh, ow, co = want
        pixels = n * oh * ow
        ints = [np.int32(v) for v in (h, w, c, co, oh, ow, *self.stride, pixels, self.co_blocks)]
        args = [x.buffer, self.weights, self.offset, self.bias, out.buffer, *ints, *self.scalars]
        return (self.co_blocks, -(-pixels // self.pixels)), args


def conv2d_int8(
    queue: Any,
    x: Any,
    weight: Any,
    bias: Any = None,
    *,
    input_scale: float,
    input_zero_point: int,
    weight_scale: float,
    weight_zero_point: int = 0,
    output_scale: float | None = None,
    output_zero_point: int = 0,
    out_dtype: Any = np.float32,
    stride: Any = 1,
    activation: str | None = None,
    negative_slope: float = 0.01,
    layout: str = "NCHW",
    shape: Sequence[int] | None = None,
) -> Any:
    """Quantised 1x1 conv2d (see the module docstring and :class:`Conv2dInt8`).

    ``x``: a uint8 numpy array in ``layout`` (returned in ``layout``), or an NHWC uint8
    :class:`BufferTensor` / pyopencl Buffer with ``shape`` (returned as a BufferTensor).
    """
    import pyopencl as cl

    check_layout(layout)
    layer = Conv2dInt8(
        queue,
        weight,
        bias,
        input_scale=input_scale,
        input_zero_point=input_zero_point,
        weight_scale=weight_scale,
        weight_zero_point=weight_zero_point,
        output_scale=output_scale,
        output_zero_point=output_zero_point,
        out_dtype=out_dtype,
        stride=stride,
        activation=activation,
        negative_slope=negative_slope,
    )
    if isinstance(x, (ImageTensor, cl.Image)):
        raise ConfigError("conv2d_int8 works on uint8 NHWC buffers or numpy arrays")
    if isinstance(x, cl.Buffer):
        if shape is None or layout != "NHWC":
            raise ConfigError("a pyopencl Buffer needs shape= (N, H, W, C) and layout='NHWC'")
        nhwc = check_shape4(shape, "shape")
        if x.size < int(np.prod(nhwc)):
            raise ConfigError(
                f"a uint8 {nhwc} tensor needs {int(np.prod(nhwc))} bytes; the buffer has {x.size}"
            )
        x = BufferTensor(x, nhwc, np.dtype(np.uint8), "NHWC")
    if isinstance(x, BufferTensor):
        return layer(queue, x)
    array = np.asarray(x)
    if array.dtype != np.uint8 or array.ndim != 4 or 0 in array.shape:
        raise ConfigError(
            f"input must be a non-empty 4-D uint8 array, got {array.dtype} {array.shape}"
        )
    host = np.ascontiguousarray(array if layout == "NHWC" else array.transpose(0, 2, 3, 1))
    source = BufferTensor(
        cl.Buffer(
            queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host
        ),
        host.shape,
        np.dtype(np.uint8),
        "NHWC",
    )
    result = layer(queue, source).to_numpy(queue)
    return result if layout == "NHWC" else np.ascontiguousarray(result.transpose(0, 3, 1, 2))
