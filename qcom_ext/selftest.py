"""``qcom-ext selftest``: run the accelerated image ops on a device and check them.

Every check runs the builtins (through ``kernels/qcom_ext.h``) or the whole-image ops on
the device and compares with the float64 numpy references of :mod:`qcom_ext.hof_reference`:
the extension spec's worked examples (exact), then random filters, boxes and blocks at
fractional coordinates. On a device with the native extension the same checks run twice,
natively and with the portable code forced (``QCOM_EXT_DISABLE``), and the two results are
compared: that is where real hardware and the documented conventions could part (the
pixel-centre convention, the phase mapping, half-float weight rounding, fixed-point
coordinate arithmetic).

>>> report = run_selftest(seed=1)
>>> report.ok, {c.path for c in report.checks} <= {"native", "fallback"}
(True, True)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import hof_reference as ref
from .accelerated import EXTENSION, WeightImage
from .caps import DISABLE_ENV, DeviceCaps

__all__ = ["Check", "Comparison", "SelftestReport", "run_selftest"]


@dataclass(frozen=True)
class Check:
    """One comparison of a device result with the numpy reference."""

    name: str
    path: str
    max_error: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return bool(self.max_error <= self.tolerance)


@dataclass(frozen=True)
class Comparison:
    """Native against portable on the same inputs (native devices only)."""

    name: str
    max_difference: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return bool(self.max_difference <= self.tolerance)


@dataclass
class SelftestReport:
    """Checks per path, native-vs-portable comparisons, and why anything was skipped."""

    device: str
    extension_path: str
    checks: list[Check] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    skipped: str = ""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks) and all(c.ok for c in self.comparisons)

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "extension_path": self.extension_path,
            "ok": self.ok,
            "skipped": self.skipped,
            "checks": [{**asdict(c), "ok": c.ok} for c in self.checks],
            "comparisons": [{**asdict(c), "ok": c.ok} for c in self.comparisons],
        }


@contextlib.contextmanager
def _portable_forced() -> Iterator[None]:
    saved = os.environ.get(DISABLE_ENV)
    names = {n for n in (saved or "").split(",") if n.strip()} | {EXTENSION}
    os.environ[DISABLE_ENV] = ",".join(sorted(names))
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(DISABLE_ENV, None)
        else:
            os.environ[DISABLE_ENV] = saved


Results = dict[str, tuple[np.ndarray, np.ndarray, float]]
Case = Callable[[Any, Any, np.random.Generator], tuple[np.ndarray, np.ndarray, float]]


def _grid(width: int, height: int) -> np.ndarray:
    return np.stack(np.meshgrid(np.arange(width), np.arange(height)), -1).reshape(-1, 2)


def _cases() -> dict[str, Case]:
    """name -> case(context, queue, rng) -> (device result, reference, tolerance)."""
    from ._hof_points import PointOps, download, empty, upload
    from .image_ops import block_match_image, box_filter_image, convolve_image

    points: dict[int, PointOps] = {}

    def ops(ctx: Any) -> PointOps:
        return points.setdefault(int(ctx.int_ptr), PointOps(ctx))

    def spec_convolution(ctx, queue, rng):
        y, x = np.mgrid[0:4, 0:7].astype(np.float32)
        pixels = np.stack([x, y, x + 10 * y, np.ones_like(x)], -1)
        image, got, want = upload(ctx, pixels), [], []
        for j in range(3):
            for i in range(4):
                taps = np.zeros((3, 4))
                taps[j, i] = 1.0
                w = WeightImage(ctx, taps, center=(1, 1))
                got.append(ops(ctx).convolve(queue, image, w, [(4.0, 2.0)])[0])
                want.append(pixels[1 + j, 3 + i])
        return np.array(got), np.array(want), 0.0

    def convolution_2d_phases(ctx, queue, rng):
        pixels = rng.random((19, 23, 4)).astype(np.float32)
        w = WeightImage(ctx, rng.uniform(-1, 1, (4, 5, 5)), center=(2, 1))
        coords = rng.uniform(-3, 25, (64, 2)).astype(np.float32)
        got = ops(ctx).convolve(queue, upload(ctx, pixels), w, coords, "clamp")
        want = ref.convolve(pixels, coords, w.weights, center=w.center, addressing="clamp")
        return got, want, 1e-4

    def convolution_separable_phases(ctx, queue, rng):
        pixels = rng.random((19, 23, 4)).astype(np.float32)
        weights = rng.uniform(-1, 1, (2, 2, 7))
        weights[:, 1, 3:] = 0
        w = WeightImage(ctx, weights, center=(3, 1), separable=True, filter_size=(7, 3))
        coords = rng.uniform(-3, 25, (64, 2)).astype(np.float32)
        got = ops(ctx).convolve(queue, upload(ctx, pixels), w, coords, "clamp_to_edge")
        want = ref.convolve(pixels, coords, w.weights, center=w.center, separable=True,
                            filter_size=(7, 3))  # fmt: skip
        return got, want, 1e-4

    def spec_box(ctx, queue, rng):
        got = np.zeros((4, 4))
        for y in range(4):
            for x in range(4):
                pixels = np.zeros((4, 4, 4), np.float32)
                pixels[y, x] = 1.0
                out = ops(ctx).box_filter(queue, upload(ctx, pixels), (2.0, 2.0), [(1.0, 1.0)])
                got[y, x] = out[0, 0] * 4
        want = np.zeros((4, 4))
        want[:3, :3] = [[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]]
        return got, want, 0.0

    def box_fractional(ctx, queue, rng):
        pixels = rng.random((17, 21, 4)).astype(np.float32)
        coords = rng.uniform(-2, 22, (64, 2)).astype(np.float32)
        size = (3.3, 2.6)
        got = ops(ctx).box_filter(queue, upload(ctx, pixels), size, coords, "clamp")
        return got, ref.box_filter(pixels, coords, size, "clamp"), 1e-5

    def spec_block_match(ctx, queue, rng):
        target = rng.random((4, 5, 4)).astype(np.float32)
        reference = rng.random((4, 8, 4)).astype(np.float32)
        sad, ssd = ops(ctx).block_match(queue, upload(ctx, target), upload(ctx, reference),
                                        (3, 3), [(1.0, 0.0)], [(4, 1)])  # fmt: skip
        d = target[0:3, 1:4].astype(np.float64) - reference[1:4, 4:7]
        want = np.stack([np.abs(d).sum(axis=(0, 1)), (d * d).sum(axis=(0, 1))])
        return np.stack([sad[0], ssd[0]]), want, 1e-5

    def block_match_random(ctx, queue, rng):
        target = rng.random((20, 24, 4)).astype(np.float32)
        reference = rng.random((20, 24, 4)).astype(np.float32)
        tcoords = rng.uniform(0, 16, (32, 2)).astype(np.float32)
        rcoords = rng.integers(0, 16, (32, 2)).astype(np.uint32)
        sad, ssd = ops(ctx).block_match(queue, upload(ctx, target), upload(ctx, reference),
                                        (8, 4), tcoords, rcoords)  # fmt: skip
        want = np.concatenate([ref.block_match(target, reference, tcoords, (8, 4), rcoords),
                               ref.block_match(target, reference, tcoords, (8, 4), rcoords,
                                               squared=True)])  # fmt: skip
        return np.concatenate([sad, ssd]), want, 1e-4

    def whole_image(ctx, queue, rng):
        pixels = rng.random((27, 33, 4)).astype(np.float32)
        image, dst = upload(ctx, pixels), empty(ctx, 33, 27)
        w = WeightImage(ctx, rng.uniform(-1, 1, (5, 5)), center=(2, 2))
        convolve_image(queue, image, w, dst)
        got = [download(queue, dst)]
        want = [ref.convolve(pixels, _grid(33, 27), w.weights, center=(2, 2)).reshape(27, 33, 4)]
        box_filter_image(queue, image, (7.0, 7.0), dst)
        got.append(download(queue, dst))
        want.append(ref.box_filter(pixels, _grid(33, 27), (7.0, 7.0)).reshape(27, 33, 4))
        return np.stack(got), np.stack(want), 1e-4

    def block_search(ctx, queue, rng):
        target = (rng.integers(0, 256, (32, 40, 4)) / 256).astype(np.float32)
        reference = np.roll(target, (1, 2), axis=(0, 1))
        field_ = block_match_image(queue, upload(ctx, target), upload(ctx, reference),
                                   region=(8, 8), radius=3)  # fmt: skip
        vectors, _ = field_.get(queue)
        want, _ = ref.block_match_search(target, reference, (8, 8), 3)
        return vectors.astype(np.float64), want.astype(np.float64), 0.0

    return {
        "convolve: spec 4x3 filter, centre (1, 1), at (4, 2)": spec_convolution,
        "convolve: 2-D 5x5, 2x2 phases, fractional coords": convolution_2d_phases,
        "convolve: separable 7x3, 2 phases": convolution_separable_phases,
        "box: spec 2x2 box at (1, 1)": spec_box,
        "box: 3.3x2.6 at fractional coords": box_fractional,
        "block match: spec region (3, 3)": spec_block_match,
        "block match: random 8x4 SAD/SSD": block_match_random,
        "whole image: 5x5 convolve, 7x7 box": whole_image,
        "whole image: 8x8 block search": block_search,
    }


def _run(
    caps: DeviceCaps, seed: int
) -> tuple[str, dict[str, tuple[np.ndarray, np.ndarray, float]]]:
    import pyopencl as cl

    from .probe import probe

    current = probe(caps.device_id)  # the path under the current QCOM_EXT_DISABLE
    context = cl.Context([current.device()])
    queue = cl.CommandQueue(context)
    results = {}
    for name, case in _cases().items():
        results[name] = case(context, queue, np.random.default_rng(seed))
    return current.path(EXTENSION), results


def run_selftest(device: Any = None, *, seed: int = 0) -> SelftestReport:
    """Run the checks on ``device`` (a pyopencl.Device, handle or None: the default)."""
    from .probe import probe

    caps = probe(device)
    report = SelftestReport(caps.label, caps.path(EXTENSION))
    if report.extension_path == "unavailable":
        report.skipped = caps.status(EXTENSION).reason
        return report
    runs = [_run(caps, seed)]
    if report.extension_path == "native":
        with _portable_forced():
            runs.append(_run(caps, seed))
    return _fill(report, runs)


def _fill(report: SelftestReport, runs: list[tuple[str, Results]]) -> SelftestReport:
    """Checks from each run; with two runs (native, portable), their comparison."""
    for path, results in runs:
        for name, (got, want, tolerance) in results.items():
            error = float(np.max(np.abs(np.asarray(got, np.float64) - want)))
            report.checks.append(Check(name, path, error, tolerance))
    if len(runs) == 2:
        for name, (native, _, tolerance) in runs[0][1].items():
            portable = runs[1][1][name][0]
            difference = float(np.max(np.abs(np.asarray(native, np.float64) - portable)))
            report.comparisons.append(Comparison(name, difference, tolerance))
    return report
