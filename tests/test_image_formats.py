"""The one image-format parser (standard and Qualcomm formats), image types and the shared
cl_mem_flags / cffi memory-object helpers; no device needed."""

from __future__ import annotations

import contextlib

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qcom_ext import CLError, ConfigError
from qcom_ext.binding.lib import C, constant_names, driver, ffi
from qcom_ext.ext.memory.flags import access_flags, flag_names
from qcom_ext.ext.memory.formats import (
    ImageExtent,
    ImageFormat,
    check_image_format,
    image_desc,
    image_format_tokens,
    image_type,
    image_type_name,
    parse_image_format,
)
from qcom_ext.ext.memory.memobj import checked_handle

ORDERS = [n for n in constant_names() if 0x10B0 <= getattr(C, n) <= 0x10C3]
TYPES = [n for n in constant_names() if 0x10D0 <= getattr(C, n) <= 0x10E0]
QCOM_ORDERS = [
    n for n in constant_names() if n.startswith("CL_QCOM_") and 0x4130 <= getattr(C, n) <= 0x4158
]
QCOM_TYPES = [
    n for n in constant_names() if n.startswith("CL_QCOM_") and 0x4159 <= getattr(C, n) <= 0x415F
]


def spellings(name: str) -> st.SearchStrategy:
    """The ways a user may write a token: the name with or without CL_, in any case."""
    bare = name.removeprefix("CL_")
    return st.sampled_from([name, bare, bare.lower(), name.upper(), f" {bare} "])


def accepted(order: str, data_type: str) -> ImageFormat | None:
    with contextlib.suppress(ConfigError):
        return parse_image_format((getattr(C, order), getattr(C, data_type)))
    return None


def test_the_token_lists_are_complete():
    assert len(ORDERS) == 20 and len(TYPES) == 17
    assert len(QCOM_ORDERS) == 36 and len(QCOM_TYPES) == 7


@given(
    order=st.sampled_from(ORDERS + QCOM_ORDERS),
    data_type=st.sampled_from(TYPES + QCOM_TYPES),
    data=st.data(),
)
def test_every_spelling_parses_to_the_same_format(order, data_type, data):
    fmt = accepted(order, data_type)
    order_text = data.draw(spellings(order))
    type_text = data.draw(spellings(data_type))
    forms = [
        (order_text, type_text),
        f"{order_text}/{type_text}",
        [order_text, type_text],
        (np.uint32(getattr(C, order)), getattr(C, data_type)),
    ]
    if fmt is None:
        for form in forms:
            with pytest.raises(ConfigError, match=r"not a legal pair|is not supported"):
                parse_image_format(form)
        return
    assert fmt == (getattr(C, order), getattr(C, data_type))
    assert fmt.name == str(fmt) == f"{order}/{data_type}"
    assert fmt.vendor == order.startswith("CL_QCOM_")
    for form in forms:
        assert parse_image_format(form) == fmt
    assert parse_image_format(fmt.to_pyopencl()) == fmt
    assert parse_image_format(fmt.name) == fmt


def test_qualcomm_orders_take_every_type_and_qualcomm_types_no_standard_order():
    for order in QCOM_ORDERS:
        for data_type in TYPES + QCOM_TYPES:
            assert accepted(order, data_type) is not None, (order, data_type)
    for order in ORDERS:
        for data_type in QCOM_TYPES:
            assert accepted(order, data_type) is None, (order, data_type)
    with pytest.raises(
        ConfigError, match="CL_R/CL_QCOM_UNORM_INT10 is not a legal pair: CL_R takes CL_SNORM_INT8"
    ):
        parse_image_format("R/QCOM_UNORM_INT10")


def test_element_sizes_match_pyopencl_for_unpacked_formats():
    checked = 0
    for order in ORDERS:
        for data_type in TYPES:
            fmt = accepted(order, data_type)
            if fmt is None or fmt.packed:
                continue
            try:
                expected = fmt.to_pyopencl().itemsize
            except (cl.LogicError, cl.RuntimeError):
                continue  # pyopencl knows no channel count for sRGB*, ABGR, DEPTH
            assert fmt.element_size == expected, fmt
            assert fmt.dtype.itemsize * int(np.prod(fmt.pixel_shape)) == expected
            checked += 1
    assert checked >= 70


@pytest.mark.parametrize(
    ("spec", "size", "dtype", "shape"),
    [
        ("RGB/UNORM_SHORT_565", 2, np.uint16, ()),
        ("RGBA/UNORM_INT_101010_2", 4, np.uint32, ()),
        ("DEPTH/UNORM_INT24", 4, np.uint32, ()),
        ("sRGB/UNORM_INT8", 3, np.uint8, (3,)),
        ("ABGR/SIGNED_INT8", 4, np.int8, (4,)),
        ("DEPTH/FLOAT", 4, np.float32, ()),
    ],
)
def test_packed_and_unusual_formats(spec, size, dtype, shape):
    fmt = parse_image_format(spec)
    assert (fmt.element_size, fmt.dtype, fmt.pixel_shape) == (size, np.dtype(dtype), shape)


def test_qualcomm_formats_have_the_drivers_layout():
    nv12 = parse_image_format("CL_QCOM_NV12/UNORM_INT8")
    assert nv12 == (0x4133, C.CL_UNORM_INT8) and nv12.vendor and nv12.dtype == np.uint8
    assert repr(nv12) == "ImageFormat(CL_QCOM_NV12, CL_UNORM_INT8)"
    layout = "NV12/CL_UNORM_INT8 has no element size here: Qualcomm formats take the driver's"
    with pytest.raises(ConfigError, match=layout):
        _ = nv12.element_size
    p010 = parse_image_format((C.CL_QCOM_P010, "QCOM_UNORM_INT10"))
    with pytest.raises(ConfigError, match="CL_QCOM_UNORM_INT10 has no numpy equivalent"):
        _ = p010.dtype


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("RGBA", "expected an image format: 'ORDER/TYPE'"),
        ("RGBA/UNORM_INT8/X", "expected an image format"),
        (("RGBA", "UNORM_INT8", 1), "expected an image format"),
        (None, "expected an image format"),
        ("NV12/UNORM_INT8", "unknown image channel order 'NV12'.*CL_QCOM_"),
        ((0x4155, C.CL_UNORM_INT8), "unknown image channel order 0x4155"),
        ((C.CL_R, 0x10E1), "unknown image channel data type 0x10e1"),
        ((True, C.CL_FLOAT), "unknown image channel order True"),
        ("RGBA/UNORM_INT32", "unknown image channel data type 'UNORM_INT32'"),
        ("Rx/UNORM_INT8", "implementations disagree"),
        ("DEPTH_STENCIL/UNORM_INT24", "only from OpenGL sharing"),
        ("BGRA/FLOAT", "CL_BGRA/CL_FLOAT is not a legal pair"),
    ],
)
def test_bad_formats_are_refused(spec, match):
    with pytest.raises(ConfigError, match=match):
        parse_image_format(spec)


def test_tokens_without_the_pair_rules():
    rgbx = image_format_tokens("RGBx/UNORM_INT8")
    assert rgbx == (C.CL_RGBx, C.CL_UNORM_INT8)
    with pytest.raises(ConfigError, match="CL_RGBx/CL_UNORM_INT8 is not a legal pair"):
        check_image_format(rgbx)
    with pytest.raises(ConfigError, match=r"not a legal pair: .*; it has no element size"):
        _ = rgbx.element_size


def test_formats_a_driver_lists_but_no_cdef_names():
    listed = ImageFormat(0x10C7, C.CL_UNORM_INT8)  # as supported_image_formats returns it
    assert str(listed) == "0x10c7/CL_UNORM_INT8" and not listed.vendor
    with pytest.raises(ConfigError, match="does not know that channel order"):
        parse_image_format(listed)
    vendor = ImageFormat(0x4157, C.CL_UNORM_INT8)
    assert parse_image_format(vendor) is vendor  # Qualcomm orders: the driver's list decides


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("2d", "2d"),
        ("image2d", "2d"),
        ("IMAGE2D_ARRAY", "2d_array"),
        ("2d-array", "2d_array"),
        ("CL_MEM_OBJECT_IMAGE1D_BUFFER", "1d_buffer"),
        (C.CL_MEM_OBJECT_IMAGE3D, "3d"),
    ],
)
def test_image_type_names(value, name):
    assert image_type_name(value) == name
    assert image_type(value) == getattr(C, f"CL_MEM_OBJECT_IMAGE{name.upper()}")


@pytest.mark.parametrize("value", ["image4d", "", True, C.CL_MEM_OBJECT_BUFFER, 2.0])
def test_unknown_image_types(value):
    with pytest.raises(ConfigError, match="unknown image type"):
        image_type_name(value)


def test_image_desc_fills_only_the_axes_of_its_type():
    desc = image_desc("2d", ImageExtent(640, 480), row_pitch=2560, mem_object=0x1234)
    assert (desc.image_type, desc.image_width, desc.image_height) == (
        C.CL_MEM_OBJECT_IMAGE2D,
        640,
        480,
    )
    assert (desc.image_depth, desc.image_array_size, desc.image_row_pitch) == (0, 0, 2560)
    assert int(ffi.cast("intptr_t", desc.mem_object)) == 0x1234
    assert desc.buffer == desc.mem_object  # one union: the buffer under an image, or a parent
    cube = image_desc("3d", ImageExtent(4, 5, 6))
    assert (cube.image_depth, cube.image_array_size, cube.mem_object) == (6, 0, ffi.NULL)


# ---- cl_mem_flags --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("read_write", C.CL_MEM_READ_WRITE),
        ("Read-Only", C.CL_MEM_READ_ONLY),
        (" write_only ", C.CL_MEM_WRITE_ONLY),
        (0, C.CL_MEM_READ_WRITE),
        (C.CL_MEM_HOST_NO_ACCESS, C.CL_MEM_READ_WRITE | C.CL_MEM_HOST_NO_ACCESS),
        (np.uint64(C.CL_MEM_READ_ONLY), C.CL_MEM_READ_ONLY),
    ],
)
def test_access_flags(flags, expected):
    assert access_flags(flags) == expected


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        ("read_most", "expected one of read_write, read_only, write_only"),
        (True, "a name .* or cl_mem_flags, got True"),
        (1.0, "a name .* or cl_mem_flags"),
        (
            C.CL_MEM_USE_HOST_PTR,
            "CL_MEM_USE_HOST_PTR is not accepted here .*set by qcom_ext itself",
        ),
        (C.CL_MEM_READ_ONLY | C.CL_MEM_WRITE_ONLY, "at most one device-access flag"),
        (C.CL_MEM_HOST_READ_ONLY | C.CL_MEM_HOST_NO_ACCESS, "at most one host-access flag"),
        (C.CL_MEM_EXT_HOST_PTR_QCOM, "CL_MEM_EXT_HOST_PTR_QCOM not accepted; expected"),
        (-1, "int >= 0"),
    ],
)
def test_access_flags_refusals(flags, match):
    with pytest.raises(ConfigError, match=match):
        access_flags(flags)


def test_flag_names_know_the_qualcomm_bits():
    bits = C.CL_MEM_READ_ONLY | C.CL_MEM_OTHER_IMAGE_QCOM | C.CL_MEM_COMPRESSED_YUV_IMAGE_QCOM
    assert flag_names(bits | 1 << 50) == (
        "CL_MEM_READ_ONLY | CL_MEM_OTHER_IMAGE_QCOM | "
        "CL_MEM_COMPRESSED_YUV_IMAGE_QCOM | 0x4000000000000"
    )


# ---- cffi handles --------------------------------------------------------------------


def test_a_handle_returned_with_an_error_is_released():
    released = []
    err = ffi.new("cl_int *", C.CL_OUT_OF_RESOURCES)
    handle = ffi.cast("cl_mem", 0xBEEF)
    with driver.substitute(clReleaseMemObject=lambda mem: released.append(mem) or 0):
        with pytest.raises(CLError, match=r"CL_OUT_OF_RESOURCES .*: what was asked"):
            checked_handle(handle, err, "clCreateImage", "what was asked")
        err[0] = 0
        assert checked_handle(handle, err, "clCreateImage", "") == 0xBEEF
    assert [int(ffi.cast("intptr_t", mem)) for mem in released] == [0xBEEF]
