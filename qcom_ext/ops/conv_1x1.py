"""1x1 conv2d on NHWC buffers: register tiles (kernels/conv_1x1.cl, MACE design) or a
GEMM staged through local memory (kernels/conv_1x1_staged.cl).

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
from qcom_ext.ops._programs import Launcher, kernel_for
from qcom_ext.ops._tensor import BufferTensor, upload
from qcom_ext.ops._variants import Plan, VariantLayer
from qcom_ext.ops._weights import bias_vector, weight_array
from qcom_ext.ops.options import ConvOptions, is_int

__all__ = ["GROUPS", "TILES", "Conv2d1x1", "conv2d_1x1", "default_tile"]

#: Register tiles a work-item may own: (output pixels, output channels).
TILES = tuple((p, c) for p in (1, 2, 4, 8) for c in (4, 8))
#: Work-groups of the staged kernel (kernels/conv_1x1_staged.cl): (pixel rows, channel
#: columns) of work-items; a group computes (rows x tile pixels) x (columns x tile
#: channels) outputs from local memory.
GROUPS = ((4, 16), (8, 8), (8, 16), (16, 8), (16, 16))
#: Variants :meth:`Conv2d1x1.tune` tries (where the shape has room for their tiles):
#: (pixels, channels, group rows, group columns), group (0, 0) for the register kernel.
TUNE_SPACE = (
    (2, 4, 0, 0),
    (4, 4, 0, 0),
    (4, 8, 0, 0),
    (8, 8, 0, 0),
    (2, 4, 8, 8),
    (4, 4, 8, 8),
    (8, 4, 8, 8),
    (8, 8, 8, 8),
    (4, 4, 8, 16),
    (8, 4, 8, 16),
    (4, 8, 16, 8),
    (8, 8, 16, 16),
)

#: The variant an untuned shape runs on GPUs other than Adreno: on the H100 it was the
#: fastest variant or within 1.3x of it at every MobileNetV2 1x1 shape (docs/ops.md).
STAGED_DEFAULT = (4, 4, 8, 8)


def default_tile(device: Any) -> tuple[int, int]:
    """(2, 4), MACE's tile, on Adreno and CPUs; (4, 8) on other GPUs, whose larger
    register files pay back the extra reuse."""
    from qcom_ext.device.probe import probe

    caps = probe(device)
    if caps.is_adreno or caps.device_type != "gpu":
        return 2, 4
    return 4, 8


def _checked_pair(value: Any, allowed: tuple[tuple[int, int], ...], what: str) -> tuple[int, int]:
    """``value`` checked against ``allowed`` (ints only: (2.0, 4) would become a
    -DPIX=2.0 build)."""
    ints = isinstance(value, (tuple, list)) and all(is_int(v) for v in value)
    checked = tuple(int(v) for v in value) if ints else None
    if checked not in allowed:
        raise ConfigError(f"{what} {value!r} is not one of {allowed}")
    return checked  # type: ignore[return-value]


def tile_of(tile: Any, device: Any) -> tuple[int, int]:
    """``tile`` checked against :data:`TILES`; :func:`default_tile` for None."""
    return default_tile(device) if tile is None else _checked_pair(tile, TILES, "tile")


def pack_weights(w: np.ndarray, cov: int, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """(Co, Ci) weights -> [ceil(Ci/4)][COB][4 ci][4 co] and COB (a multiple of ``cov``)."""
    co, ci = w.shape
    steps = -(-ci // 4)
    blocks = -(-co // (4 * cov)) * cov  # ceil(Co/4) rounded up to a multiple of cov
    padded = np.zeros((steps * 4, blocks * 4), np.float64)
    padded[:ci, :co] = w.T
    packed = padded.reshape(steps, 4, blocks, 4).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(packed, dtype=dtype), blocks


def pack_rows(w: np.ndarray, depth: int, width: int, dtype: np.dtype) -> np.ndarray:
    """(Co, Ci) weights -> [KP][CP] (row k: the Co weights of input channel k), zero
    beyond; KP = Ci rounded up to ``depth``, CP = Co rounded up to ``width``."""
    co, ci = w.shape
    padded = np.zeros((-(-ci // depth) * depth, -(-co // width) * width), dtype)
    padded[:ci, :co] = w.T
    return padded


def depth_of(in_channels: int) -> int:
    """Input channels per step of the staged kernel: 16, or Ci rounded up to 4 below."""
    return min(16, -(-in_channels // 4) * 4)


class Conv2d1x1(VariantLayer, Pointwise):
    """A 1x1 conv2d on NHWC :class:`BufferTensor`s with its weights packed on the device.

    ``weight``: (Co, Ci) or (Co, Ci, 1, 1); ``bias``: (Co,) or None. ``tile``: (pixels,
    channels) per work-item from :data:`TILES`; ``group``: None for the register-tile
    kernel (kernels/conv_1x1.cl, MACE), or (rows, columns) from :data:`GROUPS` for the
    staged GEMM (kernels/conv_1x1_staged.cl: work-groups of rows x columns work-items
    share input and weight tiles in local memory). With neither given, each input shape
    runs the variant :meth:`~qcom_ext.ops._variants.VariantLayer.tune` found fastest for
    it (:data:`TUNE_SPACE`), else the register kernel with :func:`default_tile`; a
    ``group`` alone takes the tile (4, 4). The options (``stride``: int or (h, w),
    ``activation``, ``negative_slope``, ``dtype``: float32 or float16 storage) come as
    keywords or as ``options=``, a :class:`~qcom_ext.ops.ConvOptions`.
    """

    op_name = "conv2d_1x1"
    files = ("conv_1x1.cl", "conv_1x1_staged.cl")

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        tile: tuple[int, int] | None = None,
        group: tuple[int, int] | None = None,
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
        self._w = w
        self._bias = bias_vector(bias, self.out_channels)
        self._context, self._device = queue.context, queue.device
        self.fixed = None
        if tile is not None or group is not None:
            pixels, channels = (4, 4) if tile is None and group else tile_of(tile, queue.device)
            rows, columns = (0, 0) if group is None else _checked_pair(group, GROUPS, "group")
            self.fixed = (pixels, channels, rows, columns)
        self._packed: dict[tuple[int, ...], tuple[Any, Any, int]] = {}
        self._launchers: dict[tuple[int, ...], Launcher] = {}
        first = self.fixed or self.default_variant(())
        self.tile, self.group = first[:2], (first[2:] if first[2] else None)
        self.weights, self.bias, self.co_blocks = self._device_weights(first)
        self.launcher = self.build(first)

    def _device_weights(self, variant: tuple[int, ...]) -> tuple[Any, Any, int]:
        """(weights, bias, the kernel's last int argument) of ``variant``, uploaded once
        per packing: blocks of 4 x 4 for the register kernel (and COB), rows for the
        staged one (and their padded length CP)."""
        _, channels, rows, columns = variant
        if rows:
            key: tuple[Any, ...] = ("rows", depth_of(self.in_channels), columns * channels)
        else:
            key = ("blocks", channels // 4)
        if key not in self._packed:
            if rows:
                packed = pack_rows(self._w, key[1], key[2], self.dtype)
                last = length = packed.shape[1]
            else:
                packed, last = pack_weights(self._w, key[1], self.dtype)
                length = last * 4
            self._packed[key] = (
                upload(self._context, packed, "the 1x1 weights"),
                upload(
                    self._context, bias_vector(self._bias, self.out_channels, length), "the bias"
                ),
                last,
            )
        return self._packed[key]

    def _defines(self) -> dict[str, Any]:
        return {
            **self.options.defines(),
            "IN_ALIGNED": int(self.in_channels % 4 == 0),
            "OUT_ALIGNED": int(self.out_channels % 4 == 0),
        }

    def build(self, variant: tuple[int, ...]) -> Launcher:
        launcher = self._launchers.get(variant)
        if launcher is None:
            pixels, channels, rows, columns = variant
            defines = {**self._defines(), "PIX": pixels, "COV": channels // 4}
            if rows:
                defines.update(GROUP_X=columns, GROUP_Y=rows, DEPTH=depth_of(self.in_channels))
                where = ("conv_1x1_staged.cl", "conv2d_1x1_staged")
            else:
                where = ("conv_1x1.cl", "conv2d_1x1")
            launcher = kernel_for(self._context, self._device, *where, defines)
            self._launchers[variant] = launcher
        return launcher

    def allowed(self, variant: tuple[int, ...]) -> bool:
        if len(variant) != 4 or tuple(variant[:2]) not in TILES:
            return False
        group = tuple(variant[2:])
        if group == (0, 0):
            return True
        return group in GROUPS and group[0] * group[1] <= self._device.max_work_group_size

    def space(self, shape: Sequence[int]) -> list[tuple[int, ...]]:
        """The :data:`TUNE_SPACE` variants the device can run whose work-group tile has
        no more than twice the pixels and the channels the output has."""
        n, oh, ow, co = self.output_shape(shape)
        return [
            v
            for v in TUNE_SPACE
            if self.allowed(v)
            and v[0] * max(1, v[2]) <= 2 * n * oh * ow
            and v[1] * max(1, v[3]) <= 2 * -(-co // 4) * 4
        ]

    def default_variant(self, shape: Sequence[int]) -> tuple[int, ...]:
        """:data:`STAGED_DEFAULT` where :func:`default_tile` is (4, 8) (GPUs but Adreno)
        and the device runs its work-group, else the register kernel with that tile."""
        tile = default_tile(self._device)
        if tile == (4, 8) and self.allowed(STAGED_DEFAULT):
            return STAGED_DEFAULT
        return (*tile, 0, 0)

    def key_options(self) -> str:
        settings = {**self._defines(), "CI": self.in_channels, "CO": self.out_channels}
        return " ".join(f"{k}={v}" for k, v in sorted(settings.items()))

    def output_for(self, queue: Any, x: BufferTensor) -> BufferTensor:
        return BufferTensor.empty(queue.context, self.output_shape(x.shape), self.dtype, "NHWC")

    def plan(self, variant: tuple[int, ...], x: BufferTensor, out: BufferTensor) -> Plan:
        for name, t in (("input", x), ("out", out)):
            if not isinstance(t, BufferTensor) or t.layout != "NHWC":
                raise ConfigError(f"Conv2d1x1 takes NHWC BufferTensors; {name} is not one")
            if t.dtype != self.dtype:
                raise ConfigError(f"{name} is {t.dtype.name}; the layer stores {self.dtype.name}")
        want = self.output_shape(x.shape)
        if out.shape != want:
            raise ConfigError(f"out has shape {out.shape}; expected {want} (NHWC)")
        weights, bias, last = self._device_weights(variant)
        pixels, ints = self.pixel_args(x.shape, want)
        ints[-1] = np.int32(last)
        per_item, channels, rows, columns = variant
        args = [x.buffer, weights, bias, out.buffer, *ints, self.slope]
        if rows:  # the staged GEMM: CP / TN groups across, one per TM pixels down
            groups = (last // (columns * channels), -(-pixels // (rows * per_item)))
            global_size = (groups[0] * columns, groups[1] * rows)
            return self.build(variant), global_size, args, (columns, rows)
        global_size = (last // (channels // 4), -(-pixels // per_item))
        return self.build(variant), global_size, args, "tuned"


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
    group: tuple[int, int] | None = None,
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
        lambda storage: Conv2d1x1(
            queue, weight, bias, tile=tile, group=group, options=options, dtype=storage
        ),
    )
