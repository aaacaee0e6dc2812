"""What every prepared convolution layer shares: launching and tuning."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from qcom_ext.ops._programs import Launcher
from qcom_ext.ops.tuning import TuningResult, tune_report

__all__ = ["Layer"]


class Layer(ABC):
    """A convolution with its weights on the device and its kernel built.

    Subclasses set ``launcher`` and implement ``output_for(queue, x)`` (a new output
    tensor) and ``launch_args(x, out)`` -> (global size, kernel arguments).
    """

    launcher: Launcher

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
        if out is None:
            out = self.output_for(queue, x)
        global_size, args = self.launch_args(x, out)
        self.launcher(queue, global_size, *args, local_size=local_size)
        return out

    def global_size(self, x: Any, out: Any) -> tuple[int, ...]:
        return tuple(self.launch_args(x, out)[0])

    def tune(self, queue: Any, x: Any, out: Any = None, **options: Any) -> TuningResult:
        """Tune the local size for this input shape (see :func:`qcom_ext.tune`); later
        calls with the same shapes use the result."""
        if out is None:
            out = self.output_for(queue, x)
        global_size, args = self.launch_args(x, out)
        return tune_report(
            self.launcher.kernel,
            global_size,
            args,
            queue=queue,
            pad_global=True,
            identity=self.launcher.identity,
            **options,
        )
