"""Checks of the host-side extensions: context hints, recordings, protected contexts,
on-chip memory and the CLML interface query.

Each makes the objects through the public API (``create_context``, ``Recording``,
``onchip_buffer``, ...) on the path being run and runs a small kernel with them (the
samples' ``perf_hint.py``, ``recordable_queue.py``, ``onchip_memory.py``). A protected
context is checked where it exists, and where it does not, that it is refused instead
of falling back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qcom_ext.tools.selftest._registry import Env, Outcome, Skip, case, refused

PERF, PRIORITY = "cl_qcom_perf_hint", "cl_qcom_priority_hint"
RECORDABLE, PROTECTED = "cl_qcom_recordable_queues", "cl_qcom_protected_context"
ONCHIP, ML = "cl_qcom_onchip_global_memory", "cl_qcom_ml_ops"

LCG = """
__kernel void lcg(__global uint *x, uint rounds) {
    size_t i = get_global_id(0);
    uint v = x[i];
    for (uint r = 0; r < rounds; ++r) v = v * 1664525u + 1013904223u;
    x[i] = v;
}
"""


def _lcg(values: np.ndarray, rounds: int) -> np.ndarray:
    out = values.copy()
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            out = out * np.uint32(1664525) + np.uint32(1013904223)
    return out


def _lcg_on(context: Any, queue: Any, values: np.ndarray, rounds: int) -> np.ndarray:
    """The LCG kernel run on ``queue`` of ``context`` (a context of its own, with hints)."""
    import pyopencl as cl

    from qcom_ext.ext.program.build import build_program

    buffer = cl.Buffer(
        context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=values
    )
    build_program(context, LCG).lcg(queue, values.shape, None, buffer, np.uint32(rounds))
    out = np.empty_like(values)
    cl.enqueue_copy(queue, out, buffer)
    return out


@case(
    PERF,
    "kernel on a context with perf_hint='low', then set_perf_hint('high')",
    trial="the trial context with a performance hint (CL_CONTEXT_PERF_HINT_QCOM or "
    "CL_QUEUE_THROTTLE_KHR), a kernel on it, the hint changed",
)
def _perf_hint(env: Env) -> Outcome:
    from qcom_ext.ext.context import context_info, create_context, create_queue, set_perf_hint

    values = env.rng.integers(0, 2**32, 1024, dtype=np.uint32)
    context = create_context(env.caps.device(), perf_hint="low")
    queue = create_queue(context)
    first = _lcg_on(context, queue, values, 64)
    ran_as = context_info(context).perf_hint_path
    set_perf_hint(context, "high")
    second = _lcg_on(context, create_queue(context), first, 64)
    info = context_info(context)
    got = np.concatenate([first, second, [info.perf_hint == "high"]])
    want = np.concatenate([_lcg(values, 64), _lcg(values, 128), [True]])
    return Outcome(got, want, ran_as=ran_as)


@case(
    PRIORITY,
    "kernel on a context with priority_hint='low'",
    trial="the trial context with a priority hint (CL_CONTEXT_PRIORITY_HINT_QCOM or "
    "CL_QUEUE_PRIORITY_KHR) and a kernel on it",
)
def _priority_hint(env: Env) -> Outcome:
    from qcom_ext.ext.context import context_info, create_context, create_queue

    values = env.rng.integers(0, 2**32, 1024, dtype=np.uint32)
    context = create_context(env.caps.device(), priority_hint="low")
    got = _lcg_on(context, create_queue(context), values, 64)
    return Outcome(got, _lcg(values, 64), ran_as=context_info(context).priority_hint_path)


SCALE_ADD = """
__kernel void scale_add(__global const int *src, __global int *dst, int mul, int add)
{ size_t i = get_global_id(0); dst[i] = src[i] * mul + add; }
"""
_RECORDING_PATHS = {
    "native": "native",
    "khr_command_buffer": "khr:cl_khr_command_buffer",
    "replay": "fallback",
}


@case(
    RECORDABLE,
    "record two kernels, replay three times with updated arguments",
    trial="the trial recording (two kernels recorded, replayed with updated arguments)",
)
def _recording(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.recording import Recording

    n = 1024
    src = env.rng.integers(-1000, 1000, n, dtype=np.int32)
    kernel = cl.Kernel(env.program(SCALE_ADD), "scale_add")
    src_buf = env.to_device(src)
    tmp, _ = env.empty(n, np.int32)
    dst, host = env.empty(n, np.int32)
    other, other_host = env.empty(n, np.int32)
    rec = Recording(env.queue)
    try:
        with rec:
            rec.enqueue(kernel, (n,), None, src_buf, tmp, np.int32(3), np.int32(1))
            rec.enqueue(kernel, (n,), None, tmp, dst, np.int32(2), np.int32(-5))
        got, want, paths = [], [], []
        for args, mul, add, out, into in (
            ({}, 3, 1, dst, host),
            ({(0, 2): 7, (1, 3): 11}, 7, 1, dst, host),  # this replay only
            ({(1, 1): other}, 3, 1, other, other_host),  # the original scalars again
        ):
            cl.wait_for_events([rec.replay(env.queue, args=args)])
            paths.append(rec.last_path)
            got.append(env.read(out, into).copy())
            second = (-5, 11)[(1, 3) in args]
            want.append((src.astype(np.int64) * mul + add) * 2 + second)
    finally:
        rec.release()
    ran_as = _RECORDING_PATHS.get(rec.path, rec.path)
    return Outcome(
        np.stack(got),
        np.stack(want),
        ran_as=ran_as,
        note=f"replays ran as {', '.join(dict.fromkeys(paths))}",
    )


@case(
    PROTECTED,
    "protected context and queue; profiling refused",
    tiers=("native",),
    trial="the trial protected context (CL_CONTEXT_PROTECTED_QCOM) and a queue on it",
)
def _protected(env: Env) -> Outcome:
    from qcom_ext.errors import ConfigError
    from qcom_ext.ext.context import context_info, create_context, create_queue

    context = create_context(env.caps.device(), protected=True)
    create_queue(context).finish()
    try:
        create_queue(context, profiling=True)
        refusal = False
    except ConfigError:
        refusal = True
    got = {"protected": context_info(context).protected, "profiling queue refused": refusal}
    return Outcome(
        got,
        dict.fromkeys(got, True),
        note="protected memory cannot be read back: no kernel result",
    )


@case(
    PROTECTED,
    "never falls back: create_context(protected=True) is refused",
    tiers=("unavailable",),
)
def _protected_refused(env: Env) -> Outcome:
    return refused(PROTECTED, lambda: _protected_context(env))


def _protected_context(env: Env) -> Any:
    from qcom_ext.ext.context import create_context

    return create_context(env.caps.device(), protected=True)


ONCHIP_SOURCE = "onchip.cl"


@case(ONCHIP, "two kernels chained through an on-chip buffer in a recording, 3 replays")
def _onchip(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.memory.onchip import onchip_buffer, scrub_onchip
    from qcom_ext.ext.recording import Recording

    n = 2048
    src = env.rng.integers(-1000, 1000, n, dtype=np.int32)
    program = env.program(ONCHIP_SOURCE)
    scale_bias, smooth3 = cl.Kernel(program, "scale_bias"), cl.Kernel(program, "smooth3")
    dst, host = env.empty(n, np.int32)
    staged = onchip_buffer(env.context, src.nbytes)
    rec = Recording(env.queue)
    try:
        with rec:
            rec.enqueue(
                scale_bias, (n,), None, env.to_device(src), staged, np.int32(1), np.int32(0)
            )
            rec.enqueue(smooth3, (n,), None, staged, dst, np.int32(n))
        if staged.onchip and rec.path != "native":
            raise Skip(
                "on-chip contents pass between kernels only inside a native "
                f"recording (cl_qcom_recordable_queues); recordings run {rec.path} "
                "here"
            )
        got, want = [], []
        for replay in range(3):
            scale, bias = replay + 2, 100 * replay - 250
            event = rec.replay(env.queue, args={(0, 2): scale, (0, 3): bias})
            cl.wait_for_events([event])
            got.append(env.read(dst, host).copy())
            scrub_onchip(env.queue, staged)  # the hardware would forget it here
            staged64 = src.astype(np.int64) * scale + bias
            padded = np.concatenate([staged64[:1], staged64, staged64[-1:]])
            want.append(padded[:-2] + 2 * padded[1:-1] + padded[2:])
    finally:
        rec.release()
    return Outcome(np.stack(got), np.stack(want), ran_as=staged.path, note=f"recording {rec.path}")


@case(
    ONCHIP,
    "a 4 KiB on-chip buffer, filled",
    compare=False,
    trial="the trial on-chip buffer (CL_MEM_ONCHIP_GLOBAL_QCOM, 4 KiB), filled",
)
def _onchip_fill(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.memory.onchip import onchip_buffer

    buffer = onchip_buffer(env.context, 4096)
    try:
        cl.enqueue_fill_buffer(env.queue, buffer, np.uint8(0), 0, 4096).wait()
        got = {"size": buffer.size, "on chip": buffer.onchip}
    finally:
        buffer.release()
    return Outcome(got, {"size": 4096, "on chip": env.tier == "native"}, ran_as=buffer.path)


@case(ML, "1x1 convolution with bias and relu6 (qcom_ext.ops, NHWC 1x5x6x12 -> 10)")
def _conv1x1(env: Env) -> Outcome:
    from qcom_ext.ops import conv2d_1x1

    x = env.rng.standard_normal((1, 5, 6, 12)).astype(np.float32)
    weight = env.rng.standard_normal((10, 12)).astype(np.float32)
    bias = env.rng.standard_normal(10).astype(np.float32)
    got = conv2d_1x1(env.queue, x, weight, bias, layout="NHWC", activation="relu6")
    want = np.clip(x.astype(np.float64) @ weight.T.astype(np.float64) + bias, 0, 6)
    return Outcome(got, want, 1e-4, note="qcom_ext's own kernels on every path")


@case(
    ML,
    "CLML interface versions (clQueryMLInterfaceVersionsQCOM)",
    tiers=("native",),
    compare=False,
)
def _clml_versions(env: Env) -> Outcome:
    from qcom_ext.device.clml import ml_interface_versions

    versions = ml_interface_versions(env.caps.platform_id)
    got = {
        "versions offered": bool(versions),
        "major versions >= 1": all(v[0] >= 1 for v in versions),
        "same as the probe": versions == env.caps.limits.ml_interface_versions,
    }
    note = ", ".join(f"{major}.{minor}" for major, minor in versions) or "none"
    return Outcome(got, dict.fromkeys(got, True), note=f"CLML interfaces {note}")
