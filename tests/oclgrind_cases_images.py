"""Oclgrind cases (tests/oclgrind_cases.py runs them, tests/oclgrind_trial.py is
the harness): compat-header builtins on images: vector image reads and writes, the
builtins that must fail to build, bicubic, NV12, the accelerated-image builtins at points.
"""

from __future__ import annotations

import re

import _oclgrind
import numpy as np
import pyopencl as cl
from oclgrind_trial import (
    FP16_PRAGMA,
    MF,
    RGBA_FLOAT,
    Trial,
    accelerated_close,
    case,
    compiler_fp16,
)

import qcom_ext
from qcom_ext._resources import kernels_dir
from qcom_ext.ext.accelerated.points import PointOps, upload
from qcom_ext.ext.images import yuv
from qcom_ext.reference import accelerated as accelerated_reference
from qcom_ext.reference.bicubic import bicubic, upscale2x

VECTOR_READ_KINDS = {
    "f": ("float", np.float32, cl.channel_type.UNORM_INT8, np.uint8),
    "ui": ("uint", np.uint32, cl.channel_type.UNSIGNED_INT16, np.uint16),
    "i": ("int", np.int32, cl.channel_type.SIGNED_INT32, np.int32),
    "h": ("half", np.float16, cl.channel_type.UNORM_INT8, np.uint8),
}


def vector_read_source(kinds: list[str]) -> str:
    """read_<kind>: per coordinate, compid 0..3 of the 2x2 and of the 4x1 read, then one
    out-of-range compid each (9 and -1: component 3)."""
    kernels = [FP16_PRAGMA] if "h" in kinds else []
    for kind in kinds:
        type_name = VECTOR_READ_KINDS[kind][0]
        reads = [f"r[{c}] = qcom_read_image{kind}_2x2(im, s, p, {c});" for c in range(4)]
        reads += [f"r[{4 + c}] = qcom_read_image{kind}_4x1(im, s, p, {c});" for c in range(4)]
        reads += [
            f"r[8] = qcom_read_image{kind}_2x2(im, s, p, 9);",
            f"r[9] = qcom_read_image{kind}_4x1(im, s, p, -1);",
        ]
        kernels.append(
            f"__kernel void read_{kind}(read_only image2d_t im, sampler_t s, "
            f"__global const float2 *c, __global {type_name}4 *o)\n"
            "{ size_t g = get_global_id(0); float2 p = c[g];\n"
            f"  __global {type_name}4 *r = o + 10 * g;\n  " + "\n  ".join(reads) + " }"
        )
    return "\n".join(kernels)


@case("shufflevector", "image-reads")
def case_vector_image_reads(t: Trial) -> None:
    from test_vector_image_ops import model

    h, w = 4, 5
    coords = np.array(
        [(2.5, 0.5), (3.0, 1.0), (0.2, 0.3), (4.9, 3.7), (-0.8, 2.2), (5.6, -0.4), (1.25, 3.5)],
        np.float32,
    )
    kinds = [kind for kind in VECTOR_READ_KINDS if kind != "h" or compiler_fp16(t)]
    for normalized, modes in (
        (False, ("clamp", "clamp_to_edge")),
        (True, ("repeat", "mirrored_repeat")),
    ):
        defines = {"QCOM_EXT_VECTOR_IMAGE_NORMALIZED_COORDS": True} if normalized else {}
        program = t.program(vector_read_source(kinds), **defines)
        points = coords / np.float32([w, h]) if normalized else coords
        for kind in kinds:
            _, result_dtype, channel_type, data_dtype = VECTOR_READ_KINDS[kind]
            info = np.iinfo(data_dtype)
            data = t.rng.integers(
                max(info.min, -1000), min(info.max, 1000), (h, w, 4), endpoint=True
            ).astype(data_dtype)
            image = t.image(data, cl.ImageFormat(cl.channel_order.RGBA, channel_type))
            for mode in modes:
                sampler = cl.Sampler(
                    t.ctx,
                    normalized,
                    getattr(cl.addressing_mode, mode.upper()),
                    cl.filter_mode.NEAREST,
                )
                out = t.output(len(points) * 10 * 4 * np.dtype(result_dtype).itemsize)
                cl.Kernel(program, f"read_{kind}")(
                    t.queue, (len(points),), None, image, sampler, t.buffer(points), out
                )
                got = t.get(out, (len(points), 10, 4), result_dtype)
                model_kind = "f" if kind == "h" else kind
                want = np.stack([model(data, model_kind, p, mode, normalized) for p in points])
                want = np.concatenate([want[:, 0], want[:, 1], want[:, 0, 3:], want[:, 1, 3:]], 1)
                t.close(
                    f"qcom_read_image{kind} {mode}",
                    got,
                    want.astype(result_dtype),
                    atol=0,
                    rtol=1e-6,
                )


VECTOR_WRITES = """
__kernel void writes_T(write_only image2d_t y, write_only image2d_t uv, __global const T *v)
{
    int i = get_global_id(0);
    __global const T *p = v + 8 * i;
    T two[2] = {p[0], p[1]};
    T four[4] = {p[2], p[3], p[4], p[5]};
    T quad[4] = {p[6], p[7], p[0], p[2]};
    T2 pair[2] = {(T2)(p[1], p[3]), (T2)(p[5], p[7])};
    qcom_write_imageXv_2x1_n8n00(y, (int2)(4 * i, 0), two);
    qcom_write_imageXv_4x1_n8n00(y, (int2)(4 * i, 1), four);
    qcom_write_imageXv_2x2_n8n00(y, (int2)(4 * i, 2), quad);
    qcom_write_imageXv_2x1_n8n01(uv, (int2)(2 * i, 0), pair);
}
"""


@case("shufflevector")
def case_vector_image_writes(t: Trial) -> None:
    """The NV12 plane writes, float and (where the compiler has cl_khr_fp16) half."""
    order = cl.channel_order
    variants = [("float", "f", np.float32)] + [("half", "h", np.float16)] * compiler_fp16(t)
    source = "".join(
        VECTOR_WRITES.replace("T", name).replace("X", letter) for name, letter, _ in variants
    )
    program = t.program((FP16_PRAGMA if len(variants) > 1 else "") + source)
    for name, letter, dtype in variants:
        y = cl.create_image(
            t.ctx,
            MF.READ_WRITE | MF.COPY_HOST_PTR,
            cl.ImageFormat(order.R, cl.channel_type.UNORM_INT8),
            shape=(8, 4),
            hostbuf=np.zeros((4, 8), np.uint8),
        )
        uv = cl.create_image(
            t.ctx,
            MF.WRITE_ONLY,
            cl.ImageFormat(order.RG, cl.channel_type.UNORM_INT8),
            shape=(4, 1),
        )
        # multiples of 1/16 up to 15/16: exact in half, and k/16*255 rounds to one byte
        steps = t.rng.integers(0, 16, (2, 8))
        cl.Kernel(program, f"writes_{name}")(
            t.queue, (2,), None, y, uv, t.buffer((steps / 16).astype(dtype))
        )
        values = np.rint(steps / 16 * 255).astype(np.uint8)
        want_y = np.zeros((4, 8), np.uint8)
        want_uv = np.zeros((1, 4, 2), np.uint8)
        for i, p in enumerate(values):
            x = 4 * i
            want_y[0, x : x + 2] = p[0:2]
            want_y[1, x : x + 4] = p[2:6]
            want_y[2:4, x : x + 2] = [[p[6], p[7]], [p[0], p[2]]]
            want_uv[0, 2 * i : 2 * i + 2] = [[p[1], p[3]], [p[5], p[7]]]
        got_y, got_uv = np.empty_like(want_y), np.empty_like(want_uv)
        cl.enqueue_copy(t.queue, got_y, y, origin=(0, 0), region=(8, 4))
        cl.enqueue_copy(t.queue, got_uv, uv, origin=(0, 0), region=(4, 1))
        t.equal(f"qcom_write_image{letter}v_*_n8n00 (Y plane)", got_y, want_y)
        t.equal(f"qcom_write_image{letter}v_2x1_n8n01 (UV plane)", got_uv, want_uv)


def error_builtins() -> dict[str, str]:
    """Builtins the compat header defines as a call of an undeclared qcom_ext_error_*
    function (directly or through another macro): name -> that function."""
    headers = [kernels_dir() / "qcom_ext.h", *sorted((kernels_dir() / "compat").glob("*.h"))]
    text = _oclgrind._code("\n".join(h.read_text() for h in headers))
    expands = dict(re.findall(r"#\s*define\s+(\w+)\([^)]*\)\s*(\w+)\(", text))

    def error(name: str) -> str | None:
        seen = set()
        while name in expands and name not in seen:
            seen.add(name)
            name = expands[name]
        return name if name.startswith("qcom_ext_error_") else None

    return {
        name: found for name in expands if (found := error(name)) and not name.startswith("QCOM")
    }


@case(check_api=False)  # a failed build is an API error
def case_build_errors(t: Trial) -> None:
    """Off Adreno the packed-format writes, and without cl_khr_fp16 the half variants,
    are build errors that name the reason (nothing to run)."""
    fp16 = compiler_fp16(t)
    for builtin, expected in sorted(error_builtins().items()):
        if fp16 and "fp16" in expected:
            continue  # then they are functions, run elsewhere
        if "read_image" in builtin:
            call = f"{builtin}(im, s, (float2)(0.5f, 0.5f), 0)"
        else:
            call = f"{builtin}(out, (int2)(0, 0), c)"
        t.build_error(
            builtin,
            "__kernel void k(read_only image2d_t im, sampler_t s, "
            f"write_only image2d_t out) {{ float c[4] = {{0}}; {call}; }}",
            expected,
        )


BICUBIC_TEXELS = """
__kernel void sample(read_only image2d_t im, sampler_t s, __global const float2 *c,
                     __global float4 *o)
{ size_t i = get_global_id(0); o[i] = qcom_read_imagef_bicubic(im, s, c[i]); }
"""
BICUBIC_ADRENO = """
#pragma OPENCL EXTENSION cl_qcom_filter_bicubic : enable
__kernel void adreno(read_only image2d_t im, __global const float2 *c, __global float4 *o)
{
    const sampler_t s = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP | QCOM_CLK_FILTER_BICUBIC;
    size_t i = get_global_id(0);
    o[i] = read_imagef(im, s, c[i]);
}
"""


@case("image-reads")
def case_bicubic(t: Trial) -> None:
    h, w = 4, 6
    pixels = t.rng.random((h, w, 4), dtype=np.float32)
    src = t.image(pixels)
    program = t.file("bicubic.cl", QCOM_EXT_BICUBIC_NORMALIZED=1)
    sampler = qcom_ext.create_sampler(t.ctx, normalized=True, addressing="clamp")
    for name, args, size in (
        ("upscale2x", (src, sampler), (2 * w, 2 * h)),
        ("upscale2x_blocks", (src,), (w, h)),
    ):
        dst = cl.create_image(t.ctx, MF.WRITE_ONLY, RGBA_FLOAT, shape=(2 * w, 2 * h))
        cl.Kernel(program, name)(t.queue, size, None, *args, dst)
        got = np.empty((2 * h, 2 * w, 4), np.float32)
        cl.enqueue_copy(t.queue, got, dst, origin=(0, 0), region=(2 * w, 2 * h))
        t.close(name, got, upscale2x(pixels), atol=2e-5)
    points = t.rng.uniform(-1.5, 7.5, (12, 2)).astype(np.float32)
    out = t.output(16 * len(points))
    texel_sampler = qcom_ext.create_sampler(t.ctx, normalized=False, addressing="clamp_to_edge")
    t.program(BICUBIC_TEXELS, QCOM_EXT_BICUBIC_NORMALIZED=0).sample(
        t.queue, (len(points),), None, src, texel_sampler, t.buffer(points), out
    )
    want = bicubic(pixels, points, addressing="clamp_to_edge")
    t.close(
        "qcom_read_imagef_bicubic (texels)",
        t.get(out, (len(points), 4), np.float32),
        want,
        atol=2e-5,
    )
    program = t.program(
        BICUBIC_ADRENO, QCOM_EXT_BICUBIC_NORMALIZED=1, QCOM_EXT_BICUBIC_READ_IMAGEF=True
    )
    program.adreno(t.queue, (len(points),), None, src, t.buffer(points / np.float32([w, h])), out)
    t.close(
        "read_imagef made bicubic",
        t.get(out, (len(points), 4), np.float32),
        bicubic(pixels, points),
        atol=2e-5,
    )


@case("shufflevector", "image-reads")
def case_nv12(t: Trial) -> None:
    """kernels/nv12_to_rgba.cl on the planes qcom_ext.Nv12Image makes, then on the other
    chroma layout (CL_RG, or CL_R with interleaved U,V bytes)."""
    w, h = 8, 4
    kernel = cl.Kernel(t.file("nv12_to_rgba.cl"), "nv12_to_rgba")
    r8 = cl.ImageFormat(cl.channel_order.R, cl.channel_type.UNORM_INT8)
    rg8 = cl.ImageFormat(cl.channel_order.RG, cl.channel_type.UNORM_INT8)
    for full_range in (False, True):
        frame = yuv.rgb_to_nv12(yuv.test_pattern(w, h), full_range=full_range)
        image = qcom_ext.nv12_image(t.ctx, (w, h))
        image.write(t.queue, frame)
        y, chroma = frame[:h], frame[h:]
        other = (
            t.image(chroma.reshape(h // 2, w)[..., None], r8)
            if image.uv_layout == "rg"
            else t.image(chroma.reshape(h // 2, w // 2, 2), rg8)
        )
        for layout, planes in (
            (image.uv_layout, image.kernel_args),
            ("the other layout", (t.image(y[..., None], r8), other)),
        ):
            out = t.output(4 * w * h)
            kernel(
                t.queue, (w, h), None, *planes, out, np.int32(w), np.int32(h), np.int32(full_range)
            )
            rgba = t.get(out, (h, w, 4), np.uint8)
            want = yuv.nv12_to_rgb(frame, full_range=full_range)
            t.close(
                f"nv12_to_rgba ({layout}, full range {full_range})",
                rgba[..., :3],
                want,
                atol=1,
                rtol=0,
            )
            t.equal("alpha", rgba[..., 3], np.full((h, w), 255, np.uint8))


class AcceleratedPoints:
    """The accelerated-image builtins at points: inside and outside the image, fractional
    coordinates, every addressing mode where defined (qcom_ext.ext.accelerated.points)."""

    def __init__(self, t: Trial) -> None:
        self.t = t
        self.pixels = t.rng.random((7, 9, 4)).astype(np.float32)
        self.image, self.points = upload(t.ctx, self.pixels), PointOps(t.ctx)
        outside = np.array([(-2.5, 1.25), (8.75, 6.5), (4.0, 3.0), (0.3, -1.6)], np.float32)
        self.inside = np.array([(2.0, 2.0), (3.5, 4.25), (7.9, 3.1)], np.float32)
        self.modes = (("clamp", outside), ("clamp_to_edge", outside), ("none", self.inside))

    def convolve(self) -> None:
        t = self.t
        w2d = qcom_ext.WeightImage(t.ctx, t.rng.uniform(-1, 1, (4, 3, 2)), center=(1, 2))
        wsep = qcom_ext.WeightImage(
            t.ctx, t.rng.uniform(-1, 1, (2, 2, 3)), center=(2, 0), separable=True
        )
        for addressing, coords in self.modes:
            for w in (w2d, wsep):
                got = self.points.convolve(t.queue, self.image, w, coords, addressing)
                want = accelerated_reference.convolve(
                    self.pixels,
                    coords,
                    w.weights,
                    center=w.center,
                    separable=w.separable,
                    filter_size=w.filter_size,
                    addressing=addressing,
                )
                accelerated_close(t, f"qcom_convolve_imagef {addressing} {w!r}", got, want)

    def box_filter(self) -> None:
        for addressing, coords in self.modes:
            coords = coords if addressing != "none" else self.inside[:1] + 1
            got = self.points.box_filter(self.t.queue, self.image, (2.5, 1.75), coords, addressing)
            want = accelerated_reference.box_filter(self.pixels, coords, (2.5, 1.75), addressing)
            accelerated_close(self.t, f"qcom_box_filter_imagef {addressing}", got, want)

    def block_match(self) -> None:
        for addressing, coords in self.modes:
            rcoords = np.array([(0, 0), (6, 3), (1, 4), (2, 2)][: len(coords)], np.uint32)
            if addressing == "none":
                coords = np.array([(0, 0), (5.5, 3.9), (1, 1)], np.float32)
            sad, ssd = self.points.block_match(
                self.t.queue, self.image, self.image, (3, 3), coords, rcoords, addressing
            )
            for squared, got in ((False, sad), (True, ssd)):
                want = accelerated_reference.block_match(
                    self.pixels,
                    self.pixels,
                    coords,
                    (3, 3),
                    rcoords,
                    squared=squared,
                    addressing=addressing,
                )
                name = "ssdf" if squared else "sadf"
                accelerated_close(self.t, f"qcom_block_match_{name} {addressing}", got, want)


@case("image-reads")
def case_accelerated_points_convolve(t: Trial) -> None:
    AcceleratedPoints(t).convolve()


@case("shufflevector", "image-reads")
def case_accelerated_points_box_filter(t: Trial) -> None:
    AcceleratedPoints(t).box_filter()


@case("image-reads")
def case_accelerated_points_block_match(t: Trial) -> None:
    AcceleratedPoints(t).block_match()
