"""Oclgrind cases (tests/oclgrind_cases.py runs them, tests/oclgrind_trial.py is the
harness): the matmul kernels (kernels/matmul_gemv.cl, matmul_gemm.cl, matmul_quantize.cl,
matmul_gemv_q8.cl) through ``ops.Linear``, at sizes that reach every code path: each
weight format, K with a tail (float formats), more than one chunk of staged x (more than
64 blocks), N not a multiple of the rows per work-item, several row groups per
work-group, 1, 3 and 8 rows of x, float and half x, more than one GEMM tile each way,
both read paths, q8_0 activations (one launch up to 8 rows, the quantizer and the GEMV
above); and the GEMVs built with emulated sub-groups of 8 lanes, so that their
reduction runs the shuffles (qcom_sub_group_shuffle_xor) before local memory, the
one-launch integer GEMV with chunks of 4 blocks.
Checked against float64 numpy with the tolerance rule of tests/matmul_reference.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matmul_reference import bound, integer_model, magnitudes, reference, stored
from oclgrind_trial import Mismatch, Trial, case

from qcom_ext import ops
from qcom_ext.ops._matmul_layout import pack
from qcom_ext.ops.quant import quantize


def _check(t: Trial, what: str, got: np.ndarray, want: np.ndarray, tol: np.ndarray) -> None:
    t.checks += 1
    error = np.abs(got.astype(np.float64) - want)
    if got.shape != want.shape or (error > tol).any():
        raise Mismatch(f"{what}: max error {error.max():.3g} over tolerance\n{got}\n{want}")


def _linear(t: Trial, m: int, n: int, k: int, fmt: str, path: str, **options: Any) -> None:
    x_dtype = options.pop("x_dtype", np.float32)
    local = options.pop("local_size", "tuned")
    w = t.rng.standard_normal((n, k)).astype(np.float32)
    b = t.rng.standard_normal(n).astype(np.float32)
    x = t.rng.standard_normal((m, k)).astype(x_dtype)
    layer = ops.Linear(t.queue, w, b, weight_format=fmt, path=path, **options)
    got = layer(t.queue, x, local_size=local)
    exact = stored(w, fmt, layer.quantized)
    what = f"{layer.family(m)} {fmt} {path} {m}x{n}x{k} {np.dtype(x_dtype).name} {local}"
    _check(t, what, got, reference(x, exact, b), bound(x, magnitudes(exact), b))


def _gemv(t: Trial, path: str) -> None:
    for fmt in ("f32", "f16", "q8_0", "q4_0"):
        _linear(t, 1, 3, 2112, fmt, path)  # 66 blocks: two chunks of staged x (64 a chunk)
        _linear(t, 3, 5, 64, fmt, path, x_dtype=np.float16, local_size=(8, 2))
    _linear(t, 8, 3, 45, "f32", path)  # K tail, 8 rows of x (2 rows per work-item)
    _linear(t, 2, 9, 77, "f16", path, local_size=(4, 4))
    _linear(t, 1, 3, 2112, "q4_0", path, local_size=(32, 1))  # a round (4 x 32) > a chunk


@case()
def case_matmul_gemv_buffers(t: Trial) -> None:
    """matmul_gemv.cl on buffers: every format, chunks, tails, row groups, half x."""
    _gemv(t, "buffer")


@case("image-reads")
def case_matmul_gemv_images(t: Trial) -> None:
    """matmul_gemv.cl through image1d_buffer views of the weights."""
    _gemv(t, "image")


def _gemm(t: Trial, path: str) -> None:
    for fmt, k in (("f32", 45), ("f16", 40), ("q8_0", 64), ("q4_0", 64)):
        _linear(t, 40, 37, k, fmt, path, gemm_tile="small")  # two 32 x 32 tiles each way


@case()
def case_matmul_gemm_buffers(t: Trial) -> None:
    """matmul_gemm.cl on buffers: two tiles each way, K tail, the medium tile, half x."""
    _gemm(t, "buffer")
    _linear(t, 17, 9, 32, "q4_0", "buffer", gemm_tile="medium", x_dtype=np.float16)


@case("image-reads")
def case_matmul_gemm_images(t: Trial) -> None:
    """matmul_gemm.cl through image1d_buffer views of the weights."""
    _gemm(t, "image")


@case("shufflevector", "image-reads")
def case_matmul_q8_activations(t: Trial) -> None:
    """matmul_gemv_q8.cl (1 row: x quantized in the launch), matmul_quantize.cl and
    matmul_gemv.cl with ACT_Q8 (9 rows: two launches of the GEMV), qcom_dot8_acc, against
    the numpy model of the integer arithmetic; NaN and inf in x (their rows NaN)."""
    for fmt in ("q8_0", "q4_0"):
        for m in (1, 9):
            w = t.rng.standard_normal((7, 96)).astype(np.float32)
            x = t.rng.standard_normal((m, 96)).astype(np.float32)
            layer = ops.Linear(t.queue, w, weight_format=fmt, activation_format="q8_0")
            model, tol = integer_model(x, layer.quantized)
            _check(t, f"q8_0 activations {fmt} {m} rows", layer(t.queue, x), model, tol)
    # A block of x holding NaN or inf: every output of its row NaN (the quantizer's scale
    # NaN, its quants 0), the other rows as the model says.
    x = t.rng.standard_normal((3, 96)).astype(np.float32)
    x[0, 3], x[1, 64] = np.nan, -np.inf
    got = layer(t.queue, x)
    t.checks += 1
    if not np.isnan(got[:2]).all():
        raise Mismatch(f"q8_0 activations: NaN / inf in x gave finite outputs\n{got[:2]}")
    model, tol = integer_model(x[2:], layer.quantized)
    _check(t, "q8_0 activations beside NaN and inf", got[2:], model, tol)


@case()
def case_matmul_gemv_emulated_sub_groups(t: Trial) -> None:
    """The GEMV reduction with emulated sub-groups of 8 lanes: shuffles, then local
    memory (16 work-items on K, 2 row groups)."""
    import pyopencl as cl

    n, k = 10, 640
    w = t.rng.standard_normal((n, k)).astype(np.float32)
    x = t.rng.standard_normal((1, k)).astype(np.float32)
    q = quantize(w, "q4_0")
    packed = pack(q, "q4_0")
    program = t.file(
        "matmul_gemv.cl",
        WFMT=3, USE_IMAGE=0, X_HALF=0, K_TAIL=0, X_ALIGNED=1, MR=1, RPW=4,
        RED_ITEMS=64, ACT_Q8=0, CB=32, QCOM_EXT_EMULATED_SUB_GROUP_SIZE=8,
    )  # fmt: skip
    y = t.output(4 * n)
    bias = t.buffer(np.zeros(n, np.float32))
    words, scales = t.buffer(packed.words), t.buffer(packed.scales)
    args = [words, scales, t.buffer(x), np.int32(k), np.int32(k), np.int32(packed.nb)]
    groups = -(-n // 4)
    kernel = cl.Kernel(program, "matmul_gemv")
    kernel.set_args(*args, np.int32(n), bias, y, np.int32(n), np.int32(0))
    cl.enqueue_nd_range_kernel(t.queue, kernel, (16, -(-groups // 2) * 2), (16, 2))
    got = t.get(y, (1, n), np.float32)
    exact = stored(w, "q4_0", q)
    _check(
        t, "emulated sub-groups of 8", got, reference(x, exact, None), bound(x, abs(exact), None)
    )


@case("shufflevector", "image-reads")
def case_matmul_fused_q8_chunks(t: Trial) -> None:
    """matmul_gemv_q8.cl built with chunks of 4 blocks (10 blocks a row: two full chunks
    and a part, each block's weights read one block ahead across them), 3 rows of half
    x, N = 5 (a row group past the end), emulated sub-groups of 8 lanes, L0 = 8 (more
    work-items than a chunk's blocks) and 2; and through Linear on image1d_buffer views
    of q8_0 weights."""
    import pyopencl as cl

    n, k, m = 5, 320, 3
    w = t.rng.standard_normal((n, k)).astype(np.float32)
    x = t.rng.standard_normal((m, k)).astype(np.float16)
    q = quantize(w, "q4_0")
    packed = pack(q, "q4_0")
    program = t.file(
        "matmul_gemv_q8.cl",
        WFMT=3, USE_IMAGE=0, X_HALF=1, K_TAIL=0, X_ALIGNED=1, MR=m, RPW=2,
        RED_ITEMS=16, CB=4, NB=k // 32, QCOM_EXT_EMULATED_SUB_GROUP_SIZE=8,
    )  # fmt: skip
    model, tol = integer_model(x.astype(np.float32), q)
    bias = t.buffer(np.zeros(n, np.float32))
    words, scales, xs = t.buffer(packed.words), t.buffer(packed.scales), t.buffer(x)
    kernel = cl.Kernel(program, "matmul_gemv_q8")
    for l0 in (8, 2):
        y = t.output(4 * m * n)
        sizes = (np.int32(k), np.int32(k), np.int32(packed.nb), np.int32(n))
        kernel.set_args(words, scales, xs, *sizes, bias, y, np.int32(n), np.int32(0))
        cl.enqueue_nd_range_kernel(t.queue, kernel, (l0, 4), (l0, 2))
        _check(
            t, f"fused q8_0 GEMV, chunks of 4, L0 {l0}", t.get(y, (m, n), np.float32), model, tol
        )
    w = t.rng.standard_normal((3, 64)).astype(np.float32)
    x = t.rng.standard_normal((2, 64)).astype(np.float32)
    layer = ops.Linear(t.queue, w, weight_format="q8_0", activation_format="q8_0", path="image")
    model, tol = integer_model(x, layer.quantized)
    _check(t, "fused q8_0 GEMV on image reads", layer(t.queue, x), model, tol)
