"""Evaluate the accelerated-image builtins at arbitrary points, for tests and selftest.

:class:`PointOps` builds one small program per context whose kernels call
``qcom_convolve_imagef`` / ``qcom_box_filter_imagef`` / ``qcom_block_match_sadf/ssdf``
once per coordinate of a buffer and return float4 results, so any coordinate (fractional,
outside the image) can be compared with :mod:`qcom_ext.reference.accelerated`.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> ops = PointOps(ctx)
>>> image = upload(ctx, np.arange(4 * 4 * 4, dtype=np.float32).reshape(4, 4, 4))
>>> ops.box_filter(queue, image, (1.0, 1.0), [(2.0, 1.0)])  # a 1x1 box: pixel (2, 1)
array([[24., 25., 26., 27.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qcom_ext.ext.accelerated.rgba import empty_rgba_image as empty
from qcom_ext.ext.accelerated.rgba import read_rgba_image as download
from qcom_ext.ext.accelerated.rgba import rgba_image as upload
from qcom_ext.ext.accelerated.rgba import rgba_supported as supports
from qcom_ext.ext.accelerated.weights import WeightImage, box_size
from qcom_ext.ext.program.launch import copy, enqueue
from qcom_ext.ext.program.shared import shared_program

__all__ = ["SOURCE_FILE", "PointOps", "download", "empty", "supports", "upload"]

#: The kernels, in ``kernels/``.
SOURCE_FILE = "accelerated_points.cl"


class PointOps:
    """The builtins evaluated once per coordinate (see the module docstring)."""

    def __init__(self, context: Any) -> None:
        import pyopencl as cl

        self.context = context
        shared_program(context, SOURCE_FILE)  # built now: a build error raises here
        self._cl = cl

    def _sampler(self, sampler: Any) -> Any:
        from qcom_ext.ext.accelerated.whole_image import sampler as make_sampler

        return make_sampler(self.context, sampler) if isinstance(sampler, str) else sampler

    def _run(
        self, queue: Any, name: str, count: int, args: Sequence[Any], outputs: int = 1
    ) -> list[np.ndarray]:
        cl = self._cl
        buffers = [
            cl.Buffer(self.context, cl.mem_flags.WRITE_ONLY, 16 * count) for _ in range(outputs)
        ]
        # looked up each call: the program of the paths the probe gives now
        kernel = shared_program(self.context, SOURCE_FILE).kernels[name]
        enqueue(queue, kernel, (count,), None, [*args, *buffers])
        results = []
        for buffer in buffers:
            out = np.empty((count, 4), np.float32)
            copy(queue, out, buffer)
            results.append(out)
        return results

    def _coords(self, coords: Any, dtype: Any) -> Any:
        cl = self._cl
        data = np.ascontiguousarray(np.asarray(coords, dtype=dtype).reshape(-1, 2))
        return cl.Buffer(
            self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=data
        ), len(data)

    def convolve(
        self,
        queue: Any,
        image: Any,
        weights: WeightImage,
        coords: Any,
        sampler: Any = "clamp_to_edge",
    ) -> np.ndarray:
        """``qcom_convolve_imagef`` at each (x, y) of ``coords``: (N, 4) float32."""
        buffer, count = self._coords(coords, np.float32)
        args = (image, self._sampler(sampler), weights.image, buffer)
        return self._run(queue, "qe_convolve_at", count, args)[0]

    def box_filter(
        self,
        queue: Any,
        image: Any,
        size: tuple[float, float],
        coords: Any,
        sampler: Any = "clamp_to_edge",
    ) -> np.ndarray:
        """``qcom_box_filter_imagef`` at each (x, y) of ``coords``: (N, 4) float32."""
        buffer, count = self._coords(coords, np.float32)
        packed = box_size(*size, device=self.context)
        args = (image, self._sampler(sampler), packed, buffer)
        return self._run(queue, "qe_box_filter_at", count, args)[0]

    def block_match(
        self,
        queue: Any,
        target: Any,
        reference: Any,
        region: tuple[int, int],
        target_coords: Any,
        reference_coords: Any,
        sampler: Any = "clamp_to_edge",
    ) -> tuple[np.ndarray, np.ndarray]:
        """(SAD, SSD) of each target/reference coordinate pair: two (N, 4) float32."""
        import pyopencl.cltypes as cltypes

        targets, count = self._coords(target_coords, np.float32)
        references, count_r = self._coords(reference_coords, np.uint32)
        if count != count_r:
            raise ValueError(f"{count} target coordinates but {count_r} reference coordinates")
        args = (
            target,
            self._sampler(sampler),
            cltypes.make_uint2(*region),
            reference,
            targets,
            references,
        )
        sad, ssd = self._run(queue, "qe_block_match_at", count, args, outputs=2)
        return sad, ssd
