"""cl_qcom_bfloat16_product: qcom_mad32_bf16 on every device against numpy.

Inputs cover every bf16 bit pattern class (zeros, subnormals, normals, infinities, NaNs)
and float32 accumulators of every class. The host helpers are checked on their own.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from compat_helpers import preprocess
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext.ext.program.bfloat16 import from_bfloat16, mad32_bf16, to_bfloat16

SOURCE = """
__kernel void mad_bf16(__global const ushort *a, __global const ushort *b,
                  __global const float *acc, __global float *out)
{
    size_t i = get_global_id(0);
    out[i] = qcom_mad32_bf16(a[i], b[i], acc[i]);
}
"""
SPECIAL_BF16 = [
    0x0000,
    0x8000,
    0x0001,
    0x807F,
    0x0080,
    0x3F80,
    0xBF80,
    0x4000,
    0x7F7F,
    0xFF7F,
    0x7F80,
    0xFF80,
    0x7FC0,
    0xFFC1,
    0x7F81,
    0x3F81,
    0x0040,
]
SPECIAL_F32 = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.0,
        3.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-45,
        -1e-40,
        1.17549435e-38,
        3.4028235e38,
        -3.4028235e38,
        2.0**-133,
        65504.0,
    ],
    np.float32,
)


def test_host_conversions():
    assert to_bfloat16(1.0) == 0x3F80 and to_bfloat16(-2.0) == 0xC000
    # round to nearest, ties to even, on the 16 dropped bits
    assert to_bfloat16(np.uint32(0x3F808000).view(np.float32)) == 0x3F80  # tie, even below
    assert to_bfloat16(np.uint32(0x3F818000).view(np.float32)) == 0x3F82  # tie, even above
    assert to_bfloat16(np.uint32(0x3F808001).view(np.float32)) == 0x3F81
    assert to_bfloat16(np.float32(3.3e38)) == 0x7F78 and to_bfloat16(np.float32(3.4e38)) == 0x7F80
    nan = to_bfloat16(np.uint32(0x7F800001).view(np.float32))  # a signalling NaN whose
    assert np.isnan(from_bfloat16(nan))  # payload sits in the dropped bits: still NaN
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    floats = from_bfloat16(every)
    finite = ~np.isnan(floats)
    np.testing.assert_array_equal(to_bfloat16(floats)[finite], every[finite])  # round trip


@given(st.floats(width=32, allow_nan=False))
def test_to_bfloat16_is_the_nearest(value):
    bits = int(to_bfloat16(value))
    got = float(from_bfloat16(bits))
    if np.isinf(got):
        assert abs(value) >= float(from_bfloat16(0x7F7F))
        return
    for neighbour in (bits - 1, bits + 1):
        other = float(from_bfloat16(neighbour & 0xFFFF))
        if np.isfinite(other) and (neighbour >> 15) == (bits >> 15):
            assert abs(got - value) <= abs(other - value)


def test_host_reference_worked_example():
    assert mad32_bf16(0x3F80, 0x4000, 3.0) == 5.0  # qcom-extensions.md section 18
    assert np.isnan(mad32_bf16(0x7F80, 0x0000, 1.0))  # inf * 0
    assert np.isnan(mad32_bf16(0x7F80, 0x3F80, -np.inf))  # inf - inf
    assert mad32_bf16(0x7F7F, 0x7F7F, 0.0) == np.inf  # overflow
    # fused: (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 exactly, + (-1 - 2^-6) = 2^-14 exactly
    assert mad32_bf16(0x3F81, 0x3F81, np.float32(-(1 + 2.0**-6))) == np.float32(2.0**-14)


def flush(values: np.ndarray) -> np.ndarray:
    tiny = np.abs(values) < np.finfo(np.float32).tiny
    return np.where(tiny & np.isfinite(values), np.float32(0) * values, values)


def flushed_reference(a, b, acc) -> np.ndarray:
    """The result on a device that flushes subnormal inputs and results to zero."""
    fa, fb = flush(from_bfloat16(a)), flush(from_bfloat16(b))
    return flush(mad32_bf16(to_bfloat16(fa), to_bfloat16(fb), flush(acc)))


def same(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Equal values (NaN matching any NaN), with the sign of zero compared too."""
    both_nan = np.isnan(got) & np.isnan(expected)
    equal = (got == expected) & (np.signbit(got) == np.signbit(expected))
    return both_nan | equal


class Mad:
    def __init__(self, context):
        self.context = context
        self.queue = cl.CommandQueue(context)
        self.kernel = cl.Kernel(qcom_ext.build_program(context, SOURCE), "mad_bf16")

    def __call__(self, a, b, acc) -> np.ndarray:
        mf = cl.mem_flags
        a, b = np.asarray(a, np.uint16), np.asarray(b, np.uint16)
        acc = np.asarray(acc, np.float32)
        bufs = [
            cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
            for x in (a, b, acc)
        ]
        out = cl.Buffer(self.context, mf.WRITE_ONLY, 4 * len(a))
        self.kernel.set_args(*bufs, out)
        cl.enqueue_nd_range_kernel(self.queue, self.kernel, (len(a),), None)
        host = np.empty(len(a), np.float32)
        cl.enqueue_copy(self.queue, host, out)
        return host

    def check(self, a, b, acc, denormals: bool) -> None:
        got = self(a, b, acc)
        ok = same(got, mad32_bf16(a, b, acc))
        if not denormals:
            ok |= same(np.abs(got), np.abs(flushed_reference(a, b, np.float32(acc))))
        bad = np.flatnonzero(~ok)
        assert not len(bad), [
            (
                hex(int(a[i])),
                hex(int(b[i])),
                float(acc[i]),
                float(got[i]),
                float(mad32_bf16(a[i], b[i], acc[i])),
            )
            for i in bad[:5]
        ]


def has_denormals(caps) -> bool:
    return bool(caps.device().single_fp_config & cl.device_fp_config.DENORM)


def test_worked_example_on_the_device(device_caps, kernel_context):
    assert Mad(kernel_context)([0x3F80], [0x4000], [3.0])[0] == 5.0


def test_special_values_on_the_device(device_caps, kernel_context):
    a, b, acc = np.meshgrid(SPECIAL_BF16, SPECIAL_BF16, SPECIAL_F32, indexing="ij")
    Mad(kernel_context).check(a.ravel(), b.ravel(), acc.ravel(), has_denormals(device_caps))


def test_matches_numpy_on_random_bits(device_caps, kernel_context):
    mad = Mad(kernel_context)
    denormals = has_denormals(device_caps)
    f32 = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        st.lists(
            st.tuples(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF), f32), min_size=1, max_size=64
        )
    )
    def check(triples):
        a, b, acc = (np.array(column) for column in zip(*triples, strict=True))
        mad.check(a.astype(np.uint16), b.astype(np.uint16), acc.astype(np.float32), denormals)

    check()


def test_overflowing_products_are_fused(device_caps, kernel_context):
    """bf16 products are exact in float32 unless they overflow: there, only a fused
    multiply-add keeps a finite result (2 * 2^127 - FLT_MAX = 2^104 ...)."""
    a = np.full(128, 0x7F00, np.uint16)  # 2^127
    b = (0x4000 + np.arange(128)).astype(np.uint16)  # 2 .. 3.98
    acc = np.full(128, -np.finfo(np.float32).max, np.float32)
    expected = mad32_bf16(a, b, acc)
    assert np.isfinite(expected[:8]).all()  # the first ones come back into range
    got = Mad(kernel_context)(a, b, acc)
    np.testing.assert_array_equal(got, expected)


def test_native_path_leaves_the_builtin_alone():
    native = ["-DQCOM_EXT_NATIVE_cl_qcom_bfloat16_product"]
    header = preprocess("", native, header=True)
    assert "#pragma OPENCL EXTENSION cl_qcom_bfloat16_product : enable" in header
    assert "qcom_mad32_bf16" not in header
    assert "float qcom_mad32_bf16(ushort a, ushort b, float acc)" in preprocess("", header=True)


def test_samples_of_each_class_are_covered():
    floats = from_bfloat16(np.array(SPECIAL_BF16, np.uint16))
    assert np.isnan(floats).any() and np.isinf(floats).any() and (floats == 0).any()
    subnormal = (floats != 0) & (np.abs(floats) < np.finfo(np.float32).tiny)
    assert subnormal.any()


@pytest.mark.parametrize("bits", [0x0001, 0x007F, 0x8001])
def test_subnormal_bf16_widen_exactly(bits):
    value = float(from_bfloat16(bits))
    assert value != 0 and abs(value) < float(np.finfo(np.float32).tiny)
    assert int(to_bfloat16(value)) == bits
