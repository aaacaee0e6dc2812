"""Every kernel of kernels/*.cl and every compat-header builtin on tiny inputs, checked
against numpy: what tests/test_oclgrind.py runs under Oclgrind (tests/_oclgrind.py starts
this script and reads Oclgrind's reports).

    python tests/oclgrind_cases.py [--manifest FILE] [--shard I/N] [--defects A,B] [CASE ...]

Runs on the device PYOPENCL_CTX names; prints one line per case and exits 1 on any
mismatch. Each case gets its own context (Oclgrind reads its settings per context), made
without ``OCLGRIND_UNINITIALIZED`` when the case's kernels hit a defect of that plugin
which ``--defects`` says this Oclgrind has (tests/_oclgrind.py DEFECTS). Every kernel
launch is recorded from pyopencl's enqueue (kernel, source file, -D variant; per program
the builtins its source calls), and the builtins that exist only on Adreno (or with
cl_khr_fp16) are checked to fail to build with their documented error; ``--manifest``
writes all of it as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyopencl as cl
import pyopencl._cl as _cl
import pyopencl.cltypes as cltypes

TESTS = Path(__file__).resolve().parent
sys.path.insert(1, str(TESTS.parent / "samples"))  # reuse the samples' references

import _oclgrind  # noqa: E402
from conv_reference import activate, assert_close, conv2d  # noqa: E402

import qcom_ext  # noqa: E402
from qcom_ext import ops  # noqa: E402
from qcom_ext._resources import kernels_dir  # noqa: E402
from qcom_ext.ext.accelerated.points import PointOps, download, empty, upload  # noqa: E402
from qcom_ext.ext.images import yuv  # noqa: E402
from qcom_ext.ext.program.bfloat16 import mad32_bf16, to_bfloat16  # noqa: E402
from qcom_ext.ext.program.build import PRELUDE  # noqa: E402
from qcom_ext.reference import accelerated as accelerated_reference  # noqa: E402
from qcom_ext.reference.bicubic import bicubic, upscale2x  # noqa: E402

MF = cl.mem_flags
RGBA_FLOAT = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)


class Mismatch(AssertionError):
    pass


# ---- the record of what ran ---------------------------------------------------------


@dataclass
class Program:
    file: str | None
    source: str  # the file name, or "inline <hash of the source>"
    kernels: list[str]
    builtins: list[str]
    launched: set[str] = field(default_factory=set)
    keep: Any = None  # the program object: its handle is not reused while recorded


class Recorder:
    """Wraps pyopencl's enqueue (``Kernel.__call__`` and ``enqueue_nd_range_kernel``
    both end there) and notes each launch with its program's source file and -D flags."""

    def __init__(self, device: Any) -> None:
        self.case = ""
        self.launches: list[dict[str, Any]] = []
        self.programs: dict[int, Program] = {}
        self.build_errors: dict[str, str] = {}
        # -D flags every build gets (the probe's path flags, pyopencl's own): not a variant
        empty = qcom_ext.build_program(cl.Context([device]), "__kernel void k(void) {}")
        self.baseline = self.defines(empty.get_build_info(device, cl.program_build_info.OPTIONS))
        self.files = {PRELUDE + p.read_text(): p.name for p in sorted(kernels_dir().glob("*.cl"))}
        self.builtins = _oclgrind.builtin_names()

    def install(self) -> None:
        original = _cl.enqueue_nd_range_kernel

        def enqueue(queue, kernel, *args, **kwargs):
            event = original(queue, kernel, *args, **kwargs)
            self.note(queue.device, kernel)
            return event

        _cl.enqueue_nd_range_kernel = enqueue
        cl.enqueue_nd_range_kernel = enqueue

    @staticmethod
    def defines(options: str) -> set[tuple[str, str]]:
        return {
            (name, value or "1")
            for name, value in re.findall(r"-D\s*(\w+)(?:=(\S+))?", options or "")
        }

    def program(self, device: Any, kernel: Any) -> tuple[Program, dict[str, str]]:
        program = kernel.get_info(cl.kernel_info.PROGRAM)
        options = program.get_build_info(device, cl.program_build_info.OPTIONS) or ""
        found = self.programs.get(program.int_ptr)
        if found is None:
            source = program.get_info(cl.program_info.SOURCE)
            if not source:
                raise RuntimeError("a program without source (from a binary cache?)")
            names = program.get_info(cl.program_info.KERNEL_NAMES).split(";")
            file = self.files.get(source)
            key = file or "inline " + hashlib.sha1(source.encode()).hexdigest()[:12]
            found = Program(
                file,
                key,
                sorted(names),
                sorted(_oclgrind.used_builtins(source, self.builtins)),
                keep=program,
            )
            self.programs[program.int_ptr] = found
        defines = dict(self.defines(options) - self.baseline)
        return found, defines

    def note(self, device: Any, kernel: Any) -> None:
        program, defines = self.program(device, kernel)
        program.launched.add(kernel.function_name)
        self.launches.append(
            {
                "case": self.case,
                "kernel": kernel.function_name,
                "file": program.file,
                "defines": defines,
            }
        )

    def manifest(self, cases: dict[str, Any]) -> dict[str, Any]:
        programs = [
            {
                "file": p.file,
                "source": p.source,
                "kernels": p.kernels,
                "launched": sorted(p.launched),
                "builtins": p.builtins,
            }
            for p in self.programs.values()
        ]
        return {
            "cases": cases,
            "launches": self.launches,
            "programs": programs,
            "build_errors": self.build_errors,
        }


# ---- cases ------------------------------------------------------------------------------


@dataclass
class Trial:
    """What a case gets: its own context and queue, a seeded generator, the checks."""

    ctx: Any
    queue: Any
    device: Any
    recorder: Recorder
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    checks: int = 0

    def program(self, source: str, **defines: Any) -> Any:
        return qcom_ext.build_program(self.ctx, source, defines=defines)

    def file(self, name: str, **defines: Any) -> Any:
        return self.program((kernels_dir() / name).read_text(), **defines)

    def buffer(self, array: np.ndarray) -> Any:
        return cl.Buffer(
            self.ctx, MF.READ_ONLY | MF.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(array)
        )

    def output(self, nbytes: int) -> Any:
        return cl.Buffer(self.ctx, MF.WRITE_ONLY, nbytes)

    def get(self, buffer: Any, shape: Any, dtype: Any) -> np.ndarray:
        out = np.empty(shape, dtype)
        cl.enqueue_copy(self.queue, out, buffer)
        return out

    def image(self, pixels: np.ndarray, fmt: Any = RGBA_FLOAT) -> Any:
        return cl.create_image(
            self.ctx,
            MF.READ_ONLY | MF.COPY_HOST_PTR,
            fmt,
            shape=(pixels.shape[1], pixels.shape[0]),
            hostbuf=np.ascontiguousarray(pixels),
        )

    def equal(self, what: str, got: Any, want: Any) -> None:
        self.checks += 1
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape or not np.array_equal(
            got, want, equal_nan=got.dtype.kind == "f"
        ):
            raise Mismatch(f"{what}: got\n{got}\nexpected\n{want}")

    def close(
        self, what: str, got: Any, want: Any, atol: float = 1e-5, rtol: float = 1e-5
    ) -> None:
        self.checks += 1
        try:
            np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)
        except AssertionError as exc:
            raise Mismatch(f"{what}: {exc}") from None

    def build_error(self, builtin: str, source: str, expected: str) -> None:
        """``source`` calls ``builtin``, which must fail to build naming ``expected``."""
        self.checks += 1
        try:
            self.program(source)
        except qcom_ext.BuildError as exc:
            if expected not in str(exc):
                raise Mismatch(f"{builtin}: the build error does not name {expected}") from None
            self.recorder.build_errors[builtin] = expected
            return
        raise Mismatch(
            f"{builtin} built on {self.device.name}; expected an error naming {expected}"
        )


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Trial], None]
    # The defects of Oclgrind's uninitialized-value plugin (tests/_oclgrind.py DEFECTS)
    # the case's kernels hit: the check is off for it while this Oclgrind has one of them.
    defects: tuple[str, ...]
    check_api: bool


CASES: dict[str, Case] = {}


def case(*defects: str, check_api: bool = True) -> Callable:
    unknown = set(defects) - set(_oclgrind.DEFECTS)
    if unknown:
        raise ValueError(f"unknown defects {unknown}")

    def register(function: Callable[[Trial], None]) -> Callable[[Trial], None]:
        name = function.__name__.removeprefix("case_")
        CASES[name] = Case(name, function, defects, check_api)
        return function

    return register


class Kept:
    """Keeps every buffer and image a case makes (pyopencl's Buffer and Image replaced by
    subclasses that register themselves) until the case ends: Oclgrind reuses the ids of
    released memory objects and its uninitialized-value plugin keeps the old shadow, so
    a larger buffer in a reused slot would read as uninitialized past the old size."""

    objects: ClassVar[list[Any]] = []

    @classmethod
    def install(cls) -> None:
        for name in ("Buffer", "Image"):
            base = getattr(cl, name)

            def init(self, *args, _base=base, **kwargs):
                _base.__init__(self, *args, **kwargs)
                cls.objects.append(self)

            setattr(cl, name, type(name, (base,), {"__init__": init}))


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
FP16_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"


def compiler_fp16(t: Trial) -> bool:
    """Whether the compiler defines cl_khr_fp16, which selects the compat header's half
    builtins. (Oclgrind 21.10's does, though its device does not list the extension; it
    runs half loads, stores, moves and conversion builtins, not half arithmetic.)"""
    try:
        t.program("#ifndef cl_khr_fp16\n#error no cl_khr_fp16\n#endif\n__kernel void k(void) {}")
    except qcom_ext.BuildError:
        return False
    return True


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


def accelerated_close(t: Trial, what: str, got: Any, want: Any) -> None:
    t.close(what, got, want, atol=1e-4, rtol=1e-4)


class AcceleratedPoints:
    """The accelerated-image builtins at points: inside and outside the image, fractional
    coordinates, every addressing mode where defined (qcom_ext.ext.accelerated.points)."""

    def __init__(self, t: Trial) -> None:
        self.t = t
        self.pixels = t.rng.random((7, 9, 4)).astype(np.float32)
        self.image, self.points = upload(t.ctx, self.pixels), PointOps(t.ctx)
        outside = np.array([(-2.5, 1.25), (8.75, 6.5), (4.0, 3.0), (0.3, -1.6)], np.float32)
        self.inside = np.array([(2.0, 2.0), (3.5, 4.75), (7.9, 3.1)], np.float32)
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


# ---- kernels/*.cl ------------------------------------------------------------------------


class AcceleratedImages:
    """kernels/accelerated_image_ops.cl through qcom_ext.image_ops: every method, 2-D and
    separable weights, blocks that overhang the image edge, both searches."""

    def __init__(self, t: Trial) -> None:
        self.t = t
        self.pixels = t.rng.random((7, 9, 4)).astype(np.float32)
        self.image, self.dst = upload(t.ctx, self.pixels), empty(t.ctx, 9, 7)
        self.grid = np.stack(np.meshgrid(np.arange(9), np.arange(7)), -1).reshape(-1, 2)

    def convolve(self) -> None:
        from qcom_ext.ext.accelerated.whole_image import METHODS

        t = self.t
        w2d = qcom_ext.WeightImage(t.ctx, t.rng.uniform(-1, 1, (3, 4)), center=(1, 2))
        wsep = qcom_ext.WeightImage(
            t.ctx, t.rng.uniform(-1, 1, (2, 3)), center=(2, 0), separable=True
        )
        for method in METHODS:
            for w in (w2d, wsep):
                qcom_ext.convolve_image(
                    t.queue,
                    self.image,
                    w,
                    self.dst,
                    sampler="clamp",
                    method=method,
                    local_size=(4, 2) if method == "tiled" else None,
                )
                want = accelerated_reference.convolve(
                    self.pixels,
                    self.grid,
                    w.weights,
                    center=w.center,
                    separable=w.separable,
                    filter_size=w.filter_size,
                    addressing="clamp",
                )
                accelerated_close(
                    t,
                    f"convolve_image {method} {w!r}",
                    download(t.queue, self.dst),
                    want.reshape(7, 9, 4),
                )

    def box_filter(self) -> None:
        from qcom_ext.ext.accelerated.whole_image import METHODS

        t = self.t
        for method in METHODS:
            qcom_ext.box_filter_image(
                t.queue,
                self.image,
                (3.0, 2.5),
                self.dst,
                method=method,
                local_size=(4, 2) if method == "tiled" else None,
            )
            want = accelerated_reference.box_filter(self.pixels, self.grid, (3.0, 2.5)).reshape(
                7, 9, 4
            )
            accelerated_close(t, f"box_filter_image {method}", download(t.queue, self.dst), want)

    def search(self) -> None:
        from qcom_ext.ext.accelerated import whole_image as image_ops

        t = self.t
        target = (t.rng.integers(0, 256, (8, 12, 4)) / 256).astype(np.float32)
        reference = np.roll(target, (1, -2), axis=(0, 1))
        for metric in ("sad", "ssd"):
            found = qcom_ext.block_match_image(
                t.queue,
                upload(t.ctx, target),
                upload(t.ctx, reference),
                region=(4, 4),
                radius=2,
                metric=metric,
            )
            vectors, costs = found.get(t.queue)
            want_vectors, want_costs = accelerated_reference.block_match_search(
                target, reference, (4, 4), 2, squared=metric == "ssd"
            )
            t.equal(f"block_match_image {metric} vectors", vectors, want_vectors)
            accelerated_close(t, f"block_match_image {metric} costs", costs, want_costs)
        # The search without local-memory tiles (taken natively, or when the window does
        # not fit), launched directly on a small window.
        kernel = image_ops._kernel(t.ctx, "qe_block_match_search", {})
        vectors, costs = t.output(8 * 6), t.output(4 * 6)
        kernel(
            t.queue,
            (3 * 32, 2),
            (32, 1),
            upload(t.ctx, target),
            upload(t.ctx, reference),
            image_ops.sampler(t.ctx, "clamp_to_edge"),
            cltypes.make_uint2(4, 4),
            np.int32(2),
            np.int32(0),
            vectors,
            costs,
            cl.LocalMemory(8 * 32),
        )
        want_vectors, want_costs = accelerated_reference.block_match_search(
            target, reference, (4, 4), 2
        )
        t.equal("qe_block_match_search vectors", t.get(vectors, (2, 3, 2), np.int32), want_vectors)
        accelerated_close(
            t, "qe_block_match_search costs", t.get(costs, (2, 3), np.float32), want_costs
        )


@case("image-reads", "freeze")
def case_accelerated_convolve_image(t: Trial) -> None:
    AcceleratedImages(t).convolve()


@case("shufflevector", "image-reads", "freeze")
def case_accelerated_box_filter_image(t: Trial) -> None:
    AcceleratedImages(t).box_filter()


@case("image-reads", "freeze")
def case_accelerated_block_match_image(t: Trial) -> None:
    AcceleratedImages(t).search()


@contextlib.contextmanager
def adreno_index_maths() -> Iterator[None]:
    """Build qcom_ext's programs with -DUSE_MAD24, as on Adreno (ops.kernel_for adds it
    there only), so that index arithmetic variant runs too."""
    import qcom_ext.ext.program.build as program

    original = program.build_program

    def build(context, source, options=(), *, devices=None, defines=None):
        return original(
            context,
            source,
            options,
            devices=devices,
            defines={**(defines or {}), "USE_MAD24": True},
        )

    program.build_program = build
    try:
        yield
    finally:
        program.build_program = original


def conv_layout(t: Trial) -> None:
    x = t.rng.standard_normal((2, 5, 3, 4)).astype(np.float32)
    for dtype in (np.float32, np.float16):
        for layout in ("NCHW", "NHWC"):
            host = x.astype(dtype)
            host = host if layout == "NCHW" else np.ascontiguousarray(host.transpose(0, 2, 3, 1))
            back = ops.from_image(
                t.queue, ops.to_image(t.queue, host, layout=layout), layout=layout
            )
            t.equal(f"layout round trip {layout} {np.dtype(dtype)}", back, host)


def conv_1x1(t: Trial, variants: Any) -> None:
    for ci, co, tile, activation, dtype, stride in variants:
        x = t.rng.standard_normal((1, ci, 3, 5)).astype(np.float32)
        w = t.rng.standard_normal((co, ci)).astype(np.float32)
        b = t.rng.standard_normal(co).astype(np.float32)
        got = ops.conv2d_1x1(
            t.queue, x.astype(dtype), w, b, tile=tile, activation=activation, stride=stride
        )
        want = conv2d(x, w[:, :, None, None], b, stride=stride, activation=activation)
        t.checks += 1
        assert_close(got, want, dtype)


def conv_depthwise(t: Trial, variants: Any) -> None:
    x = t.rng.standard_normal((2, 5, 6, 7)).astype(np.float32)
    w = t.rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    for stride, dilation, activation, dtype, *block in variants:
        pixels, rows = block or (4, 1)
        got = ops.depthwise_conv2d(
            t.queue,
            x.astype(dtype),
            w,
            stride=stride,
            padding=1,
            dilation=dilation,
            activation=activation,
            pixels=pixels,
            rows=rows,
        )
        want = conv2d(
            x, w, stride=stride, padding=1, dilation=dilation, groups=5, activation=activation
        )
        t.checks += 1
        assert_close(got, want, dtype)


def conv_kxk(t: Trial, variants: Any) -> None:
    x = t.rng.standard_normal((1, 5, 5, 6)).astype(np.float32)
    w = t.rng.standard_normal((6, 5, 3, 3)).astype(np.float32)
    b = t.rng.standard_normal(6).astype(np.float32)
    for stride, dilation, activation, dtype in variants:
        got = ops.conv2d(
            t.queue,
            x.astype(dtype),
            w,
            b,
            padding=1,
            stride=stride,
            dilation=dilation,
            activation=activation,
            method="image",
        )
        want = conv2d(x, w, b, padding=1, stride=stride, dilation=dilation, activation=activation)
        t.checks += 1
        assert_close(got, want, dtype)


def conv_tiled(t: Trial, variants: Any) -> None:
    x = t.rng.standard_normal((1, 3, 6, 7)).astype(np.float32)
    w = t.rng.standard_normal((6, 3, 3, 3)).astype(np.float32)
    for block, per_item, stride, dilation, activation, dtype in variants:
        layer = ops.TiledConv2d(
            t.queue,
            w,
            padding=1,
            stride=stride,
            dilation=dilation,
            activation=activation,
            dtype=dtype,
            block=block,
            channels_per_item=per_item,
        )
        host = x.astype(dtype)
        src = ops.BufferTensor(t.buffer(host), host.shape, np.dtype(dtype), "NCHW")
        got = layer(t.queue, src).to_numpy(t.queue)
        want = conv2d(x, w, padding=1, stride=stride, dilation=dilation, activation=activation)
        t.checks += 1
        assert_close(got, want, dtype)


def conv_int8(t: Trial, variants: Any) -> None:
    for ci, signed, out_dtype, activation in variants:
        xq = t.rng.integers(0, 256, (1, 2, 3, ci), dtype=np.uint8)  # NHWC
        if signed:
            wq, wz = t.rng.integers(-128, 128, (5, ci), dtype=np.int8), 0
        else:
            wq, wz = t.rng.integers(0, 256, (5, ci), dtype=np.uint8), 100
        quantised = (
            {} if out_dtype == np.float32 else {"output_scale": 0.05, "output_zero_point": 3}
        )
        got = ops.conv2d_int8(
            t.queue,
            xq,
            wq,
            input_scale=0.02,
            input_zero_point=120,
            weight_scale=0.01,
            weight_zero_point=wz,
            out_dtype=out_dtype,
            activation=activation,
            layout="NHWC",
            **quantised,
        )
        real = (xq.astype(np.float64) - 120) @ (wq.T.astype(np.float64) - wz) * 0.02 * 0.01
        real = activate(real, activation)
        if out_dtype != np.float32:
            info = np.iinfo(out_dtype)
            real = np.clip(np.rint(real / 0.05) + 3, info.min, info.max)
            t.checks += 1
            if np.abs(got.astype(np.int64) - real).max() > 1:  # a rounding tie may differ
                raise Mismatch(f"conv2d_int8 to {np.dtype(out_dtype)}: {got} vs {real}")
        else:
            t.checks += 1
            assert_close(got, real, np.float32)


@case("image-reads")
def case_conv_images(t: Trial) -> None:
    """layout.cl, conv_depthwise.cl (4 x 1, 8 x 1 and 2 x 4 output blocks, strides and
    dilations), conv_kxk.cl; float and half."""
    conv_layout(t)
    f32, f16 = np.float32, np.float16
    conv_depthwise(
        t,
        [
            (1, 1, "relu6", f32),
            (2, 1, None, f32),
            (1, 2, "leaky_relu", f32),
            (1, 1, "relu", f16),
            (1, 1, None, f32, 8, 1),
            (2, 2, None, f32, 2, 4),
        ],
    )
    conv_kxk(
        t,
        [
            ((1, 2), 1, None, f32),
            (1, 2, "relu", f32),
            (2, 1, "relu6", f16),
            (1, 1, "leaky_relu", f32),
        ],
    )


@case()
def case_conv_buffers(t: Trial) -> None:
    """conv_1x1.cl (tiles, activations, tails, aligned loads and stores, half) and
    conv_tiled.cl (block sizes, outputs per work-item, strides, half)."""
    f32, f16 = np.float32, np.float16
    conv_1x1(
        t,
        [
            (5, 6, (2, 4), None, f32, 1),
            (5, 6, (4, 8), "relu", f32, 2),
            (5, 6, (8, 4), "relu6", f32, 1),
            (8, 8, (4, 8), "leaky_relu", f32, 1),
            (8, 6, (2, 4), "relu", f16, 1),
        ],
    )
    conv_tiled(
        t,
        [
            (4, 4, 1, 1, None, f32),
            (8, 2, 1, 1, "relu", f32),
            (4, 4, 2, 1, "leaky_relu", f32),
            (4, 4, 1, 2, "relu6", f16),
        ],
    )


@case("shufflevector")
def case_conv_int8(t: Trial) -> None:
    """conv_int8.cl: signed and unsigned weights, float / int8 / uint8 outputs, Ci with
    and without a tail."""
    conv_int8(
        t,
        [
            (7, True, np.float32, None),
            (8, False, np.float32, "relu"),
            (7, False, np.uint8, "relu6"),
            (8, True, np.int8, "leaky_relu"),
        ],
    )
    with adreno_index_maths():
        conv_int8(t, [(7, True, np.float32, None), (8, False, np.uint8, None)])


@case("image-reads")
def case_conv_mad24(t: Trial) -> None:
    """The float convolution kernels with -DUSE_MAD24, the index arithmetic of the Adreno
    path (conv_int8 runs it too)."""
    with adreno_index_maths():
        conv_layout(t)
        conv_depthwise(t, [(1, 1, None, np.float32), (2, 1, None, np.float32)])
        conv_kxk(t, [(1, 1, None, np.float32)])
        conv_1x1(t, [(5, 6, (2, 4), None, np.float32, 2)])
        conv_tiled(t, [(4, 4, 1, 1, None, np.float32)])


@case("image-reads")
def case_buffer_from_image(t: Trial) -> None:
    """kernels/buffer_from_image.cl on a qcom_ext.image_with_buffer pair (the sample's steps)."""
    from buffer_from_image import inverted, pattern

    w, h = 6, 3
    program = t.file("buffer_from_image.cl")
    pair = qcom_ext.image_with_buffer(t.ctx, (w, h), ("RGBA", "UNSIGNED_INT8"))
    program.paint(t.queue, (w, h), None, pair.image)
    pair.sync_to_buffer(t.queue)
    t.equal("paint", pair.read_buffer(t.queue), pattern(w, h))
    program.invert_rows(t.queue, (w, h), None, pair.buffer, np.uint32(pair.row_pitch))
    pair.sync_to_image(t.queue)
    packed = t.output(w * h * 4)
    program.gather(t.queue, (w, h), None, pair.image, packed, np.uint32(w))
    t.equal("invert_rows + gather", t.get(packed, (h, w, 4), np.uint8), inverted(pattern(w, h)))


@case("shufflevector", "image-reads")
def case_downscale(t: Trial) -> None:
    """kernels/downscale.cl: the 2x2 gathers and the read_imagef baseline (the sample's)."""
    from vector_image_gather import downscale, generated_image, reference

    image = generated_image(10, 6)
    for name in ("downscale2x_gather", "downscale2x_read"):
        t.close(name, downscale(t.ctx, image, name), reference(image), atol=1e-6)


@case()
def case_image_pipeline(t: Trial) -> None:
    """kernels/image_pipeline.cl, the four stages in a row (the sample's reference)."""
    from recordable_queue import generated_image, reference

    w, h = 8, 5
    image = generated_image(w, h)
    program = t.file("image_pipeline.cl")
    bright, blurred, mask, out = (cl.Buffer(t.ctx, MF.READ_WRITE, w * h) for _ in range(4))
    program.brightness_contrast(
        t.queue, (w * h,), None, t.buffer(image), bright, np.int32(300), np.int32(-20)
    )
    program.box_blur3(t.queue, (w, h), None, bright, blurred, np.int32(w), np.int32(h))
    program.threshold(t.queue, (w * h,), None, blurred, mask, np.uint8(120))
    program.highlight(t.queue, (w * h,), None, blurred, mask, out)
    t.equal("image pipeline", t.get(out, (h, w), np.uint8), reference(image, 300, -20, 120))


@case()
def case_onchip(t: Trial) -> None:
    """kernels/onchip.cl replayed through a qcom_ext.Recording (the sample's steps, less
    scrub_onchip: its fill would break the uninitialized-value check, which is the
    stronger test that a replay reads only what it wrote)."""
    from onchip_memory import reference

    n = 16
    src_host = t.rng.integers(-1000, 1000, n, dtype=np.int32)
    program = t.file("onchip.cl")
    scale_bias, smooth3 = cl.Kernel(program, "scale_bias"), cl.Kernel(program, "smooth3")
    dst = t.output(src_host.nbytes)
    staged = qcom_ext.onchip_buffer(t.ctx, src_host.nbytes)
    with qcom_ext.Recording(t.queue) as rec:
        rec.enqueue(scale_bias, (n,), None, t.buffer(src_host), staged, np.int32(1), np.int32(0))
        rec.enqueue(smooth3, (n,), None, staged, dst, np.int32(n))
    for scale, bias in ((2, -250), (3, 7)):
        event = rec.replay(t.queue, args={(0, 2): scale, (0, 3): bias})
        event.wait()
        t.equal(
            f"onchip replay {scale} {bias}",
            t.get(dst, n, np.int32),
            reference(src_host, scale, bias),
        )
    rec.release()


@case()
def case_prefix_sum(t: Trial) -> None:
    """kernels/subgroup_prefix_sum.cl with one-lane and 8-lane emulated sub-groups (three
    blocks, the last one partial: the block sums are scanned too)."""
    from subgroup_prefix_sum import PrefixSum

    n, local = 40, 16
    values = t.rng.integers(-100, 101, n, dtype=np.int32)
    for size in (1, 8):
        scan = PrefixSum(t.ctx, local, size)
        if scan.sub_group_size() != size:
            raise Mismatch(f"sub_group_size kernel: {scan.sub_group_size()}, expected {size}")
        out = cl.Buffer(t.ctx, MF.READ_WRITE, values.nbytes)
        scan(t.buffer(values), out, n)
        scan.queue.finish()  # the sample's class has its own queue
        t.equal(f"prefix sum (S={size})", t.get(out, n, np.int32), np.cumsum(values))


# ---- running ----------------------------------------------------------------------------


def run(names: list[str], recorder: Recorder, device: Any, defects: set[str]) -> dict[str, Any]:
    """Each case in its own context (Oclgrind reads its settings per context)."""
    results = {}
    for name in names:
        selected = CASES[name]
        blocking = [d for d in selected.defects if d in defects]
        for variable, on in (
            ("OCLGRIND_UNINITIALIZED", not blocking),
            ("OCLGRIND_CHECK_API", selected.check_api),
        ):
            if on:
                os.environ[variable] = "1"
            else:
                os.environ.pop(variable, None)
        recorder.case = name
        before = len(recorder.launches)
        trial = Trial(cl.Context([device]), None, device, recorder)
        trial.queue = cl.CommandQueue(trial.ctx)
        try:
            selected.run(trial)
            trial.queue.finish()
            verdict = "ok"
        except Exception as exc:  # every case runs; the exit status says one failed
            verdict = "MISMATCH" if isinstance(exc, Mismatch) else "ERROR"
            print(f"{name}: {verdict}\n{traceback.format_exc()}", flush=True)
        Kept.objects.clear()
        launched = len(recorder.launches) - before
        print(f"{name}: {verdict} ({trial.checks} checks, {launched} launches)", flush=True)
        uninitialized = (
            "off: " + "; ".join(f"{d}: {_oclgrind.DEFECTS[d].description}" for d in blocking)
            if blocking
            else True
        )
        results[name] = {
            "name": name,
            "verdict": verdict,
            "checks": trial.checks,
            "launches": launched,
            "uninitialized": uninitialized,
        }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", help=f"default: all of {', '.join(CASES)}")
    parser.add_argument("--manifest", type=Path, help="write what ran here (JSON)")
    parser.add_argument("--shard", default="0/1", help="I/N: every N-th case from the I-th")
    parser.add_argument(
        "--defects",
        default="",
        help="comma-separated plugin defects this Oclgrind has (the cases "
        "that hit one run without OCLGRIND_UNINITIALIZED)",
    )
    args = parser.parse_args()
    unknown = sorted(set(args.cases) - set(CASES))
    defects = {d for d in args.defects.split(",") if d}
    if unknown or defects - set(_oclgrind.DEFECTS):
        parser.error(f"unknown cases {unknown} or defects {defects - set(_oclgrind.DEFECTS)}")
    index, count = (int(v) for v in args.shard.split("/"))
    names = (args.cases or list(CASES))[index::count]
    for category in (cl.CompilerWarning, cl.RepeatedKernelRetrieval, qcom_ext.QcomExtWarning):
        warnings.simplefilter("ignore", category)  # build logs, pyopencl style, fallbacks
    device = qcom_ext.probe().device()
    print(f"{device.platform.name}: {device.name}", flush=True)
    recorder = Recorder(device)
    recorder.install()
    Kept.install()
    results = run(names, recorder, device, defects)
    if args.manifest:
        args.manifest.write_text(json.dumps(recorder.manifest(results), indent=1))
    ok = all(r["verdict"] == "ok" for r in results.values())
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
