"""The ops against the third adversarial review (issue 26): out-of-order queues (finding
1), threads sharing a q8_0-activation Linear (2), q8_0 / q4_0 scales that overflow
float16 (5), BufferMatrix shapes and aliasing (6), NaN and inf in q8_0 activations (7)."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pyopencl as cl
import pytest

import qcom_ext
from qcom_ext import ConfigError, WeightImage, ops
from qcom_ext.ext.accelerated.points import PointOps, download, empty, upload

rng = np.random.default_rng(26)


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


@pytest.fixture
def ooo_queue(kernel_context):
    return qcom_ext.create_queue(kernel_context, out_of_order=True)


# ---- finding 1: every op on an out-of-order queue ---------------------------------------

W = rng.standard_normal((4096, 2048)).astype(np.float32)
X_ROWS = rng.standard_normal((40, 2048)).astype(np.float32)
NCHW = rng.standard_normal((1, 16, 96, 96)).astype(np.float32)
WIDE = rng.standard_normal((1, 128, 48, 48)).astype(np.float32)
PIXELS = rng.random((256, 384, 4), dtype=np.float32)
MOVED = np.roll(PIXELS, (1, 2), axis=(0, 1))
FILTER = rng.uniform(-1, 1, (5, 5))
_LAYERS: dict = {}


def _layer(q, *key):
    """A Linear of ``key`` (W rows, format, activation format), built once per context
    (its 32 MB upload is not the point)."""
    rows, fmt, act = key
    found = _LAYERS.get((q.context.int_ptr, *key))
    if found is None:
        found = ops.Linear(q, W[:rows], weight_format=fmt, activation_format=act)
        _LAYERS[(q.context.int_ptr, *key)] = found
    return found


def _linear(fmt, act, rows):
    def run(q):
        return _layer(q, 4096, fmt, act)(q, X_ROWS[:rows])

    return run


def _linear_chain(q):
    """Two layers on BufferMatrix: the second reads what the first wrote."""
    first = _layer(q, 2048, "f16", None)
    second = _layer(q, 4096, "q8_0", "q8_0")
    x = ops.BufferMatrix.from_numpy(q.context, X_ROWS[:4])
    return second(q, first(q, x)).to_numpy(q)


def _conv(name):
    w3 = rng.standard_normal((16, 16, 3, 3))
    dw = rng.standard_normal((16, 1, 3, 3))
    w1 = rng.standard_normal((16, 128))
    w8 = rng.integers(-5, 5, (16, 128)).astype(np.int8)
    calls = {
        "depthwise": lambda q: ops.depthwise_conv2d(q, NCHW, dw, padding=1),
        "conv2d_image": lambda q: ops.conv2d(q, NCHW, w3, padding=1, method="image"),
        "conv2d_tiled": lambda q: ops.conv2d(q, NCHW, w3, padding=1, method="tiled"),
        "conv2d_1x1": lambda q: ops.conv2d_1x1(q, WIDE, w1),
        "conv2d_int8": lambda q: ops.conv2d_int8(
            q,
            (WIDE * 40 + 128).clip(0, 255).astype(np.uint8),
            w8,
            input_scale=0.05,
            input_zero_point=128,
            weight_scale=0.1,
        ),
        "layers_chained": lambda q: ops.from_image(
            q,
            ops.DepthwiseConv2d(q, dw, padding=1)(
                q, ops.DepthwiseConv2d(q, dw, padding=1)(q, ops.to_image(q, NCHW))
            ),
        ),
    }
    return calls[name]


def _image_op(name):
    def run(q):
        ctx = q.context
        if name == "block_match_image":
            field = qcom_ext.block_match_image(
                q, upload(ctx, PIXELS), upload(ctx, MOVED), radius=8
            )
            return np.concatenate([a.reshape(-1) for a in field.get(q)]).astype(np.float64)
        dst = empty(ctx, PIXELS.shape[1], PIXELS.shape[0])
        if name == "convolve_image":
            qcom_ext.convolve_image(
                q, upload(ctx, PIXELS), WeightImage(ctx, FILTER, center=(2, 2)), dst
            )
        elif name == "box_filter_image":
            qcom_ext.box_filter_image(q, upload(ctx, PIXELS), (3.0, 3.0), dst)
        else:
            src = upload(ctx, PIXELS[:128, :192])
            qcom_ext.upscale2x_image(q, src, dst)
        return download(q, dst)

    return run


COORDS = rng.uniform(0, 200, (1 << 16, 2))


def _point_ops(q):
    points = PointOps(q.context)
    image = upload(q.context, PIXELS)
    coords = COORDS
    weights = WeightImage(q.context, FILTER, center=(2, 2))
    return np.concatenate(
        [
            points.convolve(q, image, weights, coords),
            points.box_filter(q, image, (2.0, 2.0), coords),
            *points.block_match(q, image, image, (4, 4), coords, coords.astype(np.uint32)),
        ]
    )


OOO_CASES = {
    "Linear-f32-gemv": (False, _linear("f32", None, 1)),
    "Linear-q8_0-activations": (False, _linear("q8_0", "q8_0", 3)),
    "Linear-q4_0-gemm": (False, _linear("q4_0", None, 40)),
    "Linear-BufferMatrix-chain": (False, _linear_chain),
    **{
        name: (name != "conv2d_tiled", _conv(name))
        for name in (
            "depthwise",
            "conv2d_image",
            "conv2d_tiled",
            "conv2d_1x1",
            "conv2d_int8",
            "layers_chained",
        )
    },
    **{
        name: (True, _image_op(name))
        for name in (
            "convolve_image",
            "box_filter_image",
            "block_match_image",
            "upscale2x_image",
        )
    },
    "PointOps": (True, _point_ops),
}
#: Runs a case makes on the out-of-order queue: each of its races lost before issue 26
#: in most of them (13-16 of 20 for a Linear).
OOO_REPEATS = 12


@pytest.mark.parametrize("case", OOO_CASES)
def test_every_op_on_an_out_of_order_queue_matches_the_in_order_queue(queue, ooo_queue, case):
    """Each command an op enqueues waits for the one before it (the kernel for the
    upload, the read-back for the kernel, the GEMV for the activation quantizer, the
    second layer for the first), so every run matches the in-order queue's bit for bit."""
    images, run = OOO_CASES[case]
    if images and not queue.device.image_support:
        pytest.skip(f"{queue.device.name.strip()}: CL_DEVICE_IMAGE_SUPPORT is 0")
    want = np.asarray(run(queue))
    wrong = 0
    for _ in range(OOO_REPEATS):
        got = np.asarray(run(ooo_queue))
        wrong += not np.array_equal(got, want, equal_nan=True)
    ooo_queue.finish()
    assert wrong == 0, f"{wrong} of {OOO_REPEATS} runs on the out-of-order queue were wrong"


# ---- finding 2: threads sharing one q8_0-activation Linear and one queue ----------------

THREADS, CALLS = 8, 60


def test_threads_share_a_q8_0_activation_layer_and_its_queue(queue):
    """Each call's quantizer and GEMV are enqueued together (the layer's lock), so no
    other thread's quantizer overwrites the shared activation scratch between them; a
    1 µs switch interval makes the threads switch inside the calls."""
    w = rng.standard_normal((64, 256)).astype(np.float32)
    layer = ops.Linear(queue, w, weight_format="q4_0", activation_format="q8_0")
    xs = rng.standard_normal((THREADS, CALLS, 2, 256)).astype(np.float32)
    want = np.stack([np.stack([layer(queue, x) for x in row]) for row in xs])
    got = np.zeros_like(want)
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            start.wait()
            for c in range(CALLS):
                got[t, c] = layer(queue, xs[t, c])
        except BaseException as exc:  # reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    wrong = int((~np.all(got == want, axis=(2, 3))).sum())
    assert wrong == 0, f"{wrong} of {THREADS * CALLS} results were wrong"


# ---- finding 5: q8_0 / q4_0 scales beyond float16 ---------------------------------------


@pytest.mark.parametrize(("fmt", "big"), [("q8_0", 1e7), ("q4_0", 6e5)])
def test_a_scale_beyond_float16_is_refused_naming_row_and_block(queue, fmt, big):
    """quantize stays ggml's (an inf scale); Linear and matmul refuse it as the f16
    format refuses weights beyond half, naming the row and block."""
    w = rng.standard_normal((5, 96)).astype(np.float32)
    w[3, 40] = big  # row 3, block 1
    stored = ops.quantize(w, fmt)
    assert np.isinf(stored.scales[3, 1]) and np.isfinite(np.delete(stored.scales, 3, 0)).all()
    x = np.ones((1, 96), np.float32)
    match = rf"weight row 3, block 1 \(columns 32..63\).*{fmt} scale is -?inf"
    with pytest.raises(ConfigError, match=match):
        ops.Linear(queue, w, weight_format=fmt)
    with pytest.raises(ConfigError, match=match):
        ops.Linear(queue, stored, activation_format="q8_0")
    with pytest.raises(ConfigError, match=match):
        ops.matmul(queue, x, w, weight_format=fmt)
    with pytest.raises(ConfigError, match="beyond float16"):
        ops.Linear(queue, w.astype(np.float64) * 1e3, weight_format="f16")  # the f16 rule
    limit = {"q8_0": 8.3e6, "q4_0": 5.2e5}[fmt]
    w[3, 40] = limit  # just under: the scale holds, y is finite
    assert np.isfinite(ops.Linear(queue, w, weight_format=fmt)(queue, x)).all()


# ---- finding 6: BufferMatrix shapes and aliasing ----------------------------------------


def test_a_buffer_matrix_is_checked_against_its_buffer_however_made(queue):
    ctx = queue.context
    small = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64 * 4)
    with pytest.raises(ConfigError, match=r"a \(64, 64\) float32 matrix needs 16384 bytes; "):
        ops.BufferMatrix(small, (64, 64), np.float32)
    with pytest.raises(ConfigError, match="needs 16384 bytes"):
        ops.BufferMatrix.wrap(small, (64, 64), np.float32)
    with pytest.raises(ConfigError, match="matrix shape must be 2 positive ints"):
        ops.BufferMatrix(small, (0, 4), np.float32)
    with pytest.raises(ConfigError, match="matrix has dtype float64"):
        ops.BufferMatrix(small, (4, 4), np.float64)
    with pytest.raises(ConfigError, match="holds a pyopencl Buffer, not ndarray"):
        ops.BufferMatrix(np.zeros(64, np.float32), (4, 4), np.float32)
    fits = ops.BufferMatrix(small, (8, 8), np.float16)  # a dtype given as a type: normalized
    assert fits.dtype == np.dtype(np.float16) and fits.nbytes == 128


OVERSIZED_OUT = """
import sys
import numpy as np, pyopencl as cl
from qcom_ext import ConfigError, ops
device = cl.get_platforms()[int(sys.argv[1])].get_devices()[int(sys.argv[2])]
ctx = cl.Context([device])
queue = cl.CommandQueue(ctx)
layer = ops.Linear(queue, np.ones((4096, 64), np.float32))
x = ops.BufferMatrix.from_numpy(ctx, np.ones((64, 64), np.float32))
try:
    out = ops.BufferMatrix(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64), (64, 4096), np.float32)
    layer(queue, x, out)
    queue.finish()
    print("RAN")
except ConfigError as exc:
    print("REFUSED", exc)
"""


def test_an_out_claiming_more_rows_than_its_buffer_is_refused_in_a_child(queue, tmp_path):
    """Built directly, such an out used to be written 1 MB past a 64-byte buffer (a
    SIGSEGV on pocl): in a child process, so that a crash fails only this test."""
    import subprocess

    from qcom_ext._isolation import child_environment

    device = queue.device
    platforms = cl.get_platforms()
    p = next(i for i, plat in enumerate(platforms) if plat == device.platform)
    d = platforms[p].get_devices().index(device)
    result = subprocess.run(
        [sys.executable, "-P", "-c", OVERSIZED_OUT, str(p), str(d)],
        env=child_environment(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"the child died ({result.returncode}): {result.stderr}"
    assert result.stdout.startswith("REFUSED a (64, 4096) float32 matrix needs 1048576 bytes")


def test_out_may_not_overlap_x_or_the_layers_buffers(queue):
    """out = x made the GEMM read what it had written (off by 1.8e7): every overlap of
    out with x (the same matrix, buffer or bytes of a sub-buffer) or with the weights
    and bias is refused; a sub-buffer beside x's is fine."""
    ctx = queue.context
    w = rng.standard_normal((40, 40)).astype(np.float32)
    layer = ops.Linear(queue, w, np.ones(40, np.float32))
    values = rng.standard_normal((40, 40)).astype(np.float32)
    x = ops.BufferMatrix.from_numpy(ctx, values)
    same_buffer = ops.BufferMatrix.wrap(x.buffer, (40, 40), np.float32)
    for out in (x, same_buffer):
        with pytest.raises(ConfigError, match="out overlaps x"):
            layer(queue, x, out)
    with pytest.raises(ConfigError, match="out overlaps x"):
        layer.enqueue(queue, x, same_buffer)
    size = 40 * 40 * 4
    align = queue.device.mem_base_addr_align // 8
    stride = -(-size // align) * align
    parent = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 2 * stride + align)
    rd = cl.mem_flags.READ_WRITE
    x_sub = ops.BufferMatrix(parent.get_sub_region(0, size, rd), (40, 40), np.float32)
    cl.enqueue_copy(queue, x_sub.buffer, values)
    inside = ops.BufferMatrix(parent.get_sub_region(align, size, rd), (40, 40), np.float32)
    with pytest.raises(ConfigError, match="out overlaps x"):
        layer(queue, x_sub, inside)
    with pytest.raises(ConfigError, match="out overlaps x"):
        layer(queue, x_sub, ops.BufferMatrix(parent, (40, 40), np.float32))
    for owned in (layer.weights.words, layer.bias):
        out = ops.BufferMatrix(owned, (1, 40), np.float32)
        with pytest.raises(ConfigError, match="overlaps the buffers of this Linear"):
            layer(queue, ops.BufferMatrix.from_numpy(ctx, values[:1]), out)
    beside = ops.BufferMatrix(parent.get_sub_region(stride, size, rd), (40, 40), np.float32)
    got = layer(queue, x_sub, beside).to_numpy(queue)
    np.testing.assert_array_equal(got, layer(queue, values))


# ---- finding 7: NaN and inf in q8_0 activations ------------------------------------------


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
@pytest.mark.parametrize("x_dtype", [np.float32, np.float16])
def test_non_finite_activations_give_non_finite_outputs(queue, fmt, x_dtype):
    """A block of x holding NaN, inf or -inf makes every output of its row NaN (the
    quantizer's scale), where the float path gives NaN or +-inf; finite rows keep their
    values bit for bit."""
    w = rng.standard_normal((24, 128)).astype(np.float32)
    layer = ops.Linear(queue, w, weight_format=fmt, activation_format="q8_0")
    floats = ops.Linear(queue, w, weight_format=fmt)
    x = rng.standard_normal((5, 128)).astype(x_dtype)
    clean = layer(queue, x)
    x[0, 5], x[1, 70], x[2, 127], x[3, 31] = np.nan, np.inf, -np.inf, np.nan
    x[3, 32] = np.inf  # row 3: two blocks
    y = layer(queue, x)
    assert not np.isfinite(y[:4]).any(), y[:4]
    assert np.isnan(y[:4]).all()
    np.testing.assert_array_equal(y[4], clean[4])
    np.testing.assert_array_equal(np.isfinite(y), np.isfinite(floats(queue, x)))
