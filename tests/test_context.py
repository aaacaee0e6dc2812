"""create_context / create_queue / set_perf_hint on every local OpenCL device.

No local device has the Qualcomm hints, so these check the portable paths and that the
objects are ordinary pyopencl ones with the right reference counts; the native paths
are checked through a fake Adreno driver in test_context_fake.py.
"""

from __future__ import annotations

import gc
import os
import warnings
import weakref

import numpy as np
import pyopencl as cl
import pytest

import qcom_ext
import qcom_ext.ext.context as context_module
from qcom_ext import QcomExtWarning
from qcom_ext._context_cache import live_handles
from qcom_ext.ext.context import _lookup


def qcom_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, QcomExtWarning)]


def make(caps, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ctx = qcom_ext.create_context(caps.device(), **kwargs)
    return ctx, qcom_warnings(caught)


def test_pyopencl_code_runs_unchanged(device_caps, kernel_context):
    ctx, _ = make(device_caps, perf_hint="high", priority_hint="low")
    queue = qcom_ext.create_queue(ctx, profiling=True)
    assert isinstance(ctx, cl.Context) and isinstance(queue, cl.CommandQueue)
    assert [d.int_ptr for d in ctx.devices] == [device_caps.device_id]
    assert ctx.properties == []  # readable: no property pyopencl cannot parse was passed
    src = (
        "__kernel void axpy(__global float *y, __global const float *x, float a) {"
        " int i = get_global_id(0); y[i] += a * x[i]; }"
    )
    axpy = cl.Program(ctx, src).build().axpy
    x = np.arange(1024, dtype=np.float32)
    y = np.ones_like(x)
    mf = cl.mem_flags
    x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=y)
    event = axpy(queue, x.shape, None, y_buf, x_buf, np.float32(2))
    event.wait()
    assert event.profile.end >= event.profile.start > 0
    out = np.empty_like(y)
    cl.enqueue_copy(queue, out, y_buf)
    np.testing.assert_array_equal(out, 1 + 2 * x)
    unordered = qcom_ext.create_queue(ctx, out_of_order=True)
    assert unordered.properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    axpy(unordered, x.shape, None, y_buf, x_buf, np.float32(-2)).wait()
    cl.enqueue_copy(unordered, out, y_buf)
    np.testing.assert_array_equal(out, y)


def test_reference_counts_prove_ownership_is_handed_over(device_caps):
    ctx, _ = make(device_caps)
    assert ctx.get_info(cl.context_info.REFERENCE_COUNT) == 1
    queue = qcom_ext.create_queue(ctx)
    assert queue.get_info(cl.command_queue_info.REFERENCE_COUNT) == 1
    # Whether a queue's hold on its context shows in the count is up to the driver
    # (pocl: 2, NVIDIA: 1); either way it must be given back when the queue goes.
    assert ctx.get_info(cl.context_info.REFERENCE_COUNT) in (1, 2)
    del queue
    gc.collect()
    assert ctx.get_info(cl.context_info.REFERENCE_COUNT) == 1


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


#: Fewer with QCOM_EXT_LEAK_CYCLES: a GPU driver's context costs ~0.2 s (1,000 took 199 s).
THOUSAND = min(1000, int(os.environ.get("QCOM_EXT_LEAK_CYCLES", "1000")))


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_thousand_contexts_and_queues_release_everything(device_caps):
    device = device_caps.device()

    def cycle(count: int) -> None:
        for _ in range(count):
            ctx = qcom_ext.create_context(device, perf_hint="normal")
            queue = qcom_ext.create_queue(ctx, profiling=True)
            del queue, ctx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QcomExtWarning)
        cycle(50)  # warm up allocator pools and caches
        gc.collect()
        rss, fds, entries = _rss(), len(os.listdir("/proc/self/fd")), len(live_handles())
        cycle(THOUSAND)
        gc.collect()
    # A leaked reference (retain=True) grows RSS by about 3.3 MB per 1,000 on pocl.
    assert _rss() - rss < 1 << 20
    assert len(os.listdir("/proc/self/fd")) == fds
    assert len(live_handles()) == entries


def test_fallback_hints_warn_once_and_record_their_path(device_caps):
    if "native" in (
        device_caps.path("cl_qcom_perf_hint"),
        device_caps.path("cl_qcom_priority_hint"),
    ):
        pytest.skip(f"{device_caps.label} has a native hint")
    ctx, messages = make(device_caps, perf_hint="HIGH", priority_hint=0x40CC)
    info = qcom_ext.context_info(ctx)
    perf_path = device_caps.path("cl_qcom_perf_hint")
    priority_path = device_caps.path("cl_qcom_priority_hint")
    assert info == qcom_ext.ContextInfo("high", perf_path, "low", priority_path, False)
    assert len(messages) == 1
    assert f"perf_hint='high' -> {perf_path}" in messages[0]
    assert f"priority_hint='low' -> {priority_path}" in messages[0]
    assert device_caps.label in messages[0]


def test_no_hint_means_no_warning_and_no_info(device_caps):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctx = qcom_ext.create_context(device_caps.device())
        queue = qcom_ext.create_queue(ctx, recordable=True)
    assert qcom_ext.context_info(ctx) == qcom_ext.ContextInfo()
    if device_caps.path("cl_qcom_recordable_queues") != "native":
        assert queue.properties == 0  # an ordinary in-order queue


def test_protected_context_is_refused_before_anything_is_created(device_caps):
    if device_caps.path("cl_qcom_protected_context") == "native":
        pytest.skip(f"{device_caps.label} has protected contexts")
    from qcom_ext.binding.lib import driver

    created = []
    with (
        pytest.raises(qcom_ext.ExtensionUnavailable) as raised,
        driver.substitute(clCreateContext=lambda *args: created.append(args)),
    ):
        qcom_ext.create_context(device_caps.device(), protected=True, perf_hint="low")
    assert created == []
    assert raised.value.extension == "cl_qcom_protected_context"
    assert device_caps.label in raised.value.device
    assert "never fall back" in str(raised.value)


def test_set_perf_hint_updates_the_record_and_warns_once(device_caps):
    if device_caps.path("cl_qcom_perf_hint") == "native":
        pytest.skip(f"{device_caps.label} has the native perf hint")
    ctx, _ = make(device_caps, priority_hint="normal")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qcom_ext.set_perf_hint(ctx, "low")
    messages = qcom_warnings(caught)
    assert len(messages) == 1 and "perf_hint='low'" in messages[0]
    info = qcom_ext.context_info(ctx)
    assert (info.perf_hint, info.perf_hint_path) == ("low", device_caps.path("cl_qcom_perf_hint"))
    assert info.priority_hint == "normal"  # untouched


def test_set_perf_hint_on_a_plain_pyopencl_context(device_caps):
    ctx = cl.Context([device_caps.device()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QcomExtWarning)
        qcom_ext.set_perf_hint(ctx, "normal")
    assert qcom_ext.context_info(ctx).perf_hint == "normal"
    handle = ctx.int_ptr
    del ctx
    gc.collect()
    assert _lookup(handle) is None


def test_queue_hints_without_khronos_support_are_no_ops_with_one_warning(device_caps):
    tiers = ("cl_khr_priority_hints", "cl_khr_throttle_hints")
    if any(t in device_caps.extensions | device_caps.platform_extensions for t in tiers):
        pytest.skip(f"{device_caps.label} advertises a Khronos queue hint")
    ctx, _ = make(device_caps)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        queue = qcom_ext.create_queue(ctx, priority="high", throttle="low", profiling=True)
    messages = qcom_warnings(caught)
    assert len(messages) == 1
    assert "priority='high' is a no-op" in messages[0]
    assert "throttle='low' is a no-op" in messages[0]
    assert queue.properties == cl.command_queue_properties.PROFILING_ENABLE


def test_registry_does_not_keep_contexts_alive(device_caps):
    ctx, _ = make(device_caps, perf_hint="low")
    queue = qcom_ext.create_queue(ctx)
    assert qcom_ext.context_info(queue.context) == qcom_ext.context_info(ctx)  # same handle
    handle, ref = ctx.int_ptr, weakref.ref(ctx)
    assert _lookup(handle) is not None
    del ctx, queue
    gc.collect()
    assert ref() is None
    assert _lookup(handle) is None


def test_devices_of_two_platforms_are_refused():
    devices = [p.get_devices()[0] for p in cl.get_platforms() if p.get_devices()]
    if len(devices) < 2:
        pytest.skip("needs two OpenCL platforms")
    with pytest.raises(qcom_ext.ConfigError, match="several platforms"):
        qcom_ext.create_context(devices[:2])


def test_queue_device_must_belong_to_the_context(device_caps):
    others = [
        d
        for p in cl.get_platforms()
        for d in p.get_devices()
        if d.int_ptr != device_caps.device_id
    ]
    if not others:
        pytest.skip("needs a second OpenCL device")
    ctx, _ = make(device_caps)
    with pytest.raises(qcom_ext.ConfigError, match="is not a device of this context"):
        qcom_ext.create_queue(ctx, others[0])


def test_a_report_passed_down_is_not_probed_again(device_caps, monkeypatch):
    """create_context(caps) takes the device's report as it is, and create_queue on the
    context it made uses the report it was made with: no probe() either time."""

    def no_probe(*args, **kwargs):
        raise AssertionError("probe() was called")

    monkeypatch.setattr(context_module, "probe", no_probe)
    ctx = qcom_ext.create_context(device_caps)
    queue = qcom_ext.create_queue(ctx, profiling=True)
    assert [d.int_ptr for d in ctx.devices] == [device_caps.device_id]
    assert queue.device.int_ptr == device_caps.device_id
