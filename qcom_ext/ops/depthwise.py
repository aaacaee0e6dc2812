"""Depthwise conv2d on the RGBA image layout (kernels/conv_depthwise.cl: MNN design,
vertical strips).

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
from qcom_ext.ops._programs import Launcher, kernel_for
from qcom_ext.ops._tensor import ImageTensor, upload
from qcom_ext.ops._variants import Plan, VariantLayer
from qcom_ext.ops._weights import bias_vector, weight_array
from qcom_ext.ops.layout import to_image
from qcom_ext.ops.options import ConvOptions, choice

__all__ = ["DepthwiseConv2d", "depthwise_conv2d"]

#: Outputs per work-item across a row the kernel can be built for (4: the MNN design).
PIXELS = (1, 2, 4, 8)
#: Output rows per work-item of the unrolled kernel (1: the MNN design).
ROWS = (1, 2, 4, 8)
#: Output rows per work-item of the sliding-window strip (``strip=True``).
STRIP_ROWS = (4, 8, 16, 32)
#: Output rows of the local-memory tile (``tiled=True``: one per work-item row).
TILE_ROWS = (4, 8, 16)
#: Work-items across a tile (each computes ``pixels`` outputs of its row).
TILE_W = 8
#: The kernel of each variant kind: 0 unrolled, 1 strip, 2 tiled.
KERNELS = ("depthwise_conv2d", "depthwise_conv2d_strip", "depthwise_conv2d_tiled")
#: The (pixels, rows, kind, weight buffer) an untuned input shape runs with.
DEFAULT = (4, 1, 0, 0)
#: The variants :meth:`DepthwiseConv2d.tune` tries (those the shape has room for): the
#: unrolled blocks of 1 and 2 rows with weights from images and from buffers (the
#: fastest on the H100: 8 x 1 or 4 x 1 with buffers, docs/ops.md), 4 rows, and strips
#: and tiles, which read fewest texels per output (and won at small sizes on pocl).
TUNE_SPACE = (
    *((p, r, 0, b) for b in (0, 1) for r in (1, 2) for p in (1, 2, 4, 8)),
    (4, 4, 0, 1),
    (8, 4, 0, 1),
    (1, 8, 1, 1),
    (2, 16, 1, 1),
    (1, 8, 2, 1),
    (2, 8, 2, 1),
)


def _pow2_at_least(value: int) -> int:
    return 1 << max(0, int(value) - 1).bit_length()


def variant_of(
    pixels: int | None, rows: int | None, strip: Any, tiled: Any, weight_buffer: Any
) -> tuple[int, int, int, int] | None:
    """The variant the layer's keywords ask for (checked), or None when none is given."""
    if all(v is None for v in (pixels, rows, strip, tiled, weight_buffer)):
        return None
    for name, flag in (("strip", strip), ("tiled", tiled), ("weight_buffer", weight_buffer)):
        if flag not in (None, True, False):
            raise ConfigError(f"{name} must be True or False, not {flag!r}")
    if strip and tiled:
        raise ConfigError("strip and tiled are two variants: ask for one")
    kind = 1 if strip else 2 if tiled else 0
    allowed = (ROWS, STRIP_ROWS, TILE_ROWS)[kind]
    return (
        choice(4 if pixels is None else pixels, PIXELS, "pixels"),
        choice((1, 8, 8)[kind] if rows is None else rows, allowed, "rows"),
        kind,
        int(bool(weight_buffer)),
    )


class DepthwiseConv2d(VariantLayer):
    """A depthwise conv2d (one filter per channel) with its weights in images.

    ``weight``: (C, 1, KH, KW) or (C, KH, KW); ``bias``: (C,) or None. The options
    (``stride``, ``padding``, ``dilation``, ``activation``, ``negative_slope``, ``dtype``:
    float32 or float16 storage of the weights and of the tensors it takes) come as
    keywords or as ``options=``, a :class:`~qcom_ext.ops.ConvOptions`. ``pixels`` x
    ``rows``: the outputs one work-item computes (:data:`PIXELS` x :data:`ROWS`, all
    unrolled); ``strip=True``: a strip of :data:`STRIP_ROWS` rows computed by a sliding
    window, each input row read once; ``tiled=True``: work-groups of :data:`TILE_W` x
    ``rows`` (:data:`TILE_ROWS`) work-items share their input region in local memory;
    ``weight_buffer=True``: the kernel reads the weights and the bias from buffers
    instead of images (no texture reads for them). With none of these given, each input
    shape runs the variant :meth:`~qcom_ext.ops._variants.VariantLayer.tune` found
    fastest for it, else :data:`DEFAULT`; unnamed ones default to 4 pixels, 1 row (8
    for a strip or a tile), images.
    """

    op_name = "depthwise_conv2d"
    files = ("conv_depthwise.cl",)

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        pixels: int | None = None,
        rows: int | None = None,
        strip: bool | None = None,
        tiled: bool | None = None,
        weight_buffer: bool | None = None,
        options: ConvOptions | None = None,
        **settings: Any,
    ) -> None:
        self.take_options(options, settings)
        self.fixed = variant_of(pixels, rows, strip, tiled, weight_buffer)
        # the variant built first
        self.pixels, self.rows, self.kind, self.weight_buffer = self.fixed or DEFAULT
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
        bias = bias_vector(bias, self.channels)
        self.bias = to_image(queue, bias.reshape(1, -1, 1, 1))
        self._host = (w, bias)  # for the weight buffers, made when a variant needs them
        self._buffers: tuple[Any, Any] | None = None
        self._context, self._device = queue.context, queue.device
        self._launchers: dict[tuple[int, ...], Launcher] = {}
        self.launcher = self.build(self.fixed or DEFAULT)

    def _defines(self) -> dict[str, Any]:
        return {**self.geometry.defines(), **self.options.defines()}

    def build(self, variant: tuple[int, ...]) -> Launcher:
        launcher = self._launchers.get(variant)
        if launcher is None:
            pixels, rows, kind, buffers = variant
            defines = {
                **self._defines(),
                "PIXELS": pixels,
                "ROWS": rows,
                "WEIGHTS_BUFFER": buffers,
            }
            defines.update(STRIP=int(kind == 1), TILED=int(kind == 2), TILE_W=TILE_W)
            launcher = kernel_for(
                self._context, self._device, "conv_depthwise.cl", KERNELS[kind], defines
            )
            self._launchers[variant] = launcher
        return launcher

    def _weight_buffers(self) -> tuple[Any, Any]:
        """The weights as float4 [CB][KH][KW] and the bias as float4 [CB], uploaded once."""
        if self._buffers is None:
            w, bias = self._host
            c, kh, kw = w.shape
            blocks = -(-c // 4)
            taps = np.zeros((blocks * 4, kh, kw), np.float32)
            taps[:c] = w
            packed = taps.reshape(blocks, 4, kh, kw).transpose(0, 2, 3, 1)
            padded = np.zeros(blocks * 4, np.float32)
            padded[:c] = bias
            self._buffers = (
                upload(self._context, np.ascontiguousarray(packed), "the depthwise weights"),
                upload(self._context, padded, "the bias"),
            )
        return self._buffers

    def allowed(self, variant: tuple[int, ...]) -> bool:
        if len(variant) != 4 or variant[0] not in PIXELS or variant[3] not in (0, 1):
            return False
        pixels, rows, kind, _ = variant
        if kind not in (0, 1, 2) or rows not in (ROWS, STRIP_ROWS, TILE_ROWS)[kind]:
            return False
        return kind != 2 or (
            TILE_W * rows <= self._device.max_work_group_size
            and 16 * self._region(pixels, rows) <= self._device.local_mem_size
        )

    def _region(self, pixels: int, rows: int) -> int:
        """Texels of the input region of a tile (the tiled kernel's local memory / 16)."""
        (kh, kw), (sh, sw), (dh, dw) = (
            self.geometry.kernel,
            self.geometry.stride,
            self.geometry.dilation,
        )
        width = (TILE_W * pixels - 1) * sw + (kw - 1) * dw + 1
        return width * ((rows - 1) * sh + (kh - 1) * dh + 1)

    def space(self, shape: Sequence[int]) -> list[tuple[int, ...]]:
        """The :data:`TUNE_SPACE` variants the device can run whose block is not larger
        than the output needs: at most the next power of two of its width across (twice
        its width for a tile), of its height down (twice its height for a strip or a
        tile)."""
        _, _, oh, ow = self.output_shape(shape)
        wide, high = _pow2_at_least(ow), _pow2_at_least(oh)
        return [
            (p, r, k, b)
            for p, r, k, b in TUNE_SPACE
            if (TILE_W * p <= 2 * ow if k == 2 else p <= wide)
            and (r <= high if k == 0 else r <= 2 * oh)
            and self.allowed((p, r, k, b))
        ]

    def default_variant(self, shape: Sequence[int]) -> tuple[int, ...]:
        return DEFAULT

    def key_options(self) -> str:
        (ph, pw) = self.geometry.padding
        settings = {**self._defines(), "C": self.channels, "PH": ph, "PW": pw}
        return " ".join(f"{k}={v}" for k, v in sorted(settings.items()))

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

    def plan(self, variant: tuple[int, ...], x: ImageTensor, out: ImageTensor) -> Plan:
        if not isinstance(x, ImageTensor) or not isinstance(out, ImageTensor):
            raise ConfigError("DepthwiseConv2d takes ImageTensors (see ops.to_image)")
        if out.shape != self.output_shape(x.shape):
            raise ConfigError(f"out has shape {out.shape}; expected {self.output_shape(x.shape)}")
        if x.dtype != self.dtype or out.dtype != self.dtype:
            raise ConfigError(
                f"tensors must be {self.dtype.name} like the layer, got "
                f"{x.dtype.name} -> {out.dtype.name}"
            )
        pixels, rows, kind, buffers = variant
        n, c, h, w = x.shape
        _, _, oh, ow = out.shape
        across = TILE_W * pixels if kind == 2 else pixels  # outputs a work-item (group) spans
        blocks, out_w_blocks = -(-c // 4), -(-ow // across)
        (ph, pw) = self.geometry.padding
        ints = (np.int32(v) for v in (w, h, ow, oh, pw, ph, blocks, out_w_blocks, n))
        weights = self._weight_buffers() if buffers else (self.weights.image, self.bias.image)
        args = [x.image, *weights, out.image, *ints, self.slope]
        if kind == 2:
            local = (TILE_W, rows)
            global_size = (out_w_blocks * blocks * TILE_W, -(-oh // rows) * n * rows)
            return self.build(variant), global_size, args, local
        global_size = (out_w_blocks * blocks, -(-oh // rows) * n)
        return self.build(variant), global_size, args, "tuned"


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
    pixels: int | None = None,
    rows: int | None = None,
    strip: bool | None = None,
    tiled: bool | None = None,
    weight_buffer: bool | None = None,
) -> Any:
    """Depthwise conv2d of ``x`` (numpy NCHW/NHWC array -> array of the same layout;
    :class:`ImageTensor` or pyopencl Image with ``shape`` -> ImageTensor).

    ``weight`` (C, 1, KH, KW), ``bias`` (C,); ``stride``, ``padding``, ``dilation``: int
    or (h, w); ``activation``: None, "relu", "relu6" or "leaky_relu" (``negative_slope``);
    ``dtype``: float32 or float16 storage for a numpy input (default: its own);
    ``pixels`` x ``rows``: the outputs one work-item computes (4 x 1: the MNN design;
    more read fewer texels per output, fewer give more work-items); ``strip``: rows is
    the length of a sliding-window strip; ``tiled``: rows is the height of a
    local-memory tile; ``weight_buffer``: weights and bias from buffers; none of them:
    the variant tuned for this shape (see :class:`DepthwiseConv2d`).
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
            queue,
            weight,
            bias,
            pixels=pixels,
            rows=rows,
            strip=strip,
            tiled=tiled,
            weight_buffer=weight_buffer,
            options=options,
            dtype=storage,
        ),
    )
