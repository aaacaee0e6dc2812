"""One decode step of a two-layer MLP with q4_0 weights read from a GGUF file.

    python samples/mlp_decode.py [--device 0:0] [--size 512x1536] [--tokens 20]
                                 [--activations q8_0]

Makes the weights of ``y = W2 @ relu(W1 @ x + b1) + b2`` (``--size`` HIDDENxFF: W1 is
FF x HIDDEN, W2 HIDDEN x FF), quantizes them to q4_0 (ggml's blocks), writes them to a
GGUF file in a temporary directory and reads them back (``qcom_ext.ops.save_weights`` /
``load_weight``, the optional ``gguf`` package), then runs decode steps of one token on
the device: two ``ops.Linear`` GEMVs (weights uploaded once, read through image1d_buffer
views where the device has them) and a ReLU kernel between them, the hidden vector
staying on the device. ``--activations q8_0`` quantizes the activations on the device
and takes integer dot products (qcom_dot8_acc). Prints the result against numpy (float64
on the dequantized weights; the tolerance of tests/matmul_reference.py) and the time per
token; exit status 1 on mismatch.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext import ops
from qcom_ext.ops.gguf_weights import GGUFUnavailable

RELU = """
__kernel void relu(__global float *v, int n)
{ int i = get_global_id(0); if (i < n) v[i] = fmax(v[i], 0.0f); }
"""


def size(text: str) -> tuple[int, int]:
    hidden, ff = (int(v) for v in text.lower().split("x"))
    if hidden < 32 or ff < 32 or hidden % 32 or ff % 32:
        raise ValueError(f"{text}: sizes must be multiples of 32 (q4_0 blocks)")
    return hidden, ff


def weights_through_gguf(hidden: int, ff: int, seed: int) -> dict[str, object]:
    """The MLP's q4_0 weights and float32 biases, written to a GGUF file and read back."""
    rng = np.random.default_rng(seed)
    made = {
        "ffn_up.weight": ops.quantize(rng.standard_normal((ff, hidden), np.float32) * 0.1, "q4_0"),
        "ffn_up.bias": rng.standard_normal(ff).astype(np.float32) * 0.1,
        "ffn_down.weight": ops.quantize(
            rng.standard_normal((hidden, ff), np.float32) * 0.05, "q4_0"
        ),
        "ffn_down.bias": rng.standard_normal(hidden).astype(np.float32) * 0.1,
    }
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mlp.gguf")
        ops.save_weights(path, made)
        print(f"wrote {os.path.getsize(path)} bytes of GGUF: {', '.join(ops.weight_names(path))}")
        loaded = {name: ops.load_weight(path, name) for name in made}
    for name, value in made.items():  # the file holds ggml's bytes: nothing may change
        back = loaded[name]
        same = (
            np.array_equal(back.quants, value.quants) and np.array_equal(back.scales, value.scales)
            if isinstance(value, ops.QuantizedWeights)
            else np.array_equal(back, value)
        )
        if not same:
            raise SystemExit(f"{name} changed on its way through the GGUF file")
    return loaded


def _q8_step(v: np.ndarray) -> np.ndarray:
    """How far q8_0 quantization may move each value (0.57 of its block's step, see
    tests/matmul_reference.py), with 5 % for the device's own activations."""
    scales = ops.quantize_q8_0(v.astype(np.float32)[None]).scales.astype(np.float64)[0]
    return np.repeat(scales, 32) * 0.57 * 1.05


def reference(weights: dict, x: np.ndarray, q8: bool) -> tuple[np.ndarray, float]:
    """float64 y and its tolerance: per layer the float32 sum bound (K + 4) 2**-24
    sum |x||w|, the first layer's error carried through the second, and with q8_0
    activations each layer's quantization steps times |w|."""
    w1, w2 = (
        ops.dequantize(weights[f"ffn_{n}.weight"]).astype(np.float64) for n in ("up", "down")
    )
    h = np.maximum(w1 @ x + weights["ffn_up.bias"], 0)
    y = w2 @ h + weights["ffn_down.bias"]
    eps = 2.0**-24
    h_tol = (w1.shape[1] + 4) * eps * (np.abs(w1) @ np.abs(x)) + eps
    tol = (w2.shape[1] + 4) * eps * (np.abs(w2) @ np.abs(h)) + eps
    if q8:
        h_tol += np.abs(w1) @ _q8_step(x)
        tol += np.abs(w2) @ _q8_step(h + h_tol)
    return y, float((tol + np.abs(w2) @ h_tol).max())


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", type=size, default=(512, 1536), metavar="HIDDENxFF")
    parser.add_argument("--tokens", type=int, default=20, help="decode steps timed")
    parser.add_argument("--activations", choices=["float32", "q8_0"], default="float32")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_ml_ops")
    hidden, ff = args.size
    try:
        weights = weights_through_gguf(hidden, ff, args.seed)
    except GGUFUnavailable as exc:
        print(f"skipped: {exc}")
        return 0

    context = cl.Context([caps.device()])
    queue = cl.CommandQueue(context)
    act = None if args.activations == "float32" else "q8_0"
    up = ops.Linear(queue, weights["ffn_up.weight"], weights["ffn_up.bias"], activation_format=act)
    down = ops.Linear(
        queue, weights["ffn_down.weight"], weights["ffn_down.bias"], activation_format=act
    )
    relu = qcom_ext.build_program(context, RELU).relu
    print(
        f"MLP {hidden} -> {ff} -> {hidden}, q4_0 weights ({up.weight_bytes + down.weight_bytes} "
        f"bytes) read through {up.path} ({up.path_reason}); {up.family(1)}, "
        f"{args.activations} activations"
    )

    x = np.random.default_rng(args.seed + 1).standard_normal(hidden).astype(np.float32)
    source = ops.BufferMatrix.from_numpy(context, x[None])
    h = ops.BufferMatrix.empty(context, (1, ff))
    y = ops.BufferMatrix.empty(context, (1, hidden))

    def step() -> None:
        up(queue, source, h)
        relu(queue, (ff,), None, h.buffer, np.int32(ff))
        down(queue, h, y)

    step()  # builds and warms the kernels
    queue.finish()
    start = time.perf_counter()
    for _ in range(max(1, args.tokens)):
        step()
    queue.finish()
    per_token = (time.perf_counter() - start) / max(1, args.tokens)

    got = y.to_numpy(queue)[0]
    want, tolerance = reference(weights, x.astype(np.float64), act is not None)
    error = float(np.abs(got - want).max())
    print(f"y[:4] = {np.round(got[:4], 4).tolist()}  numpy: {np.round(want[:4], 4).tolist()}")
    print(f"max |error| {error:.3g} (tolerance {tolerance:.3g})")
    print(f"{per_token * 1e3:.3f} ms per token ({args.tokens} decode steps, wall clock)")
    if not error <= tolerance:
        print("MISMATCH")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
