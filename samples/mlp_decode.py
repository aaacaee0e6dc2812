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
on the dequantized weights, each layer from the input it actually had, each output within
its own bound: docs/ops.md, "Tolerance") and the time per token; exit status 1 on mismatch.
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
    """How far q8_0 quantization moves each value of ``v`` at most: 0.57 of its block's
    step ``d`` (half a step plus ``|q|`` times the float16 rounding of ``d``; docs/ops.md,
    "Tolerance"). The device quantizes exactly these float32 values, so the steps are its."""
    scales = ops.quantize_q8_0(v.astype(np.float32)[None]).scales.astype(np.float64)[0]
    return np.repeat(scales, 32) * 0.57


def layer_check(w: np.ndarray, bias: np.ndarray, v: np.ndarray, q8: bool):
    """float64 ``w @ v + bias`` for the layer's actual input ``v`` and each output's
    tolerance: the float32 sum bound (K + 4) 2**-24 sum |v||w| (+ the bias's rounding),
    and with q8_0 activations each input's quantization step times |w|."""
    v = v.astype(np.float64)
    eps = 2.0**-24
    want = w @ v + bias
    tol = (w.shape[1] + 4) * eps * (np.abs(w) @ np.abs(v)) + eps * np.abs(bias) + 1e-30
    if q8:
        tol = tol + np.abs(w) @ _q8_step(v)
    return want, tol


def check(weights: dict, x: np.ndarray, h: np.ndarray, y: np.ndarray, q8: bool):
    """Each layer against float64 numpy on the dequantized weights, from the input it
    actually had (x; the device's hidden vector ``h`` for the second layer), output by
    output: (ok, worst |error| / tolerance, max |error|, largest |reference|). ReLU is
    1-Lipschitz, so the first layer's bound holds after it."""
    w1, w2 = (
        ops.dequantize(weights[f"ffn_{n}.weight"]).astype(np.float64) for n in ("up", "down")
    )
    b1, b2 = (weights[f"ffn_{n}.bias"].astype(np.float64) for n in ("up", "down"))
    want_h, tol_h = layer_check(w1, b1, x, q8)
    want_h = np.maximum(want_h, 0)
    want_y, tol_y = layer_check(w2, b2, h, q8)
    errors = (np.abs(h - want_h), np.abs(y - want_y))
    ratio = max(float((e / t).max()) for e, t in zip(errors, (tol_h, tol_y), strict=True))
    ok = h.shape == want_h.shape and y.shape == want_y.shape and ratio <= 1.0
    return ok, ratio, float(errors[1].max()), float(np.abs(want_y).max())


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

    got, hidden_got = y.to_numpy(queue)[0], h.to_numpy(queue)[0]
    ok, ratio, error, scale = check(weights, x, hidden_got, got, act is not None)
    print(f"y[:4] = {np.round(got[:4], 4).tolist()}")
    print(
        f"max |error| {error:.3g} (largest |y| {scale:.3g}); the worst output of each "
        f"layer uses {ratio:.2g} of its own tolerance"
    )
    print(f"{per_token * 1e3:.3f} ms per token ({args.tokens} decode steps, wall clock)")
    if not ok:
        print("MISMATCH")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
