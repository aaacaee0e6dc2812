"""Checks of the image extensions: vector image reads, the bicubic filter, planar NV12
frames and their planes, compressed images, buffers over images and image layouts.

The computations are the samples' (``samples/vector_image_gather.py``, ``bicubic.py``,
``nv12_to_rgba.py``, ``buffer_from_image.py``) at small sizes. Native planar and
compressed images live in external memory: those runs import a dma-buf from a heap
(:mod:`qcom_ext.tools.selftest._memory`) and are skipped, with the reason, where none exists.
"""

from __future__ import annotations

import contextlib

import numpy as np

from qcom_ext.tools.selftest._memory import dma_buf
from qcom_ext.tools.selftest._registry import Env, Outcome, Skip, case, unchecked

VECTOR = "cl_qcom_vector_image_ops"
BICUBIC = "cl_qcom_filter_bicubic"
OTHER = "cl_qcom_other_image"
PLANES = "cl_qcom_extract_image_plane"
COMPRESSED = "cl_qcom_compressed_image"
COMPRESSED_YUV = "cl_qcom_compressed_yuv_image_read"
BUFFER_FROM_IMAGE = "cl_qcom_create_buffer_from_image"
IMAGE_INFO = "cl_qcom_extended_query_image_info"


def _float_image(env: Env, pixels: np.ndarray, flags: int | None = None) -> object:
    import pyopencl as cl

    height, width = pixels.shape[:2]
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    flags = cl.mem_flags.READ_ONLY if flags is None else flags
    flags |= cl.mem_flags.COPY_HOST_PTR
    return cl.create_image(
        env.context, flags, fmt, shape=(width, height), hostbuf=np.ascontiguousarray(pixels)
    )


def _read_float_image(env: Env, image: object, width: int, height: int) -> np.ndarray:
    import pyopencl as cl

    out = np.empty((height, width, 4), np.float32)
    cl.enqueue_copy(env.queue, out, image, origin=(0, 0), region=(width, height))
    return out


def _output_image(env: Env, width: int, height: int) -> object:
    import pyopencl as cl

    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    return cl.create_image(env.context, cl.mem_flags.WRITE_ONLY, fmt, shape=(width, height))


@case(VECTOR, "2x2 gathers: 2x downscale of a 34x22 float image")
def _gather(env: Env) -> Outcome:
    import pyopencl as cl

    pixels = env.rng.random((22, 34, 4), dtype=np.float32)
    dst = _output_image(env, 17, 11)
    kernel = cl.Kernel(env.program("downscale.cl"), "downscale2x_gather")
    kernel(env.queue, (17, 11), None, _float_image(env, pixels), dst)
    upper, lower = pixels[0::2], pixels[1::2]
    # the kernel's order: (lower-left + lower-right) + (upper-right + upper-left)
    want = ((lower[:, 0::2] + lower[:, 1::2]) + (upper[:, 1::2] + upper[:, 0::2])) * np.float32(
        0.25
    )
    return Outcome(_read_float_image(env, dst, 17, 11), want)


VECTOR_READS = """
__constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                         CLK_FILTER_NEAREST;
__kernel void k(__read_only image2d_t im, __global float4 *out)
{
    out[0] = qcom_read_imagef_4x1(im, s, (float2)(0.5f, 0.5f), 0);
    out[1] = qcom_read_imagef_2x2(im, s, (float2)(1.0f, 1.0f), 0);
}
"""


@case(
    VECTOR,
    "4x1 and 2x2 reads of red = x + 10 y",
    trial="the trial kernel of qcom_read_imagef_4x1 and qcom_read_imagef_2x2, compiled and run",
)
def _vector_reads(env: Env) -> Outcome:
    """4x1 and 2x2 reads of a 4x4 image whose red is x + 10 y: (0, 1, 2, 3) at (0.5, 0.5)
    and (10, 11, 1, 0) at (1, 1) (the extension's own example layout)."""
    import pyopencl as cl

    pixels = np.zeros((4, 4, 4), np.float32)
    pixels[..., 0] = np.arange(4)[None, :] + 10 * np.arange(4)[:, None]
    out, host = env.empty((2, 4), np.float32)
    cl.Kernel(env.program(VECTOR_READS), "k")(
        env.queue, (1,), None, _float_image(env, pixels), out
    )
    return Outcome(env.read(out, host), np.array([[0, 1, 2, 3], [10, 11, 1, 0]], np.float32))


@case(
    BICUBIC,
    "2x bicubic upscale of a 20x14 float image",
    trial="the trial bicubic sampler (CL_FILTER_BICUBIC_QCOM) and qcom_read_imagef_bicubic kernel",
)
def _bicubic(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.images.sampler import create_sampler
    from qcom_ext.reference.bicubic import upscale2x

    pixels = env.rng.random((14, 20, 4), dtype=np.float32)
    program = env.program("bicubic.cl", QCOM_EXT_BICUBIC_NORMALIZED=1)
    sampler = create_sampler(env.context, normalized=True, addressing="clamp")
    dst = _output_image(env, 40, 28)
    cl.Kernel(program, "upscale2x")(
        env.queue, (40, 28), None, _float_image(env, pixels), sampler, dst
    )
    return Outcome(_read_float_image(env, dst, 40, 28), upscale2x(pixels), 1e-4)


def _nv12_frame(width: int, height: int) -> np.ndarray:
    from qcom_ext.ext.images.yuv import rgb_to_nv12, test_pattern

    return rgb_to_nv12(test_pattern(width, height))


def _planar_native(env: Env) -> bool:
    """Whether this run makes native planar frames (both planar extensions native)."""
    return env.caps.path(OTHER) == "native" and env.caps.path(PLANES) == "native"


def _nv12_bytes(env: Env, width: int, height: int) -> int:
    """Bytes for a native NV12 frame: the driver's size (clQueryImageInfoQCOM), or a
    generous 64 KiB for a small frame where the query is not native."""
    from qcom_ext.errors import QcomExtError
    from qcom_ext.ext.images.info import query_image_info

    size = 0
    if env.caps.path(IMAGE_INFO) == "native":
        # a failing query is left to the frame's own check, which reports what the driver does
        with contextlib.suppress(QcomExtError):
            size = query_image_info(
                env.caps.device(), "QCOM_NV12/UNORM_INT8", (width, height)
            ).size
    return max(size, 64 << 10)


def _with_frame(env: Env, use) -> Outcome:
    """``use(image, frame)`` on a 32x16 NV12 frame written into an Nv12Image: over an
    imported dma-buf where planar images are native, else the portable planes."""
    from qcom_ext.ext.images.planar import nv12_image
    from qcom_ext.ext.memory.host_ptr import ExternalMemory

    frame = _nv12_frame(32, 16)
    if not _planar_native(env):
        image = nv12_image(env.context, (32, 16))
        image.write(env.queue, frame)
        return use(image, frame)
    with dma_buf(env, _nv12_bytes(env, 32, 16)) as fd:
        image = nv12_image(env.context, (32, 16), memory=ExternalMemory.dmabuf(fd))
        image.write(env.queue, frame)
        return use(image, frame)


@case(OTHER, "NV12 to RGBA through the frame's planes (32x16)")
def _nv12_to_rgba(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.images.yuv import nv12_to_rgb

    def convert(image, frame) -> Outcome:
        kernel = cl.Kernel(env.program("nv12_to_rgba.cl"), "nv12_to_rgba")
        out, host = env.empty((16, 32, 4), np.uint8)
        kernel(
            env.queue,
            (32, 16),
            None,
            *image.kernel_args,
            out,
            np.int32(32),
            np.int32(16),
            np.int32(0),
        )
        rgba = env.read(out, host)
        want = np.concatenate([nv12_to_rgb(frame), np.full((16, 32, 1), 255, np.uint8)], -1)
        # float32 in the kernel, float64 in numpy: a rounding tie may differ by one
        return Outcome(rgba.astype(np.int16), want.astype(np.int16), 1, ran_as=image.path)

    return _with_frame(env, convert)


@case(PLANES, "an NV12 frame written and read back through its plane images")
def _planes_round_trip(env: Env) -> Outcome:
    def round_trip(image, frame) -> Outcome:
        return Outcome(
            image.read(env.queue), frame, ran_as=image.path, note=f"chroma plane {image.uv_layout}"
        )

    return _with_frame(env, round_trip)


@case(COMPRESSED_YUV, "compressed planar formats listed for reads", compare=False)
def _compressed_yuv_formats(env: Env) -> Outcome:
    from qcom_ext.ext.images.image import supported_image_formats

    listed = supported_image_formats(
        env.context, flags="read_only", other=True, compressed_yuv=True
    )
    native = env.tier == "native"
    note = ", ".join(str(f) for f in listed) or "none"
    # natively the driver lists its compressed YUV formats; elsewhere the query lists none
    return Outcome(
        {"formats listed": bool(listed)}, {"formats listed": native}, note=f"listed: {note}"
    )


COMPRESSED_SOURCE = """
__kernel void store(__global const float4 *src, write_only image2d_t image, int width)
{ int x = get_global_id(0), y = get_global_id(1);
  write_imagef(image, (int2)(x, y), src[y * width + x]); }
__kernel void load(read_only image2d_t image, __global float4 *dst, int width)
{ const sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;
  int x = get_global_id(0), y = get_global_id(1);
  dst[y * width + x] = read_imagef(image, s, (int2)(x, y)); }
"""


@case(COMPRESSED, "RGBA8 image written and read by kernels (compressed natively)")
def _compressed(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.images.image import compressed_format, create_image, parse_image_format
    from qcom_ext.ext.images.info import query_image_info
    from qcom_ext.ext.memory.host_ptr import ExternalMemory

    width, height = 32, 16
    codes = env.rng.integers(0, 256, (height, width, 4))
    pixels = (codes / np.float32(255)).astype(np.float32)
    program = env.program(COMPRESSED_SOURCE)

    def through(image) -> np.ndarray:
        out, host = env.empty((height, width, 4), np.float32)
        cl.Kernel(program, "store")(
            env.queue, (width, height), None, env.to_device(pixels), image.image, np.int32(width)
        )
        cl.Kernel(program, "load")(
            env.queue, (width, height), None, image.image, out, np.int32(width)
        )
        return env.read(out, host)

    if env.tier != "native":
        image = create_image(env.context, (width, height), "RGBA/UNORM_INT8", compressed=True)
        return Outcome(through(image), pixels, 1e-6, ran_as="fallback", note=image.reason)
    if env.caps.path(IMAGE_INFO) != "native":  # only the driver knows the compressed size
        raise Skip(
            f"a compressed image's size comes from clQueryImageInfoQCOM, and "
            f"{IMAGE_INFO} is {env.caps.path(IMAGE_INFO)} here"
        )
    target = compressed_format(parse_image_format("RGBA/UNORM_INT8"))
    size = query_image_info(env.caps.device(), target, (width, height)).size
    with dma_buf(env, size) as fd:
        image = create_image(
            env.context,
            (width, height),
            "RGBA/UNORM_INT8",
            compressed=True,
            memory=ExternalMemory.dmabuf(fd),
        )
        ran_as = "native" if image.compressed else "fallback"
        return Outcome(through(image), pixels, 1e-6, ran_as=ran_as, note=image.reason)


@case(
    BUFFER_FROM_IMAGE,
    "paint via the image, invert via the buffer, gather via the image",
    trial="the trial buffer over an image (clCreateBufferFromImageQCOM or "
    "cl_khr_image2d_from_buffer), written and read through both",
)
def _buffer_from_image(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.images.image_buffer import image_with_buffer

    width, height = 40, 24
    program = env.program("buffer_from_image.cl")
    pair = image_with_buffer(env.context, (width, height), ("RGBA", "UNSIGNED_INT8"))
    cl.Kernel(program, "paint")(env.queue, (width, height), None, pair.image)
    pair.sync_to_buffer(env.queue)
    painted = pair.read_buffer(env.queue)
    cl.Kernel(program, "invert_rows")(
        env.queue, (width, height), None, pair.buffer, np.uint32(pair.row_pitch)
    )
    pair.sync_to_image(env.queue)
    out, host = env.empty((height, width, 4), np.uint8)
    cl.Kernel(program, "gather")(
        env.queue, (width, height), None, pair.image, out, np.uint32(width)
    )
    y, x = np.mgrid[0:height, 0:width]
    pattern = np.stack([x & 255, y & 255, (x ^ y) & 255, np.full_like(x, 255)], -1)
    inverted = pattern.copy()
    inverted[..., :3] = 255 - inverted[..., :3]
    inverted[..., 3] = (2 * y) % 256
    got = np.stack([painted, env.read(out, host)]).astype(np.int64)
    note = f"row pitch {pair.row_pitch}, zero-copy {pair.zero_copy}"
    return Outcome(got, np.stack([pattern, inverted]), ran_as=pair.path, note=note)


@case(
    IMAGE_INFO,
    "layout of a 100x30 RGBA8 image",
    compare=False,
    trial="the trial clQueryImageInfoQCOM query of a 100x30 RGBA8 layout",
)
def _image_info(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.images.info import query_image_info

    width, height = 100, 30
    info = query_image_info(env.caps.device(), "RGBA/UNORM_INT8", (width, height))
    got = {
        "element_size": info.element_size,
        "row_pitch": info.row_pitch,
        "size covers the rows": info.size >= info.row_pitch * height,
        "row pitch is a multiple of the row alignment": info.row_alignment > 0
        and info.row_pitch % info.row_alignment == 0,
    }
    want = dict.fromkeys(got, True)
    want["element_size"] = 4
    if info.path == "native":  # the driver's answer: the pitch of a real image it makes
        fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)
        image = cl.create_image(env.context, cl.mem_flags.READ_ONLY, fmt, (width, height))
        want["row_pitch"] = int(image.row_pitch)
        note = "reference: CL_IMAGE_ROW_PITCH of an image the driver made"
    elif info.path.startswith("khr:"):  # rows at CL_IMAGE_REQUIREMENTS_ROW_PITCH_ALIGNMENT_EXT
        align = info.row_alignment
        got["row alignment is a power of two"] = align > 0 and align & (align - 1) == 0
        want["row alignment is a power of two"] = True
        want["row_pitch"] = -(-width * 4 // max(align, 1)) * max(align, 1)
        note = f"reference: rows of {width * 4} bytes rounded up to the driver's {align}"
    else:  # the core rule: width rounded up to CL_DEVICE_IMAGE_PITCH_ALIGNMENT pixels
        align = max(env.caps.limits.image_pitch_alignment or 0, 1)
        want["row_pitch"] = -(-width // align) * align * 4
        note = f"reference: rows of {width} pixels rounded up to {align}"
    return Outcome(got, want, ran_as=info.path, note=note)


@case(
    IMAGE_INFO,
    "an RGBA8 image over a buffer laid out by clGetImageRequirementsInfoEXT",
    tiers=("khr",),
    compare=False,
)
def _image_over_buffer(env: Env) -> Outcome:
    """The Khronos tier's layout is the one the driver uses: an image made over a buffer
    of CL_IMAGE_REQUIREMENTS_SIZE_EXT bytes at the row pitch it implies holds the
    pixels written through the image, row by row at that pitch."""
    import pyopencl as cl

    from qcom_ext.ext.images.info import query_image_info

    if not env.caps.limits.image_pitch_alignment:
        raise Skip(
            f"{env.caps.label} makes no 2D image over a buffer "
            "(CL_DEVICE_IMAGE_PITCH_ALIGNMENT is 0)"
        )
    width, height = 37, 9
    flags = cl.mem_flags.READ_WRITE
    info = query_image_info(env.caps.device(), "RGBA/UNORM_INT8", (width, height), flags)
    buffer = cl.Buffer(env.context, flags, info.size)
    desc = cl.ImageDescriptor()
    desc.image_type = cl.mem_object_type.IMAGE2D
    desc.shape = (width, height)
    desc.pitches = (info.row_pitch, 0)
    desc.buffer = buffer
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)
    image = cl.Image(env.context, flags, fmt, desc=desc)
    pixels = env.rng.integers(0, 256, (height, width, 4), dtype=np.uint8)
    cl.enqueue_copy(env.queue, image, pixels, origin=(0, 0), region=(width, height))
    raw = env.read(buffer, np.empty(info.size, np.uint8))
    rows = [raw[y * info.row_pitch : y * info.row_pitch + width * 4] for y in range(height)]
    got = np.stack(rows).reshape(height, width, 4)
    note = f"row pitch {info.row_pitch}, size {info.size}: the pixels read back through the buffer"
    return Outcome(got, pixels, ran_as=info.path, note=note)


unchecked(
    "cl_qcom_extended_images",
    "qcom_ext makes no image beyond the core size limits (it does not set "
    "CL_CONTEXT_ENABLE_EXTENDED_IMAGES_QCOM); the extended limits are in "
    "`qcom-ext probe --json`",
)
