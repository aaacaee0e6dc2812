"""What every prepared convolution layer shares: its options, launching and tuning."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops._programs import Launcher
from qcom_ext.ops._tensor import check_contexts
from qcom_ext.ops.options import OPTION_NAMES, ConvOptions
from qcom_ext.ops.tuning import TuningResult, tune_report

__all__ = ["Layer", "Pointwise"]


class Layer(ABC):
    """A convolution with its weights on the device and its kernel built.

    Subclasses call :meth:`take_options` first, set ``launcher`` and implement
    ``output_for(queue, x)`` (a new output tensor) and ``launch_args(x, out)`` ->
    (global size, kernel arguments).
    """

    #: The :class:`ConvOptions` fields the layer uses; the others keep their defaults.
    takes: ClassVar[tuple[str, ...]] = OPTION_NAMES
    options: ConvOptions
    launcher: Launcher

    def take_options(self, options: ConvOptions | None, settings: Mapping[str, Any]) -> None:
        """Set ``options``: the given :class:`ConvOptions` with the keyword ``settings``
        replacing its fields (see :meth:`ConvOptions.of`)."""
        self.options = ConvOptions.of(options, settings, type(self).__name__, self.takes)

    @functools.cached_property
    def context(self) -> Any:
        """The pyopencl Context the layer was built on (its kernel's)."""
        return self.launcher.kernel.context

    @property
    def dtype(self) -> np.dtype:
        """The storage of the weights and of the tensors the layer takes."""
        return self.options.dtype

    @property
    def slope(self) -> np.float32:
        """The leaky ReLU slope, as the kernels take it."""
        return self.options.slope

    @abstractmethod
    def output_for(self, queue: Any, x: Any) -> Any:
        """A new output tensor for input ``x``."""

    @abstractmethod
    def launch_args(self, x: Any, out: Any) -> tuple[Sequence[int], list[Any]]:
        """(global size, kernel arguments) for ``x`` -> ``out`` (checked)."""

    def __call__(self, queue: Any, x: Any, out: Any = None, *, local_size: Any = "tuned") -> Any:
        """Enqueue on ``queue``; returns ``out`` (a new tensor when None).

        ``local_size``: "tuned" (the cached tuning, else the driver's choice), None (the
        driver's choice) or a tuple.
        """
        global_size, args, out = self._prepared(queue, x, out)
        self.launcher(queue, global_size, *args, local_size=local_size)
        return out

    def _prepared(self, queue: Any, x: Any, out: Any) -> tuple[Sequence[int], list[Any], Any]:
        """(global size, kernel arguments, output) of a launch on ``queue``: the queue,
        ``x`` and ``out`` (new when None) checked against the layer's context and device."""
        where = f"this {type(self).__name__}"
        launcher, context = self.launcher, self.context
        if queue.context != context:
            raise ConfigError(
                f"queue belongs to another context than {where} (a layer runs on queues "
                "of the context it was built on)"
            )
        if queue.device != launcher.device:
            raise ConfigError(
                f"queue is on {queue.device.name.strip()!r}; {where} was built for "
                f"{launcher.device.name.strip()!r}"
            )
        if out is None:
            out = self.output_for(queue, x)
        global_size, args = self.launch_args(x, out)
        check_contexts(context, where, input=x, out=out)
        return global_size, args, out

    def global_size(self, x: Any, out: Any) -> tuple[int, ...]:
        return tuple(self.launch_args(x, out)[0])

    def tune(self, queue: Any, x: Any, out: Any = None, **options: Any) -> TuningResult:
        """Tune the local size for this input shape (see :func:`qcom_ext.tune`); later
        calls with the same shapes use the result."""
        global_size, args, out = self._prepared(queue, x, out)
        return tune_report(
            self.launcher.kernel,
            global_size,
            args,
            queue=queue,
            pad_global=True,
            identity=self.launcher.identity,
            **options,
        )


class Pointwise(Layer):
    """A 1x1 conv on NHWC buffers (:class:`Conv2d1x1`, :class:`Conv2dInt8`): strided,
    ``in_channels`` -> ``out_channels`` in ``co_blocks`` blocks of 4 output channels."""

    takes = ("stride", "activation", "negative_slope", "dtype")
    in_channels: int
    out_channels: int
    co_blocks: int

    @property
    def stride(self) -> tuple[int, int]:
        return self.options.stride

    def output_shape(self, nhwc: Sequence[int]) -> tuple[int, int, int, int]:
        """NHWC output shape for an NHWC input shape."""
        n, h, w, c = nhwc
        if c != self.in_channels:
            raise ConfigError(
                f"input has {c} channels; this {type(self).__name__} takes {self.in_channels}"
            )
        sh, sw = self.stride
        return n, (h - 1) // sh + 1, (w - 1) // sw + 1, self.out_channels

    def pixel_args(self, nhwc: Sequence[int], out: Sequence[int]) -> tuple[int, list[Any]]:
        """(output pixels, the kernel's int arguments) for an ``nhwc`` input and output."""
        n, h, w, c = nhwc
        _, oh, ow, co = out
        pixels = n * oh * ow
        sizes = (h, w, c, co, oh, ow, *self.stride, pixels, self.co_blocks)
        return pixels, [np.int32(v) for v in sizes]
