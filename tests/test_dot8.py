"""qcom_udot8_acc / qcom_dot8_acc (cl_qcom_dot_product8) against numpy on every device.

The reference (qcom-extensions.md section 15, guide section 3): the four byte-lane
products are summed exactly and added to ``acc`` once, with signed 32-bit saturation.
The numpy model below computes in int64 and clips once, at the end.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import qcom_ext
from qcom_ext._resources import kernels_dir

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

KERNEL = """
__kernel void dot8(__global const uint *p0, __global const uint *p1,
                   __global const int *acc, __global int *udot, __global int *sdot)
{
    size_t i = get_global_id(0);
    udot[i] = qcom_udot8_acc(p0[i], p1[i], acc[i]);
    sdot[i] = qcom_dot8_acc(p0[i], p1[i], acc[i]);
}
"""


def pack(a: int, b: int, c: int, d: int) -> int:
    """The guide's packing: p = (a << 24) | (b << 16) | (c << 8) | d (bytes two's complement)."""
    return ((a & 0xFF) << 24) | ((b & 0xFF) << 16) | ((c & 0xFF) << 8) | (d & 0xFF)


def reference(p0: np.ndarray, p1: np.ndarray, acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(udot, sdot) in int64, saturated once to int32."""
    u0 = p0.astype("<u4").view(np.uint8).reshape(-1, 4).astype(np.int64)
    s0 = p0.astype("<u4").view(np.int8).reshape(-1, 4).astype(np.int64)
    u1 = p1.astype("<u4").view(np.uint8).reshape(-1, 4).astype(np.int64)
    acc64 = acc.astype(np.int64)
    udot = np.clip(acc64 + (u0 * u1).sum(axis=1), INT32_MIN, INT32_MAX)
    sdot = np.clip(acc64 + (s0 * u1).sum(axis=1), INT32_MIN, INT32_MAX)
    return udot.astype(np.int32), sdot.astype(np.int32)


class Dot8:
    """The test kernel built once per context, run on host arrays."""

    def __init__(self, context: cl.Context, program: cl.Program | None = None) -> None:
        self.context = context
        self.queue = cl.CommandQueue(context)
        self.program = program or qcom_ext.build_program(context, KERNEL)
        self.kernel = cl.Kernel(self.program, "dot8")

    def __call__(self, p0, p1, acc) -> tuple[np.ndarray, np.ndarray]:
        p0, p1 = np.asarray(p0, np.uint32), np.asarray(p1, np.uint32)
        acc = np.asarray(acc, np.int32)
        mf = cl.mem_flags
        bufs = [
            cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
            for a in (p0, p1, acc)
        ]
        udot, sdot = np.empty_like(acc), np.empty_like(acc)
        outs = [cl.Buffer(self.context, mf.WRITE_ONLY, acc.nbytes) for _ in range(2)]
        self.kernel(self.queue, (acc.size,), None, *bufs, *outs)
        cl.enqueue_copy(self.queue, udot, outs[0])
        cl.enqueue_copy(self.queue, sdot, outs[1])
        return udot, sdot


def test_guide_worked_examples(kernel_context):
    """Guide section 3: (11,22,33,44).(55,66,77,88)+9 and (-11,22,-33,44).(55,66,77,88)+9."""
    run = Dot8(kernel_context)
    p0 = [pack(11, 22, 33, 44), pack(-11, 22, -33, 44)]
    p1 = [pack(55, 66, 77, 88)] * 2
    udot, sdot = run(p0, p1, [9, 9])
    assert udot[0] == 605 + 1452 + 2541 + 3872 + 9 == 8479
    assert sdot[1] == -605 + 1452 - 2541 + 3872 + 9 == 2187


def test_saturation_is_applied_once_at_the_end(kernel_context):
    run = Dot8(kernel_context)
    plus_minus = pack(1, -1, 0, 0)  # signed lanes +1, -1 against 255, 255: sum 0
    cases = [
        # (p0, p1, acc, udot, sdot)
        (pack(127, 127, 127, 127), pack(255, 255, 255, 255), INT32_MAX - 10, INT32_MAX, INT32_MAX),
        # signed lanes -128 (unsigned view 128) against 255: -130560 / +130560
        (
            pack(-128, -128, -128, -128),
            pack(255, 255, 255, 255),
            INT32_MIN + 5,
            INT32_MIN + 5 + 130560,
            INT32_MIN,
        ),
        # per-lane saturation would give INT32_MAX - 255 here; once at the end: INT32_MAX
        (plus_minus, pack(255, 255, 0, 0), INT32_MAX, INT32_MAX, INT32_MAX),
        # unsigned view of the lanes is 1, 255: 255 + 255 * 255 added to INT32_MIN
        (plus_minus, pack(255, 255, 0, 0), INT32_MIN, INT32_MIN + 255 + 255 * 255, INT32_MIN),
        (0, 0, INT32_MIN, INT32_MIN, INT32_MIN),
    ]
    udot, sdot = run([c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases])
    for i, (_, _, _, want_u, want_s) in enumerate(cases):
        assert (udot[i], sdot[i]) == (want_u, want_s), i


def _random_check(run: Dot8) -> None:
    near_limits = st.one_of(
        st.integers(INT32_MIN, INT32_MIN + 300_000),
        st.integers(INT32_MAX - 300_000, INT32_MAX),
        st.integers(INT32_MIN, INT32_MAX),
    )

    @settings(max_examples=40, deadline=None)
    @given(
        st.integers(1, 300).flatmap(
            lambda n: st.tuples(
                arrays(np.uint32, n),
                arrays(np.uint32, n),
                arrays(np.int32, n, elements=near_limits),
            )
        )
    )
    def check(data):
        p0, p1, acc = data
        want_u, want_s = reference(p0, p1, acc)
        udot, sdot = run(p0, p1, acc)
        np.testing.assert_array_equal(udot, want_u)
        np.testing.assert_array_equal(sdot, want_s)

    check()


def test_random_against_numpy(kernel_context):
    _random_check(Dot8(kernel_context))


KHR_STANDINS = """
/* Stand-ins written from the cl_khr_integer_dot_product definitions (OpenCL C spec):
 * lane i of a packed uint is bits 8i..8i+7; dot_acc_sat = add_sat(dot(a, b), acc). */
uint __attribute__((overloadable)) dot_4x8packed_uu_uint(uint a, uint b)
{
    uint s = 0;
    for (int i = 0; i < 32; i += 8) s += ((a >> i) & 0xFFu) * ((b >> i) & 0xFFu);
    return s;
}
int __attribute__((overloadable)) dot_acc_sat_4x8packed_su_int(uint a, uint b, int acc)
{
    int s = 0;
    for (int i = 0; i < 32; i += 8) s += (int)(char)((a >> i) & 0xFFu) * (int)((b >> i) & 0xFFu);
    return add_sat(s, acc);
}
uint __attribute__((overloadable)) dot(uchar4 a, uchar4 b)
{
    uint4 p = convert_uint4(a) * convert_uint4(b);
    return p.s0 + p.s1 + p.s2 + p.s3;
}
int __attribute__((overloadable)) dot_acc_sat(char4 a, uchar4 b, int acc)
{
    int4 p = convert_int4(a) * convert_int4(b);
    return add_sat(p.s0 + p.s1 + p.s2 + p.s3, acc);
}
#include <qcom_ext.h>
"""


@pytest.mark.parametrize(
    "feature",
    [
        "__opencl_c_integer_dot_product_input_4x8bit_packed",
        "__opencl_c_integer_dot_product_input_4x8bit",
    ],
    ids=["packed", "vector"],
)
def test_khronos_tier_calls_the_right_builtins(kernel_context, feature):
    """The QCOM_EXT_KHR_ branch maps onto cl_khr_integer_dot_product with the right
    signedness and argument order (devices here lack the extension: the Khronos builtins
    are stood in by their spec definitions)."""
    options = ["-I", str(kernels_dir()), "-DQCOM_EXT_KHR_cl_qcom_dot_product8", f"-D{feature}=1"]
    program = cl.Program(kernel_context, KHR_STANDINS + KERNEL).build(options)
    rng = np.random.default_rng(7)
    p0 = rng.integers(0, 2**32, 500, dtype=np.uint32)
    p1 = rng.integers(0, 2**32, 500, dtype=np.uint32)
    acc = rng.integers(INT32_MIN, INT32_MAX, 500, dtype=np.int32, endpoint=True)
    acc[:50] = INT32_MAX - rng.integers(0, 100_000, 50)
    acc[50:100] = INT32_MIN + rng.integers(0, 100_000, 50)
    udot, sdot = Dot8(kernel_context, program)(p0, p1, acc)
    want_u, want_s = reference(p0, p1, acc)
    np.testing.assert_array_equal(udot, want_u)
    np.testing.assert_array_equal(sdot, want_s)


@pytest.mark.filterwarnings("ignore::pyopencl.CompilerWarning")  # the unknown pragma
def test_native_branch_only_enables_the_pragma(kernel_context):
    """With QCOM_EXT_NATIVE_ the header defines nothing: the driver's builtins (stood in
    here, after the header) are the only definitions, so there is no redefinition."""
    driver_builtins = """
int qcom_udot8_acc(uint p0, uint p1, int acc) { return acc + 1000; }
int qcom_dot8_acc(uint p0, uint p1, int acc) { return acc - 1000; }
"""
    options = ["-I", str(kernels_dir()), "-DQCOM_EXT_NATIVE_cl_qcom_dot_product8"]
    source = "#include <qcom_ext.h>\n" + driver_builtins + KERNEL
    program = cl.Program(kernel_context, source).build(options)
    udot, sdot = Dot8(kernel_context, program)([1], [1], [5])
    assert (udot[0], sdot[0]) == (1005, -995)


def test_build_program_chooses_the_probed_path(device_caps):
    flags = device_caps.compiler_options()
    path = device_caps.path("cl_qcom_dot_product8")
    assert ("-DQCOM_EXT_NATIVE_cl_qcom_dot_product8" in flags) == (path == "native")
    assert ("-DQCOM_EXT_KHR_cl_qcom_dot_product8" in flags) == path.startswith("khr:")


def test_khronos_tier_is_cl_khr_integer_dot_product():
    caps = qcom_ext.DeviceCaps.from_info(extensions="cl_khr_integer_dot_product", disabled=())
    assert caps.path("cl_qcom_dot_product8") == "khr:cl_khr_integer_dot_product"
    assert "-DQCOM_EXT_KHR_cl_qcom_dot_product8" in caps.compiler_options()
    forced = qcom_ext.DeviceCaps.from_info(
        extensions="cl_qcom_dot_product8 cl_khr_integer_dot_product",
        disabled=("cl_qcom_dot_product8",),
    )
    assert forced.path("cl_qcom_dot_product8") == "fallback"
    assert not any("dot_product8" in f for f in forced.compiler_options())


def _ptx(program: cl.Program) -> str:
    binary = bytes(program.get_info(cl.program_info.BINARIES)[0])
    return binary.rstrip(b"\0").decode("utf-8", "replace")


def test_nvidia_portable_path_uses_dp4a(device_caps, kernel_context):
    """On NVIDIA from compute capability 6.1 the portable builtins are PTX dp4a, with the
    semantics above (the other tests of this file run them there)."""
    found = device_caps.limits.nv_compute_capability
    if found is None or tuple(found) < (6, 1):
        pytest.skip(f"{device_caps.label}: not an NVIDIA GPU of compute capability 6.1 or later")
    if device_caps.path("cl_qcom_dot_product8") != "fallback":
        pytest.skip(f"{device_caps.label}: dot8 takes {device_caps.path('cl_qcom_dot_product8')}")
    ptx = _ptx(qcom_ext.build_program(kernel_context, KERNEL))
    assert "dp4a.u32.u32" in ptx and "dp4a.s32.u32" in ptx
    run = Dot8(kernel_context)
    udot, sdot = run(
        [pack(11, 22, 33, 44), pack(-11, 22, -33, 44)], [pack(55, 66, 77, 88)] * 2, [9, 9]
    )
    assert (udot[0], sdot[1]) == (8479, 2187)


def test_the_nvidia_flag_is_inert_elsewhere(kernel_context):
    """QCOM_EXT_NV_SM picks dp4a only where the compiler targets PTX (__NVPTX__): given to
    any other compiler the portable code still builds and gives the reference's results."""
    options = ["-I", str(kernels_dir()), "-DQCOM_EXT_NV_SM=90"]
    program = cl.Program(kernel_context, "#include <qcom_ext.h>\n" + KERNEL).build(options)
    _random_check(Dot8(kernel_context, program))


@pytest.mark.parametrize(
    ("capability", "flag"), [((6, 0), "-DQCOM_EXT_NV_SM=60"), ((12, 1), "-DQCOM_EXT_NV_SM=121")]
)
def test_the_compute_capability_reaches_every_build(capability, flag):
    from qcom_ext.device.limits import Limits

    caps = qcom_ext.DeviceCaps.from_info(
        extensions="cl_nv_device_attribute_query",
        limits=Limits(nv_compute_capability=capability),
        disabled=(),
    )
    assert flag in caps.compiler_options()
    assert not any(
        "NV_SM" in f
        for f in qcom_ext.DeviceCaps.from_info(extensions="", disabled=()).compiler_options()
    )
