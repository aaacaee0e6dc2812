"""query_image_info: the computed layout against real images, and argument checks."""

from __future__ import annotations

import contextlib

import pyopencl as cl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import ConfigError, ImageInfo, query_image_info
from qcom_ext.binding.lib import C
from qcom_ext.device.caps import DeviceCaps, Limits
from qcom_ext.ext.images.info import computed_image_info
from qcom_ext.ext.memory.formats import parse_image_format

_TYPES = {
    "1d": cl.mem_object_type.IMAGE1D,
    "1d_array": cl.mem_object_type.IMAGE1D_ARRAY,
    "2d": cl.mem_object_type.IMAGE2D,
    "2d_array": cl.mem_object_type.IMAGE2D_ARRAY,
    "3d": cl.mem_object_type.IMAGE3D,
}
_DIMS = {"1d": 1, "1d_array": 2, "2d": 2, "2d_array": 3, "3d": 3}


def legal_formats(context, kind: str):
    """The device's supported formats of ``kind`` that qcom_ext describes."""
    found = []
    for fmt in cl.get_supported_image_formats(context, cl.mem_flags.READ_WRITE, _TYPES[kind]):
        with contextlib.suppress(ConfigError):  # CL_Rx and the like: refused on purpose
            found.append(parse_image_format(fmt))
    return found


def real_image(context, kind, fmt, shape):
    desc = cl.ImageDescriptor()
    desc.image_type = _TYPES[kind]
    desc.shape = shape
    desc.pitches = (0, 0)
    return cl.Image(context, cl.mem_flags.READ_WRITE, fmt.to_pyopencl(), desc=desc)


@pytest.fixture
def no_disable(monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)


@pytest.mark.parametrize("kind", list(_TYPES))
def test_computed_layout_matches_real_images(device_caps, cl_context, kind):
    """On pocl, the computed layout is exactly the one pocl gives its own images.

    Other drivers may pad rows further, or report the pitch given at creation (0, as
    Oclgrind does), so there the computed pitch (the smallest legal one) is a lower bound.
    """
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    if device_caps.path("cl_qcom_extended_query_image_info") == "native":
        pytest.skip("the native answer is the driver's; this checks the computed layout")
    formats = legal_formats(cl_context, kind)
    if not formats:
        pytest.skip(f"{device_caps.label} supports no {kind} image format qcom_ext describes")
    device = device_caps.device()
    exact = device_caps.label.startswith("pocl-")
    limit = 300 if kind in ("1d", "2d") else 40
    dims = _DIMS[kind]

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        fmt=st.sampled_from(formats),
        shape=st.lists(st.integers(1, limit), min_size=dims, max_size=dims),
    )
    def check(fmt, shape):
        info = query_image_info(device, fmt.to_pyopencl(), tuple(shape), image_type=kind)
        image = real_image(cl_context, kind, fmt, tuple(shape))
        assert info.path == "fallback"
        assert info.element_size == image.element_size
        assert info.row_pitch % info.row_alignment == 0
        assert info.row_pitch >= shape[0] * info.element_size
        rows = 1 if kind in ("1d", "1d_array") else shape[1]
        slices = 1 if kind in ("1d", "2d") else shape[-1]
        assert info.size == info.row_pitch * rows * slices
        if exact:
            assert (info.row_pitch, info.slice_pitch) == (image.row_pitch, image.slice_pitch)
        elif image.row_pitch:
            assert info.row_pitch <= image.row_pitch, (fmt.name, shape)

    check()


def test_fallback_honours_pitch_alignment():
    caps = DeviceCaps.from_info(
        extensions="",
        limits=Limits(image_pitch_alignment=64, image_base_address_alignment=16),
        disabled=(),
    )
    fmt = parse_image_format(("RGBA", "UNORM_INT8"))
    extent = qcom_ext.ext.memory.formats.image_extent("2d", (100, 3))
    info = computed_image_info(caps, fmt, "2d", extent)
    assert info == ImageInfo(
        row_pitch=128 * 4,
        slice_pitch=0,
        size=128 * 4 * 3,
        element_size=4,
        row_alignment=256,
        slice_alignment=0,
        base_address_alignment=64,
    )
    arrays = computed_image_info(
        caps, fmt, "2d_array", qcom_ext.ext.memory.formats.image_extent("2d_array", (64, 3, 5))
    )
    assert (arrays.row_pitch, arrays.slice_pitch, arrays.size) == (256, 768, 768 * 5)
    assert arrays.slice_alignment == 256
    one_d_buffer = computed_image_info(
        caps, fmt, "1d_buffer", qcom_ext.ext.memory.formats.image_extent("1d_buffer", (100,))
    )
    assert one_d_buffer.row_pitch == 400  # buffers hold their own layout: no pitch alignment


def test_flags_and_type_tokens_accepted(device_caps, no_disable):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    device = device_caps.device()
    by_name = query_image_info(device, ("R", "FLOAT"), (10, 4, 2), image_type="3D")
    by_token = query_image_info(
        device,
        (C.CL_R, C.CL_FLOAT),
        [10, 4, 2],
        flags=C.CL_MEM_READ_WRITE | C.CL_MEM_HOST_NO_ACCESS,
        image_type=C.CL_MEM_OBJECT_IMAGE3D,
    )
    assert by_name == by_token
    assert by_name.element_size == 4 and by_name.slice_pitch == by_name.row_pitch * 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"image_format": ("RGBA", "NOPE")}, "unknown image channel data type 'NOPE'"),
        ({"image_format": ("RGB", "UNORM_INT8")}, "CL_RGB/CL_UNORM_INT8 is not a legal pair"),
        ({"image_format": ("Rx", "UNORM_INT8")}, "implementations disagree"),
        ({"image_format": "RGBA"}, "expected an image format"),
        ({"image_format": "QCOM_NV12/UNORM_INT8"}, "Qualcomm formats take the driver's layout"),
        ({"shape": (10,)}, "a 2d image takes shape (width, height)"),
        ({"shape": (10, 0)}, "image height must be a positive int, got 0"),
        ({"shape": (10, 2.5)}, "image height must be a positive int, got 2.5"),
        ({"image_type": "4d"}, "unknown image type '4d'"),
        ({"image_type": C.CL_MEM_OBJECT_BUFFER}, "unknown image type"),
        ({"flags": C.CL_MEM_USE_HOST_PTR}, "CL_MEM_USE_HOST_PTR is not accepted here"),
        ({"flags": C.CL_MEM_READ_ONLY | C.CL_MEM_WRITE_ONLY}, "at most one device-access"),
        ({"flags": 1 << 40}, "0x10000000000 not accepted"),
        ({"flags": -1}, "must be a cl_mem_flags bitfield"),
        ({"shape": (10**9, 4)}, "exceeds CL_DEVICE_IMAGE2D_MAX_WIDTH"),
    ],
)
def test_bad_arguments(device_caps, no_disable, kwargs, message):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    if ("exceeds" in message or "driver's layout" in message) and device_caps.path(
        "cl_qcom_extended_query_image_info"
    ) == "native":
        pytest.skip("size limits and Qualcomm layouts are the driver's on the native path")
    arguments = {"image_format": ("RGBA", "UNORM_INT8"), "shape": (10, 4), **kwargs}
    with pytest.raises(ConfigError) as caught:
        query_image_info(device_caps.device(), **arguments)
    assert message in str(caught.value)


def test_bad_device():
    with pytest.raises(ConfigError, match=r"expected a pyopencl\.Device"):
        query_image_info("gpu", ("RGBA", "UNORM_INT8"), (4, 4))


def test_forced_fallback(device_caps, monkeypatch):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_extended_query_image_info")
    info = query_image_info(device_caps.device(), ("RGBA", "UNORM_INT8"), (33, 5))
    assert info.path == "fallback"
    assert info.row_pitch % info.row_alignment == 0
    assert 33 * 4 <= info.row_pitch < 33 * 4 + info.row_alignment  # the smallest legal pitch
