"""A context is released when its user drops it, whatever qcom_ext built or cached on it.

Each case runs one API that builds or caches something (programs, kernels, samplers,
recordings, weight images, hint records) on a fresh ``pyopencl.Context``, as a user
would, then drops every object the user made. The test holds one raw reference of its
own (``clRetainContext``, like a user still holding the context) to read
``CL_CONTEXT_REFERENCE_COUNT``: it must come back to what plain pyopencl leaves, 1, and
the ``pyopencl.Context`` object must be collected. APIs given a queue keep their cache
with that queue only: with the queue gone and the context still held, the count is 1
too. Before the per-context cache (qcom_ext._context_cache) the count stayed at 5 after
``convolve_image``: the module-level caches kept the context, and its GPU memory, alive.
"""

from __future__ import annotations

import functools
import gc
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import qcom_ext
from qcom_ext import _context_cache, ops
from qcom_ext.binding.lib import C, driver, ffi
from qcom_ext.ext.accelerated import whole_image
from qcom_ext.ext.accelerated.points import PointOps

ADD = "__kernel void add(__global int *a, int b) { a[get_global_id(0)] += b; }"
mf = cl.mem_flags


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
        yield


def references(handle: int) -> int:
    count = ffi.new("cl_uint *")
    status = driver.clGetContextInfo(
        ffi.cast("cl_context", handle), C.CL_CONTEXT_REFERENCE_COUNT, 4, count, ffi.NULL
    )
    assert status == 0, status
    return int(count[0])


def settled(handle: int, expected: int, timeout: float = 5.0) -> int:
    """The reference count once the driver's worker threads have dropped what finished
    commands held (they do so a little after the host saw the commands finish), or
    after ``timeout`` the count then."""
    gc.collect()
    deadline = time.monotonic() + timeout
    while references(handle) > expected and time.monotonic() < deadline:
        time.sleep(0.005)
    return references(handle)


def held_and_dropped(make: Callable[[], Any], use: Callable[[Any], None]) -> tuple[int, int, bool]:
    """Run ``use`` on the context ``make()`` returns, drop it: (count with the context
    still held, count after the drop, whether its pyopencl object was collected)."""
    context = make()
    handle = int(context.int_ptr)
    driver.clRetainContext(ffi.cast("cl_context", handle))  # the test's own reference
    try:
        use(context)
        while_held = settled(handle, 2)  # the user's object and ours
        collected = weakref.ref(context)
        del context
        return while_held - 1, settled(handle, 1), collected() is None
    finally:
        driver.clReleaseContext(ffi.cast("cl_context", handle))


# ---- what a user runs: each takes the context and keeps nothing ----


def plain_pyopencl(ctx: Any) -> None:
    """The baseline: a program, a kernel run, an image and a sampler, plain pyopencl."""
    queue = cl.CommandQueue(ctx)
    buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(4, np.int32))
    cl.Program(ctx, ADD).build().add(queue, (4,), None, buf, np.int32(1))
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    cl.Image(ctx, mf.READ_WRITE, fmt, (4, 4))
    cl.Sampler(ctx, False, cl.addressing_mode.CLAMP, cl.filter_mode.NEAREST)
    queue.finish()


def rgba(ctx: Any) -> tuple[Any, Any]:
    pixels = np.arange(8 * 8 * 4, dtype=np.float32).reshape(8, 8, 4)
    return whole_image.rgba_image(ctx, pixels), whole_image.empty_rgba_image(ctx, 8, 8)


def convolve(ctx: Any) -> None:
    queue = cl.CommandQueue(ctx)
    src, dst = rgba(ctx)
    weights = qcom_ext.WeightImage(ctx, np.ones((3, 3)), center=(1, 1))
    for method in whole_image.METHODS:
        qcom_ext.convolve_image(queue, src, weights, dst, method=method)
    queue.finish()


def box_filter(ctx: Any) -> None:
    queue = cl.CommandQueue(ctx)
    src, dst = rgba(ctx)
    qcom_ext.box_filter_image(queue, src, qcom_ext.box_size(2, 2, device=ctx), dst)
    queue.finish()


def block_match(ctx: Any) -> None:
    queue = cl.CommandQueue(ctx)
    target, _ = rgba(ctx)
    qcom_ext.block_match_image(queue, target, target, region=(4, 4), radius=1).event.wait()


def conv_layers(ctx: Any) -> None:
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(0)
    x = rng.random((1, 4, 6, 6), np.float32)
    ops.depthwise_conv2d(queue, x, rng.random((4, 1, 3, 3)), padding=1)
    ops.conv2d_1x1(queue, x, rng.random((4, 4)))
    for method in ("image", "tiled"):
        ops.conv2d(queue, x, rng.random((4, 4, 3, 3)), padding=1, method=method)
    ops.from_image(queue, ops.to_image(queue, x))
    u8 = rng.integers(0, 255, (1, 2, 2, 8), dtype=np.uint8)
    w8 = rng.integers(-128, 127, (4, 8), dtype=np.int8)
    ops.conv2d_int8(
        queue, u8, w8, input_scale=0.5, input_zero_point=3, weight_scale=0.25, layout="NHWC"
    )
    queue.finish()


@functools.cache
def _views_release_the_context(device: Any) -> bool:
    """Whether the driver lets a released image1d_buffer image go of its context (plain
    pyopencl; asked once per device, since where it does not, asking leaks a context).
    pocl 3.0 and 3.1 keep one context reference per such image after its release
    (measured: 3 before and after ``clReleaseMemObject``)."""
    ctx = cl.Context([device])
    buffer = cl.Buffer(ctx, mf.READ_ONLY, 4096)
    before = ctx.reference_count
    view = cl.create_image(
        ctx, mf.READ_ONLY, cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT32),
        shape=(256,), buffer=buffer,
    )  # fmt: skip
    view.release()
    return ctx.reference_count == before


def linear_layers(ctx: Any) -> None:
    """ops.Linear: GEMV (float and q8_0 activations), GEMM, tuning; on the image path too
    where the device has image1d_buffer views and the driver releases them
    (:func:`_views_release_the_context`)."""
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((24, 64)).astype(np.float32)
    device = ctx.devices[0]
    views = device.image_support and _views_release_the_context(device)
    for path in ("buffer", "image") if views else ("buffer",):
        try:
            layer = ops.Linear(queue, w, weight_format="q4_0", path=path)
        except qcom_ext.ConfigError:  # no image1d_buffer views of these formats
            continue
        layer(queue, rng.standard_normal((3, 64)).astype(np.float32))
        layer.tune(queue, np.ones((1, 64), np.float32), budget_s=0.2)
        ops.Linear(queue, layer.quantized, activation_format="q8_0", path=path)(queue, w[:2])
    ops.matmul(queue, rng.standard_normal((17, 64)).astype(np.float32), w, weight_format="f16")
    queue.finish()


def samplers(ctx: Any) -> None:
    for filter in ("bicubic", "nearest"):
        qcom_ext.create_sampler(ctx, normalized=False, addressing="clamp", filter=filter)
    whole_image.sampler(ctx, "clamp")


def programs(ctx: Any) -> None:
    queue = cl.CommandQueue(ctx)
    program = qcom_ext.build_program(ctx, ADD, defines={"UNUSED": 1})
    kernel = cl.Kernel(program, "add")
    buf = cl.Buffer(ctx, mf.READ_WRITE, 64 * 4)
    qcom_ext.kernel_sub_group_size(kernel, ctx.devices[0], 64)
    qcom_ext.tune(
        kernel, (64,), [buf, np.int32(1)], candidates=[(16,), (32,)], use_cache=False, queue=queue
    )
    queue.finish()


def recordings(ctx: Any) -> None:
    queue = cl.CommandQueue(ctx)
    kernel = cl.Kernel(cl.Program(ctx, ADD).build(), "add")
    buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(4, np.int32))
    for owner in (queue, ctx):
        rec = qcom_ext.Recording(owner)
        with rec:
            rec.enqueue(kernel, (4,), None, buf, np.int32(1))
        rec.replay(queue, args={(0, 1): 2})
        queue.finish()
        if owner is ctx:
            rec.release()  # one released, one only dropped


def point_ops(ctx: Any) -> None:
    queue = cl.CommandQueue(ctx)
    image, _ = rgba(ctx)
    points = PointOps(ctx)
    points.box_filter(queue, image, (1.0, 1.0), [(2.0, 1.0)])
    weights = qcom_ext.WeightImage(ctx, np.ones((3, 3)), center=(1, 1))
    PointOps(ctx).convolve(queue, image, weights, [(2.0, 2.0)])
    queue.finish()


def image_buffers(ctx: Any) -> None:
    queue = cl.CommandQueue(ctx)
    pair = qcom_ext.image_with_buffer(ctx, (8, 4), "RGBA/UNSIGNED_INT8")
    pair.write_buffer(queue, np.zeros((4, 8, 4), np.uint8))
    pair.sync_to_image(queue)
    qcom_ext.buffer_from_image(pair.image).sync_to_buffer(queue)
    queue.finish()


def hinted_context(device: Any) -> Callable[[], Any]:
    return lambda: qcom_ext.create_context(device, perf_hint="low", priority_hint="high")


def hinted_queues(ctx: Any) -> None:
    qcom_ext.set_perf_hint(ctx, "normal")
    for options in ({}, {"profiling": True, "priority": "low"}, {"recordable": True}):
        qcom_ext.create_queue(ctx, **options).finish()


USES: dict[str, tuple[Callable[[Any], None], bool]] = {  # name -> (use, needs images)
    "convolve_image": (convolve, True),
    "box_filter_image": (box_filter, True),
    "block_match_image": (block_match, True),
    "conv_layers": (conv_layers, True),
    "linear_layers": (linear_layers, False),
    "samplers": (samplers, True),
    "build_program_and_tune": (programs, False),
    "recordings": (recordings, False),
    "point_ops": (point_ops, True),
    "image_buffers": (image_buffers, True),
    "hinted_queues": (hinted_queues, False),
}
QUEUE_ONLY = {
    "convolve_image",
    "box_filter_image",
    "block_match_image",
    "conv_layers",
    "linear_layers",
}


def skip_without(device_caps: Any, needs_images: bool) -> None:
    if needs_images and not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")


def test_plain_pyopencl_leaves_one_reference(kernel_context, cl_device):
    """The baseline the cases below are held to: pyopencl's own objects, dropped."""
    held, after, collected = held_and_dropped(lambda: cl.Context([cl_device]), plain_pyopencl)
    assert (held, after, collected) == (1, 1, True)


@pytest.mark.parametrize("name", sorted(USES))
def test_dropping_the_context_releases_it(kernel_context, cl_device, device_caps, name):
    use, needs_images = USES[name]
    skip_without(device_caps, needs_images)
    make = (
        hinted_context(cl_device) if name == "hinted_queues" else lambda: cl.Context([cl_device])
    )
    held, after, collected = held_and_dropped(make, use)
    assert after == 1, f"{name}: {after - 1} references left after the user dropped the context"
    assert collected, f"{name}: something still holds the pyopencl.Context"
    if name in QUEUE_ONLY:  # the cache lived with the queue, which the user dropped
        assert held == 1, f"{name}: {held - 1} references left with only the context held"


def test_a_cache_lives_as_long_as_its_queue(kernel_context, device_caps):
    """Launches on one queue build once; a re-wrapped context (``queue.context``) finds
    the same entries; the entries die with the last object holding them."""
    skip_without(device_caps, True)
    queue = cl.CommandQueue(kernel_context)
    src, dst = rgba(kernel_context)
    built = []
    real = whole_image._context_cache.cached

    def counting(owner, key, build):
        return real(owner, key, lambda context: built.append(key) or build(context))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(whole_image._context_cache, "cached", counting)
        for _ in range(3):
            qcom_ext.box_filter_image(queue, src, (2.0, 2.0), dst)
        assert len(built) == 2  # one program, one sampler
        assert _context_cache.entries(queue) is _context_cache.entries(queue.context)
    handle = int(kernel_context.int_ptr)
    assert handle in _context_cache.live_handles()
    del queue
    gc.collect()
    assert handle not in _context_cache.live_handles()  # its last owner is gone


def test_the_cache_takes_contexts_and_queues_only(kernel_context):
    buffer = cl.Buffer(kernel_context, mf.READ_ONLY, 4)
    with pytest.raises(qcom_ext.ConfigError, match=r"pyopencl\.CommandQueue, got Buffer"):
        _context_cache.cached(buffer, ("test", "buffer"), lambda context: 1)


def test_builders_get_a_wrapper_that_is_no_owner(kernel_context):
    """What a builder makes may refer to the context it is given without keeping its
    own entries alive: that wrapper carries no entries."""
    got = _context_cache.cached(kernel_context, ("test", "context"), lambda context: context)
    assert got == kernel_context and got is not kernel_context  # one handle, two objects
    assert not hasattr(got, _context_cache.ATTRIBUTE)
    assert getattr(kernel_context, _context_cache.ATTRIBUTE).context is got
    _context_cache.clear()
    assert not _context_cache.entries(kernel_context).values
