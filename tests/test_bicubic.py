"""cl_qcom_filter_bicubic: create_sampler and qcom_read_imagef_bicubic against numpy.

The kernel-side read is compared with ``qcom_ext.reference.bicubic`` (the guide's formula in
float64), itself checked on hand-computed values; hypothesis draws images, coordinates,
coordinate spaces and addressing modes. The native sampler is checked through the fake
Adreno driver (clCreateSampler callbacks), the native kernel path by preprocessing.
"""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pyopencl as cl
import pytest
from compat_helpers import preprocess, whole
from fakes.driver import (
    DEVICE,
    FakeCLObject,
    addr,
    adreno740_device_info,
    cstr,
    fake_driver,
    platform_info,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import CLError, ConfigError, ExtensionUnavailable, QcomExtWarning
from qcom_ext.binding.lib import C, ffi
from qcom_ext.ext.images import sampler as sampler_module
from qcom_ext.reference.bicubic import bicubic, catmull_rom_weights

SOURCE = """
__kernel void sample(read_only image2d_t image, sampler_t sampler,
                     __global const float2 *coords, __global float4 *out)
{
    size_t i = get_global_id(0);
    out[i] = qcom_read_imagef_bicubic(image, sampler, coords[i]);
}
"""
ADRENO_SOURCE = """
#pragma OPENCL EXTENSION cl_qcom_filter_bicubic : enable
__kernel void sample(read_only image2d_t image, sampler_t sampler,
                     __global const float2 *coords, __global float4 *out)
{
    size_t i = get_global_id(0);
    out[i] = read_imagef(image, sampler, coords[i]);
}
__kernel void sample_literal(read_only image2d_t image, __global const float2 *coords,
                             __global float4 *out)
{
    const sampler_t s = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP | QCOM_CLK_FILTER_BICUBIC;
    size_t i = get_global_id(0);
    out[i] = read_imagef(image, s, coords[i]);
}
"""
RGBA_FLOAT = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)


def test_reference_weights_and_values():
    """The numpy reference itself, on values computed by hand from the guide."""
    np.testing.assert_array_equal(catmull_rom_weights(0.0), [0, 1, 0, 0])
    np.testing.assert_array_equal(catmull_rom_weights(0.5), [-0.0625, 0.5625, 0.5625, -0.0625])
    np.testing.assert_allclose(
        catmull_rom_weights(0.25), [-0.0703125, 0.8671875, 0.2265625, -0.0234375]
    )
    a = np.linspace(0, 1, 11)
    np.testing.assert_allclose(catmull_rom_weights(a).sum(-1), 1.0)  # a partition of unity
    image = np.arange(20.0).reshape(4, 5, 1)
    # x = 2.25 (a = 0.75), y = 1.5 (b = 0): texels x0..3 = 0..3 of row 1 (5 6 7 8)
    w = catmull_rom_weights(0.75)
    assert bicubic(image, [(2.25, 1.5)])[0, 0] == pytest.approx(w @ [5, 6, 7, 8])
    # clamp: texel x = -1 is the border colour
    assert bicubic(image, [(1.0, 1.5)])[0, 0] == pytest.approx(
        0.5625 * 5 + 0.5625 * 6 - 0.0625 * 7
    )


def _require_images(caps) -> None:
    if not caps.image_support:
        pytest.skip(f"{caps.label} has no image support (CL_DEVICE_IMAGE_SUPPORT 0)")


class Bicubic:
    """A built sampling kernel on one context, run on host images and coordinates."""

    def __init__(self, context, source=SOURCE, defines=None, kernel="sample"):
        self.context = context
        self.queue = cl.CommandQueue(context)
        self.program = qcom_ext.build_program(context, source, defines=defines)
        self.kernel = cl.Kernel(self.program, kernel)

    def image(self, pixels: np.ndarray, fmt=RGBA_FLOAT) -> cl.Image:
        h, w = pixels.shape[:2]
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        return cl.create_image(
            self.context, flags, fmt, shape=(w, h), hostbuf=np.ascontiguousarray(pixels)
        )

    def run(self, image: cl.Image, sampler, coords: np.ndarray) -> np.ndarray:
        coords = np.ascontiguousarray(coords, np.float32)
        mf = cl.mem_flags
        coord_buf = cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=coords)
        out_buf = cl.Buffer(self.context, mf.WRITE_ONLY, 16 * len(coords))
        args = (
            (image, coord_buf, out_buf)
            if sampler is None
            else (image, sampler, coord_buf, out_buf)
        )
        self.kernel.set_args(*args)
        cl.enqueue_nd_range_kernel(self.queue, self.kernel, (len(coords),), None)
        out = np.empty((len(coords), 4), np.float32)
        cl.enqueue_copy(self.queue, out, out_buf)
        return out


def make_sampler(context, normalized: bool, addressing: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QcomExtWarning)
        return qcom_ext.create_sampler(context, normalized=normalized, addressing=addressing)


def tolerance(pixels: np.ndarray) -> float:
    return 2e-5 * max(1.0, float(np.abs(pixels).max()))


@pytest.mark.parametrize("normalized", [False, True], ids=["texel", "normalized"])
def test_golden_points(device_caps, kernel_context, normalized):
    _require_images(device_caps)
    run = Bicubic(kernel_context, defines={"QCOM_EXT_BICUBIC_NORMALIZED": int(normalized)})
    pixels = np.random.default_rng(5).uniform(-1, 1, (6, 7, 4)).astype(np.float32)
    image = run.image(pixels)
    points = np.array(
        [
            (2.5, 3.5),
            (3.0, 3.5),
            (2.5, 2.0),
            (0.5, 0.5),
            (1.0, 1.5),
            (6.9, 5.9),
            (-3.0, 2.5),
            (2.25, 4.75),
        ],
        np.float64,
    )
    scale = np.array([7.0, 6.0]) if normalized else np.ones(2)
    out = run.run(image, make_sampler(kernel_context, normalized, "clamp"), points / scale)
    assert np.allclose(out[0], pixels[3, 2], atol=1e-6)  # a texel centre: that texel
    halfway = (
        -0.0625 * pixels[3, 1]
        + 0.5625 * pixels[3, 2]
        + 0.5625 * pixels[3, 3]
        - 0.0625 * pixels[3, 4]
    )
    assert np.allclose(out[1], halfway, atol=1e-6)
    assert np.allclose(out[6], 0.0)  # far outside: only border texels
    np.testing.assert_allclose(out, bicubic(pixels, points), atol=tolerance(pixels))


BORDER_PROBE = """
__kernel void border(read_only image2d_t image, sampler_t sampler, __global float4 *out)
{ out[0] = read_imagef(image, sampler, (float2)(-10.5f, -10.5f)); }
"""


def device_border(context, image, sampler) -> np.ndarray:
    """The border colour the device gives ``image`` through ``sampler`` (a plain read)."""
    queue = cl.CommandQueue(context)
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 16)
    qcom_ext.build_program(context, BORDER_PROBE).border(queue, (1,), None, image, sampler, out)
    host = np.empty(4, np.float32)
    cl.enqueue_copy(queue, host, out)
    return host


def test_border_colour_is_the_devices(device_caps, kernel_context):
    """Outside texels are the border colour of the image's channel order, as the device
    reads it (OpenCL: (0, 0, 0, 1) for CL_R; pocl 3.1 gives (0, 0, 0, 0))."""
    _require_images(device_caps)
    run = Bicubic(kernel_context, defines={"QCOM_EXT_BICUBIC_NORMALIZED": 0})
    red = np.random.default_rng(1).uniform(0, 1, (5, 5)).astype(np.float32)
    image = run.image(red, cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT))
    sampler = make_sampler(kernel_context, False, "clamp")
    border = device_border(kernel_context, image, sampler)
    assert border[:3].tolist() == [0.0, 0.0, 0.0] and border[3] in (0.0, 1.0)
    texels = np.stack([red, 0 * red, 0 * red, 1 + 0 * red], axis=-1)  # CL_R reads (r, 0, 0, 1)
    points = np.random.default_rng(2).uniform(-2, 7, (64, 2))
    out = run.run(image, sampler, points)
    np.testing.assert_allclose(out, bicubic(texels, points, border=tuple(border)), atol=1e-5)


def test_unorm8_images(device_caps, kernel_context):
    _require_images(device_caps)
    run = Bicubic(kernel_context, defines={"QCOM_EXT_BICUBIC_NORMALIZED": 1})
    texels = np.random.default_rng(3).integers(0, 256, (9, 8, 4), dtype=np.uint8)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)
    points = np.random.default_rng(4).uniform(-1, 10, (100, 2))
    out = run.run(
        run.image(texels, fmt),
        make_sampler(kernel_context, True, "clamp"),
        points / np.array([8.0, 9.0]),
    )
    np.testing.assert_allclose(out, bicubic(texels / 255.0, points), atol=1e-5)


ADDRESSING = {
    False: ["clamp", "clamp_to_edge", "none"],
    True: ["clamp", "clamp_to_edge", "repeat", "mirrored_repeat"],
}


@pytest.mark.parametrize("normalized", [False, True], ids=["texel", "normalized"])
def test_matches_numpy_on_random_images(device_caps, kernel_context, normalized):
    _require_images(device_caps)
    run = Bicubic(kernel_context, defines={"QCOM_EXT_BICUBIC_NORMALIZED": int(normalized)})
    samplers = {a: make_sampler(kernel_context, normalized, a) for a in ADDRESSING[normalized]}

    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        shape=st.tuples(st.integers(1, 9), st.integers(1, 9)),
        addressing=st.sampled_from(ADDRESSING[normalized]),
        data=st.data(),
    )
    def check(shape, addressing, data):
        h, w = shape
        values = st.floats(-1000, 1000, allow_nan=False, width=32)
        pixels = np.array(
            data.draw(st.lists(values, min_size=h * w * 4, max_size=h * w * 4)), np.float32
        ).reshape(h, w, 4)
        xs = st.floats(-3.0, w + 3.0, width=32)
        ys = st.floats(-3.0, h + 3.0, width=32)
        points = np.array(
            data.draw(st.lists(st.tuples(xs, ys), min_size=1, max_size=24)), np.float32
        )
        if normalized:
            coords = points / np.array([w, h], np.float32)
            texel_space = coords.astype(np.float64) * np.float32([w, h])  # as the kernel does
        else:
            coords, texel_space = points, points.astype(np.float64)
        if addressing == "none":  # outside texels are undefined with CLK_ADDRESS_NONE
            texel_space = texel_space[
                (texel_space[:, 0] >= 1.5)
                & (texel_space[:, 0] <= w - 1.5)
                & (texel_space[:, 1] >= 1.5)
                & (texel_space[:, 1] <= h - 1.5)
            ]
            if not len(texel_space):
                return
            coords = texel_space / np.array([w, h]) if normalized else texel_space
        out = run.run(run.image(pixels), samplers[addressing], coords)
        expected = bicubic(
            pixels, texel_space, addressing="clamp" if addressing == "none" else addressing
        )
        np.testing.assert_allclose(out, expected, atol=tolerance(pixels), rtol=0)

    check()


def test_unmodified_adreno_kernel_with_read_imagef(device_caps, kernel_context):
    """Adreno's own kernel (pragma, read_imagef, QCOM_CLK_FILTER_BICUBIC literal) with
    -DQCOM_EXT_BICUBIC_READ_IMAGEF gives the formula everywhere."""
    _require_images(device_caps)
    defines = {"QCOM_EXT_BICUBIC_NORMALIZED": 1, "QCOM_EXT_BICUBIC_READ_IMAGEF": True}
    run = Bicubic(kernel_context, ADRENO_SOURCE, defines)
    literal = Bicubic(kernel_context, ADRENO_SOURCE, defines, kernel="sample_literal")
    pixels = np.random.default_rng(8).uniform(0, 1, (8, 10, 4)).astype(np.float32)
    points = np.random.default_rng(9).uniform(-1, 11, (50, 2))
    coords = points / np.array([10.0, 8.0])
    expected = bicubic(pixels, points)
    image = run.image(pixels)
    out = run.run(image, make_sampler(kernel_context, True, "clamp"), coords)
    np.testing.assert_allclose(out, expected, atol=2e-5)
    np.testing.assert_allclose(literal.run(image, None, coords), expected, atol=2e-5)


def test_missing_coordinate_space_is_a_build_error(device_caps, kernel_context):
    with pytest.raises(qcom_ext.BuildError, match="QCOM_EXT_BICUBIC_NORMALIZED"):
        qcom_ext.build_program(kernel_context, SOURCE)


NATIVE = ["-DQCOM_EXT_NATIVE_cl_qcom_filter_bicubic", "-DQCOM_EXT_BICUBIC_NORMALIZED=1"]


def test_native_path_is_the_sampler_read():
    assert preprocess("qcom_read_imagef_bicubic(img, smp, c)", NATIVE) == whole(
        "((void)(1), read_imagef((img), (smp), (c)))"
    )
    with_redirect = [*NATIVE, "-DQCOM_EXT_BICUBIC_READ_IMAGEF"]
    assert preprocess("read_imagef(img, smp, c)", with_redirect) == "read_imagef(img, smp, c)"
    assert preprocess("QCOM_CLK_FILTER_BICUBIC", NATIVE) == "QCOM_CLK_FILTER_BICUBIC"
    header = preprocess("", NATIVE, header=True)
    assert "#pragma OPENCL EXTENSION cl_qcom_filter_bicubic : enable" in header
    assert "qcom_ext_read_imagef_bicubic" not in header  # no fallback code natively


def test_fallback_redirect_picks_three_argument_reads_only():
    flags = ["-DQCOM_EXT_BICUBIC_NORMALIZED=0", "-DQCOM_EXT_BICUBIC_READ_IMAGEF"]
    text = preprocess("read_imagef(i, s, c); read_imagef(i, c); read_imagef(i, s, c, l);", flags)
    assert text == whole(
        "qcom_ext_read_imagef_bicubic((i), (s), (c), (0)); "
        "read_imagef(i, c); read_imagef(i, s, c, l);"
    )
    assert preprocess("QCOM_CLK_FILTER_BICUBIC", flags) == "CLK_FILTER_NEAREST"
    assert preprocess("read_imagef(i, s, c)", flags[:1]) == "read_imagef(i, s, c)"  # opt-in


# ---- create_sampler -------------------------------------------------------------------


def test_fallback_sampler_warns_once_and_is_nearest(device_caps, cl_context):
    if device_caps.path("cl_qcom_filter_bicubic") != "fallback":
        pytest.skip(
            f"{device_caps.label}: cl_qcom_filter_bicubic is "
            f"{device_caps.path('cl_qcom_filter_bicubic')}"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = qcom_ext.create_sampler(cl_context, normalized=True, addressing="mirrored_repeat")
    messages = [str(w.message) for w in caught if issubclass(w.category, QcomExtWarning)]
    assert len(messages) == 1 and "cl_qcom_filter_bicubic -> fallback" in messages[0]
    assert device_caps.label in messages[0] and "qcom_read_imagef_bicubic" in messages[0]
    assert isinstance(made, cl.Sampler)
    assert made.filter_mode == cl.filter_mode.NEAREST
    assert made.addressing_mode == cl.addressing_mode.MIRRORED_REPEAT
    assert made.normalized_coords


@pytest.mark.parametrize("filter_mode", ["nearest", "LINEAR", "CL_FILTER_LINEAR", 0x1140])
def test_plain_filters_need_no_extension(device_caps, cl_context, filter_mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error", QcomExtWarning)
        made = qcom_ext.create_sampler(
            cl_context, normalized=False, addressing="CL_ADDRESS_NONE", filter=filter_mode
        )
    expected = (
        cl.filter_mode.NEAREST if filter_mode in ("nearest", 0x1140) else cl.filter_mode.LINEAR
    )
    assert made.filter_mode == expected
    assert made.addressing_mode == cl.addressing_mode.NONE and not made.normalized_coords


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"normalized": 1, "addressing": "clamp"}, "normalized must be True or False"),
        ({"normalized": True, "addressing": "wrap"}, "addressing 'wrap' is not one of"),
        ({"normalized": True, "addressing": "clamp", "filter": "cubic"}, "filter 'cubic'"),
        ({"normalized": True, "addressing": 0x9999}, "addressing 39321"),
        ({"normalized": False, "addressing": "repeat"}, "needs normalized=True"),
    ],
)
def test_bad_arguments(device_caps, cl_context, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        qcom_ext.create_sampler(cl_context, **kwargs)


def test_not_a_context():
    with pytest.raises(ConfigError, match=r"expected a pyopencl\.Context"):
        qcom_ext.create_sampler("ctx", normalized=True, addressing="clamp")


# ---- the native sampler on the fake Adreno driver ---------------------------------------

CTX, SAMPLER = 0xC0, 0x5A


@pytest.fixture
def fake_adreno(fake_cl_objects):
    fake_cl_objects(sampler_module, "_wrap_sampler")


def context_info(ctx, param, size, value, size_ret):
    if addr(ctx) != CTX or param != C.CL_CONTEXT_DEVICES:
        return C.CL_INVALID_VALUE
    data = struct.pack("<Q", DEVICE)
    if size_ret != ffi.NULL:
        size_ret[0] = len(data)
    if value != ffi.NULL:
        ffi.memmove(value, data, len(data))
    return 0


def fake_block(calls: list, status: int = 0, info=None, **extra):
    def create(ctx, normalized, addressing, filter_mode, errcode):
        calls.append(("clCreateSampler", addr(ctx), normalized, addressing, filter_mode))
        errcode[0] = status
        return ffi.NULL if status else ffi.cast("cl_sampler", SAMPLER)

    def release(sampler):
        calls.append(("clReleaseSampler", addr(sampler)))
        return 0

    return fake_driver(
        info or adreno740_device_info(),
        platform_info(),
        [],
        clGetContextInfo=context_info,
        clCreateSampler=create,
        clReleaseSampler=release,
        **extra,
    )


@pytest.mark.skipif(ffi.sizeof("void *") != 8, reason="LP64 layouts")
@pytest.mark.parametrize(
    ("normalized", "addressing", "token"),
    [(True, "clamp", 0x1132), (False, "clamp_to_edge", 0x1131), (True, "mirrored_repeat", 0x1134)],
)
def test_native_sampler_is_created_with_the_bicubic_token(
    fake_adreno, normalized, addressing, token
):
    calls: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", QcomExtWarning)  # native: no warning
        with fake_block(calls):
            made = qcom_ext.create_sampler(
                FakeCLObject(CTX), normalized=normalized, addressing=addressing
            )
    assert made.int_ptr == SAMPLER
    assert calls == [("clCreateSampler", CTX, int(normalized), token, 0x411C)]


@pytest.mark.skipif(ffi.sizeof("void *") != 8, reason="LP64 layouts")
def test_native_refusal_is_a_cl_error(fake_adreno):
    calls: list = []
    with fake_block(calls, status=C.CL_INVALID_VALUE), pytest.raises(CLError) as info:
        qcom_ext.create_sampler(FakeCLObject(CTX), normalized=False, addressing="clamp")
    assert "clCreateSampler failed: CL_INVALID_VALUE" in str(info.value)
    assert "addressing=CL_ADDRESS_CLAMP, filter=CL_FILTER_BICUBIC_QCOM" in str(info.value)
    assert [c[0] for c in calls] == ["clCreateSampler"]


@pytest.mark.skipif(ffi.sizeof("void *") != 8, reason="LP64 layouts")
def test_native_sampler_is_released_when_wrapping_fails(fake_adreno, monkeypatch):
    def broken(handle):
        raise RuntimeError("wrapping failed")

    monkeypatch.setattr(sampler_module, "_wrap_sampler", broken)
    calls: list = []
    with fake_block(calls), pytest.raises(RuntimeError, match="wrapping failed"):
        qcom_ext.create_sampler(FakeCLObject(CTX), normalized=True, addressing="clamp")
    assert calls[-1] == ("clReleaseSampler", SAMPLER)


@pytest.mark.skipif(ffi.sizeof("void *") != 8, reason="LP64 layouts")
def test_no_images_no_bicubic(fake_adreno):
    info = adreno740_device_info()
    info[0x1030] = cstr("cl_khr_fp16")
    info[0x1016] = struct.pack("<I", 0)  # CL_DEVICE_IMAGE_SUPPORT
    unavailable = pytest.raises(ExtensionUnavailable, match="CL_DEVICE_IMAGE_SUPPORT is 0")
    with fake_block([], info=info), unavailable:
        qcom_ext.create_sampler(FakeCLObject(CTX), normalized=True, addressing="clamp")


# ---- upscale2x_image: the whole-image 2x upscale, every method ----------------------

UPSCALES = [
    ("sampler", None, None),
    ("blocks", None, None),
    ("tiles", None, None),
    ("tiles", (2, 3), (4, 2)),  # several groups, blocks that overhang right and bottom
    ("tiles", (1, 1), (8, 8)),
    ("tiles", (1, 2), (16, 8)),
]


def upscale_images(context, pixels):
    from qcom_ext.ext.accelerated.points import empty, upload

    h, w = pixels.shape[:2]
    return upload(context, pixels), empty(context, 2 * w, 2 * h)


@pytest.mark.parametrize(
    ("method", "block", "local"),
    UPSCALES,
    ids=["sampler", "blocks", "tiles", "tiles-2x3-4x2", "tiles-1x1-8x8", "tiles-1x2-16x8"],
)
@pytest.mark.parametrize("shape", [(9, 13), (16, 32), (1, 1), (40, 5)])
def test_upscale2x_image_matches_numpy(device_caps, kernel_context, method, block, local, shape):
    """Every method against the guide's formula in float64; "tiles" bit for bit with
    "blocks" (the same sums in the same order)."""
    from qcom_ext.ext.accelerated.points import download
    from qcom_ext.reference.bicubic import upscale2x

    _require_images(device_caps)
    queue = cl.CommandQueue(kernel_context)
    pixels = np.random.default_rng(sum(shape)).random((*shape, 4), dtype=np.float32)
    src, dst = upscale_images(kernel_context, pixels)
    qcom_ext.upscale2x_image(queue, src, dst, method=method, block=block, local_size=local)
    got = download(queue, dst)
    np.testing.assert_allclose(got, upscale2x(pixels), atol=tolerance(pixels), rtol=0)
    if method == "tiles":
        qcom_ext.upscale2x_image(queue, src, dst, method="blocks")
        np.testing.assert_array_equal(got, download(queue, dst))


def test_upscale2x_image_default_is_the_texture_filter_where_native(device_caps, kernel_context):
    from qcom_ext.ext.images import upscale

    expected = "sampler" if device_caps.path("cl_qcom_filter_bicubic") == "native" else "tiles"
    assert upscale.default_method(kernel_context) == expected


@pytest.mark.parametrize(
    ("kwargs", "dst_shape", "match"),
    [
        ({}, (10, 12), "expected dst 16x12"),
        ({"method": "bilinear"}, (16, 12), "method must be one of sampler, blocks, tiles"),
        ({"method": "blocks", "block": (2, 2)}, (16, 12), "block is an option of method='tiles'"),
        ({"method": "blocks", "local_size": (3, 3)}, (16, 12), "must divide that"),
        ({"method": "tiles", "block": (0, 2)}, (16, 12), "block must be a pair"),
        ({"method": "tiles", "local_size": (1 << 20, 1)}, (16, 12), "work-items a group"),
        ({"method": "tiles", "block": (64, 64)}, (16, 12), "bytes of local memory"),
    ],
)
def test_upscale2x_image_bad_arguments(device_caps, kernel_context, kwargs, dst_shape, match):
    from qcom_ext.ext.accelerated.points import empty

    _require_images(device_caps)
    queue = cl.CommandQueue(kernel_context)
    src, dst = empty(kernel_context, 8, 6), empty(kernel_context, *dst_shape)
    with pytest.raises(ConfigError, match=match):
        qcom_ext.upscale2x_image(queue, src, dst, **kwargs)
    with pytest.raises(ConfigError, match=r"src must be a 2-D pyopencl\.Image"):
        qcom_ext.upscale2x_image(
            queue, cl.Buffer(kernel_context, cl.mem_flags.READ_WRITE, 64), dst
        )


def test_upscale2x_variants_each_upscale(device_caps, kernel_context):
    """What a tuner chooses from: every variant's options give the upscale."""
    from qcom_ext.ext.accelerated.points import download
    from qcom_ext.ext.images.upscale import upscale2x_variants
    from qcom_ext.reference.bicubic import upscale2x

    _require_images(device_caps)
    queue = cl.CommandQueue(kernel_context)
    pixels = np.random.default_rng(3).random((16, 32, 4), dtype=np.float32)
    src, dst = upscale_images(kernel_context, pixels)
    variants = upscale2x_variants(queue, src, dst)
    methods = {v.options["method"] for v in variants}
    assert methods == {"sampler", "blocks", "tiles"}
    for variant in variants[::5] + variants[-2:]:
        qcom_ext.upscale2x_image(queue, src, dst, **variant.options)
        np.testing.assert_allclose(
            download(queue, dst),
            upscale2x(pixels),
            atol=tolerance(pixels),
            rtol=0,
            err_msg=variant.describe(),
        )
