"""ConvOptions and Quantisation (the conv layers' shared parameters, checked once) and the
device quirk defines every build gets from DeviceCaps.compiler_options (USE_MAD24)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl as cl
import pytest
from conftest import adreno_strings
from conv_reference import assert_close, conv2d, rounded

import qcom_ext
from qcom_ext import ConfigError, DeviceCaps, ops
from qcom_ext.device.quirks import applying


@pytest.fixture
def queue(kernel_context):
    return cl.CommandQueue(kernel_context)


# ---- ConvOptions --------------------------------------------------------------------------


def test_options_are_normalised_frozen_and_compare_by_value():
    options = ops.ConvOptions(stride=2, padding=(1, 0), dilation=np.int64(2), dtype="float64")
    assert options.stride == (2, 2) and options.padding == (1, 0) and options.dilation == (2, 2)
    assert options.dtype == np.float32  # float64 storage becomes float32
    assert options == ops.ConvOptions(stride=(2, 2), padding=[1, 0], dilation=2)
    assert hash(options) == hash(ops.ConvOptions(stride=(2, 2), padding=(1, 0), dilation=2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.stride = (1, 1)
    with pytest.raises(TypeError):
        ops.ConvOptions(2)  # keywords only: no silent stride/padding mix-up
    assert ops.ConvOptions(activation="leaky_relu", negative_slope=0.25).slope == np.float32(0.25)
    assert ops.ConvOptions(activation="relu6").activation_code == ops.ACTIVATIONS["relu6"]


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"stride": 0}, "stride must be at least 1, not 0"),
        ({"stride": 1.0}, "stride must be an int or a pair of ints, not 1.0"),
        ({"padding": -1}, "padding must be at least 0, not -1"),
        ({"dilation": (1, 2, 3)}, r"dilation must be an int or a pair of ints, not \(1, 2, 3\)"),
        ({"activation": "gelu"}, "activation 'gelu' is not one of"),
        ({"negative_slope": True}, "negative_slope must be a finite number, not True"),
        ({"negative_slope": float("inf")}, "negative_slope must be finite"),
        ({"dtype": np.int8}, "dtype has dtype int8; expected float32 or float16"),
    ],
)
def test_bad_options_are_named_when_made(settings, message):
    with pytest.raises(ConfigError, match=message):
        ops.ConvOptions(**settings)
    with pytest.raises(ConfigError, match=message):  # replace checks like a new one
        ops.ConvOptions().replace(**settings)


def test_keywords_replace_the_fields_of_given_options():
    base = ops.ConvOptions(stride=2, activation="relu")
    merged = ops.ConvOptions.of(base, {"activation": None}, "Layer")
    assert merged == ops.ConvOptions(stride=2) and base.activation == "relu"
    assert ops.ConvOptions.of(base, {}, "Layer") is base
    assert ops.ConvOptions.of(None, {"padding": 1}, "Layer") == ops.ConvOptions(padding=1)
    with pytest.raises(ConfigError, match="Layer: expected a ConvOptions, not"):
        ops.ConvOptions.of({"stride": 2}, {}, "Layer")


@pytest.mark.parametrize(
    "layer, settings, message",
    [
        ("Conv2d1x1", {"paddin": 1}, "Conv2d1x1 takes no 'paddin'; its ConvOptions fields are"),
        ("Conv2d1x1", {"padding": 1}, "Conv2d1x1 takes no 'padding'"),
        ("Conv2d1x1", {"options": ops.ConvOptions(dilation=2)}, "Conv2d1x1 takes no dilation"),
        ("Conv2dInt8", {"dtype": np.float16}, "Conv2dInt8 takes no 'dtype'"),
        ("DepthwiseConv2d", {"stride": 0}, "stride must be at least 1"),
        ("TiledConv2d", {"options": "relu"}, "TiledConv2d: expected a ConvOptions"),
    ],
)
def test_layers_refuse_options_they_do_not_take(queue, layer, settings, message):
    weights = {
        "Conv2d1x1": np.ones((4, 3), np.float32),
        "Conv2dInt8": np.ones((4, 3), np.int8),
        "DepthwiseConv2d": np.ones((3, 1, 3, 3), np.float32),
        "TiledConv2d": np.ones((4, 3, 3, 3), np.float32),
    }
    if layer == "Conv2dInt8":
        settings = {"input_scale": 0.1, "input_zero_point": 0, "weight_scale": 0.1, **settings}
    with pytest.raises(ConfigError, match=message):
        getattr(ops, layer)(queue, weights[layer], **settings)


def test_one_options_object_serves_every_layer(queue):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 5, 6, 7)).astype(np.float32)
    w = rng.standard_normal((3, 5, 3, 3)).astype(np.float32)
    shared = ops.ConvOptions(stride=(1, 2), padding=1, activation="leaky_relu", negative_slope=0.3)
    want = conv2d(x, w, stride=(1, 2), padding=1, activation="leaky_relu", slope=0.3)
    tiled = ops.TiledConv2d(queue, w, options=shared)
    assert tiled.options is shared and tiled.dtype == np.float32
    source = ops.BufferTensor.from_numpy(queue.context, x)
    assert_close(tiled(queue, source).to_numpy(queue), want, np.float32)
    # keywords beside options= replace its fields; the options object itself is unchanged
    plain = ops.TiledConv2d(queue, w, options=shared, activation=None, dtype=np.float16)
    assert plain.options == shared.replace(activation=None, dtype=np.float16)
    half = ops.BufferTensor.from_numpy(queue.context, x.astype(np.float16))
    got = plain(queue, half).to_numpy(queue)
    want_half = conv2d(rounded(x, np.float16), rounded(w, np.float16), stride=(1, 2), padding=1)
    assert_close(got, want_half, np.float16)
    pointwise = ops.Conv2d1x1(queue, w[:, :, 1, 1], options=shared.replace(padding=0))
    nhwc = ops.BufferTensor.from_numpy(queue.context, x.transpose(0, 2, 3, 1).copy(), "NHWC")
    want_1x1 = conv2d(x, w[:, :, 1:2, 1:2], stride=(1, 2), activation="leaky_relu", slope=0.3)
    got_1x1 = pointwise(queue, nhwc).to_numpy(queue).transpose(0, 3, 1, 2)
    assert_close(got_1x1, want_1x1, np.float32)


# ---- Quantisation ---------------------------------------------------------------------------


def test_quantisation_is_checked_once_and_shared(queue):
    q = ops.Quantisation(input_scale=0.5, input_zero_point=3, weight_scale=0.25)
    assert (q.out_dtype, q.accumulator_scale, q.requantisation) == (np.float32, 0.125, (1.0, 0))
    x = np.array([[[[10, 200, 3, 0, 255]]]], np.uint8)  # NHWC, Ci = 5
    w = np.array([[1, -1, 2, 0, -128], [127, 0, 0, 0, 1]], np.int8)
    layer = ops.Conv2dInt8(queue, w, quantisation=q, options=ops.ConvOptions(activation="relu"))
    assert layer.quantisation is q and layer.dtype == np.uint8
    got = layer(queue, ops.BufferTensor.from_numpy(queue.context, x, "NHWC")).to_numpy(queue)
    np.testing.assert_allclose(got[0, 0, 0], [0.0, 1141 * 0.125])  # -32446 * 0.125 clipped
    keywords = ops.Conv2dInt8(
        queue, w, input_scale=0.5, input_zero_point=3, weight_scale=0.25, activation="relu"
    )
    assert keywords.quantisation == q and keywords.options == layer.options


@pytest.mark.parametrize(
    "settings, message",
    [
        ({}, "Conv2dInt8 needs input_scale, input_zero_point, weight_scale"),
        ({"input_scale": 0.1, "input_zero_point": 0}, "Conv2dInt8 needs weight_scale"),
        ({"quantisation": {"input_scale": 0.1}}, "Conv2dInt8: expected a Quantisation"),
    ],
)
def test_missing_quantisation_is_named(queue, settings, message):
    with pytest.raises(ConfigError, match=message):
        ops.Conv2dInt8(queue, np.ones((2, 4), np.int8), **settings)


def test_quantisation_keywords_replace_given_fields(queue):
    q = ops.Quantisation(input_scale=0.5, input_zero_point=3, weight_scale=0.25)
    layer = ops.Conv2dInt8(queue, np.ones((2, 4), np.uint8), quantisation=q, weight_zero_point=7)
    assert layer.quantisation == dataclasses.replace(q, weight_zero_point=7)
    with pytest.raises(ConfigError, match=r"weight_zero_point must be an integer in \[0, 0\]"):
        ops.Conv2dInt8(queue, np.ones((2, 4), np.int8), quantisation=q, weight_zero_point=7)


# ---- device quirks: one place, DeviceCaps.compiler_options ----------------------------------

ADRENO = adreno_strings()


@pytest.mark.parametrize("stem", sorted(ADRENO))
def test_adreno_caps_get_the_mad24_quirk_and_pocl_does_not(stem):
    model = stem.removeprefix("adreno").split("-")[0]
    adreno = DeviceCaps.from_info(
        extensions=ADRENO[stem],
        device_version=f"OpenCL 3.0 Adreno(TM) {model}",
        device_name="QUALCOMM Adreno(TM)",
        vendor_id=0x5143,
        disabled=(),
    )
    assert adreno.is_adreno and "-DUSE_MAD24" in adreno.compiler_options()
    pocl = DeviceCaps.from_info(
        extensions=ADRENO[stem],  # the same extensions on another vendor's device
        platform_name="Portable Computing Language",
        device_name="cpu-haswell-AMD EPYC",
        device_type="cpu",
        disabled=(),
    )
    assert not pocl.is_adreno and "-DUSE_MAD24" not in pocl.compiler_options()


QUIRK_PROBE = """__kernel void quirk(__global int *out) {
#ifdef USE_MAD24
    out[0] = 1;
#else
    out[0] = 0;
#endif
}"""


def test_every_build_takes_the_quirks_of_its_device(queue, device_caps, monkeypatch):
    """A user program and an ops kernel both see -DUSE_MAD24 exactly when the device's caps
    are those of an Adreno, and the mad24/mul24 index arithmetic computes the
    same convolution."""

    def flag(context):
        program = qcom_ext.build_program(context, QUIRK_PROBE)
        out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 4)
        with_queue = cl.CommandQueue(context)
        program.quirk(with_queue, (1,), None, out)
        value = np.zeros(1, np.int32)
        cl.enqueue_copy(with_queue, value, out)
        return int(value[0])

    x = np.random.default_rng(2).standard_normal((2, 3, 5, 6)).astype(np.float32)
    w = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    want = conv2d(x, w[:, :, None, None], stride=2)
    expected = int(device_caps.is_adreno)
    assert flag(queue.context) == expected
    layer = ops.Conv2d1x1(queue, w, stride=2, tile=(2, 4))
    assert ("-DUSE_MAD24" in layer.launcher.identity.options) == bool(expected)

    as_adreno = dataclasses.replace(device_caps, is_adreno=True, driver="qualcomm")
    as_adreno = dataclasses.replace(as_adreno, quirks=applying(as_adreno))  # as from_info does
    monkeypatch.setattr("qcom_ext.device.probe.probe", lambda device=None, **kwargs: as_adreno)
    context = cl.Context([device_caps.device()])  # kernels are kept per context
    assert flag(context) == 1
    adreno_queue = cl.CommandQueue(context)
    layer = ops.Conv2d1x1(adreno_queue, w, stride=2, tile=(2, 4))
    assert "-DUSE_MAD24" in layer.launcher.identity.options
    got = ops.conv2d_1x1(adreno_queue, x, w, stride=2, tile=(2, 4))
    assert_close(got, want, np.float32)
