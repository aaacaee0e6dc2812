"""The built-in trials of :mod:`qcom_ext.verify`: the first risky native call of each path.

Each function takes a :class:`~qcom_ext.verify.TrialTarget` and makes the calls qcom_ext
itself makes on the path under trial (``target.path``): host-side extensions through the
public API (which takes that path, checked with ``expect_path``), kernel-side ones by
compiling a kernel with only that extension's ``-D`` flag and running it once. A result
that differs from the reference raises :class:`WrongResult`. Calling one directly, with
``target.path == "fallback"``, runs the portable code of the same trial.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from qcom_ext.errors import QcomExtError, QcomExtWarning
from qcom_ext.tools.verify.runner import TrialTarget

__all__ = ["WrongResult"]


class WrongResult(QcomExtError):
    """A trial ran, but its result differs from the reference."""


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise WrongResult(what)


def _mf() -> Any:
    import pyopencl

    return pyopencl.mem_flags


def _run_buffer(
    target: TrialTarget,
    source: str,
    data: np.ndarray,
    global_size: int,
    local_size: int | None = None,
) -> np.ndarray:
    """Build ``source`` (kernel ``k`` taking one buffer), run it over ``data``, read back."""
    import pyopencl as cl

    kernel = cl.Kernel(target.build(source), "k")
    mf = _mf()
    buffer = cl.Buffer(target.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=data)
    local = None if local_size is None else (local_size,)
    kernel(target.queue, (global_size,), local, buffer)
    out = np.empty_like(data)
    cl.enqueue_copy(target.queue, out, buffer)
    return out


def _float_image(target: TrialTarget, pixels: np.ndarray) -> Any:
    """A read-only CL_RGBA/CL_FLOAT image of ``pixels`` (height, width, 4)."""
    import pyopencl as cl

    height, width = pixels.shape[:2]
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    mf = _mf()
    return cl.create_image(
        target.context,
        mf.READ_ONLY | mf.COPY_HOST_PTR,
        fmt,
        shape=(width, height),
        hostbuf=np.ascontiguousarray(pixels, np.float32),
    )


def _run_image(
    target: TrialTarget,
    source: str,
    image: Any,
    *args: Any,
    outputs: int,
    extra: tuple[str, ...] = (),
) -> np.ndarray:
    """Build ``source`` (kernel ``k(image, args..., __global float4 *out)``), run one item."""
    import pyopencl as cl

    kernel = cl.Kernel(target.build(source, extra), "k")
    out = np.zeros((outputs, 4), np.float32)
    buffer = cl.Buffer(target.context, _mf().WRITE_ONLY, out.nbytes)
    kernel(target.queue, (1,), None, image, *args, buffer)
    cl.enqueue_copy(target.queue, out, buffer)
    return out


# ---- host side -------------------------------------------------------------------------

ADD = "__kernel void add(__global int *a, int b) { a[get_global_id(0)] += b; }"


def recording(target: TrialTarget) -> None:
    """A recording of one dispatch, replayed as recorded and with an argument update."""
    import pyopencl as cl

    from qcom_ext.ext.recording import Recording

    queue = target.queue
    kernel = cl.Kernel(cl.Program(target.context, ADD).build(), "add")
    mf = _mf()
    data = cl.Buffer(
        target.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(4, np.int32)
    )
    rec = Recording(queue)
    try:
        target.expect_path(
            rec.path,
            aliases={"khr:cl_khr_command_buffer": "khr_command_buffer", "fallback": "replay"},
        )
        with rec:
            rec.enqueue(kernel, (4,), None, data, np.int32(1))
        rec.replay(queue).wait()
        rec.replay(queue, args={(0, 1): 10}).wait()
    finally:
        rec.release()
    out = np.empty(4, np.int32)
    cl.enqueue_copy(queue, out, data)
    _check(out.tolist() == [11] * 4, f"two replays (+1, +10) gave {out.tolist()}, expected 11s")


CONVOLVE = """
__constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                         CLK_FILTER_NEAREST;
__kernel void k(__read_only image2d_t src, __read_only qcom_weight_image_t w,
                __global float4 *out)
{
    out[0] = qcom_convolve_imagef(src, s, (float2)(4.5f, 4.5f), w);
}
"""


def weight_image(target: TrialTarget) -> None:
    """A 3x3 averaging weight image, and a convolution of a constant image with it."""
    from qcom_ext.ext.accelerated.weights import WeightImage

    weights = WeightImage(target.context, np.full((3, 3), 1 / 9, np.float32), center=(1, 1))
    try:
        target.expect_path(weights.path)
        image = _float_image(target, np.full((8, 8, 4), 0.5, np.float32))
        out = _run_image(target, CONVOLVE, image, weights.image, outputs=1)
    finally:
        weights.release()
    _check(bool(np.allclose(out[0], 0.5, atol=0.01)), f"the 3x3 mean of 0.5s gave {out[0]}")


def image_buffer(target: TrialTarget) -> None:
    """An image and a buffer over the same pixels: pixels written through the buffer are
    read back through the image."""
    import pyopencl as cl

    from qcom_ext.ext.memory.image_buffer import image_with_buffer

    pair = image_with_buffer(target.context, (16, 8), "RGBA/UNSIGNED_INT8")
    target.expect_path(pair.path)
    pixels = np.arange(8 * 16 * 4, dtype=np.uint32).reshape(8, 16, 4).astype(np.uint8)
    queue = target.queue
    pair.write_buffer(queue, pixels)
    pair.sync_to_image(queue)
    out = np.empty_like(pixels)
    cl.enqueue_copy(queue, out, pair.image, origin=(0, 0), region=(16, 8))
    _check(bool(np.array_equal(out, pixels)), "the image does not hold the buffer's pixels")


def onchip(target: TrialTarget) -> None:
    """A 4 KiB on-chip buffer, filled and released."""
    import pyopencl as cl

    from qcom_ext.ext.memory.onchip import onchip_buffer

    buffer = onchip_buffer(target.context, 4096)
    target.expect_path(buffer.path)
    cl.enqueue_fill_buffer(target.queue, buffer, np.uint8(0), 0, 4096).wait()
    buffer.release()


def _hinted(target: TrialTarget, **hint: str) -> None:
    import pyopencl as cl

    from qcom_ext.ext.context import context_info, create_context, create_queue

    kind = next(iter(hint))
    with warnings.catch_warnings():  # a hint on a Khronos tier warns, by design
        warnings.simplefilter("ignore", QcomExtWarning)
        context = create_context([target.device], **hint)
        target.expect_path(getattr(context_info(context), f"{kind}_path"))
        queue = create_queue(context)
    cl.enqueue_marker(queue).wait()
    if kind == "perf_hint" and target.path == "native":
        from qcom_ext.ext.context import set_perf_hint

        set_perf_hint(context, "high")


def perf_hint(target: TrialTarget) -> None:
    """A context with a low performance hint, a queue on it, and the hint changed."""
    _hinted(target, perf_hint="low")


def priority_hint(target: TrialTarget) -> None:
    """A context with a low priority hint and a queue on it."""
    _hinted(target, priority_hint="low")


def protected_context(target: TrialTarget) -> None:
    """A protected context and a queue on it (never a fallback: native only)."""
    import pyopencl as cl

    from qcom_ext.ext.context import create_context, create_queue

    context = create_context([target.device], protected=True)
    cl.enqueue_marker(create_queue(context)).wait()


def image_info(target: TrialTarget) -> None:
    """The layout of a 100x10 RGBA image, without creating it."""
    from qcom_ext.ext.images.info import query_image_info

    info = query_image_info(target.device, "RGBA/UNORM_INT8", (100, 10))
    _check(
        info.element_size == 4 and info.row_pitch >= 400 and info.size >= 4000,
        f"implausible layout {info}",
    )


BICUBIC = """
__kernel void k(__read_only image2d_t src, sampler_t s, __global float4 *out)
{
    out[0] = qcom_read_imagef_bicubic(src, s, (float2)(0.5f, 0.5f));
}
"""


def bicubic(target: TrialTarget) -> None:
    """A bicubic sampler, and a bicubic read of a constant image (normalized coords)."""
    from qcom_ext.ext.images.sampler import create_sampler, sampler_path

    with warnings.catch_warnings():  # the portable sampler warns, by design
        warnings.simplefilter("ignore", QcomExtWarning)
        sampler = create_sampler(target.context, normalized=True, addressing="clamp")
    target.expect_path(sampler_path(target.context))
    image = _float_image(target, np.full((4, 4, 4), 0.5, np.float32))
    out = _run_image(
        target, BICUBIC, image, sampler, outputs=1, extra=("-DQCOM_EXT_BICUBIC_NORMALIZED=1",)
    )
    _check(bool(np.allclose(out[0], 0.5, atol=1e-3)), f"a bicubic read of 0.5s gave {out[0]}")


# ---- kernel side -----------------------------------------------------------------------

BITREVERSE = (
    "__kernel void k(__global uint *v) { size_t i = get_global_id(0); "
    "v[i] = qcom_bitreverse(v[i]); }"
)


def bitreverse(target: TrialTarget) -> None:
    data = np.array([0x1248EDBF, 1, 0x80000000, 0], np.uint32)
    out = _run_buffer(target, BITREVERSE, data, 4)
    expected = [0xFDB71248, 0x80000000, 1, 0]
    _check(out.tolist() == expected, f"qcom_bitreverse gave {[hex(v) for v in out]}")


DOT8 = """
__kernel void k(__global uint *v)
{
    v[3] = (uint)qcom_udot8_acc(v[0], v[1], 9);
    v[4] = (uint)qcom_dot8_acc(v[2], v[1], 9);
}
"""


def dot_product8(target: TrialTarget) -> None:
    """The guide's examples: udot8((11,22,33,44), (55,66,77,88), 9) = 8479 and
    dot8((-11,22,-33,44), (55,66,77,88), 9) = 2187."""
    data = np.array([0x0B16212C, 0x37424D58, 0xF516DF2C, 0, 0], np.uint32)
    out = _run_buffer(target, DOT8, data, 1).view(np.int32)
    _check(out[3:].tolist() == [8479, 2187], f"gave {out[3:].tolist()}, expected [8479, 2187]")


BF16 = (
    "__kernel void k(__global float *v) { v[0] = qcom_mad32_bf16((ushort)0x3f80, "
    "(ushort)0x4000, v[0]); }"
)


def bfloat16_product(target: TrialTarget) -> None:
    out = _run_buffer(target, BF16, np.array([3.0], np.float32), 1)
    _check(out[0] == 5.0, f"qcom_mad32_bf16(1, 2, 3) gave {out[0]}, expected 5")


SHUFFLE = """
__kernel void k(__global uint *v)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    size_t i = get_global_id(0);
    uint x = v[i];
    v[i] = qcom_sub_group_shuffle_xor(x, 1u, CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM, 0u);
}
"""


def _local_size(target: TrialTarget, wanted: int = 64) -> int:
    return max(1, min(wanted, int(target.device.max_work_group_size)))


def subgroup_shuffle(target: TrialTarget) -> None:
    """``xor 1`` within groups of 4 lanes: each item gets its neighbour's value (or the
    default 0, where the sub-group is narrower than the pair)."""
    size = _local_size(target)
    data = np.arange(1, size + 1, dtype=np.uint32)
    out = _run_buffer(target, SHUFFLE, data, size, size)
    swapped = data[np.arange(size) ^ 1] if size > 1 else data
    ok = np.all((out == swapped) | (out == 0))
    _check(bool(ok), f"xor-1 shuffles of 1..{size} gave {out[:8].tolist()}...")


REQD = """
#ifdef get_sub_group_size
#undef get_sub_group_size
#endif
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
QCOM_REQD_SUB_GROUP_SIZE(half) __kernel void k(__global uint *v)
{
#if defined(cl_khr_subgroups) || defined(__opencl_c_subgroups)
    v[get_global_id(0)] = get_sub_group_size();
#else
    v[get_global_id(0)] = 1u;
#endif
}
"""


def reqd_sub_group_size(target: TrialTarget) -> None:
    """A half-size kernel: every sub-group must fit in its work-group."""
    size = _local_size(target)
    out = _run_buffer(target, REQD, np.zeros(size, np.uint32), size, size)
    _check(
        bool(np.all((out >= 1) & (out <= size))),
        f"sub-group sizes {sorted(set(out.tolist()))} in a work-group of {size}",
    )


VECTOR = """
__constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                         CLK_FILTER_NEAREST;
__kernel void k(__read_only image2d_t im, __global float4 *out)
{
    out[0] = qcom_read_imagef_4x1(im, s, (float2)(0.5f, 0.5f), 0);
    out[1] = qcom_read_imagef_2x2(im, s, (float2)(1.0f, 1.0f), 0);
}
"""


def vector_image_ops(target: TrialTarget) -> None:
    """4x1 and 2x2 reads of red = x + 10 y: (0, 1, 2, 3) and (10, 11, 1, 0)."""
    pixels = np.zeros((4, 4, 4), np.float32)
    pixels[..., 0] = np.arange(4)[None, :] + 10 * np.arange(4)[:, None]
    out = _run_image(target, VECTOR, _float_image(target, pixels), outputs=2)
    expected = [[0, 1, 2, 3], [10, 11, 1, 0]]
    _check(out.tolist() == expected, f"gave {out.tolist()}, expected {expected}")
