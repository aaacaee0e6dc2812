"""Bad input to qcom_ext.ops from the adversarial review (issue 15): one dtype rule for
every op (finding 13), fp16 overflow of weights, bias and inputs (finding 8), and typed
errors for a queue or tensor of another context and for tensors too large to allocate
(finding 10)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pyopencl as cl
import pytest
from conv_reference import assert_close, conv2d

from qcom_ext import ConfigError, ops

C, CO = 5, 6
rng = np.random.default_rng(15)
X = rng.standard_normal((2, C, 6, 7))
B = rng.standard_normal(CO)
WEIGHTS = {
    "depthwise": rng.standard_normal((C, 1, 3, 3)),
    "kxk": rng.standard_normal((CO, C, 3, 3)),
    "1x1": rng.standard_normal((CO, C)),
}


def _depthwise(q, x, w=None, b=None, **kw):
    w = WEIGHTS["depthwise"] if w is None else w
    b = B[:C] if b is None else b
    return ops.depthwise_conv2d(q, x, w, b, padding=1, **kw)


def _kxk(method):
    def call(q, x, w=None, b=None, **kw):
        w = WEIGHTS["kxk"] if w is None else w
        return ops.conv2d(q, x, w, B if b is None else b, padding=1, method=method, **kw)

    return call


def _pointwise(q, x, w=None, b=None, **kw):
    w = WEIGHTS["1x1"] if w is None else w
    return ops.conv2d_1x1(q, x, w, B if b is None else b, **kw)


#: functional op -> (needs images, the call, the numpy reference of X).
FUNCTIONS = {
    "depthwise_conv2d": (
        True,
        _depthwise,
        lambda x: conv2d(x, WEIGHTS["depthwise"], B[:C], padding=1, groups=C),
    ),
    "conv2d_image": (True, _kxk("image"), lambda x: conv2d(x, WEIGHTS["kxk"], B, padding=1)),
    "conv2d_tiled": (False, _kxk("tiled"), lambda x: conv2d(x, WEIGHTS["kxk"], B, padding=1)),
    "conv2d_1x1": (False, _pointwise, lambda x: conv2d(x, WEIGHTS["1x1"][:, :, None, None], B)),
}

#: prepared layer -> (needs images, a constructor (queue, weight, bias, **options)).
LAYERS = {
    "DepthwiseConv2d": (
        True,
        lambda q, w=None, b=None, **kw: ops.DepthwiseConv2d(
            q, WEIGHTS["depthwise"] if w is None else w, b, padding=1, **kw
        ),
    ),
    "Conv2d": (
        True,
        lambda q, w=None, b=None, **kw: ops.Conv2d(
            q, WEIGHTS["kxk"] if w is None else w, b, padding=1, **kw
        ),
    ),
    "TiledConv2d": (
        False,
        lambda q, w=None, b=None, **kw: ops.TiledConv2d(
            q, WEIGHTS["kxk"] if w is None else w, b, padding=1, **kw
        ),
    ),
    "Conv2d1x1": (
        False,
        lambda q, w=None, b=None, **kw: ops.Conv2d1x1(
            q, WEIGHTS["1x1"] if w is None else w, b, **kw
        ),
    ),
}


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


def _warnings_are_errors() -> None:
    """Inside ``warnings.catch_warnings()``: any warning of ours fails the test. The
    driver's own build log (pyopencl's CompilerWarning, e.g. NVIDIA's note that a kernel
    overrides noinline) is not ours and is left out."""
    warnings.simplefilter("error")
    warnings.filterwarnings("ignore", category=cl.CompilerWarning)


def _needs_images(images: bool, queue) -> None:
    if images and not queue.device.image_support:
        pytest.skip(f"{queue.device.name.strip()}: CL_DEVICE_IMAGE_SUPPORT is 0")


def _input_for(name: str, x: np.ndarray, queue):
    """A device tensor holding ``x`` as the layer ``name`` takes it."""
    if name in ("DepthwiseConv2d", "Conv2d"):
        return ops.to_image(queue, x)
    if name == "TiledConv2d":
        return ops.BufferTensor.from_numpy(queue.context, np.ascontiguousarray(x), "NCHW")
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    return ops.BufferTensor.from_numpy(queue.context, nhwc, "NHWC")


# ---- finding 13: one dtype rule ---------------------------------------------------------


@pytest.mark.parametrize("name", FUNCTIONS)
def test_float64_is_cast_to_float32_and_the_result_is_float32(queue, name):
    images, call, reference = FUNCTIONS[name]
    _needs_images(images, queue)
    with warnings.catch_warnings():
        _warnings_are_errors()  # the documented cast says nothing
        got = call(queue, X)
    assert got.dtype == np.float32
    same = call(queue, X.astype(np.float32))
    np.testing.assert_array_equal(got, same)
    assert_close(got, reference(X), np.float32)
    assert call(queue, X, dtype=np.float16).dtype == np.float16


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("argument", ["input", "weight", "bias"])
@pytest.mark.parametrize(
    "bad",
    [np.complex128, object, np.str_, np.bool_, np.int64, np.uint8],
    ids=["complex", "object", "str", "bool", "int64", "uint8"],
)
def test_arrays_that_do_not_cast_are_refused_naming_argument_and_dtype(queue, name, argument, bad):
    images, call, _ = FUNCTIONS[name]
    _needs_images(images, queue)
    args = {"input": X, "weight": None, "bias": None}
    default = {"input": X, "weight": WEIGHTS[_weight_kind(name)], "bias": B}[argument]
    if argument == "bias" and name == "depthwise_conv2d":
        default = B[:C]
    args[argument] = default.astype(bad)
    with pytest.raises(ConfigError) as caught:
        call(queue, args["input"], args["weight"], args["bias"])
    message = str(caught.value)
    assert argument in message and str(args[argument].dtype) in message, message


def _weight_kind(name: str) -> str:
    return {"depthwise_conv2d": "depthwise", "conv2d_1x1": "1x1"}.get(name, "kxk")


def test_to_image_follows_the_same_rule(queue):
    _needs_images(True, queue)
    assert ops.to_image(queue, X).dtype == np.float32
    assert ops.to_image(queue, X, dtype=np.float16).dtype == np.float16
    for bad in (np.complex64, object, np.int16, np.bool_):
        with pytest.raises(ConfigError, match=re.escape(str(np.dtype(bad)))):
            ops.to_image(queue, X.astype(bad))


def test_a_device_tensor_is_never_reinterpreted(queue):
    tensor = ops.BufferTensor.from_numpy(
        queue.context, np.ascontiguousarray(X.transpose(0, 2, 3, 1), np.float32), "NHWC"
    )
    with pytest.raises(ConfigError, match="float64"):  # its bytes are float32
        ops.BufferTensor.wrap(tensor.buffer, tensor.shape, np.float64, "NHWC")
    with pytest.raises(ConfigError, match="float64"):
        ops.conv2d_1x1(
            queue,
            tensor.buffer,
            WEIGHTS["1x1"],
            shape=tensor.shape,
            dtype=np.float64,
            layout="NHWC",
        )
    if queue.device.image_support:
        with pytest.raises(ConfigError, match="float64"):
            ops.to_image(queue, tensor.buffer, shape=tensor.shape, dtype=np.float64, layout="NHWC")


# ---- finding 8: fp16 overflow -------------------------------------------------------------


@pytest.mark.parametrize("name", FUNCTIONS)
def test_fp16_weight_overflow_is_a_config_error(queue, name):
    images, call, _ = FUNCTIONS[name]
    _needs_images(images, queue)
    w = WEIGHTS[_weight_kind(name)].copy()
    w.flat[3] = -70000.0
    with pytest.raises(ConfigError, match=r"weight.*70000.*float16.*65504"):
        call(queue, X.astype(np.float16), w)
    w.flat[3] = -65504.0  # the largest half: stored as it is
    with warnings.catch_warnings():
        _warnings_are_errors()
        assert call(queue, X.astype(np.float16), w).dtype == np.float16


@pytest.mark.parametrize("name", LAYERS)
def test_fp16_layers_refuse_weights_beyond_half(queue, name):
    images, make = LAYERS[name]
    _needs_images(images, queue)
    w = WEIGHTS["1x1" if name == "Conv2d1x1" else "depthwise" if "Depth" in name else "kxk"]
    big = w * 1e5
    with pytest.raises(ConfigError, match=r"weight.*float16.*65504"):
        make(queue, big, dtype=np.float16)
    make(queue, big, dtype=np.float32)  # fits float32


@pytest.mark.parametrize("name", FUNCTIONS)
def test_input_overflow_in_the_cast_is_a_config_error(queue, name):
    images, call, _ = FUNCTIONS[name]
    _needs_images(images, queue)
    x = X.copy()
    x[0, 0, 0, 0] = 1e5
    with pytest.raises(ConfigError, match=r"input.*100000.*float16.*65504"):
        call(queue, x, dtype=np.float16)
    x[0, 0, 0, 0] = 1e39
    with pytest.raises(ConfigError, match=r"input.*1e\+39.*float32.*3\.40282e\+38"):
        call(queue, x)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_bias_beyond_float32_is_a_config_error(queue, name):
    images, call, _ = FUNCTIONS[name]
    _needs_images(images, queue)
    b = (B[:C] if name == "depthwise_conv2d" else B).copy()
    b[1] = -1e39
    with pytest.raises(ConfigError, match=r"bias.*1e\+39.*float32"):
        call(queue, X, b=b)


def test_to_image_refuses_values_beyond_half(queue):
    _needs_images(True, queue)
    x = X.astype(np.float32)
    x[1, 2, 3, 4] = 65520.0  # the first value that rounds to inf in half
    with pytest.raises(ConfigError, match=r"tensor.*65520.*float16.*65504"):
        ops.to_image(queue, x, dtype=np.float16)
    x[1, 2, 3, 4] = np.inf  # non-finite data is data, not an overflow of the cast
    assert np.isinf(ops.from_image(queue, ops.to_image(queue, x, dtype=np.float16))).sum() == 1


# ---- finding 10: typed errors ---------------------------------------------------------------


@pytest.fixture
def other_queue(kernel_context):
    """A queue on a second context of the same device."""
    return cl.CommandQueue(cl.Context(kernel_context.devices))


@pytest.mark.parametrize("name", LAYERS)
def test_a_queue_of_another_context_is_named(queue, other_queue, name):
    images, make = LAYERS[name]
    _needs_images(images, queue)
    layer = make(queue)
    x = _input_for(name, X.astype(np.float32), queue)
    with pytest.raises(ConfigError, match=rf"queue belongs to another context than this {name}"):
        layer(other_queue, x)
    with pytest.raises(ConfigError, match=rf"queue belongs to another context than this {name}"):
        layer.tune(other_queue, x)
    foreign = _input_for(name, X.astype(np.float32), other_queue)
    with pytest.raises(ConfigError, match=rf"input belongs to another context than this {name}"):
        layer(queue, foreign)
    out = layer.output_for(other_queue, foreign)
    with pytest.raises(ConfigError, match=rf"out belongs to another context than this {name}"):
        layer(queue, x, out)
    assert layer(queue, x) is not None  # the layer still runs on its own queue


def test_int8_bias_follows_the_rule(queue):
    weight = np.ones((3, 4), np.int8)
    q = {"input_scale": 0.1, "input_zero_point": 128, "weight_scale": 0.1}
    with pytest.raises(ConfigError, match="bias has dtype int64"):
        ops.Conv2dInt8(queue, weight, np.arange(3), **q)
    with pytest.raises(ConfigError, match=r"bias.*1e\+39.*float32"):
        ops.Conv2dInt8(queue, weight, np.array([0.0, 1e39, 0.0]), **q)
    ops.Conv2dInt8(queue, weight, np.arange(3.0), **q)  # float64: cast to float32


def test_int8_layer_checks_contexts_too(queue, other_queue):
    layer = ops.Conv2dInt8(
        queue, np.ones((3, 4), np.int8), input_scale=0.1, input_zero_point=128, weight_scale=0.1
    )
    x = ops.BufferTensor.from_numpy(queue.context, np.ones((1, 2, 2, 4), np.uint8), "NHWC")
    with pytest.raises(ConfigError, match="queue belongs to another context than this Conv2dInt8"):
        layer(other_queue, x)


def test_layout_ops_check_the_queue_against_the_tensor(queue, other_queue):
    _needs_images(True, queue)
    tensor = ops.BufferTensor.from_numpy(queue.context, X.astype(np.float32))
    with pytest.raises(ConfigError, match="tensor belongs to another context than the queue"):
        ops.to_image(other_queue, tensor)
    image = ops.to_image(queue, tensor)
    with pytest.raises(ConfigError, match="tensor belongs to another context than the queue"):
        ops.from_image(other_queue, image)
    out = ops.BufferTensor.empty(other_queue.context, X.shape, np.float32)
    with pytest.raises(ConfigError, match="out belongs to another context than the queue"):
        ops.from_image(queue, image, out=out)
    with pytest.raises(ConfigError, match="tensor belongs to another context than the queue"):
        tensor.to_numpy(other_queue)


def _max_alloc(context) -> int:
    return min(d.max_mem_alloc_size for d in context.devices)


def test_a_buffer_beyond_the_allocation_limit_is_refused_up_front(queue):
    limit = _max_alloc(queue.context)
    elements = limit // 4 + 1
    if elements > 2**31 - 1:
        pytest.skip(f"CL_DEVICE_MAX_MEM_ALLOC_SIZE {limit} exceeds what 32-bit indices reach")
    width = -(-elements // 1024)
    shape = (1, 1, 1024, width)
    nbytes = 4 * 1024 * width
    with pytest.raises(ConfigError) as caught:
        ops.BufferTensor.empty(queue.context, shape, np.float32)
    message = str(caught.value)
    for part in (str(shape), str(nbytes), "CL_DEVICE_MAX_MEM_ALLOC_SIZE", str(limit)):
        assert part in message, message


@pytest.mark.parametrize(
    "shape", [(2**16, 2**16, 2**16, 2**16), (1, 2**31, 1, 1), (2, 1024, 1024, 1024)]
)
def test_shapes_beyond_32_bit_indices_are_refused(queue, shape):
    with pytest.raises(ConfigError, match=r"elements.*2\*\*31 - 1"):
        ops.BufferTensor.empty(queue.context, shape, np.float16)


def test_a_layer_refuses_an_output_too_large_to_allocate(queue):
    limit = _max_alloc(queue.context)
    layer = ops.Conv2d1x1(queue, np.ones((64, 1), np.float32))
    h = max(1, min(2**31 // 64 - 1, limit // (64 * 4) + 1))
    small = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 64)
    x = ops.BufferTensor(small, (1, h, 1, 1), np.dtype(np.float32), "NHWC")
    if h * 64 * 4 <= limit:
        pytest.skip(f"CL_DEVICE_MAX_MEM_ALLOC_SIZE {limit} holds any 32-bit indexed output")
    with pytest.raises(ConfigError, match="CL_DEVICE_MAX_MEM_ALLOC_SIZE"):
        layer(queue, x)
