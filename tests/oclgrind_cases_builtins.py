"""Oclgrind cases (tests/oclgrind_cases.py runs them, tests/oclgrind_trial.py is
the harness): compat-header builtins: bitreverse, bfloat16, dot8, required sub-group
sizes, sub-group shuffles.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
from oclgrind_trial import FP16_PRAGMA, MF, Mismatch, Trial, case, compiler_fp16

import qcom_ext
from qcom_ext.ext.program.bfloat16 import mad32_bf16, to_bfloat16

# ---- compat-header builtins ---------------------------------------------------------------

BITREVERSE = """
__kernel void bitreverse_k(__global uint *v)
{ size_t i = get_global_id(0); v[i] = qcom_bitreverse(v[i]); }
"""


@case()
def case_bitreverse(t: Trial) -> None:
    values = np.concatenate(
        [[0x1248EDBF, 0, 1, 0x80000000, 0xFFFFFFFF], t.rng.integers(0, 2**32, 11)]
    ).astype(np.uint32)
    want = np.array([int(f"{v:032b}"[::-1], 2) for v in values], np.uint32)
    buf = cl.Buffer(t.ctx, MF.READ_WRITE | MF.COPY_HOST_PTR, hostbuf=values)
    t.program(BITREVERSE).bitreverse_k(t.queue, values.shape, None, buf)
    t.equal("qcom_bitreverse", t.get(buf, values.shape, np.uint32), want)
    assert want[0] == 0xFDB71248  # the guide's example
    out = t.output(values.nbytes)
    t.file("bitreverse.cl").bitreverse_u32(t.queue, values.shape, None, t.buffer(values), out)
    t.equal("bitreverse_u32", t.get(out, values.shape, np.uint32), want)


MAD_BF16 = """
__kernel void mad_bf16(__global const ushort *a, __global const ushort *b,
                       __global const float *acc, __global float *out)
{ size_t i = get_global_id(0); out[i] = qcom_mad32_bf16(a[i], b[i], acc[i]); }
"""


@case()
def case_bfloat16(t: Trial) -> None:
    a = np.concatenate([[0x3F80, 0x7F80, 0x0001], t.rng.integers(0, 0x10000, 29)]).astype(
        np.uint16
    )
    b = np.concatenate([[0x4000, 0x3F80, 0x3F80], t.rng.integers(0, 0x10000, 29)]).astype(
        np.uint16
    )
    acc = np.concatenate([[3.0, 1.0, 0.0], t.rng.standard_normal(29)]).astype(np.float32)
    out = t.output(4 * a.size)
    t.program(MAD_BF16).mad_bf16(
        t.queue, a.shape, None, t.buffer(a), t.buffer(b), t.buffer(acc), out
    )
    got = t.get(out, a.shape, np.float32)
    t.equal("qcom_mad32_bf16", got, mad32_bf16(a, b, acc))
    assert got[0] == 5.0  # the observed Adreno value: 1 * 2 + 3
    n, groups, local = 37, 2, 8
    x, y = (to_bfloat16(t.rng.standard_normal(n).astype(np.float32)) for _ in range(2))
    partial = t.output(4 * groups)
    kernel = cl.Kernel(t.file("bf16_dot.cl"), "bf16_dot")
    kernel(
        t.queue,
        (groups * local,),
        (local,),
        t.buffer(x),
        t.buffer(y),
        np.uint32(n),
        partial,
        cl.LocalMemory(4 * local),
    )
    exact = float(mad32_bf16(x, y, 0.0).astype(np.float64).sum())
    t.close("bf16_dot", t.get(partial, groups, np.float32).sum(), exact, atol=1e-4 * n)


DOT8 = """
__kernel void dot8(__global const uint *p0, __global const uint *p1, __global const int *acc,
                   __global int *udot, __global int *sdot)
{
    size_t i = get_global_id(0);
    udot[i] = qcom_udot8_acc(p0[i], p1[i], acc[i]);
    sdot[i] = qcom_dot8_acc(p0[i], p1[i], acc[i]);
}
"""


@case("shufflevector")
def case_dot8(t: Trial) -> None:
    from test_dot8 import pack, reference

    imax, imin = np.iinfo(np.int32).max, np.iinfo(np.int32).min
    p0 = [pack(11, 22, 33, 44), pack(-11, 22, -33, 44), 0xFFFFFFFF, 0x80808080, 0xFFFFFFFF]
    p1 = [pack(55, 66, 77, 88), pack(55, 66, 77, 88), 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF]
    acc = [9, 9, imax - 5, imin + 5, imin]
    p0 = np.concatenate([p0, t.rng.integers(0, 2**32, 11)]).astype(np.uint32)
    p1 = np.concatenate([p1, t.rng.integers(0, 2**32, 11)]).astype(np.uint32)
    acc = np.concatenate([acc, t.rng.integers(imin, imax, 11)]).astype(np.int32)
    outs = [t.output(acc.nbytes) for _ in range(2)]
    t.program(DOT8).dot8(
        t.queue, acc.shape, None, t.buffer(p0), t.buffer(p1), t.buffer(acc), *outs
    )
    udot, sdot = reference(p0, p1, acc)
    t.equal("qcom_udot8_acc", t.get(outs[0], acc.shape, np.int32), udot)
    t.equal("qcom_dot8_acc", t.get(outs[1], acc.shape, np.int32), sdot)
    assert (udot[0], sdot[1]) == (8479, 2187)  # the guide's examples


@case("shufflevector")
def case_dot8_matmul(t: Trial) -> None:
    """kernels/dot8_matmul.cl (the sample's packing): a K tail, an N tail."""
    from dot8_matmul import pack_rows

    program = t.file("dot8_matmul.cl")
    m, k, n = 3, 9, 6  # K padded to 3 words; N = 4 + a 2-column tail
    b = t.rng.integers(0, 256, (k, n), dtype=np.uint8)
    for name, a in (
        ("matmul_s8u8", t.rng.integers(-128, 128, (m, k), dtype=np.int8)),
        ("matmul_u8u8", t.rng.integers(0, 256, (m, k), dtype=np.uint8)),
    ):
        out = t.output(4 * m * n)
        cl.Kernel(program, name)(
            t.queue,
            (-(-n // 4), m),
            None,
            t.buffer(pack_rows(a)),
            t.buffer(pack_rows(b.T.copy())),
            out,
            np.int32(m),
            np.int32(n),
            np.int32(-(-k // 4)),
        )
        t.equal(name, t.get(out, (m, n), np.int32), a.astype(np.int64) @ b.astype(np.int64))


REQD_SUB_GROUP_SIZE = """
QCOM_REQD_SUB_GROUP_SIZE(half)
__kernel void half_k(__global int *out) { out[get_global_id(0)] = 1; }
QCOM_REQD_SUB_GROUP_SIZE(full)
__kernel void full_k(__global int *out) { out[get_global_id(0)] = 2; }
#pragma OPENCL EXTENSION cl_qcom_reqd_sub_group_size : enable
__attribute__((qcom_reqd_sub_group_size("full")))
__kernel void adreno_k(__global int *out) { out[get_global_id(0)] = 3; }
"""


@case()
def case_reqd_sub_group_size(t: Trial) -> None:
    program = t.program(REQD_SUB_GROUP_SIZE)
    out = t.output(4 * 16)
    for value, name in enumerate(("half_k", "full_k", "adreno_k"), 1):
        kernel = cl.Kernel(program, name)
        kernel(t.queue, (16,), (8,), out)
        t.equal(name, t.get(out, 16, np.int32), np.full(16, value, np.int32))
        size = qcom_ext.kernel_sub_group_size(kernel, t.device, (8,))
        if not 1 <= size <= 8:
            raise Mismatch(f"kernel_sub_group_size of {name}: {size}")


SHUFFLE_TYPES = {
    "uchar": np.uint8,
    "char": np.int8,
    "ushort": np.uint16,
    "short": np.int16,
    "uint": np.uint32,
    "int": np.int32,
    "ulong": np.uint64,
    "long": np.int64,
    "float": np.float32,
    "half": np.float16,
}
SHUFFLE_OPS = ("up", "down", "rotate_up", "rotate_down", "xor")
SHUFFLE_WIDTHS = {0: "WAVE_SIZE", 4: "W4", 8: "W8"}


def shuffle_source(types: list[str], offsets: tuple[int, int]) -> str:
    """One kernel per gentype: every operation x width x offset, each call written out (the
    manifest credits the builtins a source names), and one more from a helper function
    that takes the scratch. info = (sub-group id, lane, size) as the kernel sees them."""
    calls = [
        f"qcom_sub_group_shuffle_{op}(v, {offset}u, CLK_SUB_GROUP_SHUFFLE_WIDTH_{width}_QCOM, d)"
        for offset in offsets
        for op in SHUFFLE_OPS
        for width in SHUFFLE_WIDTHS.values()
    ]
    parts = [FP16_PRAGMA] if "half" in types else []
    for t in types:
        body = "\n".join(f"    o[{i}] = {call};" for i, call in enumerate(calls))
        parts.append(f"""
{t} helper_{t}({t} v, {t} d, qcom_sub_group_shuffle_width_modes_t width,
             QCOM_SUB_GROUP_SHUFFLE_SCRATCH_PARAM)
{{ return qcom_sub_group_shuffle_down(v, 1u, width, d); }}

__kernel void shuffle_{t}(__global const {t} *in, __global {t} *out, __global uint *info, {t} d)
{{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    size_t g = get_global_id(0);
    {t} v = in[g];
    __global {t} *o = out + g * {len(calls) + 1};
    info[3 * g] = get_sub_group_id();
    info[3 * g + 1] = get_sub_group_local_id();
    info[3 * g + 2] = get_sub_group_size();
{body}
    o[{len(calls)}] = helper_{t}(v, d, CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM,
                                 QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG);
}}""")
    return "\n".join(parts)


def check_shuffles(t: Trial, size: int, offsets: tuple[int, int], local: int, n: int) -> None:
    """Every gentype x operation x width x offset on emulated sub-groups of ``size``."""
    from test_subgroup_shuffle import source_lane

    types = [name for name in SHUFFLE_TYPES if name != "half" or compiler_fp16(t)]
    program = t.program(shuffle_source(types, offsets), QCOM_EXT_EMULATED_SUB_GROUP_SIZE=size)
    lid = np.arange(n) % local
    first = lid // size * size
    info_want = np.stack([lid // size, lid % size, np.minimum(size, local - first)], 1)
    columns = [
        (op, offset, width) for offset in offsets for op in SHUFFLE_OPS for width in SHUFFLE_WIDTHS
    ] + [("down", 1, 4)]
    for type_name in types:
        dtype = SHUFFLE_TYPES[type_name]
        if np.dtype(dtype).kind == "f":
            values = t.rng.standard_normal(n).astype(dtype)
        else:
            values = t.rng.integers(
                np.iinfo(dtype).min, np.iinfo(dtype).max, n, dtype=dtype, endpoint=True
            )
        default = dtype(-7 if np.dtype(dtype).kind in "if" else 7)
        out, info = t.output(n * len(columns) * values.itemsize), t.output(12 * n)
        cl.Kernel(program, f"shuffle_{type_name}")(
            t.queue, (n,), (local,), t.buffer(values), out, info, default
        )
        t.equal(f"sub-groups of {size} ({type_name})", t.get(info, (n, 3), np.uint32), info_want)
        want = np.empty((n, len(columns)), dtype)
        for g in range(n):
            lane, sub_group_size = g % local - first[g], info_want[g, 2]
            for column, (op, offset, width) in enumerate(columns):
                src = source_lane(op, int(lane), int(sub_group_size), offset, width)
                want[g, column] = default if src is None else values[g - lane + src]
        t.equal(f"shuffles of {type_name} (S={size})", t.get(out, want.shape, dtype), want)


@case()
def case_shuffle_one_lane(t: Trial) -> None:
    check_shuffles(t, size=1, offsets=(0, 1), local=4, n=8)


@case()
def case_shuffle_emulated(t: Trial) -> None:
    check_shuffles(t, size=8, offsets=(1, 5), local=12, n=24)  # sub-groups of 8 and 4


PASSES = """
__kernel void passes(__global const int *in, __global int *out)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    size_t g = get_global_id(0);
    out[g] = qcom_sub_group_shuffle_rotate_up(in[g], 3u, CLK_SUB_GROUP_SHUFFLE_WIDTH_W8_QCOM, -1);
}
"""


@case()
def case_shuffle_several_passes(t: Trial) -> None:
    """More work-items than the scratch holds (256 with S = 8): the exchange takes passes."""
    n = 264
    values = t.rng.integers(-1000, 1000, n).astype(np.int32)
    out = t.output(values.nbytes)
    t.program(PASSES, QCOM_EXT_EMULATED_SUB_GROUP_SIZE=8).passes(
        t.queue, (n,), (n,), t.buffer(values), out
    )
    lanes = values.reshape(-1, 8)
    t.equal("rotate_up over passes", t.get(out, n, np.int32), np.roll(lanes, 3, axis=1).ravel())
