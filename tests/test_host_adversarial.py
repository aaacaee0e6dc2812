"""Issue 15 findings 8 and 10 on the host API: writes checked against the image format,
typed errors naming the value, an idempotent WeightImage.release and the library loader.

Every case here failed on the code before (a silent write of reinterpreted bytes, a bare
pyopencl ``LogicError`` or ``TypeError``, a CLError naming the wrong thing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import qcom_ext
from qcom_ext import ConfigError, QcomExtError
from qcom_ext.binding.lib import ENV_LIBRARY, open_library
from qcom_ext.ext.images.host_arrays import check_destination, check_pixels, host_layout

REPO = Path(__file__).resolve().parents[1]
OCLGRIND_RT = Path("/usr/lib/oclgrind/liboclgrind-rt.so")  # a runtime, not an ICD loader


@pytest.fixture
def images(device_caps):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support (CL_DEVICE_IMAGE_SUPPORT)")
    return device_caps


# ---- finding 8: host-to-device writes checked against the format ---------------------


@pytest.mark.parametrize(
    ("fmt", "dtype", "shape"),
    [
        ("RGBA/UNORM_INT8", np.uint8, (4,)),
        ("RGBA/FLOAT", np.float32, (4,)),
        ("R/HALF_FLOAT", np.float16, ()),
        ("RG/SIGNED_INT16", np.int16, (2,)),
        ("RGB/UNORM_SHORT_565", np.uint16, ()),
        ("R/UNSIGNED_INT32", np.uint32, ()),
    ],
)
def test_host_layout_maps_a_format_to_dtype_and_element_shape(fmt, dtype, shape):
    layout = host_layout(qcom_ext.parse_image_format(fmt))
    assert (layout.dtype, layout.pixel_shape) == (np.dtype(dtype), shape)


def test_same_byte_size_float32_is_refused_by_an_rgba8_image(images, cl_context, cl_queue):
    image = qcom_ext.create_image(cl_context, (4, 4), "RGBA/UNORM_INT8")
    wrong = np.zeros((4, 4, 1), np.float32)  # 64 bytes, exactly what the image holds
    with pytest.raises(ConfigError, match=r"float32.*\(4, 4, 1\).*uint8 of shape \(4, 4, 4\)"):
        image.write(cl_queue, wrong)
    image.write(cl_queue, np.full((4, 4, 4), 7, np.uint8))
    assert (image.read(cl_queue) == 7).all()  # the refused write changed nothing


@pytest.mark.parametrize(
    "pixels",
    [
        np.empty((4, 4), object),  # PyObject pointers: 128 bytes, as RGBA/UNORM_INT16 holds
        np.zeros((4, 4, 4), np.int16),  # same size and shape, another type
        np.zeros((4, 4, 4), ">u2"),  # right type, other byte order
        np.zeros((4, 4, 2), np.uint32),  # same size, wrong element shape
        np.zeros((4, 4, 4), np.uint16).tolist(),  # not an array: no dtype to check
    ],
    ids=["object", "int16", "big-endian", "uint32x2", "list"],
)
def test_write_refuses_what_the_format_does_not_hold(images, cl_context, cl_queue, pixels):
    image = qcom_ext.create_image(cl_context, (4, 4), "RGBA/UNORM_INT16")
    with pytest.raises(ConfigError, match=r"uint16 of shape \(4, 4, 4\)"):
        image.write(cl_queue, pixels)


def test_single_channel_images_take_both_shapes(images, cl_context, cl_queue):
    image = qcom_ext.create_image(cl_context, (3, 2), "R/FLOAT")
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    image.write(cl_queue, values)
    image.write(cl_queue, values[..., None] + 1)
    assert np.array_equal(image.read(cl_queue)[..., 0], values + 1)
    with pytest.raises(ConfigError, match=r"float32 of shape \(2, 3\)"):
        image.write(cl_queue, values.astype(np.float64))


def test_read_checks_the_destination(images, cl_context, cl_queue):
    image = qcom_ext.create_image(cl_context, (4, 2), "RGBA/UNORM_INT8")
    pixels = np.arange(32, dtype=np.uint8).reshape(2, 4, 4)
    image.write(cl_queue, pixels)
    out = np.zeros((2, 4, 4), np.uint8)
    assert image.read(cl_queue, out=out) is out and np.array_equal(out, pixels)
    for bad, match in [
        (np.zeros((2, 4, 4), np.float32)[..., :1], r"float32"),
        (np.zeros((2, 4, 4), object), r"object"),
        (np.zeros((2, 8, 4), np.uint8)[:, ::2], r"C-contiguous"),
        (np.zeros((2, 4, 4), np.uint8).view(), r"writeable"),
    ]:
        if match == "writeable":
            bad.flags.writeable = False
        with pytest.raises(ConfigError, match=match):
            image.read(cl_queue, out=bad)


def test_helpers_name_the_array_and_the_need():
    fmt = qcom_ext.parse_image_format("RGBA/HALF_FLOAT")
    with pytest.raises(ConfigError) as info:
        check_pixels(np.zeros((2, 2, 4), np.float32), fmt, (2, 2), "pixels", "a 2x2 image")
    assert "float32" in str(info.value) and "float16 of shape (2, 2, 4)" in str(info.value)
    good = np.zeros((2, 2, 4), np.float16)
    assert check_pixels(good, fmt, (2, 2), "pixels", "a 2x2 image") is good
    assert check_destination(good, fmt, (2, 2), "out", "a 2x2 image") is good


def test_nv12_planes_are_checked(images, cl_context, cl_queue):
    frame = qcom_ext.nv12_image(cl_context, (8, 4))
    y = np.zeros((4, 8), np.uint8)
    with pytest.raises(ConfigError, match="uint8"):
        frame.write(cl_queue, (y.astype(np.int8), np.zeros((2, 4, 2), np.uint8)))
    with pytest.raises(ConfigError, match="uint8"):
        frame.write(cl_queue, np.empty((6, 8), object))
    with pytest.raises(ConfigError, match=r"ndarray|array"):
        frame.write(cl_queue, np.zeros((6, 8), np.uint8).tolist())


def test_image_buffer_write_names_dtype_and_shape(images, cl_context, cl_queue):
    pair = qcom_ext.image_with_buffer(cl_context, (4, 2), "RGBA/UNORM_INT8")
    with pytest.raises(ConfigError, match=r"object.*uint8 of shape \(2, 4, 4\)"):
        pair.write_buffer(cl_queue, np.empty((2, 4, 4), object))


# ---- finding 10: typed errors naming the value ------------------------------------------


def test_huge_onchip_buffer_is_refused_up_front(device_caps, cl_context):
    with pytest.raises(ConfigError, match=str(2**40)) as info:
        qcom_ext.onchip_buffer(cl_context, 2**40)
    assert "CL_DEVICE_MAX_MEM_ALLOC_SIZE" in str(info.value) or "ONCHIP" in str(info.value)
    limit = min(d.max_mem_alloc_size for d in cl_context.devices)
    assert qcom_ext.onchip_buffer(cl_context, 4096).size == 4096
    with pytest.raises(ConfigError, match=str(limit + 1)):
        qcom_ext.onchip_buffer(cl_context, limit + 1)


def test_huge_nv12_frame_is_refused_like_create_image(images, cl_context):
    with pytest.raises(ConfigError, match="CL_DEVICE_IMAGE2D_MAX_WIDTH") as nv12:
        qcom_ext.nv12_image(cl_context, (2**20, 2**20))
    with pytest.raises(ConfigError, match="CL_DEVICE_IMAGE2D_MAX_WIDTH") as plain:
        qcom_ext.create_image(cl_context, (2**20, 2**20), "R/UNORM_INT8")
    assert str(nv12.value) == str(plain.value)
    assert f"{2**20}x{2**20}" in str(nv12.value)


def test_weight_image_release_is_idempotent(cl_context):
    weights = qcom_ext.WeightImage(cl_context, np.ones((3, 3)), center=(1, 1))
    weights.release()
    weights.release()  # was LogicError: trying to double-unref mem object


@pytest.mark.parametrize(
    "dtype", [object, "U4", "S2", [("a", np.int32)], "datetime64[s]", "V8", "no such dtype"]
)
def test_aligned_empty_takes_plain_numeric_dtypes_only(dtype):
    with pytest.raises(ConfigError, match="dtype") as info:
        qcom_ext.aligned_empty(8, dtype)
    assert not isinstance(info.value, TypeError)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint64, np.float16, np.complex64])
def test_aligned_empty_keeps_numeric_dtypes(dtype):
    array = qcom_ext.aligned_empty(8, dtype)
    assert array.dtype == np.dtype(dtype) and array.ctypes.data % 4096 == 0


def test_host_buffer_refuses_object_arrays(cl_context):
    pointers = np.empty(4096, object)  # its bytes are PyObject pointers
    with pytest.raises(ConfigError, match="dtype object is not a plain numeric dtype"):
        qcom_ext.host_buffer(cl_context, pointers)


@pytest.mark.parametrize("value", ["./libOpenCL.so", "lib/libOpenCL.so", "../x/libOpenCL.so"])
def test_relative_library_override_is_refused(monkeypatch, tmp_path, value):
    # a library planted in the current directory would be opened (and run) otherwise
    planted = tmp_path / value
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes(b"not a library")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV_LIBRARY, value)
    with pytest.raises(ConfigError, match="relative path") as info:
        open_library()
    assert repr(value) in str(info.value) and ENV_LIBRARY in str(info.value)


def test_a_bare_library_name_is_searched_not_refused(monkeypatch, tmp_path):
    (tmp_path / "libqcom-ext-no-such-opencl.so").write_bytes(b"planted")
    monkeypatch.chdir(tmp_path)  # the loader's path does not include the current directory
    monkeypatch.setenv(ENV_LIBRARY, "libqcom-ext-no-such-opencl.so")
    with pytest.raises(qcom_ext.LibraryNotFound, match=r"libqcom-ext-no-such-opencl\.so"):
        open_library()


MISMATCH = """
import pyopencl as cl, qcom_ext
device = cl.get_platforms()[0].get_devices()[0]
try:
    qcom_ext.probe(device)
except qcom_ext.LibraryMismatch as exc:
    print("MISMATCH", exc.library, "|", exc.pyopencl_library)
    print(exc)
"""


@pytest.mark.skipif(not OCLGRIND_RT.exists(), reason=f"{OCLGRIND_RT} is not installed")
def test_a_library_that_is_not_pyopencls_says_so():
    # Oclgrind's runtime library answers CL_INVALID_DEVICE for any device but its own:
    # what a vendor library that pyopencl does not use does with pyopencl's handles.
    env = dict(os.environ, **{ENV_LIBRARY: str(OCLGRIND_RT)})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", MISMATCH], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("MISMATCH " + str(OCLGRIND_RT)), result.stdout
    pyopencl_side = first.split("|", 1)[1].strip()
    assert pyopencl_side and pyopencl_side != str(OCLGRIND_RT)
    assert "CL_INVALID_DEVICE" in result.stdout and ENV_LIBRARY in result.stdout


def test_the_mismatch_error_is_typed():
    assert issubclass(qcom_ext.LibraryMismatch, QcomExtError)
