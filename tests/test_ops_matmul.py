"""ops.Linear / ops.matmul against a float64 numpy reference of the dequantized weights,
on every device, for every weight format, both kernel families (GEMV, GEMM), both read
paths (image1d_buffer views, buffers) and odd shapes; the q8_0 activation path against
a numpy model of its integer arithmetic. Tolerances: tests/matmul_reference.py."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matmul_reference import (
    assert_within,
    bound,
    integer_model,
    magnitudes,
    quantization_bound,
    reference,
    stored,
)

from qcom_ext import ops
from qcom_ext.errors import ConfigError
from qcom_ext.ops._matmul_programs import GEMM_TILES
from qcom_ext.ops.quant import quantize_q8_0

FORMATS = ("f32", "f16", "q8_0", "q4_0")
PATHS = ("image", "buffer")


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


def check(queue, m, n, k, fmt, path, *, x_dtype=np.float32, bias=True, seed=0, **options):
    """Run a Linear on random data and compare with the reference; returns the layer."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32) if bias else None
    x = rng.standard_normal((m, k)).astype(x_dtype)
    layer = ops.Linear(queue, w, b, weight_format=fmt, path=path, **options)
    assert layer.path == path
    got = layer(queue, x)
    exact = stored(w, fmt, layer.quantized)
    assert got.dtype == np.float32
    assert_within(
        got,
        reference(x, exact, b),
        bound(x, magnitudes(exact, layer.quantized), b),
        f"{fmt} {path} {m}x{n}x{k} {np.dtype(x_dtype).name}",
    )
    return layer


# (M, N, K): GEMV (M <= 8) and GEMM (M > 8); K not a multiple of 32 for the float formats
SHAPES = [(1, 1, 32), (1, 13, 64), (3, 37, 96), (8, 70, 160), (17, 70, 128), (40, 130, 96)]
TAIL_SHAPES = [(1, 5, 45), (3, 17, 77), (17, 9, 40), (33, 40, 7)]


@pytest.mark.parametrize(("m", "n", "k"), SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_path_and_family(queue, fmt, path, m, n, k):
    """A shape a test (each its own build, 2-8 CPU-s on pocl; all six took 15-48)."""
    layer = check(queue, m, n, k, fmt, path, seed=m * n)
    assert layer.family(m) == ("gemv" if m <= 8 else "gemm")


@pytest.mark.parametrize(
    ("m", "n", "k"), TAIL_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in TAIL_SHAPES]
)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt", ["f32", "f16"])
def test_k_not_a_multiple_of_the_block(queue, fmt, path, m, n, k):
    """A shape a test (one build each; all four paths took 25-49 s on pocl 3.0)."""
    check(queue, m, n, k, fmt, path, x_dtype=np.float16, seed=k)


@pytest.mark.parametrize("fmt", ["f16", "q4_0"])
def test_long_rows(queue, fmt):
    check(queue, 1, 24, 4096, fmt, "buffer", seed=3)
    check(queue, 2, 9, 4096, fmt, "image", seed=4)


@pytest.mark.parametrize("local_size", [(8, 1), (16, 2), (64, 1)])
def test_gemv_rounds_across_chunks(queue, local_size):
    """300 blocks a row: two full chunks of staged x (128 blocks at most) and a partial
    one; q4_0 reads 4 blocks a round (UNROLL 4), so (64, 1) makes a round of 256
    blocks, longer than a chunk, and (8, 1) and (16, 2) rounds that end inside one."""
    for fmt, m in (("q4_0", 1), ("q4_0", 3), ("q8_0", 1), ("f16", 2)):
        rng = np.random.default_rng(m)
        w = rng.standard_normal((5, 9600)).astype(np.float32)
        x = rng.standard_normal((m, 9600)).astype(np.float32)
        layer = ops.Linear(queue, w, weight_format=fmt, path="buffer")
        got = layer(queue, x, local_size=local_size)
        exact = stored(w, fmt, layer.quantized)
        what = f"{fmt} {m} rows, local {local_size}"
        assert_within(got, reference(x, exact, None), bound(x, abs(exact), None), what)


class _Posing:
    """A device's probe report, claiming to be an Adreno or not (``is_adreno``)."""

    def __init__(self, caps, is_adreno):
        self._caps, self.is_adreno = caps, is_adreno

    def __getattr__(self, name):
        return getattr(self._caps, name)


def test_the_default_path_is_buffers_off_adreno(queue, monkeypatch):
    """Image1d_buffer views are the default on Adreno only (its texture path); a device
    that could take them but is no Adreno gets buffers, and path="image" still works.
    The device poses as each in turn, so that this holds on an Adreno too."""
    import qcom_ext.device.probe as probe_module

    real = probe_module.probe

    def pose(is_adreno):
        monkeypatch.setattr(
            probe_module, "probe", lambda device=None: _Posing(real(device), is_adreno)
        )

    w = np.ones((4, 64), np.float32)
    pose(False)
    layer = ops.Linear(queue, w)
    if layer.path_reason.startswith("the "):  # no images, formats or room for the views
        pytest.skip(f"no image1d_buffer path here: {layer.path_reason}")
    assert layer.path == "buffer" and "Adreno" in layer.path_reason
    try:
        ops.Linear(queue, w, path="image")
    except ConfigError:
        pytest.skip("the device lists no image1d_buffer of the texel formats")
    pose(True)
    assert ops.Linear(queue, w).path == "image"


@pytest.mark.parametrize("tile", sorted(GEMM_TILES))
def test_every_gemm_tile_with_several_tiles(queue, tile):
    tm, tn, _, _ = GEMM_TILES[tile]
    for fmt in ("f32", "q4_0"):
        check(queue, tm + 3, tn * 2 + 5, 64, fmt, "buffer", gemm_tile=tile, seed=tm)


@pytest.mark.parametrize("m", range(1, 9))  # a build each: 3 to 4 CPU-s on pocl 3.0
def test_every_gemv_row_count(queue, m):
    check(queue, m, 11, 96, "q8_0", "buffer", seed=m)


cases = st.fixed_dictionaries(
    {
        "m": st.integers(1, 20),
        "n": st.integers(1, 40),
        "blocks": st.integers(1, 5),
        "tail": st.integers(0, 31),
        "x_dtype": st.sampled_from([np.float32, np.float16]),
        "bias": st.booleans(),
    }
)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_random_shapes_against_numpy(queue, fmt, path):
    # 2 examples a format and path, 16 in all: each draws a new build (rows, x type, K
    # tail) at 3-10 CPU-s cold on pocl (12 in one test took 55 CPU-s on pocl 3.0, 3 of
    # one format 30); the fixed tests above cover every family, format and path
    @settings(max_examples=2, deadline=None)
    @given(cases)
    def run(case):
        case = {**case, "fmt": fmt, "path": path}
        quantized = case["fmt"].startswith("q")
        k = case["blocks"] * 32 - (0 if quantized else case["tail"])
        check(
            queue,
            case["m"],
            case["n"],
            max(1, k),
            case["fmt"],
            case["path"],
            x_dtype=case["x_dtype"],
            bias=case["bias"],
        )

    run()


# ---- q8_0 activations ---------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
def test_q8_0_activations_match_the_integer_model(queue, fmt, path):
    """Above 8 rows: the quantizer and GEMV launches (1 to 8 rows take the one-launch
    kernel: tests/test_ops_matmul_integer.py, every row count)."""
    rng = np.random.default_rng(7)
    for m, n, k in [(11, 20, 128), (16, 9, 4096)]:
        w = rng.standard_normal((n, k)).astype(np.float32)
        x = rng.standard_normal((m, k)).astype(np.float32)
        layer = ops.Linear(queue, w, weight_format=fmt, activation_format="q8_0", path=path)
        assert layer.family(m) == "gemv"
        got = layer(queue, x)
        model, tolerance = integer_model(x, layer.quantized)
        assert_within(got, model, tolerance, f"{fmt} q8_0-activations {m}x{n}x{k}")
        exact = stored(w, fmt, layer.quantized)
        assert_within(got, reference(x, exact, None), quantization_bound(x, exact), "vs float")


@pytest.mark.parametrize("x_dtype", [np.float32, np.float16])
def test_device_quantized_activations_are_ggml_q8_0(queue, x_dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 256)) * rng.uniform(0.01, 100, (3, 1))).astype(x_dtype)
    x[0, :32] = 0  # a zero block: d = 0
    x[1, 32:64] = np.linspace(-127, 127, 32)  # exact halves: ties round away from zero
    w = np.ones((4, 256), np.float32)
    layer = ops.Linear(queue, w, weight_format="q8_0", activation_format="q8_0")
    source = ops.BufferMatrix.from_numpy(queue.context, x)
    xq, xd, xs = layer._quantized_input(queue, source, [])
    want = quantize_q8_0(x.astype(np.float32))
    words, scales, sums = (
        np.empty(s, t) for s, t in [(3 * 256, np.int8), (24, np.float16), (24, np.int32)]
    )
    for host, buffer in ((words, xq), (scales, xd), (sums, xs)):
        cl.enqueue_copy(queue, host, buffer)
    assert np.array_equal(words.reshape(3, 256), want.quants)
    assert np.array_equal(scales.reshape(3, 8), want.scales)
    assert np.array_equal(sums, want.quants.reshape(24, 32).astype(np.int64).sum(1))


# ---- device tensors, one-shot function, tuning ---------------------------------------


def test_buffer_matrices_in_and_out(queue):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((21, 64)).astype(np.float32)
    x = rng.standard_normal((5, 64)).astype(np.float16)
    layer = ops.Linear(queue, w, weight_format="q8_0")
    source = ops.BufferMatrix.from_numpy(queue.context, x)
    out = ops.BufferMatrix.empty(queue.context, (5, 21))
    assert layer(queue, source, out) is out
    assert np.array_equal(out.to_numpy(queue), layer(queue, x))
    raw = ops.matmul(
        queue, source.buffer, w, shape=(5, 64), dtype=np.float16, weight_format="q8_0"
    )
    assert isinstance(raw, ops.BufferMatrix) and raw.shape == (5, 21)
    assert np.array_equal(raw.to_numpy(queue), out.to_numpy(queue))


def test_one_dimensional_x_and_the_function(queue):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 40)).astype(np.float16)
    x = rng.standard_normal(40).astype(np.float32)
    got = ops.matmul(queue, x, w)  # float16 weights stay f16
    assert got.shape == (6,)
    exact = w.astype(np.float64)
    assert_within(got[None], reference(x[None], exact, None), bound(x[None], abs(exact), None))


def test_quantized_weights_are_taken_as_they_are(queue):
    from qcom_ext.ops.quant import quantize

    rng = np.random.default_rng(3)
    q = quantize(rng.standard_normal((9, 64)).astype(np.float32), "q4_0")
    layer = ops.Linear(queue, q)
    assert layer.weight_format == "q4_0" and layer.quantized is q
    x = rng.standard_normal((2, 64)).astype(np.float32)
    exact = stored(None, "q4_0", q)
    assert_within(layer(queue, x), reference(x, exact, None), bound(x, magnitudes(exact, q), None))


@pytest.mark.parametrize("m", [1, 24])
def test_tuned_local_size_is_used_and_correct(queue, m):
    rng = np.random.default_rng(m)
    w = rng.standard_normal((50, 256)).astype(np.float32)
    layer = ops.Linear(queue, w, weight_format="q4_0")
    x = rng.standard_normal((m, 256)).astype(np.float32)
    result = layer.tune(queue, x, budget_s=2.0, repeats=1, use_cache=False)
    if m == 1:
        assert result.local_size is None or result.local_size[0] & (result.local_size[0] - 1) == 0
    else:  # the GEMM's tile fixes its local size
        gemm = next(kernel for key, kernel in layer._kernels.items() if key[0] == "gemm")
        assert result.local_size in (None, gemm.sizes(1, 1)[1])
    exact = stored(w, "q4_0", layer.quantized)
    for local in ("tuned", None):
        got = layer(queue, x, local_size=local)
        assert_within(
            got, reference(x, exact, None), bound(x, magnitudes(exact, layer.quantized), None)
        )


def test_an_unusable_cached_local_size_is_not_used(queue, monkeypatch):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((30, 128)).astype(np.float32)
    layer = ops.Linear(queue, w, weight_format="f32")
    x = rng.standard_normal((1, 128)).astype(np.float32)
    want = layer(queue, x)
    gemv = layer._kernels[("gemv", 1, False, "float")]
    monkeypatch.setattr(type(gemv.launcher), "local_size", lambda self, g: (3, 1))
    assert np.allclose(layer(queue, x), want, rtol=1e-6, atol=1e-6)
