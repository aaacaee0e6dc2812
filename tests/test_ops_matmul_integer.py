"""The integer matmul path (docs/ops.md, "q8_0 activations"): the one-launch integer GEMV
(kernels/matmul_gemv_q8.cl) for every row count of the GEMV, odd shapes, both weight
formats, read paths and x dtypes, against the float64 reference and the numpy model of
its integer arithmetic (tests/matmul_reference.py), and bit for bit against the
quantizer and GEMV launches it replaces; ``activation_format="auto"``: the float path
untuned, the remembered choice when there is one, and the tuner's choice.

Cost: one build per case and kind on pocl (about 0.5 CPU-s each)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from matmul_reference import (
    assert_within,
    integer_model,
    quantization_bound,
    reference,
    stored,
)

from qcom_ext import ops
from qcom_ext.errors import ConfigError
from qcom_ext.ext.variant_store import open_store


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


# (rows, weight format, read path, x dtype, N, K): every row count, both formats, paths and
# x dtypes, N odd (fewer rows of W than a work-group's row groups in some), K of 1 to 130
# blocks and never a multiple of 256 (130 blocks: two chunks of quantized x, 128 blocks
# at most a chunk). Rows 1, 3 and 8 have the builds of test_ops_matmul.py's q8_0 test
# (pocl caches them): one new build each for the others.
CASES = [
    (1, "q4_0", "buffer", np.float32, 13, 64),
    (2, "q8_0", "image", np.float16, 7, 160),
    (3, "q4_0", "image", np.float32, 21, 96),
    (4, "q8_0", "buffer", np.float16, 5, 32),  # untuned (1, 4): pocl 3.1's miscompile
    (5, "q4_0", "buffer", np.float16, 9, 224),
    (6, "q8_0", "buffer", np.float32, 11, 96),
    (7, "q4_0", "buffer", np.float32, 3, 4160),
    (8, "q8_0", "image", np.float32, 15, 4096),
]
#: The row counts also checked bit for bit against the quantizer and GEMV launches (two
#: builds more each).
SAME_BITS = (8,)


def _data(m, n, k, x_dtype, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, k)).astype(np.float32)
    x = (rng.standard_normal((m, k)) * rng.uniform(0.01, 10, (m, 1))).astype(x_dtype)
    return w, x


@pytest.mark.parametrize(
    ("m", "fmt", "path", "x_dtype", "n", "k"), CASES, ids=[f"{c[0]}x{c[4]}x{c[5]}" for c in CASES]
)
def test_one_launch_integer_gemv(queue, m, fmt, path, x_dtype, n, k):
    """One launch, within the integer model's float32 bound and the documented q8_0
    tolerance of the float64 product; for SAME_BITS, at the same local size (L0 <= the
    chunk: every block on the same work-item, in the same order), the same bits as the
    quantizer and GEMV launches: the quantized x is the same, the integer sums are exact
    and the float steps the same."""
    w, x = _data(m, n, k, x_dtype, seed=m)
    layer = ops.Linear(queue, w, weight_format=fmt, activation_format="q8_0", path=path)
    assert len(layer.enqueue(queue, *_matrices(queue, x, n))) == 1
    got = layer(queue, x)
    model, tolerance = integer_model(x.astype(np.float32), layer.quantized)
    assert_within(got, model, tolerance, f"{fmt} {m}x{n}x{k} against the integer model")
    exact = stored(w, fmt, layer.quantized)
    want = reference(x, exact, None)
    assert_within(got, want, quantization_bound(x.astype(np.float32), exact), "vs float64")
    if m not in SAME_BITS:
        return
    launches = ops.Linear(queue, layer.quantized, activation_format="q8_0", path=path)
    launches.fused_rows = 0
    assert len(launches.enqueue(queue, *_matrices(queue, x, n))) == 2
    for local in ((8, 2), (4, 1)):
        same = launches(queue, x, local_size=local)
        assert np.array_equal(layer(queue, x, local_size=local), same), local


def _matrices(queue, x, n):
    source = ops.BufferMatrix.from_numpy(queue.context, x)
    return source, ops.BufferMatrix.empty(queue.context, (x.shape[0], n))


def test_nan_and_inf_blocks_make_their_rows_nan(queue):
    """As the quantizer launch: a block of x holding NaN or inf gives its row NaN."""
    w, x = _data(3, 5, 96, np.float32, seed=9)
    x[0, 40], x[1, 95] = np.nan, np.inf
    layer = ops.Linear(queue, w, weight_format="q4_0", activation_format="q8_0")
    got = layer(queue, x)
    assert np.isnan(got[:2]).all()
    model, tolerance = integer_model(x[2:], layer.quantized)
    assert_within(got[2:], model, tolerance, "beside NaN and inf")


# ---- activation_format="auto" ---------------------------------------------------------


def _auto_and_both(queue, w, path="buffer"):
    auto = ops.Linear(queue, w, weight_format="q4_0", activation_format="auto", path=path)
    floats = ops.Linear(queue, auto.quantized, path=path)
    integer = ops.Linear(queue, auto.quantized, activation_format="q8_0", path=path)
    return auto, floats, integer


def test_auto_is_float_untuned_and_the_remembered_choice_otherwise(queue, tuning_cache_dir):
    """No entry: the float path (results do not change with timing). An entry another
    process left in the cache (a file, read on the next lookup) picks the path for its
    row count and x dtype only; rows above the GEMV's always take the float GEMM."""
    from qcom_ext.ops import tuning

    w, x = _data(1, 13, 64, np.float32, seed=3)
    auto, floats, integer = _auto_and_both(queue, w)
    assert auto.activations_for(1) is None
    assert np.array_equal(auto(queue, x), floats(queue, x))

    store = open_store()
    store.store(auto._auto.key(1, False), (1,), 1000.0, [((0,), 2000.0), ((1,), 1000.0)])
    tuning.forget()  # the memo of the miss above: the file is read again
    assert auto.activations_for(1) == "q8_0" and auto.activations_for(1, np.float16) is None
    assert auto.activations_for(2) is None and auto.activations_for(9) is None
    assert auto.family(9) == "gemm" and auto.family(8) == "gemv"
    assert np.array_equal(auto(queue, x), integer(queue, x))
    assert not np.array_equal(auto(queue, x), floats(queue, x))

    store.store(auto._auto.key(1, False), (7,), 1.0, [])  # a choice it does not know
    tuning.forget()
    assert auto.activations_for(1) is None


def test_auto_tuning_remembers_the_faster_path(queue, tuning_cache_dir):
    """Layer.tune times the float and the fused integer GEMV and keeps the faster for
    this device, shape and row count; the layer then runs that one."""
    w, x = _data(1, 13, 64, np.float32, seed=4)
    auto, floats, integer = _auto_and_both(queue, w)
    result = auto.tune(queue, x, budget_s=0.5, repeats=1, candidates=[(8, 1), (8, 2)])
    assert result.best_ns is not None
    entry = open_store().load(auto._auto.key(1, False))
    assert entry in ((0,), (1,))
    chosen = "q8_0" if entry == (1,) else None
    assert auto.activations_for(1) == chosen
    expected = integer if chosen else floats
    assert np.array_equal(auto(queue, x), expected(queue, x))


def test_auto_takes_any_weights_and_bad_values_are_named(queue):
    """Float weights have no integer path: "auto" is the float one there; an unknown
    activation format is a ConfigError naming it."""
    w = np.ones((4, 64), np.float32)
    layer = ops.Linear(queue, w, activation_format="auto")
    assert layer.activations_for(1) is None and layer.family(1) == "gemv"
    with pytest.raises(ConfigError, match="activation_format 'Auto': expected None or one of"):
        ops.Linear(queue, w, weight_format="q8_0", activation_format="Auto")
