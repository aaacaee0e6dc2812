"""cl_qcom_vector_image_ops through build_program: 2x2/4x1 reads and vector writes.

Golden tests from the extension spec's sample code, and hypothesis tests of every read
against a numpy model of the documented footprint, element order, component selection
and sampler addressing, on every device with image support.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import _context_cache

EXT = "cl_qcom_vector_image_ops"
ORDERS = {1: cl.channel_order.R, 2: cl.channel_order.RG, 4: cl.channel_order.RGBA}
# read kind -> (channel type, numpy dtype of the image data)
FORMATS = {
    "f": [(cl.channel_type.FLOAT, np.float32), (cl.channel_type.UNORM_INT8, np.uint8)],
    "ui": [(cl.channel_type.UNSIGNED_INT8, np.uint8), (cl.channel_type.UNSIGNED_INT32, np.uint32)],
    "i": [(cl.channel_type.SIGNED_INT16, np.int16), (cl.channel_type.SIGNED_INT32, np.int32)],
}
RESULT_DTYPES = {"f": np.float32, "ui": np.uint32, "i": np.int32}
ADDRESSING = {
    "clamp_to_edge": cl.addressing_mode.CLAMP_TO_EDGE,
    "clamp": cl.addressing_mode.CLAMP,
    "repeat": cl.addressing_mode.REPEAT,
    "mirrored_repeat": cl.addressing_mode.MIRRORED_REPEAT,
}

READ_SOURCE = """
#define READS(T, X)                                                                       \\
__kernel void read_##X(read_only image2d_t image, sampler_t sampler,                     \\
                       __global const float2 *coords, __global T##4 *out)                \\
{                                                                                         \\
    size_t i = get_global_id(0);                                                          \\
    float2 c = coords[i];                                                                 \\
    for (int k = 0; k < 4; ++k) {                                                         \\
        out[8 * i + k] = qcom_read_image##X##_2x2(image, sampler, c, k);                  \\
        out[8 * i + 4 + k] = qcom_read_image##X##_4x1(image, sampler, c, k);              \\
    }                                                                                     \\
}
READS(float, f)
READS(uint, ui)
READS(int, i)
"""

WRITE_SOURCE = """
__kernel void write_y(write_only image2d_t image, __global const float *v, int which)
{
    int2 at = (int2)(4 * get_global_id(0), 2 * get_global_id(1));
    __global const float *p = v + 4 * (get_global_id(1) * get_global_size(0)
                                       + get_global_id(0));
    float c[4] = {p[0], p[1], p[2], p[3]};
    if (which == 0) {
        float two[2] = {p[0], p[1]};
        qcom_write_imagefv_2x1_n8n00(image, at, two);
    } else if (which == 1) {
        qcom_write_imagefv_4x1_n8n00(image, at, c);
    } else {
        qcom_write_imagefv_2x2_n8n00(image, at, c);
    }
}
__kernel void write_uv(write_only image2d_t image, __global const float2 *v)
{
    int2 at = (int2)(2 * get_global_id(0), get_global_id(1));
    size_t i = 2 * (get_global_id(1) * get_global_size(0) + get_global_id(0));
    float2 c[2] = {v[i], v[i + 1]};
    qcom_write_imagefv_2x1_n8n01(image, at, c);
}
"""


@pytest.fixture
def image_context(device_caps, kernel_context):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support (CL_DEVICE_IMAGE_SUPPORT 0)")
    return kernel_context


def program(context, source: str, normalized: bool = False) -> cl.Program:
    """Built once per context, source and coordinate mode (hypothesis reuses it), in the
    library's per-context cache: a test-module dict keyed by handle kept every test's
    context alive (6 GB of GPU memory on NVIDIA) and could hand a stale program to a new
    context at a reused address."""
    defines = {"QCOM_EXT_VECTOR_IMAGE_NORMALIZED_COORDS": normalized}
    return _context_cache.cached(
        context,
        ("test_vector_image_ops", source, normalized),
        lambda ctx: qcom_ext.build_program(ctx, source, defines=defines),
    )


def supported(context, order, channel_type) -> bool:
    formats = cl.get_supported_image_formats(
        context, cl.mem_flags.READ_ONLY, cl.mem_object_type.IMAGE2D
    )
    return any(f.channel_order == order and f.channel_data_type == channel_type for f in formats)


def make_image(context, data: np.ndarray, channel_type) -> cl.Image:
    height, width, channels = data.shape
    fmt = cl.ImageFormat(ORDERS[channels], channel_type)
    if not supported(context, fmt.channel_order, channel_type):
        pytest.skip(f"image format {fmt} is not supported")
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    return cl.create_image(
        context, flags, fmt, shape=(width, height), hostbuf=np.ascontiguousarray(data)
    )


def run_reads(
    context,
    kind: str,
    image: cl.Image,
    sampler: cl.Sampler,
    coords: np.ndarray,
    normalized: bool = False,
) -> np.ndarray:
    """(n, 2, 4, 4): per coordinate, [2x2, 4x1] x compid x element."""
    queue = cl.CommandQueue(context)
    kernel = cl.Kernel(program(context, READ_SOURCE, normalized), f"read_{kind}")
    mf = cl.mem_flags
    coords = np.ascontiguousarray(coords, dtype=np.float32)
    coord_buf = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=coords)
    out = np.empty((len(coords), 2, 4, 4), RESULT_DTYPES[kind])
    out_buf = cl.Buffer(context, mf.WRITE_ONLY, out.nbytes)
    kernel(queue, (len(coords),), None, image, sampler, coord_buf, out_buf)
    cl.enqueue_copy(queue, out, out_buf)
    return out


# ---- numpy model ----------------------------------------------------------------------


def expand(data: np.ndarray, kind: str) -> np.ndarray:
    """Texel values as read_image{f,ui,i} returns them: (r, 0, 0, 1) for R, etc."""
    h, w, channels = data.shape
    values = data.astype(np.float64)
    if data.dtype == np.uint8 and kind == "f":
        values = values / 255.0
    out = np.zeros((h, w, 4))
    out[..., 3] = 1
    out[..., :channels] = values
    return out


def address(i: int, n: int, mode: str) -> int | None:
    """The texel index sampler addressing gives integer texel ``i`` (None: border)."""
    if mode == "clamp_to_edge":
        return min(max(i, 0), n - 1)
    if mode == "clamp":
        return i if 0 <= i < n else None
    if mode == "repeat":
        return i % n
    period = i % (2 * n)  # mirrored_repeat: ... 1 0 | 0 1 ... n-1 | n-1 ...
    return period if period < n else 2 * n - 1 - period


def texel(values: np.ndarray, x: int, y: int, mode: str, channels: int) -> np.ndarray:
    h, w, _ = values.shape
    ax, ay = address(x, w, mode), address(y, h, mode)
    if ax is None or ay is None:
        return np.array([0, 0, 0, 0 if channels == 4 else 1], np.float64)
    return values[ay, ax]


def model(
    data: np.ndarray, kind: str, coord: np.ndarray, mode: str, normalized: bool
) -> np.ndarray:
    """(2, 4, 4) like run_reads for one coordinate."""
    h, w, channels = data.shape
    values = expand(data, kind)
    c = coord.astype(np.float32)
    # texel-space position, as the kernel computes it (exact in float64, then rounded)
    u = (np.float64(c[0]) * (w if normalized else 1), np.float64(c[1]) * (h if normalized else 1))
    bx, by = (int(np.floor(np.float32(v - 0.5))) for v in u)
    quad = [(bx, by + 1), (bx + 1, by + 1), (bx + 1, by), (bx, by)]
    lx, ly = (int(np.floor(np.float32(v))) for v in u)
    run = [(lx + i, ly) for i in range(4)]
    out = np.empty((2, 4, 4))
    for p, points in enumerate((quad, run)):
        texels = np.array([texel(values, x, y, mode, channels) for x, y in points])
        out[p] = texels.T  # [compid][element]
    return out


def check(result: np.ndarray, expected: np.ndarray, channels: int, kind: str) -> None:
    got, want = result[:, :channels], expected[:, :channels]  # compid < channels
    if kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


# ---- golden tests (extension spec, Sample Code 1 and 3; guide section 2) --------------


def rgba_u8(height: int = 4, width: int = 8) -> np.ndarray:
    return (np.arange(height * width * 4) % 251).astype(np.uint8).reshape(height, width, 4)


def spec_sample_reads(context, coord) -> tuple[np.ndarray, np.ndarray]:
    """(the spec samples' RGBA uint8 image, the 2x2 and 4x1 reads at ``coord``), read
    with an unnormalized clamp-to-edge nearest sampler."""
    data = rgba_u8()
    image = make_image(context, data, cl.channel_type.UNSIGNED_INT8)
    sampler = cl.Sampler(context, False, cl.addressing_mode.CLAMP_TO_EDGE, cl.filter_mode.NEAREST)
    return data, run_reads(context, "ui", image, sampler, np.array([coord]))


@pytest.mark.parametrize("coord", [(2.5, 0.5), (3.0, 1.0)], ids=["spec", "guide-centre"])
def test_2x2_spec_sample_rgba_uint8(device_caps, image_context, coord):
    data, out = spec_sample_reads(image_context, coord)
    # pixel0 (2, 1) lower-left, pixel1 (3, 1), pixel2 (3, 0), pixel3 (2, 0) the base
    for compid in range(4):
        expected = [data[1, 2, compid], data[1, 3, compid], data[0, 3, compid], data[0, 2, compid]]
        assert out[0, 0, compid].tolist() == expected


@pytest.mark.parametrize("coord", [(2.0, 1.0), (2.5, 1.5)], ids=["spec", "guide-centre"])
def test_4x1_spec_sample(device_caps, image_context, coord):
    data, out = spec_sample_reads(image_context, coord)
    for compid in range(4):  # elements (2, 1), (3, 1), (4, 1), (5, 1), left to right
        assert out[0, 1, compid].tolist() == data[1, 2:6, compid].tolist()


def uv_channels(context, flags=cl.mem_flags.READ_ONLY) -> int:
    """2 (CL_RG, the fallback's NV12_UV plane) where supported, else 4 (CL_RGBA: U and V
    in the first two channels; pocl 3.1 has no CL_RG)."""
    formats = cl.get_supported_image_formats(context, flags, cl.mem_object_type.IMAGE2D)
    rg = any(
        f.channel_order == cl.channel_order.RG
        and f.channel_data_type == cl.channel_type.UNORM_INT8
        for f in formats
    )
    return 2 if rg else 4


def test_2x2_uv_plane_order(device_caps, image_context):
    """A 2x2 UV plane: the quad read returns (U10, U11, U01, U00) (U<row><column>)."""
    uv = np.array([[[10, 110], [11, 111]], [[20, 120], [21, 121]]], np.uint8)
    channels = uv_channels(image_context)
    data = np.zeros((2, 2, channels), np.uint8)
    data[..., :2] = uv
    image = make_image(image_context, data, cl.channel_type.UNORM_INT8)
    sampler = cl.Sampler(
        image_context, False, cl.addressing_mode.CLAMP_TO_EDGE, cl.filter_mode.NEAREST
    )
    out = run_reads(image_context, "f", image, sampler, np.array([(1.0, 1.0)]))
    u = np.rint(out[0, 0, 0] * 255).astype(int).tolist()
    v = np.rint(out[0, 0, 1] * 255).astype(int).tolist()
    assert u == [20, 21, 11, 10]
    assert v == [120, 121, 111, 110]


# ---- property tests against the model -------------------------------------------------

_SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@st.composite
def cases(draw, normalized: bool, formats: list[tuple[str, object, type, int]]):
    kind, channel_type, dtype, channels = draw(st.sampled_from(formats))
    height, width = draw(st.integers(1, 9)), draw(st.integers(1, 13))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        data = rng.standard_normal((height, width, channels)).astype(np.float32)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(
            info.min, info.max, (height, width, channels), dtype=dtype, endpoint=True
        )
    modes = ["clamp_to_edge", "clamp"] + (["repeat", "mirrored_repeat"] if normalized else [])
    mode = draw(st.sampled_from(modes))
    linear = kind == "f" and not normalized and draw(st.booleans())
    # texel-space positions; normalized ones keep clear of texel boundaries so the
    # float32 scaling cannot move them across one
    fractions = (
        st.floats(0.05, 0.45) | st.floats(0.55, 0.95)
        if normalized
        else st.sampled_from([0.0, 0.5]) | st.floats(0, 1, exclude_max=True)
    )
    n = draw(st.integers(1, 12))
    xs = [draw(st.integers(-3, width + 2)) + draw(fractions) for _ in range(n)]
    ys = [draw(st.integers(-3, height + 2)) + draw(fractions) for _ in range(n)]
    coords = np.array(list(zip(xs, ys, strict=True)), np.float64)
    if normalized:
        coords = coords / (width, height)
    return kind, channel_type, data, mode, linear, coords.astype(np.float32)


def readable_formats(context) -> list[tuple[str, object, type, int]]:
    """(read kind, channel type, numpy dtype, channels) the device supports."""
    found = [
        (kind, channel_type, dtype, channels)
        for kind, choices in sorted(FORMATS.items())
        for channel_type, dtype in choices
        for channels, order in ORDERS.items()
        if supported(context, order, channel_type)
    ]
    if not found:
        pytest.skip("none of the test's image formats is supported")
    return found


def _check_reads(context, case, normalized):
    kind, channel_type, data, mode, linear, coords = case
    image = make_image(context, data, channel_type)
    filt = cl.filter_mode.LINEAR if linear else cl.filter_mode.NEAREST
    sampler = cl.Sampler(context, normalized, ADDRESSING[mode], filt)
    out = run_reads(context, kind, image, sampler, coords, normalized)
    for i, coord in enumerate(coords):
        expected = model(data, kind, coord, mode, normalized)
        check(out[i], expected, data.shape[2], kind)


def test_reads_match_model_unnormalized(device_caps, image_context):
    @_SETTINGS
    @given(cases(normalized=False, formats=readable_formats(image_context)))
    def inner(case):
        _check_reads(image_context, case, normalized=False)

    inner()


def test_reads_match_model_normalized(device_caps, image_context):
    """Normalized samplers; the build defines QCOM_EXT_VECTOR_IMAGE_NORMALIZED_COORDS,
    which the fallback needs and the native builtins ignore."""

    @_SETTINGS
    @given(cases(normalized=True, formats=readable_formats(image_context)))
    def inner(case):
        _check_reads(image_context, case, normalized=True)

    inner()


def test_model_catches_a_wrong_element_order():
    """The model is not vacuous: swapping two elements changes what it expects."""
    data = rgba_u8(3, 3)
    a = model(data, "ui", np.array([1.0, 1.0]), "clamp_to_edge", False)
    assert a[0, 0].tolist() == [data[1, 0, 0], data[1, 1, 0], data[0, 1, 0], data[0, 0, 0]]
    with pytest.raises(AssertionError):
        check(a[:, :, [1, 0, 2, 3]], a, 4, "ui")


# ---- vector writes --------------------------------------------------------------------


def _write_image(context, channels: int, shape: tuple[int, int]) -> cl.Image:
    fmt = cl.ImageFormat(ORDERS[channels], cl.channel_type.UNORM_INT8)
    formats = cl.get_supported_image_formats(
        context, cl.mem_flags.WRITE_ONLY, cl.mem_object_type.IMAGE2D
    )
    if not any(
        f.channel_order == fmt.channel_order and f.channel_data_type == fmt.channel_data_type
        for f in formats
    ):
        pytest.skip(f"writable image format {fmt} is not supported")
    return cl.create_image(context, cl.mem_flags.WRITE_ONLY, fmt, shape=shape)


def _read_back(queue, image, shape, channels):
    width, height = shape
    out = np.zeros((height, width, channels), np.uint8)
    cl.enqueue_copy(queue, out, image, origin=(0, 0), region=(width, height))
    return out


@pytest.mark.parametrize("which", ["2x1", "4x1", "2x2"])
def test_y_plane_writes(device_caps, image_context, which):
    """NV12_Y writes (CL_R / CL_UNORM_INT8 in the fallback) put each element where the
    spec says; values k/255 come back as byte k."""
    queue = cl.CommandQueue(image_context)
    gx, gy = 3, 2
    shape = (4 * gx, 2 * gy)
    image = _write_image(image_context, 1, shape)
    cl.enqueue_fill_image(queue, image, np.zeros(4, np.float32), (0, 0), shape)
    rng = np.random.default_rng(5)
    bytes_ = rng.integers(1, 256, (gy, gx, 4))
    mf = cl.mem_flags
    values = cl.Buffer(
        image_context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=(bytes_ / 255.0).astype(np.float32)
    )
    kernel = cl.Kernel(program(image_context, WRITE_SOURCE), "write_y")
    code = {"2x1": 0, "4x1": 1, "2x2": 2}[which]
    kernel(queue, (gx, gy), None, image, values, np.int32(code))
    got = _read_back(queue, image, shape, 1)[..., 0]
    expected = np.zeros((2 * gy, 4 * gx), np.int64)
    for y in range(gy):
        for x in range(gx):
            b, (ox, oy) = bytes_[y, x], (4 * x, 2 * y)
            if which == "2x1":
                expected[oy, ox : ox + 2] = b[:2]
            elif which == "4x1":
                expected[oy, ox : ox + 4] = b
            else:  # [0] base, [1] (+1, 0), [2] (0, +1), [3] (+1, +1)
                expected[oy, ox], expected[oy, ox + 1] = b[0], b[1]
                expected[oy + 1, ox], expected[oy + 1, ox + 1] = b[2], b[3]
    np.testing.assert_array_equal(got, expected)


def test_uv_plane_2x1_write(device_caps, image_context):
    queue = cl.CommandQueue(image_context)
    gx, gy = 3, 2
    shape = (2 * gx, gy)
    channels = uv_channels(image_context, cl.mem_flags.WRITE_ONLY)
    image = _write_image(image_context, channels, shape)
    rng = np.random.default_rng(6)
    bytes_ = rng.integers(0, 256, (gy, gx, 2, 2))
    mf = cl.mem_flags
    values = cl.Buffer(
        image_context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=(bytes_ / 255.0).astype(np.float32)
    )
    kernel = cl.Kernel(program(image_context, WRITE_SOURCE), "write_uv")
    kernel(queue, (gx, gy), None, image, values)
    got = _read_back(queue, image, shape, channels)
    np.testing.assert_array_equal(got[..., :2], bytes_.reshape(gy, 2 * gx, 2))
    if channels == 4:  # (u, v, 0, 1)
        assert (got[..., 2] == 0).all() and (got[..., 3] == 255).all()


@pytest.mark.parametrize(
    ("call", "family"),
    [
        ("qcom_write_imagefv_2x1_n10p00(im, (int2)(0, 0), c2)", "P010"),
        ("qcom_write_imagefv_2x2_n10p00(im, (int2)(0, 0), c4)", "P010"),
        ("qcom_write_imagefv_3x1_n10t00(im, (int2)(0, 0), c4)", "TP10"),
        ("qcom_write_imagefv_4x1_n10m00(im, (int2)(0, 0), c4)", "MIPI_packed"),
        ("qcom_write_imageuiv_4x1_u12m00(im, (int2)(0, 0), u4)", "MIPI_packed"),
    ],
)
def test_native_only_formats_are_a_clear_build_error(device_caps, image_context, call, family):
    if device_caps.path(EXT) == "native":
        pytest.skip("the native builtins exist on this device")
    source = (
        "__kernel void k(write_only image2d_t im) {\n"
        "    float c2[2] = {0.0f, 0.0f}; float c4[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
        "    uint u4[4] = {0u, 0u, 0u, 0u};\n"
        f"    {call};\n}}\n"
    )
    with pytest.raises(qcom_ext.BuildError) as exc:
        qcom_ext.build_program(image_context, source)
    assert f"qcom_ext_error_{family}_formats_exist_only_natively_on_Adreno" in str(exc.value)


def test_half_variants_without_fp16_are_a_clear_build_error(device_caps, image_context):
    if device_caps.has("cl_khr_fp16") or device_caps.path(EXT) == "native":
        pytest.skip(f"{device_caps.label} has cl_khr_fp16: the half variants exist")
    source = """
    __constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP |
                             CLK_FILTER_NEAREST;
    __kernel void k(read_only image2d_t im, __global float *o) {
        o[0] = qcom_read_imageh_2x2(im, s, (float2)(1.0f, 1.0f), 0).x;
    }"""
    with pytest.raises(qcom_ext.BuildError) as exc:
        qcom_ext.build_program(image_context, source)
    assert "qcom_ext_error_half_variants_need_cl_khr_fp16" in str(exc.value)


@pytest.mark.requires_ext("cl_khr_fp16")
def test_half_variants_match_float(device_caps, image_context):
    source = """
    #pragma OPENCL EXTENSION cl_khr_fp16 : enable
    __constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                             CLK_FILTER_NEAREST;
    __kernel void k(read_only image2d_t im, write_only image2d_t y, __global float4 *o) {
        float2 c = (float2)(1.0f, 1.0f);
        o[0] = convert_float4(qcom_read_imageh_2x2(im, s, c, 1));
        o[1] = convert_float4(qcom_read_imageh_4x1(im, s, c, 2));
        o[2] = qcom_read_imagef_2x2(im, s, c, 1);
        o[3] = qcom_read_imagef_4x1(im, s, c, 2);
        half h[4] = {(half)0.0f, (half)1.0f, (half)0.5f, (half)0.25f};
        qcom_write_imagehv_4x1_n8n00(y, (int2)(0, 0), h);
    }"""
    queue = cl.CommandQueue(image_context)
    data = rgba_u8(4, 8)
    image = make_image(image_context, data, cl.channel_type.UNORM_INT8)
    y = _write_image(image_context, 1, (4, 1))
    out = cl.Buffer(image_context, cl.mem_flags.WRITE_ONLY, 4 * 16)
    kernel = cl.Kernel(qcom_ext.build_program(image_context, source), "k")
    kernel(queue, (1,), None, image, y, out)
    got = np.empty((4, 4), np.float32)
    cl.enqueue_copy(queue, got, out)
    np.testing.assert_allclose(got[:2], got[2:], rtol=1e-3)
    assert _read_back(queue, y, (4, 1), 1)[0, :, 0].tolist() == [0, 255, 128, 64]
