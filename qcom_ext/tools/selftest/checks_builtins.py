"""Checks of the kernel builtins (``kernels/qcom_ext.h``): bit reversal, 8-bit dot
products, the bfloat16 multiply-add, sub-group shuffles and required sub-group sizes.

Each builds the sample kernel through ``qcom_ext.build_program`` (whose ``-D`` flags pick
the native builtin, the Khronos equivalent or the portable code for the path being run)
and compares with numpy.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from qcom_ext.tools.selftest._registry import Env, Outcome, case, unchecked

BITREVERSE = "cl_qcom_bitreverse"
DOT8 = "cl_qcom_dot_product8"
BF16 = "cl_qcom_bfloat16_product"
SHUFFLE = "cl_qcom_subgroup_shuffle"
REQD = "cl_qcom_reqd_sub_group_size"


def _run(env: Env, kernel, global_size, local_size, *args) -> None:
    import pyopencl as cl

    kernel.set_args(*args)
    cl.enqueue_nd_range_kernel(env.queue, kernel, global_size, local_size)


def bit_reversed(values: np.ndarray) -> np.ndarray:
    """numpy's 32-bit reversal of each uint32.

    >>> hex(bit_reversed(np.array([0x1248EDBF], np.uint32))[0])
    '0xfdb71248'
    """
    wide = values.astype(np.uint64)
    out = np.zeros_like(wide)
    for bit in range(32):
        out |= ((wide >> np.uint64(bit)) & np.uint64(1)) << np.uint64(31 - bit)
    return out.astype(np.uint32)


@case(
    BITREVERSE,
    "qcom_bitreverse of 4096 uints",
    trial="the trial kernel of qcom_bitreverse (4096 uints), compiled and run",
)
def _bitreverse(env: Env) -> Outcome:
    import pyopencl as cl

    values = env.rng.integers(0, 2**32, 4096, dtype=np.uint32)
    values[:4] = [0, 1, 0x80000000, 0x1248EDBF]
    out, host = env.empty(values.shape, np.uint32)
    kernel = cl.Kernel(env.program("bitreverse.cl"), "bitreverse_u32")
    _run(env, kernel, values.shape, None, env.to_device(values), out)
    return Outcome(env.read(out, host), bit_reversed(values))


def _packed_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows of 8-bit values as uint32 words of four consecutive columns (zero-padded)."""
    rows, cols = matrix.shape
    padded = np.zeros((rows, -(-cols // 4) * 4), dtype=np.uint8)
    padded[:, :cols] = matrix.view(np.uint8)
    return np.ascontiguousarray(padded).view("<u4")


@case(
    DOT8,
    "int8 x uint8 and uint8 x uint8 matrix products (13x37x10)",
    trial="the trial kernel of qcom_udot8_acc / qcom_dot8_acc (a 13x37x10 matrix product), "
    "compiled and run",
)
def _dot8(env: Env) -> Outcome:
    import pyopencl as cl

    m, k, n = 13, 37, 10
    signed = env.rng.integers(-128, 128, (m, k), dtype=np.int8)
    unsigned = env.rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = env.rng.integers(0, 256, (k, n), dtype=np.uint8)
    program = env.program("dot8_matmul.cl")
    bt = env.to_device(_packed_rows(np.ascontiguousarray(b.T)))
    got, want = [], []
    for name, a in (("matmul_s8u8", signed), ("matmul_u8u8", unsigned)):
        out, host = env.empty((m, n), np.int32)
        _run(
            env,
            cl.Kernel(program, name),
            (-(-n // 4), m),
            None,
            env.to_device(_packed_rows(a)),
            bt,
            out,
            np.int32(m),
            np.int32(n),
            np.int32(-(-k // 4)),
        )
        got.append(env.read(out, host))
        want.append(np.clip(a.astype(np.int64) @ b.astype(np.int64), -(2**31), 2**31 - 1))
    return Outcome(np.stack(got), np.stack(want))


@case(
    BF16,
    "bfloat16 dot product, qcom_mad32_bf16 per step (n=3000)",
    trial="the trial kernel of qcom_mad32_bf16 (a bfloat16 dot product), compiled and run",
)
def _bf16(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.program.bfloat16 import from_bfloat16, mad32_bf16, to_bfloat16

    n, groups, local = 3000, 4, 16
    a = to_bfloat16(env.rng.standard_normal(n, dtype=np.float32))
    b = to_bfloat16(env.rng.standard_normal(n, dtype=np.float32))
    out, host = env.empty(groups, np.float32)
    kernel = cl.Kernel(env.program("bf16_dot.cl"), "bf16_dot")
    _run(
        env,
        kernel,
        (groups * local,),
        (local,),
        env.to_device(a),
        env.to_device(b),
        np.uint32(n),
        out,
        cl.LocalMemory(4 * local),
    )
    # numpy replays the kernel's order: strided per work-item, then a tree per group
    items = groups * local
    steps = -(-n // items)
    pad = steps * items - n
    a_steps = np.concatenate([a, np.zeros(pad, np.uint16)]).reshape(steps, items)
    b_steps = np.concatenate([b, np.zeros(pad, np.uint16)]).reshape(steps, items)
    acc = np.zeros(items, np.float32)
    for step in range(steps):
        acc = mad32_bf16(a_steps[step], b_steps[step], acc)
    scratch = acc.reshape(groups, local)
    stride = local // 2
    while stride:
        scratch[:, :stride] = scratch[:, :stride] + scratch[:, stride : 2 * stride]
        stride //= 2
    want = scratch[:, 0].copy()
    if env.tier != "native":  # the portable fma is correctly rounded: bit for bit
        return Outcome(env.read(out, host), want)
    # the native rounding is not documented: the float32 error bound of this order
    products = np.abs(from_bfloat16(a).astype(np.float64) * from_bfloat16(b)).sum()
    bound = (steps + int(math.log2(local)) + 1) * 2.0**-24 * float(products)
    return Outcome(
        env.read(out, host),
        want,
        bound,
        note="native rounding is undocumented: float32 error bound",
    )


SHUFFLE_SOURCE = """
#define WIDTH(code) ((code) == 4 ? CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM \\
                   : (code) == 8 ? CLK_SUB_GROUP_SHUFFLE_WIDTH_W8_QCOM \\
                   : CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM)
__kernel void shuffles(__global const int *in, __global int *out, __global uint *info,
                       uint offset, int width_code, int dflt)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    size_t g = get_global_id(0);
    int v = in[g];
    qcom_sub_group_shuffle_width_modes_t w = WIDTH(width_code);
    out[5 * g + 0] = qcom_sub_group_shuffle_up(v, offset, w, dflt);
    out[5 * g + 1] = qcom_sub_group_shuffle_down(v, offset, w, dflt);
    out[5 * g + 2] = qcom_sub_group_shuffle_rotate_up(v, offset, w, dflt);
    out[5 * g + 3] = qcom_sub_group_shuffle_rotate_down(v, offset, w, dflt);
    out[5 * g + 4] = qcom_sub_group_shuffle_xor(v, offset, w, dflt);
    info[3 * g + 0] = (uint)get_group_id(0);
    info[3 * g + 1] = get_sub_group_id();
    info[3 * g + 2] = get_sub_group_local_id();
}
"""
SHUFFLE_OPS = ("up", "down", "rotate_up", "rotate_down", "xor")


def shuffle_source_lane(op: str, lane: int, size: int, offset: int, width: int) -> int | None:
    """The lane whose value ``lane`` of a sub-group of ``size`` receives (None: the
    default), from the extension's text: width groups of ``width`` lanes (0: the whole
    sub-group), the last one cut short by the end of the sub-group.

    >>> [shuffle_source_lane("rotate_up", lane, 6, 1, 4) for lane in range(6)]
    [3, 0, 1, 2, 5, 4]
    """
    w = width or size
    first = lane - lane % w
    n = min(w, size - first)
    pos = lane - first
    src = {
        "up": pos - offset,
        "down": pos + offset,
        "rotate_up": (pos - offset) % n,
        "rotate_down": (pos + offset) % n,
        "xor": pos ^ offset,
    }[op]
    return first + src if 0 <= src < n else None


def shuffle_model(
    values: np.ndarray, info: np.ndarray, offset: int, width: int, default: int
) -> np.ndarray:
    """Each work-item's five shuffle results, from the sub-groups the kernel reported."""
    groups: dict[tuple[int, int], dict[int, int]] = defaultdict(dict)
    for index, (group, sub_group, lane) in enumerate(info.tolist()):
        groups[group, sub_group][lane] = index
    out = np.empty((values.size, len(SHUFFLE_OPS)), values.dtype)
    for lanes in groups.values():
        size = len(lanes)
        if sorted(lanes) != list(range(size)):
            raise ValueError(f"a sub-group reported lanes {sorted(lanes)}, not 0..{size - 1}")
        for lane, index in lanes.items():
            for column, op in enumerate(SHUFFLE_OPS):
                src = shuffle_source_lane(op, lane, size, offset, width)
                out[index, column] = default if src is None else values[lanes[src]]
    return out


@case(
    SHUFFLE,
    "up/down/rotate/xor shuffles, widths wave/4/8",
    compare=False,
    trial="the trial kernel of qcom_sub_group_shuffle_{up,down,rotate_up,rotate_down,xor}, "
    "compiled and run",
)
def _shuffle(env: Env) -> Outcome:
    import pyopencl as cl

    program = env.program(SHUFFLE_SOURCE, QCOM_EXT_EMULATED_SUB_GROUP_SIZE=8)
    kernel = cl.Kernel(program, "shuffles")
    device = env.caps.device()
    local = min(32, kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))
    values = env.rng.integers(-1000, 1000, 2 * local, dtype=np.int32)
    got, want = [], []
    for offset, width in ((1, 0), (3, 4), (2, 8), (5, 0)):
        out, host = env.empty((values.size, 5), np.int32)
        info, seen = env.empty((values.size, 3), np.uint32)
        _run(
            env,
            kernel,
            values.shape,
            (local,),
            env.to_device(values),
            out,
            info,
            np.uint32(offset),
            np.int32(width),
            np.int32(-7),
        )
        got.append(env.read(out, host))
        want.append(shuffle_model(values, env.read(info, seen), offset, width, -7))
    # the results depend on the sub-group size, which each path defines: not compared
    return Outcome(np.stack(got), np.stack(want))


REQD_SOURCE = """
QCOM_REQD_SUB_GROUP_SIZE(half)
__kernel void half_k(__global const int *in, __global int *out, __global uint *sizes)
{ size_t i = get_global_id(0); out[i] = in[i] * 3 + 1; sizes[i] = get_sub_group_size(); }
QCOM_REQD_SUB_GROUP_SIZE(full)
__kernel void full_k(__global const int *in, __global int *out, __global uint *sizes)
{ size_t i = get_global_id(0); out[i] = in[i] * 5 - 2; sizes[i] = get_sub_group_size(); }
"""


def _reqd_runs(env: Env) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray, int, int]]]:
    """The inputs, and per kernel (outputs, sub-group sizes seen, kernel_sub_group_size,
    local size); run once per path for both cases."""
    import pyopencl as cl

    from qcom_ext.ext.program.subgroups import kernel_sub_group_size

    key = ("reqd runs",)
    if key in env.store:
        return env.store[key]
    program = env.program(REQD_SOURCE)
    device = env.caps.device()
    values = env.rng.integers(-5000, 5000, 256, dtype=np.int32)
    runs = {}
    for name in ("half_k", "full_k"):
        kernel = cl.Kernel(program, name)
        local = min(
            64, kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
        )
        out, host = env.empty(values.shape, np.int32)
        sizes, seen = env.empty(values.shape, np.uint32)
        _run(env, kernel, values.shape, (local,), env.to_device(values), out, sizes)
        reported = kernel_sub_group_size(kernel, device, (local,))
        runs[name] = (env.read(out, host).copy(), env.read(sizes, seen).copy(), reported, local)
    env.store[key] = values, runs
    return env.store[key]


@case(
    REQD,
    "kernels with QCOM_REQD_SUB_GROUP_SIZE(half) and (full) compute",
    trial='the trial kernels with qcom_reqd_sub_group_size("half") and ("full"), compiled and run',
)
def _reqd_values(env: Env) -> Outcome:
    values, runs = _reqd_runs(env)
    got = np.stack([runs["half_k"][0], runs["full_k"][0]])
    return Outcome(got, np.stack([values * 3 + 1, values * 5 - 2]))


@case(REQD, "kernel_sub_group_size agrees with get_sub_group_size()", compare=False)
def _reqd_sizes(env: Env) -> Outcome:
    _, runs = _reqd_runs(env)
    got, want = {}, {}
    for name, (_, seen, reported, local) in runs.items():
        got[f"{name} size"] = reported
        want[f"{name} size"] = int(seen.max())
        got[f"{name} size within 1..{local}"] = 1 <= reported <= local
        want[f"{name} size within 1..{local}"] = True
    if env.tier == "native":  # half-wave mode never has the larger sub-groups
        got["half <= full"] = runs["half_k"][2] <= runs["full_k"][2]
        want["half <= full"] = True
    note = ", ".join(f"{name[:4]} {run[2]}" for name, run in runs.items())
    return Outcome(got, want, note=f"sub-group sizes: {note}")


unchecked(
    "cl_qcom_limited_printf",
    "printf output goes where the driver sends it (the process's stdout, or logcat on "
    "Android), which the selftest cannot read back reliably; CL_DEVICE_PRINTF_BUFFER_"
    "SIZE_QCOM is in `qcom-ext probe --json`",
)
