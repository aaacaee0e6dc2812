"""Checks of the matmul fallback of cl_qcom_ml_ops' fully-connected and GEMM operators
(``qcom_ext.ops.Linear``): a decode-step GEMV on q4_0 weights, a prefill GEMM on q8_0
weights, and the q8_0 x q8_0 GEMV (activations quantized on the device, integer dot
products through ``qcom_dot8_acc``), each against float64 numpy.

The tolerance is the float32 summation bound of the ops tests (tests/matmul_reference.py):
``(K + 4) * 2**-24 * (|x| @ |W|.T)``, at its largest over the outputs; the q8_0 x q8_0
check adds half a quantization step of each activation times ``|W|``.
"""

from __future__ import annotations

import numpy as np

from qcom_ext.tools.selftest._registry import Env, Outcome, case

ML = "cl_qcom_ml_ops"


def _layer_outcome(env: Env, rows: int, fmt: str, activation_format: str | None = None):
    from qcom_ext.ops import Linear
    from qcom_ext.ops.quant import dequantize, quantize_q8_0

    n, k = 48, 256
    weight = env.rng.standard_normal((n, k)).astype(np.float32)
    bias = env.rng.standard_normal(n).astype(np.float32)
    x = env.rng.standard_normal((rows, k)).astype(np.float32)
    layer = Linear(env.queue, weight, bias, weight_format=fmt, activation_format=activation_format)
    exact = dequantize(layer.quantized).astype(np.float64)
    want = x.astype(np.float64) @ exact.T + bias
    tolerance = (k + 4) * 2.0**-24 * float((np.abs(x) @ np.abs(exact).T).max())
    if activation_format == "q8_0":
        step = np.repeat(quantize_q8_0(x).scales.astype(np.float64), 32, axis=1) * 0.57
        tolerance += float((step @ np.abs(exact).T).max())
    note = f"{layer.family(rows)} on {layer.path} reads, {fmt} weights"
    return Outcome(layer(env.queue, x), want, tolerance, note=note)


@case(ML, "fully connected, decode step: GEMV 1x256 -> 48, q4_0 weights (qcom_ext.ops)")
def _gemv_q4_0(env: Env) -> Outcome:
    return _layer_outcome(env, 1, "q4_0")


@case(ML, "GEMM 24x256 -> 48, q8_0 weights (qcom_ext.ops)")
def _gemm_q8_0(env: Env) -> Outcome:
    return _layer_outcome(env, 24, "q8_0")


@case(ML, "q8_0 x q8_0 GEMV 3x256 -> 48 (activations quantized on the device, qcom_dot8_acc)")
def _gemv_q8_0_activations(env: Env) -> Outcome:
    return _layer_outcome(env, 3, "q4_0", activation_format="q8_0")
