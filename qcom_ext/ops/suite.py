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
from qcom_ext.ops.options import ConvOptions

__all__ = ["KINDS", "SuiteLayer", "host_arrays", "prepare", "suite"]

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


def host_arrays(
    layer: SuiteLayer, batch: int = 1, dtype: Any = np.float32, seed: int = 0
) -> dict[str, np.ndarray]:
    """The random ``x`` (NCHW; NHWC uint8 for int8), ``weight`` (PyTorch's shape; (Co,
    Ci) for 1x1 and int8) and ``bias`` that :func:`prepare` gives ``layer``.

    >>> arrays = host_arrays(suite(kinds=("depthwise",))[0].scaled(0.1))
    >>> {k: v.shape for k, v in arrays.items()}
    {'bias': (32,), 'x': (1, 32, 11, 11), 'weight': (32, 1, 3, 3)}
    """
    rng = np.random.default_rng(seed)
    bias = rng.standard_normal(layer.out_channels).astype(np.float32) * 0.1
    ci, s, k = layer.in_channels, layer.size, layer.kernel
    if layer.kind == "int8":
        x = rng.integers(0, 256, (batch, s, s, ci), dtype=np.uint8)
        w = rng.integers(-128, 128, (layer.out_channels, ci), dtype=np.int8)
        return {"bias": bias, "x": x, "weight": w}
    x = rng.standard_normal((batch, ci, s, s)).astype(dtype)
    shapes = {"1x1": (layer.out_channels, ci), "depthwise": (ci, 1, k, k)}
    w = rng.standard_normal(shapes.get(layer.kind, (layer.out_channels, ci, k, k)))
    return {"bias": bias, "x": x, "weight": (w / np.sqrt(ci * k * k)).astype(np.float32)}


def prepare(
    queue: Any,
    layer: SuiteLayer,
    batch: int = 1,
    dtype: Any = np.float32,
    seed: int = 0,
    **options: Any,
) -> tuple[Any, Any]:
    """(prepared op, device input) for ``layer`` with the random weights and input of
    :func:`host_arrays`.

    conv and depthwise run on the image layout (conv with ``method="tiled"``: on NCHW
    buffers through local-memory tiles), 1x1 and int8 on NHWC buffers; the other
    ``options`` go to the op's constructor (``tile=`` for 1x1, ``pixels=`` ...).
    """
    from qcom_ext.ops._tensor import BufferTensor
    from qcom_ext.ops.conv_1x1 import Conv2d1x1
    from qcom_ext.ops.depthwise import DepthwiseConv2d
    from qcom_ext.ops.kxk import Conv2d, TiledConv2d
    from qcom_ext.ops.layout import to_image

    arrays = host_arrays(layer, batch, dtype, seed)
    x, w, bias = arrays["x"], arrays["weight"], arrays["bias"]
    conv = ConvOptions(stride=layer.stride, padding=layer.padding, activation=layer.activation)
    if layer.kind == "int8":
        return _prepare_int8(queue, layer, x, w, bias, conv, options)
    tiled = layer.kind == "conv" and options.pop("method", "image") == "tiled"
    kinds = {"1x1": Conv2d1x1, "depthwise": DepthwiseConv2d, "conv": Conv2d}
    make = TiledConv2d if tiled else kinds[layer.kind]
    op = make(queue, w, bias, options=conv, dtype=dtype, **options)
    if layer.kind == "1x1":
        nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        return op, BufferTensor.from_numpy(queue.context, nhwc, "NHWC")
    if tiled:
        return op, BufferTensor.from_numpy(queue.context, x, "NCHW")
    return op, to_image(queue, x)


def _prepare_int8(
    queue: Any,
    layer: SuiteLayer,
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray,
    conv: ConvOptions,
    options: dict[str, Any],
) -> tuple[Any, Any]:
    from qcom_ext.ops._tensor import BufferTensor
    from qcom_ext.ops.conv_int8 import Conv2dInt8, Quantisation

    quantisation = Quantisation(
        input_scale=0.02,
        input_zero_point=128,
        weight_scale=0.01 / np.sqrt(layer.in_channels),
        output_scale=0.05,
        out_dtype=np.int8,
    )
    op = Conv2dInt8(queue, w, bias, quantisation=quantisation, options=conv, **options)
    return op, BufferTensor.from_numpy(queue.context, x, "NHWC")
