"""Oclgrind cases (tests/oclgrind_cases.py runs them, tests/oclgrind_trial.py is
the harness): every kernel of kernels/*.cl: the accelerated image ops, the conv layers,
buffer from image, downscale, the image pipeline, on-chip memory, large buffers, prefix
sum.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.cltypes as cltypes
from conv_reference import activate, assert_close, conv2d
from oclgrind_trial import MF, Mismatch, Trial, accelerated_close, case

import qcom_ext
from qcom_ext import ops
from qcom_ext._resources import kernels_dir
from qcom_ext.ext.accelerated.points import download, empty, upload
from qcom_ext.reference import accelerated as accelerated_reference

# ---- kernels/*.cl ------------------------------------------------------------------------


class AcceleratedImages:
    """kernels/accelerated_image_ops.cl through qcom_ext.image_ops: every method, 2-D and
    separable weights, blocks that overhang the image edge, both searches."""

    def __init__(self, t: Trial) -> None:
        self.t = t
        self.pixels = t.rng.random((7, 9, 4)).astype(np.float32)
        self.image, self.dst = upload(t.ctx, self.pixels), empty(t.ctx, 9, 7)
        self.grid = np.stack(np.meshgrid(np.arange(9), np.arange(7)), -1).reshape(-1, 2)

    def convolve(self) -> None:
        from qcom_ext.ext.accelerated.whole_image import METHODS

        t = self.t
        w2d = qcom_ext.WeightImage(t.ctx, t.rng.uniform(-1, 1, (3, 4)), center=(1, 2))
        wsep = qcom_ext.WeightImage(
            t.ctx, t.rng.uniform(-1, 1, (2, 3)), center=(2, 0), separable=True
        )
        for method in METHODS:
            for w in (w2d, wsep):
                qcom_ext.convolve_image(
                    t.queue,
                    self.image,
                    w,
                    self.dst,
                    sampler="clamp",
                    method=method,
                    local_size=(4, 2) if method == "tiled" else None,
                )
                want = accelerated_reference.convolve(
                    self.pixels,
                    self.grid,
                    w.weights,
                    center=w.center,
                    separable=w.separable,
                    filter_size=w.filter_size,
                    addressing="clamp",
                )
                accelerated_close(
                    t,
                    f"convolve_image {method} {w!r}",
                    download(t.queue, self.dst),
                    want.reshape(7, 9, 4),
                )

    def box_filter(self) -> None:
        from qcom_ext.ext.accelerated.whole_image import METHODS

        t = self.t
        for method in METHODS:
            qcom_ext.box_filter_image(
                t.queue,
                self.image,
                (3.0, 2.5),
                self.dst,
                method=method,
                local_size=(4, 2) if method == "tiled" else None,
            )
            want = accelerated_reference.box_filter(self.pixels, self.grid, (3.0, 2.5)).reshape(
                7, 9, 4
            )
            accelerated_close(t, f"box_filter_image {method}", download(t.queue, self.dst), want)

    def search(self) -> None:
        from qcom_ext.ext.accelerated import whole_image as image_ops

        t = self.t
        target = (t.rng.integers(0, 256, (8, 12, 4)) / 256).astype(np.float32)
        reference = np.roll(target, (1, -2), axis=(0, 1))
        for metric in ("sad", "ssd"):
            found = qcom_ext.block_match_image(
                t.queue,
                upload(t.ctx, target),
                upload(t.ctx, reference),
                region=(4, 4),
                radius=2,
                metric=metric,
            )
            vectors, costs = found.get(t.queue)
            want_vectors, want_costs = accelerated_reference.block_match_search(
                target, reference, (4, 4), 2, squared=metric == "ssd"
            )
            t.equal(f"block_match_image {metric} vectors", vectors, want_vectors)
            accelerated_close(t, f"block_match_image {metric} costs", costs, want_costs)
        # The search without local-memory tiles (taken natively, or when the window does
        # not fit), launched directly on a small window.
        kernel = image_ops._kernel(t.ctx, "qe_block_match_search", {})
        vectors, costs = t.output(8 * 6), t.output(4 * 6)
        kernel(
            t.queue,
            (3 * 32, 2),
            (32, 1),
            upload(t.ctx, target),
            upload(t.ctx, reference),
            image_ops.sampler(t.ctx, "clamp_to_edge"),
            cltypes.make_uint2(4, 4),
            np.int32(2),
            np.int32(0),
            vectors,
            costs,
            cl.LocalMemory(8 * 32),
        )
        want_vectors, want_costs = accelerated_reference.block_match_search(
            target, reference, (4, 4), 2
        )
        t.equal("qe_block_match_search vectors", t.get(vectors, (2, 3, 2), np.int32), want_vectors)
        accelerated_close(
            t, "qe_block_match_search costs", t.get(costs, (2, 3), np.float32), want_costs
        )


class BlockMatchTiles:
    """qe_block_match_tiles (the portable search, a tile of blocks a work-group) through
    qcom_ext.block_match_image against numpy: tiles the image does not fill, a reference
    of another size, radius 0 and 1, two runs a candidate row (radius 7), SSD; and local
    sizes that are no tile (each block searched alone through the builtin)."""

    def __init__(self, t: Trial) -> None:
        self.t = t
        self.target = (t.rng.integers(0, 256, (9, 13, 4)) / 256).astype(np.float32)
        moved = np.roll(self.target, (1, -2), axis=(0, 1))
        self.reference = np.full((8, 14, 4), 0.25, np.float32)
        self.reference[:, :13] = moved[:8]

    def check(self, what: str, field: Any, region: Any, radius: int, squared: bool) -> None:
        vectors, costs = field.get(self.t.queue)
        want_vectors, want_costs = accelerated_reference.block_match_search(
            self.target, self.reference, region, radius, squared=squared
        )
        self.t.equal(f"{what} vectors", vectors, want_vectors)
        self.t.equal(f"{what} costs", costs, want_costs.astype(np.float32))

    def tiles(self) -> None:
        t = self.t
        images = (upload(t.ctx, self.target), upload(t.ctx, self.reference))
        for region, radius, tile, metric in (
            ((4, 4), 1, (2, 1), "sad"),  # 3 x 2 blocks: the second tile half empty
            ((3, 2), 0, (1, 1), "ssd"),
            ((2, 2), 7, None, "sad"),  # 15 candidate columns: two runs of 8
        ):
            field = qcom_ext.block_match_image(
                t.queue, *images, region=region, radius=radius, metric=metric, tile=tile
            )
            self.check(f"tiles {region} r={radius} {tile}", field, region, radius, metric == "ssd")

    def any_local_size(self) -> None:
        from qcom_ext.ext.accelerated import whole_image as image_ops

        t = self.t
        images = (upload(t.ctx, self.target), upload(t.ctx, self.reference))
        tuning = image_ops.block_match_tuning(t.queue, *images, region=(4, 4), radius=1)
        field = tuning.plan.field(t.queue, None)
        args = [*tuning.args[:3], field.vectors, field.costs, *tuning.args[5:]]
        for local in ((1, 1), (3, 2)):  # no tile (alone); a tile of 1x2 blocks
            size = tuple(-(-g // v) * v for g, v in zip(tuning.global_size, local, strict=True))
            tuning.kernel(t.queue, size, local, *args)
            self.check(f"local size {local}", field, (4, 4), 1, False)


@case("image-reads", "freeze")
def case_accelerated_block_match_tiles(t: Trial) -> None:
    searches = BlockMatchTiles(t)
    searches.tiles()
    searches.any_local_size()


@case("image-reads", "freeze")
def case_accelerated_convolve_image(t: Trial) -> None:
    AcceleratedImages(t).convolve()


@case("shufflevector", "image-reads", "freeze")
def case_accelerated_box_filter_image(t: Trial) -> None:
    AcceleratedImages(t).box_filter()


@case("image-reads", "freeze")
def case_accelerated_block_match_image(t: Trial) -> None:
    AcceleratedImages(t).search()


@contextlib.contextmanager
def adreno_index_maths() -> Iterator[None]:
    """Build qcom_ext's programs with -DUSE_MAD24, as on Adreno (DeviceCaps.compiler_options
    adds it there only), so that index arithmetic variant runs too."""
    import qcom_ext.ext.program.build as program

    original = program.build_program

    def build(context, source, options=(), *, devices=None, defines=None):
        return original(
            context,
            source,
            options,
            devices=devices,
            defines={**(defines or {}), "USE_MAD24": True},
        )

    program.build_program = build
    try:
        yield
    finally:
        program.build_program = original


def conv_layout(t: Trial) -> None:
    x = t.rng.standard_normal((2, 5, 3, 4)).astype(np.float32)
    for dtype in (np.float32, np.float16):
        for layout in ("NCHW", "NHWC"):
            host = x.astype(dtype)
            host = host if layout == "NCHW" else np.ascontiguousarray(host.transpose(0, 2, 3, 1))
            back = ops.from_image(
                t.queue, ops.to_image(t.queue, host, layout=layout), layout=layout
            )
            t.equal(f"layout round trip {layout} {np.dtype(dtype)}", back, host)


def conv_1x1(t: Trial, variants: Any) -> None:
    for ci, co, tile, activation, dtype, stride in variants:
        x = t.rng.standard_normal((1, ci, 3, 5)).astype(np.float32)
        w = t.rng.standard_normal((co, ci)).astype(np.float32)
        b = t.rng.standard_normal(co).astype(np.float32)
        got = ops.conv2d_1x1(
            t.queue, x.astype(dtype), w, b, tile=tile, activation=activation, stride=stride
        )
        want = conv2d(x, w[:, :, None, None], b, stride=stride, activation=activation)
        t.checks += 1
        assert_close(got, want, dtype)


def conv_depthwise(t: Trial, variants: Any) -> None:
    x = t.rng.standard_normal((2, 5, 6, 7)).astype(np.float32)
    w = t.rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    for stride, dilation, activation, dtype, *block in variants:
        pixels, rows = block or (4, 1)
        got = ops.depthwise_conv2d(
            t.queue,
            x.astype(dtype),
            w,
            stride=stride,
            padding=1,
            dilation=dilation,
            activation=activation,
            pixels=pixels,
            rows=rows,
        )
        want = conv2d(
            x, w, stride=stride, padding=1, dilation=dilation, groups=5, activation=activation
        )
        t.checks += 1
        assert_close(got, want, dtype)


def conv_kxk(t: Trial, variants: Any) -> None:
    x = t.rng.standard_normal((1, 5, 5, 6)).astype(np.float32)
    w = t.rng.standard_normal((6, 5, 3, 3)).astype(np.float32)
    b = t.rng.standard_normal(6).astype(np.float32)
    for stride, dilation, activation, dtype in variants:
        got = ops.conv2d(
            t.queue,
            x.astype(dtype),
            w,
            b,
            padding=1,
            stride=stride,
            dilation=dilation,
            activation=activation,
            method="image",
        )
        want = conv2d(x, w, b, padding=1, stride=stride, dilation=dilation, activation=activation)
        t.checks += 1
        assert_close(got, want, dtype)


def conv_tiled(t: Trial, variants: Any) -> None:
    x = t.rng.standard_normal((1, 3, 6, 7)).astype(np.float32)
    w = t.rng.standard_normal((6, 3, 3, 3)).astype(np.float32)
    for block, per_item, stride, dilation, activation, dtype in variants:
        layer = ops.TiledConv2d(
            t.queue,
            w,
            padding=1,
            stride=stride,
            dilation=dilation,
            activation=activation,
            dtype=dtype,
            block=block,
            channels_per_item=per_item,
        )
        host = x.astype(dtype)
        src = ops.BufferTensor(t.buffer(host), host.shape, np.dtype(dtype), "NCHW")
        got = layer(t.queue, src).to_numpy(t.queue)
        want = conv2d(x, w, padding=1, stride=stride, dilation=dilation, activation=activation)
        t.checks += 1
        assert_close(got, want, dtype)


def conv_int8(t: Trial, variants: Any) -> None:
    for ci, signed, out_dtype, activation in variants:
        xq = t.rng.integers(0, 256, (1, 2, 3, ci), dtype=np.uint8)  # NHWC
        if signed:
            wq, wz = t.rng.integers(-128, 128, (5, ci), dtype=np.int8), 0
        else:
            wq, wz = t.rng.integers(0, 256, (5, ci), dtype=np.uint8), 100
        quantised = (
            {} if out_dtype == np.float32 else {"output_scale": 0.05, "output_zero_point": 3}
        )
        got = ops.conv2d_int8(
            t.queue,
            xq,
            wq,
            input_scale=0.02,
            input_zero_point=120,
            weight_scale=0.01,
            weight_zero_point=wz,
            out_dtype=out_dtype,
            activation=activation,
            layout="NHWC",
            **quantised,
        )
        real = (xq.astype(np.float64) - 120) @ (wq.T.astype(np.float64) - wz) * 0.02 * 0.01
        real = activate(real, activation)
        if out_dtype != np.float32:
            info = np.iinfo(out_dtype)
            real = np.clip(np.rint(real / 0.05) + 3, info.min, info.max)
            t.checks += 1
            if np.abs(got.astype(np.int64) - real).max() > 1:  # a rounding tie may differ
                raise Mismatch(f"conv2d_int8 to {np.dtype(out_dtype)}: {got} vs {real}")
        else:
            t.checks += 1
            assert_close(got, real, np.float32)


@case("image-reads")
def case_conv_images(t: Trial) -> None:
    """layout.cl, conv_depthwise.cl (4 x 1, 8 x 1 and 2 x 4 output blocks, strides and
    dilations), conv_kxk.cl; float and half."""
    conv_layout(t)
    f32, f16 = np.float32, np.float16
    conv_depthwise(
        t,
        [
            (1, 1, "relu6", f32),
            (2, 1, None, f32),
            (1, 2, "leaky_relu", f32),
            (1, 1, "relu", f16),
            (1, 1, None, f32, 8, 1),
            (2, 2, None, f32, 2, 4),
        ],
    )
    conv_kxk(
        t,
        [
            ((1, 2), 1, None, f32),
            (1, 2, "relu", f32),
            (2, 1, "relu6", f16),
            (1, 1, "leaky_relu", f32),
        ],
    )


@case()
def case_conv_buffers(t: Trial) -> None:
    """conv_1x1.cl (tiles, activations, tails, aligned loads and stores, half) and
    conv_tiled.cl (block sizes, outputs per work-item, strides, half)."""
    f32, f16 = np.float32, np.float16
    conv_1x1(
        t,
        [
            (5, 6, (2, 4), None, f32, 1),
            (5, 6, (4, 8), "relu", f32, 2),
            (5, 6, (8, 4), "relu6", f32, 1),
            (8, 8, (4, 8), "leaky_relu", f32, 1),
            (8, 6, (2, 4), "relu", f16, 1),
        ],
    )
    conv_tiled(
        t,
        [
            (4, 4, 1, 1, None, f32),
            (8, 2, 1, 1, "relu", f32),
            (4, 4, 2, 1, "leaky_relu", f32),
            (4, 4, 1, 2, "relu6", f16),
        ],
    )


@case("shufflevector")
def case_conv_int8(t: Trial) -> None:
    """conv_int8.cl: signed and unsigned weights, float / int8 / uint8 outputs, Ci with
    and without a tail."""
    conv_int8(
        t,
        [
            (7, True, np.float32, None),
            (8, False, np.float32, "relu"),
            (7, False, np.uint8, "relu6"),
            (8, True, np.int8, "leaky_relu"),
        ],
    )
    with adreno_index_maths():
        conv_int8(t, [(7, True, np.float32, None), (8, False, np.uint8, None)])


@case("image-reads")
def case_conv_mad24(t: Trial) -> None:
    """The float convolution kernels with -DUSE_MAD24, the index arithmetic of the Adreno
    path (conv_int8 runs it too)."""
    with adreno_index_maths():
        conv_layout(t)
        conv_depthwise(t, [(1, 1, None, np.float32), (2, 1, None, np.float32)])
        conv_kxk(t, [(1, 1, None, np.float32)])
        conv_1x1(t, [(5, 6, (2, 4), None, np.float32, 2)])
        conv_tiled(t, [(4, 4, 1, 1, None, np.float32)])


@case("image-reads")
def case_buffer_from_image(t: Trial) -> None:
    """kernels/buffer_from_image.cl on a qcom_ext.image_with_buffer pair (the sample's steps)."""
    from buffer_from_image import inverted, pattern

    w, h = 6, 3
    program = t.file("buffer_from_image.cl")
    pair = qcom_ext.image_with_buffer(t.ctx, (w, h), ("RGBA", "UNSIGNED_INT8"))
    program.paint(t.queue, (w, h), None, pair.image)
    pair.sync_to_buffer(t.queue)
    t.equal("paint", pair.read_buffer(t.queue), pattern(w, h))
    program.invert_rows(t.queue, (w, h), None, pair.buffer, np.uint32(pair.row_pitch))
    pair.sync_to_image(t.queue)
    packed = t.output(w * h * 4)
    program.gather(t.queue, (w, h), None, pair.image, packed, np.uint32(w))
    t.equal("invert_rows + gather", t.get(packed, (h, w, 4), np.uint8), inverted(pattern(w, h)))


@case("shufflevector", "image-reads")
def case_downscale(t: Trial) -> None:
    """kernels/downscale.cl: the 2x2 gathers and the read_imagef baseline (the sample's)."""
    from vector_image_gather import downscale, generated_image, reference

    image = generated_image(10, 6)
    for name in ("downscale2x_gather", "downscale2x_read"):
        t.close(name, downscale(t.ctx, image, name), reference(image), atol=1e-6)


@case()
def case_image_pipeline(t: Trial) -> None:
    """kernels/image_pipeline.cl, the four stages in a row (the sample's reference)."""
    from recordable_queue import generated_image, reference

    w, h = 8, 5
    image = generated_image(w, h)
    program = t.file("image_pipeline.cl")
    bright, blurred, mask, out = (cl.Buffer(t.ctx, MF.READ_WRITE, w * h) for _ in range(4))
    program.brightness_contrast(
        t.queue, (w * h,), None, t.buffer(image), bright, np.int32(300), np.int32(-20)
    )
    program.box_blur3(t.queue, (w, h), None, bright, blurred, np.int32(w), np.int32(h))
    program.threshold(t.queue, (w * h,), None, blurred, mask, np.uint8(120))
    program.highlight(t.queue, (w * h,), None, blurred, mask, out)
    t.equal("image pipeline", t.get(out, (h, w), np.uint8), reference(image, 300, -20, 120))


@case()
def case_onchip(t: Trial) -> None:
    """kernels/onchip.cl replayed through a qcom_ext.Recording (the sample's steps, less
    scrub_onchip: its fill would break the uninitialized-value check, which is the
    stronger test that a replay reads only what it wrote)."""
    from onchip_memory import reference

    n = 16
    src_host = t.rng.integers(-1000, 1000, n, dtype=np.int32)
    program = t.file("onchip.cl")
    scale_bias, smooth3 = cl.Kernel(program, "scale_bias"), cl.Kernel(program, "smooth3")
    dst = t.output(src_host.nbytes)
    staged = qcom_ext.onchip_buffer(t.ctx, src_host.nbytes)
    with qcom_ext.Recording(t.queue) as rec:
        rec.enqueue(scale_bias, (n,), None, t.buffer(src_host), staged, np.int32(1), np.int32(0))
        rec.enqueue(smooth3, (n,), None, staged, dst, np.int32(n))
    for scale, bias in ((2, -250), (3, 7)):
        event = rec.replay(t.queue, args={(0, 2): scale, (0, 3): bias})
        event.wait()
        t.equal(
            f"onchip replay {scale} {bias}",
            t.get(dst, n, np.int32),
            reference(src_host, scale, bias),
        )
    rec.release()


@case()
def case_large_buffer(t: Trial) -> None:
    """kernels/large_buffer.cl on a buffer from qcom_ext.create_large_buffer and on the
    chunks of qcom_ext.allocate_chunked (the sample's steps, on tiny sizes)."""
    from qcom_ext.tools.selftest.checks_memory import large_buffer_pattern

    n = 40
    source = (kernels_dir() / "large_buffer.cl").read_text()
    program = qcom_ext.build_program(t.ctx, source, large_buffer=True)
    fill, affine = cl.Kernel(program, "fill_pattern"), cl.Kernel(program, "affine")
    buffer = qcom_ext.create_large_buffer(t.ctx, MF.READ_WRITE, n * 4)
    fill(t.queue, (n,), None, buffer, np.uint64(0))
    affine(t.queue, (n,), None, buffer, np.uint32(0x9E3779B9), np.uint32(7))
    with np.errstate(over="ignore"):
        want = large_buffer_pattern(0, n) * np.uint32(0x9E3779B9) + np.uint32(7)
    t.equal("large buffer fill + affine", t.get(buffer, n, np.uint32), want)
    align = t.device.mem_base_addr_align // 8
    parts = qcom_ext.allocate_chunked(t.ctx, 3 * align + 12, chunk=align)
    for part in parts:
        fill(t.queue, (part.size // 4,), None, part, np.uint64(part.chunk_offset // 4))
    got = np.concatenate([t.get(p, p.size // 4, np.uint32) for p in parts])
    t.equal("chunks", got, large_buffer_pattern(0, (3 * align + 12) // 4))


@case()
def case_prefix_sum(t: Trial) -> None:
    """kernels/subgroup_prefix_sum.cl with one-lane and 8-lane emulated sub-groups (three
    blocks, the last one partial: the block sums are scanned too)."""
    from subgroup_prefix_sum import PrefixSum

    n, local = 40, 16
    values = t.rng.integers(-100, 101, n, dtype=np.int32)
    for size in (1, 8):
        scan = PrefixSum(t.ctx, local, size)
        if scan.sub_group_size() != size:
            raise Mismatch(f"sub_group_size kernel: {scan.sub_group_size()}, expected {size}")
        out = cl.Buffer(t.ctx, MF.READ_WRITE, values.nbytes)
        scan(t.buffer(values), out, n)
        scan.queue.finish()  # the sample's class has its own queue
        t.equal(f"prefix sum (S={size})", t.get(out, n, np.int32), np.cumsum(values))


@case()
def case_bench_read(t: Trial) -> None:
    """kernels/bench_read.cl: read_words reads each word once (xor folds: the sink is
    set only when work-item 3's fold, over words 3, 7, 11, ..., is the constant; a word
    read twice or skipped would change it), and empty launches."""
    import pyopencl as cl

    words = t.rng.integers(0, 2**32, size=(37, 4), dtype=np.uint32)
    mine = words[3::4]
    fold = np.bitwise_xor.reduce(mine[:-1].ravel()) ^ np.bitwise_xor.reduce(mine[-1, 1:])
    program = t.file("bench_read.cl")
    for target, want in ((0x9E3779B9, 1), (0x9E3779B8, 0)):
        words[3::4][-1, 0] = fold ^ target  # work-item 3's fold becomes `target`
        sink = cl.Buffer(t.ctx, MF.READ_WRITE | MF.COPY_HOST_PTR, hostbuf=np.zeros(1, np.uint32))
        kernel = cl.Kernel(program, "read_words")
        kernel.set_args(t.buffer(words), np.uint32(37), sink)
        cl.enqueue_nd_range_kernel(t.queue, kernel, (4,), (4,))
        t.checks += 1
        got = t.get(sink, (1,), np.uint32)[0]
        if got != want:
            raise Mismatch(f"read_words: sink {got}, expected {want} (fold {target:#x})")
    empty = cl.Kernel(program, "empty")
    empty.set_args(sink)
    cl.enqueue_nd_range_kernel(t.queue, empty, (8,), (4,))
    t.queue.finish()


@case("image-reads")
def case_bench_copy_texels(t: Trial) -> None:
    """kernels/bench_read.cl copy_texels: a 37 x 19 RGBA float image copied bit for bit
    by a 24 x 24 grid (two texels a work-item, 24 columns apart; the last work-groups
    partly outside the image)."""
    pixels = t.rng.standard_normal((19, 37, 4)).astype(np.float32)
    src = t.image(pixels)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    dst = cl.Image(t.ctx, MF.WRITE_ONLY, fmt, shape=(37, 19))
    kernel = cl.Kernel(t.file("bench_read.cl"), "copy_texels")
    kernel.set_args(src, dst)
    cl.enqueue_nd_range_kernel(t.queue, kernel, (24, 24), (8, 8))
    got = np.empty_like(pixels)
    cl.enqueue_copy(t.queue, got, dst, origin=(0, 0), region=(37, 19))
    t.equal("copy_texels", got, pixels)
