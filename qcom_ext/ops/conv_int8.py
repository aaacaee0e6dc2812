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
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._functional import run_on_host
from qcom_ext.ops._layer import Pointwise
from qcom_ext.ops._programs import kernel_for
from qcom_ext.ops._tensor import (
    BufferTensor,
    ImageTensor,
    allocate,
    check_layout,
    check_shape4,
    upload,
)
from qcom_ext.ops._weights import bias_vector
from qcom_ext.ops.options import ConvOptions, choice, settled

__all__ = ["OUT_DTYPES", "Conv2dInt8", "Quantisation", "conv2d_int8"]

_FLOAT32 = np.dtype(np.float32)
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


def _out_dtype(value: Any) -> np.dtype:
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError):
        raise ConfigError(f"out_dtype {value!r} is not one of float32, int8, uint8") from None
    if dtype not in OUT_DTYPES:
        raise ConfigError(f"out_dtype {dtype} is not one of float32, int8, uint8")
    return dtype


@dataclass(frozen=True, kw_only=True)
class Quantisation:
    """The per-tensor quantisation of a :class:`Conv2dInt8`, checked when made.

    ``real = scale * (q - zero_point)`` for the uint8 input (zero point 0..255) and the
    weights (zero point 0 for int8 weights, 0..255 for uint8 ones); ``out_dtype`` float32
    gives real values, int8 or uint8 requantise them with ``output_scale`` (then
    required) and ``output_zero_point`` (in the output type's range).

    >>> from qcom_ext import ops
    >>> q = ops.Quantisation(input_scale=0.1, input_zero_point=128, weight_scale=0.02,
    ...                      out_dtype="uint8", output_scale=0.5, output_zero_point=3)
    >>> q.out_dtype, q.accumulator_scale, q.requantisation
    (dtype('uint8'), 0.002, (2.0, 3))
    """

    input_scale: float
    input_zero_point: int
    weight_scale: float
    weight_zero_point: int = 0
    output_scale: float | None = None
    output_zero_point: int = 0
    out_dtype: np.dtype = _FLOAT32

    def __post_init__(self) -> None:
        checked: dict[str, Any] = {
            "input_scale": _scale(self.input_scale, "input_scale"),
            "weight_scale": _scale(self.weight_scale, "weight_scale"),
            "input_zero_point": _zero_point(self.input_zero_point, "input_zero_point", 0, 255),
            "weight_zero_point": _zero_point(self.weight_zero_point, "weight_zero_point", 0, 255),
            "out_dtype": _out_dtype(self.out_dtype),
        }
        if checked["out_dtype"] != np.float32:
            if self.output_scale is None:
                raise ConfigError(f"an {checked['out_dtype']} output needs output_scale")
            info = np.iinfo(checked["out_dtype"])
            checked["output_scale"] = _scale(self.output_scale, "output_scale")
            checked["output_zero_point"] = _zero_point(
                self.output_zero_point, "output_zero_point", info.min, info.max
            )
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def accumulator_scale(self) -> float:
        """The real value of one step of the int32 accumulator."""
        return self.input_scale * self.weight_scale

    @property
    def requantisation(self) -> tuple[float, int]:
        """(1 / output scale, output zero point); (1.0, 0) for a float32 output."""
        if self.out_dtype == np.float32:
            return 1.0, 0
        return 1.0 / self.output_scale, self.output_zero_point  # type: ignore[operator]


_QUANTISATION_NAMES = tuple(f.name for f in fields(Quantisation))


def pack_weights(wq: np.ndarray) -> tuple[np.ndarray, int]:
    """(Co, Ci) 8-bit weights -> uint32 words [ceil(Ci/4)][COB][4] (bytes in memory order)."""
    co, ci = wq.shape
    steps, blocks = -(-ci // 4), -(-co // 4)
    padded = np.zeros((blocks * 4, steps * 4), np.uint8)
    padded[:co, :ci] = wq.view(np.uint8)
    words = padded.reshape(blocks, 4, steps, 4).transpose(2, 0, 1, 3)  # k, cob, j, byte
    return np.ascontiguousarray(words).view(np.uint32).reshape(steps, blocks, 4), blocks


def _weights(weight: Any) -> np.ndarray:
    """The int8 or uint8 (Co, Ci) weights of ``weight`` ((Co, Ci) or (Co, Ci, 1, 1))."""
    wq = np.asarray(weight)
    if wq.ndim == 4 and wq.shape[2:] == (1, 1):
        wq = wq[:, :, 0, 0]
    if wq.ndim != 2 or 0 in wq.shape:
        raise ConfigError(
            f"int8 1x1 weight must be (Co, Ci) or (Co, Ci, 1, 1), got {np.shape(weight)}"
        )
    if wq.dtype not in (np.int8, np.uint8):
        raise ConfigError(f"int8 weight must be int8 or uint8, not {wq.dtype}")
    return wq


class Conv2dInt8(Pointwise):
    """A quantised 1x1 conv2d on NHWC uint8 :class:`BufferTensor`s (see the module).

    ``weight``: (Co, Ci) or (Co, Ci, 1, 1), int8 (then ``weight_zero_point`` must be 0)
    or uint8. The quantisation (``input_scale``, ``input_zero_point``, ``weight_scale``,
    ``weight_zero_point``, ``output_scale``, ``output_zero_point``, ``out_dtype``: float32,
    int8 or uint8) comes as keywords or as ``quantisation=``, a :class:`Quantisation`;
    the options (``stride``, ``activation``, ``negative_slope``) as keywords or as
    ``options=``, a :class:`~qcom_ext.ops.ConvOptions`. ``pixels``: output pixels per
    work-item (1, 2, 4 or 8).
    """

    takes = ("stride", "activation", "negative_slope")
    dtype = np.dtype(np.uint8)  # the input tensors'

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        pixels: int = 2,
        quantisation: Quantisation | None = None,
        options: ConvOptions | None = None,
        **settings: Any,
    ) -> None:
        given = {k: settings.pop(k) for k in list(settings) if k in _QUANTISATION_NAMES}
        q = settled(Quantisation, quantisation, given, "Conv2dInt8")
        self.take_options(options, settings)
        wq = _weights(weight)
        signed = wq.dtype == np.int8
        _zero_point(q.weight_zero_point, "weight_zero_point", 0, 0 if signed else 255)
        self.quantisation, self.out_dtype = q, q.out_dtype
        self.pixels = choice(pixels, (1, 2, 4, 8), "pixels")
        self.out_channels, self.in_channels = wq.shape
        packed, self.co_blocks = pack_weights(wq)
        bias_padded = bias_vector(bias, self.out_channels, self.co_blocks * 4)
        offset = np.zeros(self.co_blocks * 4, np.int32)
        sums = wq.astype(np.int64).sum(axis=1)
        zx, zw = q.input_zero_point, q.weight_zero_point
        offset[: self.out_channels] = -zx * sums + self.in_channels * zx * zw
        self.weights, self.bias, self.offset = (
            upload(queue.context, a) for a in (packed, bias_padded, offset)
        )
        inv_out, out_zero = q.requantisation
        self.scalars = [np.float32(q.accumulator_scale), np.int32(zw)]
        self.scalars += [np.float32(inv_out), np.int32(out_zero), self.slope]
        defines = {
            "PIX": self.pixels,
            "WEIGHTS_SIGNED": int(signed),
            "OUT_KIND": OUT_DTYPES[self.out_dtype],
            "IN_ALIGNED": int(self.in_channels % 4 == 0),
            "ACTIVATION": self.options.activation_code,
        }
        self.launcher = kernel_for(queue, queue.device, "conv_int8.cl", "conv2d_1x1_int8", defines)

    def output_for(self, queue: Any, x: BufferTensor) -> BufferTensor:
        shape = self.output_shape(x.shape)
        what = f"an NHWC {shape} {self.out_dtype.name} output"
        buffer = allocate(queue.context, math.prod(shape) * self.out_dtype.itemsize, what)
        return BufferTensor(buffer, shape, self.out_dtype, "NHWC")

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
        pixels, ints = self.pixel_args(x.shape, want)
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
    quantisation = Quantisation(
        input_scale=input_scale,
        input_zero_point=input_zero_point,
        weight_scale=weight_scale,
        weight_zero_point=weight_zero_point,
        output_scale=output_scale,
        output_zero_point=output_zero_point,
        out_dtype=out_dtype,
    )
    options = ConvOptions(stride=stride, activation=activation, negative_slope=negative_slope)
    layer = Conv2dInt8(queue, weight, bias, quantisation=quantisation, options=options)
    if isinstance(x, (ImageTensor, cl.Image)):
        raise ConfigError("conv2d_int8 works on uint8 NHWC buffers or numpy arrays")
    if isinstance(x, cl.Buffer):
        if shape is None or layout != "NHWC":
            raise ConfigError("a pyopencl Buffer needs shape= (N, H, W, C) and layout='NHWC'")
        nhwc = check_shape4(shape, "shape")
        if x.size < math.prod(nhwc):
            raise ConfigError(
                f"a uint8 {nhwc} tensor needs {math.prod(nhwc)} bytes; the buffer has {x.size}"
            )
        x = BufferTensor(x, nhwc, np.dtype(np.uint8), "NHWC")
    if isinstance(x, BufferTensor):
        return layer(queue, x)
    array = np.asarray(x)
    if array.dtype != np.uint8 or array.ndim != 4 or 0 in array.shape:
        raise ConfigError(
            f"input must be a non-empty 4-D uint8 array, got {array.dtype} {array.shape}"
        )
    return run_on_host(queue, layer, np.ascontiguousarray(array), layout, "NHWC")
