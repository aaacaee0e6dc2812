"""The convolution suite: MobileNetV2 layer shapes (224 x 224 input), used by
``qcom-ext tune`` and the convolution benchmarks.

>>> [layer.name for layer in suite(kinds=("depthwise",))][:3]
['dw32_s1_112', 'dw96_s2_112', 'dw144_s1_56']
>>> suite(scale=0.25)[0].size, suite()[0].flops(batch=1) / 1e6   # conv0 at 56 / 224
(56, 21.676032)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError

__all__ = ["KINDS", "SuiteLayer", "prepare", "suite"]

KINDS = ("conv", "depthwise", "1x1", "int8")


@dataclass(frozen=True)
class SuiteLayer:
    """One convolution of the suite, at batch N: N x ``in_channels`` x ``size`` x ``size``."""

    name: str
    kind: str  # one of KINDS
    in_channels: int
    out_channels: int
    size: int
    kernel: int = 1
    stride: int = 1
    activation: str | None = "relu6"

    @property
    def padding(self) -> int:
        return self.kernel // 2

    @property
    def out_size(self) -> int:
        return (self.size + 2 * self.padding - self.kernel) // self.stride + 1

    def flops(self, batch: int) -> float:
        """Multiply-adds x 2 (a depthwise layer has one input channel per output)."""
        per_output = (
            self.kernel * self.kernel * (1 if self.kind == "depthwise" else self.in_channels)
        )
        return 2.0 * batch * self.out_channels * self.out_size**2 * per_output

    def bytes_moved(self, batch: int, itemsize: int = 4) -> float:
        """Input + output tensor bytes (the least a layer reads and writes)."""
        elements = batch * (self.in_channels * self.size**2 + self.out_channels * self.out_size**2)
        return float(elements * itemsize)

    def scaled(self, scale: float) -> SuiteLayer:
        size = max(self.kernel, round(self.size * scale))
        return SuiteLayer(
            self.name,
            self.kind,
            self.in_channels,
            self.out_channels,
            size,
            self.kernel,
            self.stride,
            self.activation,
        )


def _layers() -> list[SuiteLayer]:
    conv = [SuiteLayer("conv0_3x3_s2", "conv", 3, 32, 224, kernel=3, stride=2)]
    depthwise = [
        SuiteLayer(f"dw{c}_s{s}_{size}", "depthwise", c, c, size, kernel=3, stride=s)
        for c, s, size in (
            (32, 1, 112),
            (96, 2, 112),
            (144, 1, 56),
            (144, 2, 56),
            (192, 1, 28),
            (192, 2, 28),
            (384, 1, 14),
            (576, 1, 14),
            (576, 2, 14),
            (960, 1, 7),
        )
    ]
    pointwise = [
        SuiteLayer(f"pw{ci}_{co}_{size}", "1x1", ci, co, size, activation=act)
        for ci, co, size, act in (
            (32, 16, 112, None),
            (16, 96, 112, "relu6"),
            (96, 24, 56, None),
            (24, 144, 56, "relu6"),
            (144, 32, 28, None),
            (32, 192, 28, "relu6"),
            (192, 64, 14, None),
            (64, 384, 14, "relu6"),
            (96, 576, 14, "relu6"),
            (576, 160, 7, None),
            (160, 960, 7, "relu6"),
            (320, 1280, 7, "relu6"),
        )
    ]
    int8 = [
        SuiteLayer(
            f"q{layer.name}",
            "int8",
            layer.in_channels,
            layer.out_channels,
            layer.size,
            activation=layer.activation,
        )
        for layer in pointwise
        if layer.name in ("pw24_144_56", "pw64_384_14", "pw320_1280_7")
    ]
    return conv + depthwise + pointwise + int8


def suite(kinds: Iterable[str] = KINDS, scale: float = 1.0) -> list[SuiteLayer]:
    """The suite's layers of ``kinds``, spatial sizes multiplied by ``scale``."""
    kinds = tuple(kinds)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ConfigError(f"unknown layer kind(s) {sorted(unknown)}; expected {KINDS}")
    if not 0 < scale <= 4:
        raise ConfigError(f"scale must be in (0, 4], not {scale}")
    return [layer.scaled(scale) for layer in _layers() if layer.kind in kinds]


def prepare(
    queue: Any,
    layer: SuiteLayer,
    batch: int = 1,
    dtype: Any = np.float32,
    seed: int = 0,
    **options: Any,
) -> tuple[Any, Any]:
    """(prepared op, device input) for ``layer`` with random weights and input.

    conv and depthwise run on the image layout, 1x1 and int8 on NHWC buffers; ``options``
    go to the op's constructor (``tile=`` for 1x1, ``pixels=`` ...).
    """
    import pyopencl as cl

    from qcom_ext.ops._tensor import BufferTensor
    from qcom_ext.ops.conv_1x1 import Conv2d1x1
    from qcom_ext.ops.conv_int8 import Conv2dInt8
    from qcom_ext.ops.depthwise import DepthwiseConv2d
    from qcom_ext.ops.kxk import Conv2d
    from qcom_ext.ops.layout import to_image

    rng = np.random.default_rng(seed)
    n, ci, co, s, k = batch, layer.in_channels, layer.out_channels, layer.size, layer.kernel
    scale = 1.0 / np.sqrt(ci * k * k)
    bias = rng.standard_normal(co).astype(np.float32) * 0.1
    mf = cl.mem_flags
    if layer.kind == "int8":
        x = rng.integers(0, 256, (n, s, s, ci), dtype=np.uint8)
        w = rng.integers(-128, 128, (co, ci), dtype=np.int8)
        op = Conv2dInt8(
            queue,
            w,
            bias,
            input_scale=0.02,
            input_zero_point=128,
            weight_scale=0.01 * scale,
            output_scale=0.05,
            output_zero_point=0,
            out_dtype=np.int8,
            stride=layer.stride,
            activation=layer.activation,
            **options,
        )
        buf = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        return op, BufferTensor(buf, x.shape, np.dtype(np.uint8), "NHWC")
    x = rng.standard_normal((n, ci, s, s)).astype(dtype)
    if layer.kind == "1x1":
        w = (rng.standard_normal((co, ci)) * scale).astype(np.float32)
        op = Conv2d1x1(
            queue,
            w,
            bias,
            stride=layer.stride,
            activation=layer.activation,
            dtype=dtype,
            **options,
        )
        nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        buf = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=nhwc)
        return op, BufferTensor(buf, nhwc.shape, nhwc.dtype, "NHWC")
    if layer.kind == "depthwise":
        w = (rng.standard_normal((ci, 1, k, k)) * scale).astype(np.float32)
        op = DepthwiseConv2d(
            queue,
            w,
            bias,
            stride=layer.stride,
            padding=layer.padding,
            activation=layer.activation,
            dtype=dtype,
            **options,
        )
    else:
        w = (rng.standard_normal((co, ci, k, k)) * scale).astype(np.float32)
        op = Conv2d(
            queue,
            w,
            bias,
            stride=layer.stride,
            padding=layer.padding,
            activation=layer.activation,
            dtype=dtype,
            **options,
        )
    return op, to_image(queue, x)
