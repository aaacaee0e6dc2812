"""Small accelerated-image-op cases for tests/test_oclgrind_hof.py to run under Oclgrind.

Runs on the device PYOPENCL_CTX names: the builtins at points (inside and outside the
image, fractional coordinates, every addressing mode where defined) and the whole-image
kernels (blocked and per-pixel, a block that overhangs the image edge, the search with
its local-memory reduction), each checked against the numpy references. Prints "OK".
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext import hof_reference
from qcom_ext._hof_points import PointOps, download, empty, upload


def close(a, b, what):
    if not np.allclose(a, b, rtol=1e-4, atol=1e-4):
        raise SystemExit(f"{what}: mismatch, max error {np.abs(a - b).max()}")


def main() -> None:
    caps = qcom_ext.probe()
    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(0)
    pixels = rng.random((7, 9, 4)).astype(np.float32)
    image = upload(ctx, pixels)
    ops = PointOps(ctx)

    w2d = qcom_ext.WeightImage(ctx, rng.uniform(-1, 1, (4, 3, 2)), center=(1, 2))
    wsep = qcom_ext.WeightImage(ctx, rng.uniform(-1, 1, (2, 2, 3)), center=(2, 0),
                                separable=True)  # fmt: skip
    outside = np.array([(-2.5, 1.25), (8.75, 6.5), (4.0, 3.0), (0.3, -1.6)], np.float32)
    inside = np.array([(2.0, 2.0), (3.5, 4.75), (7.9, 3.1)], np.float32)
    for addressing, coords in (("clamp", outside), ("clamp_to_edge", outside), ("none", inside)):
        for w in (w2d, wsep):
            got = ops.convolve(queue, image, w, coords, addressing)
            want = hof_reference.convolve(pixels, coords, w.weights, center=w.center,
                                          separable=w.separable, filter_size=w.filter_size,
                                          addressing=addressing)  # fmt: skip
            close(got, want, f"convolve {addressing} {w!r}")
        box_coords = coords if addressing != "none" else inside[:1] + 1
        got = ops.box_filter(queue, image, (2.5, 1.75), box_coords, addressing)
        close(got, hof_reference.box_filter(pixels, box_coords, (2.5, 1.75), addressing),
              f"box {addressing}")  # fmt: skip
        rcoords = np.array([(0, 0), (6, 3), (1, 4), (2, 2)][: len(coords)], np.uint32)
        tcoords = coords if addressing != "none" else np.array([(0, 0), (5.5, 3.9), (1, 1)],
                                                                np.float32)  # fmt: skip
        sad, ssd = ops.block_match(queue, image, image, (3, 3), tcoords, rcoords, addressing)
        for squared, got in ((False, sad), (True, ssd)):
            want = hof_reference.block_match(pixels, pixels, tcoords, (3, 3), rcoords,
                                             squared=squared, addressing=addressing)  # fmt: skip
            close(got, want, f"block match {addressing} squared={squared}")

    grid = np.stack(np.meshgrid(np.arange(9), np.arange(7)), -1).reshape(-1, 2)
    dst = empty(ctx, 9, 7)
    for method in qcom_ext.image_ops.METHODS:
        for w in (w2d, wsep):
            qcom_ext.convolve_image(
                queue,
                image,
                w,
                dst,
                sampler="clamp",
                method=method,
                local_size=(4, 2) if method == "tiled" else None,
            )
            want = hof_reference.convolve(pixels, grid, w.weights, center=w.center,
                                          separable=w.separable, filter_size=w.filter_size,
                                          addressing="clamp")  # fmt: skip
            close(download(queue, dst), want.reshape(7, 9, 4), f"convolve_image {method} {w!r}")
        qcom_ext.box_filter_image(queue, image, (3.0, 2.5), dst, method=method)
        want = hof_reference.box_filter(pixels, grid, (3.0, 2.5)).reshape(7, 9, 4)
        close(download(queue, dst), want, f"box_filter_image {method}")
    target = (rng.integers(0, 256, (12, 16, 4)) / 256).astype(np.float32)
    reference = np.roll(target, (1, -2), axis=(0, 1))
    field = qcom_ext.block_match_image(queue, upload(ctx, target), upload(ctx, reference),
                                       region=(4, 4), radius=2)  # fmt: skip
    vectors, costs = field.get(queue)
    want_vectors, want_costs = hof_reference.block_match_search(target, reference, (4, 4), 2)
    if not (np.array_equal(vectors, want_vectors) and np.allclose(costs, want_costs)):
        raise SystemExit("block_match_image: mismatch")
    queue.finish()
    print("OK")


if __name__ == "__main__":
    main()
