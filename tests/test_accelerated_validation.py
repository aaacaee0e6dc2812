"""Host-side validation of the accelerated image ops: WeightImage, box_size and the
whole-image ops refuse bad input with a ConfigError naming it; the public names (and the
former HofLimits / hof_limits) and the path a context takes."""

from __future__ import annotations

import numpy as np
import pytest

import qcom_ext
from qcom_ext import ConfigError, WeightImage, box_size
from qcom_ext.ext.accelerated.points import empty
from qcom_ext.ext.accelerated.support import FALLBACK_LIMITS, context_path
from qcom_ext.ext.accelerated.weights import fallback_layout


@pytest.fixture(scope="module")
def any_context():
    import pyopencl as cl

    for caps in qcom_ext.probe_all():
        if caps.image_support:
            return cl.Context([caps.device()])
    pytest.skip("no OpenCL device with images")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weights": np.ones((3, 3)), "center": (1, 3)}, r"center \(1, 3\) is outside the 3x3"),
        ({"weights": np.ones((3, 3)), "center": (1,)}, "center must be a pair"),
        ({"weights": np.ones((3, 3)), "center": (1.0, 1)}, "center must be a pair of integers"),
        (
            {"weights": np.ones((3, 3)), "center": (-1, 0)},
            "center must be a pair of integers >= 0",
        ),
        ({"weights": np.ones(3), "center": (0, 0)}, r"2-D weights must have shape .* got \(3,\)"),
        ({"weights": np.ones((2, 3, 3)), "center": (0, 0)}, "2 phases; expected P\\*P slices"),
        ({"weights": np.ones((8, 3, 3)), "center": (0, 0)}, "8 phases"),
        ({"weights": np.ones((3, 3)), "center": (0, 0), "dtype": np.float64}, "dtype must be"),
        ({"weights": np.ones((3, 3)), "center": (0, 0), "dtype": np.int8}, "dtype must be"),
        ({"weights": [["a"]], "center": (0, 0)}, "real numbers"),
        ({"weights": np.full((2, 2), np.nan), "center": (0, 0)}, "finite"),
        ({"weights": np.full((2, 2), 1e6), "center": (0, 0)}, "does not fit in float16"),
        ({"weights": np.ones((17, 3)), "center": (0, 0)}, "3x17 is larger than 16x16"),
        ({"weights": np.ones((256, 1, 1)), "center": (0, 0)}, "256 phases is more than 64"),
        ({"weights": np.ones((3, 3)), "center": (0, 0), "separable": True}, r"shape \(2, n\)"),
        (
            {"weights": np.ones((3, 2, 3)), "center": (0, 0), "separable": True},
            "3 phases; expected a power of two",
        ),
        (
            {
                "weights": np.ones((2, 3)),
                "center": (0, 0),
                "separable": True,
                "filter_size": (2, 3),
            },
            "must be 0",
        ),
        (
            {
                "weights": np.ones((2, 3)),
                "center": (0, 0),
                "separable": True,
                "filter_size": (2, 2),
            },
            "needs rows of max",
        ),
        ({"weights": np.ones((2, 3)), "center": (0, 0), "separable": 1}, "True or False"),
        ({"weights": np.ones((3, 3)), "center": (0, 0), "filter_size": (3, 2)}, "does not match"),
    ],
)
def test_weight_image_rejects_bad_input(any_context, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        WeightImage(any_context, **kwargs)


def test_weight_image_fallback_layout_and_rounding(any_context):
    taps = np.array([[0.1, -2.0, 3.0], [4.0, 5.0, 6.0]])
    w = WeightImage(any_context, taps, center=(2, 1))
    assert w.weights.dtype == np.float16 and not w.weights.flags.writeable
    assert w.weights[0].tolist() == taps.astype(np.float16).tolist()
    exact = WeightImage(any_context, taps, center=(2, 1), dtype=np.float32)
    assert exact.weights[0, 0, 0] == np.float32(0.1)
    if w.path == "fallback":
        layout = fallback_layout(exact)
        assert layout.shape == (3, 2, 4)  # header row + fy weight rows; 4 taps a texel
        assert layout[0, 0].tolist() == [3, 2, 2, 1] and layout[0, 1].tolist() == [1, 0, 1, 1]
        assert layout[1].reshape(-1)[:3].tolist() == np.float32([0.1, -2, 3]).tolist()
        assert layout[2].reshape(-1).tolist() == [4, 5, 6, 0, 0, 0, 0, 0]
        assert "fallback" in repr(w) and "2-D 3x2" in repr(w)


def test_box_size_is_two_floats_and_checked(any_context):
    size = box_size(2, 1.25, device=any_context)
    assert size.tobytes() == np.float32([2, 1.25]).tobytes()
    limit = qcom_ext.accelerated_limits(any_context).max_filter_size
    with pytest.raises(ConfigError, match="larger than"):
        box_size(limit[0] + 1, 1, device=any_context)
    for bad in (0, -1, float("nan"), float("inf"), True, "2"):
        with pytest.raises(ConfigError, match="box width"):
            box_size(bad, 1, device=any_context)


def test_image_ops_reject_bad_arguments(any_context):
    import pyopencl as cl

    queue = cl.CommandQueue(any_context)
    small, big = empty(any_context, 4, 4), empty(any_context, 5, 4)
    w = WeightImage(any_context, np.ones((3, 3)), center=(1, 1))
    with pytest.raises(ConfigError, match="expected the same size"):
        qcom_ext.convolve_image(queue, small, w, big)
    with pytest.raises(ConfigError, match=r"qcom_ext\.WeightImage"):
        qcom_ext.convolve_image(queue, small, np.ones((3, 3)), small)
    with pytest.raises(ConfigError, match=r"2-D pyopencl\.Image"):
        qcom_ext.box_filter_image(queue, np.ones((4, 4)), (2, 2), small)
    normalized = cl.Sampler(any_context, True, cl.addressing_mode.CLAMP, cl.filter_mode.NEAREST)
    with pytest.raises(ConfigError, match="normalized_coords=False"):
        qcom_ext.box_filter_image(queue, small, (2, 2), small, sampler=normalized)
    with pytest.raises(ConfigError, match="addressing must be one of"):
        qcom_ext.box_filter_image(queue, small, (2, 2), small, sampler="repeat")
    with pytest.raises(ConfigError, match="size must be"):
        qcom_ext.box_filter_image(queue, small, 2.0, small)
    with pytest.raises(ConfigError, match="region 40x8 is larger than 32x32"):
        qcom_ext.block_match_image(queue, small, small, region=(40, 8))
    with pytest.raises(ConfigError, match="no full 8x8 block"):
        qcom_ext.block_match_image(queue, small, small)
    with pytest.raises(ConfigError, match="radius must be"):
        qcom_ext.block_match_image(queue, small, small, region=(2, 2), radius=-1)
    with pytest.raises(ConfigError, match="metric must be"):
        qcom_ext.block_match_image(queue, small, small, region=(2, 2), metric="ncc")
    with pytest.raises(ConfigError, match="block must be"):
        qcom_ext.convolve_image(queue, small, w, small, block=(0, 4))


def test_weights_for_the_other_path_are_refused(any_context):
    import pyopencl as cl

    queue = cl.CommandQueue(any_context)
    image = empty(any_context, 4, 4)
    w = WeightImage(any_context, np.ones((3, 3)), center=(1, 1))
    w.path = "native" if w.path == "fallback" else "fallback"  # as if QCOM_EXT_DISABLE changed
    with pytest.raises(ConfigError, match="make the WeightImage again"):
        qcom_ext.convolve_image(queue, image, w, image)
    with pytest.raises(ConfigError, match="method must be one of"):
        w.path = context_path(any_context)
        qcom_ext.convolve_image(queue, image, w, image, method="fast")


def test_the_former_names_of_the_limits_are_the_same_objects():
    import qcom_ext.image_ops

    assert qcom_ext.HofLimits is qcom_ext.AcceleratedLimits
    assert qcom_ext.hof_limits is qcom_ext.accelerated_limits
    assert {"AcceleratedLimits", "accelerated_limits", "HofLimits", "hof_limits"} <= set(
        qcom_ext.__all__
    )
    assert qcom_ext.image_ops.context_path is context_path  # the documented module path
    assert not hasattr(qcom_ext.image_ops, "path")  # renamed: it says what it returns


def test_context_path_is_the_path_of_every_device(any_context, monkeypatch):
    caps = qcom_ext.probe(any_context.devices[0])
    assert context_path(any_context) == caps.path("cl_qcom_accelerated_image_ops")
    assert context_path(caps) == context_path(any_context)
    limits = qcom_ext.accelerated_limits(any_context)
    assert limits.native == (context_path(any_context) == "native")
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_accelerated_image_ops")
    assert context_path(any_context) == "fallback"  # forced portable, as on a native device
    assert qcom_ext.accelerated_limits(any_context) == FALLBACK_LIMITS
