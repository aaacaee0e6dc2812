"""The native weight-image path on a fake Adreno 740 (tests/fakes/driver.py).

cffi callbacks stand in for clGetSupportedImageFormats, clCreateImage and
clReleaseMemObject and record exactly what reaches them: the 96 bytes of the
cl_weight_image_desc_qcom (checked against an independent struct.pack of the LP64
layout in qcom-extensions.md section 10), the flags, the format and the host weights.
The handle they return is fake, so wrapping it into pyopencl (``_wrap_image``) is
replaced by a stand-in; everything before and after is the real code.
"""

from __future__ import annotations

import struct
import sys

import numpy as np
import pytest
from fakes.driver import (
    DEVICE,
    FakeCLObject,
    addr,
    adreno740_device_info,
    fake_driver,
    platform_info,
)

import qcom_ext
from qcom_ext import CLError, ConfigError, WeightImage, accelerated_limits, box_size
from qcom_ext.binding.lib import C, ffi
from qcom_ext.device.probe import clear_cache
from qcom_ext.ext.accelerated import weights as accelerated_module
from qcom_ext.ext.accelerated.support import FALLBACK_LIMITS

pytestmark = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little",
    reason="the byte layouts below are the LP64 little-endian ones",
)

CTX, IMAGE = 0xC0, 0x1A0
R_HALF, R_FLOAT = (0x10B0, 0x10DD), (0x10B0, 0x10DE)  # {CL_R, CL_HALF_FLOAT}, {CL_R, CL_FLOAT}


def weight_desc_bytes(width, height, phases, cx, cy, flags) -> bytes:
    """cl_weight_image_desc_qcom, LP64: cl_image_desc (72 bytes) then cl_weight_desc_qcom."""
    image_desc = struct.pack("<I4x6QIIQ", 0x4110, width, height, 0, phases, 0, 0, 0, 0, 0)
    return image_desc + struct.pack("<3Q", cx, cy, flags)


class FakeImages:
    """``with FakeImages(...) as cl``: the fake Adreno plus the image entry points."""

    def __init__(
        self,
        formats=(R_HALF, R_FLOAT),
        create_status: int = 0,
        formats_status: int = 0,
        extensions: str | None = None,
    ):
        self.formats = list(formats)
        self.create_status = create_status
        self.formats_status = formats_status
        self.device_info = adreno740_device_info()
        if extensions is not None:
            self.device_info[0x1030] = extensions.encode() + b"\0"
        self.calls: dict[str, list] = {}
        self.expected_host_bytes = 0

    def _log(self, name, *record):
        self.calls.setdefault(name, []).append(record)

    def _formats(self, ctx, flags, image_type, num_entries, formats, num_ret):
        self._log("clGetSupportedImageFormats", addr(ctx), flags, image_type, num_entries)
        if self.formats_status:
            return self.formats_status
        if num_ret != ffi.NULL:
            num_ret[0] = len(self.formats)
        for i in range(min(num_entries, len(self.formats))):
            formats[i].image_channel_order, formats[i].image_channel_data_type = self.formats[i]
        return 0

    def _create(self, ctx, flags, fmt, desc, host, errcode):
        raw_desc = ffi.buffer(ffi.cast("char *", desc), 96)[:]
        data = ffi.buffer(ffi.cast("char *", host), self.expected_host_bytes)[:]
        pair = (fmt.image_channel_order, fmt.image_channel_data_type)
        self._log("clCreateImage", addr(ctx), flags, pair, raw_desc, data)
        errcode[0] = self.create_status
        return ffi.NULL if self.create_status else ffi.cast("cl_mem", IMAGE)

    def __enter__(self) -> FakeImages:
        self._block = fake_driver(
            self.device_info,
            platform_info(),
            [],
            clGetSupportedImageFormats=self._formats,
            clCreateImage=self._create,
            clReleaseMemObject=lambda m: self._log("clReleaseMemObject", addr(m)) or 0,
        )
        self._block.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._block.__exit__(*exc)


@pytest.fixture(autouse=True)
def fake_wrapping(fake_cl_objects):
    fake_cl_objects(accelerated_module, "_wrap_image")


def context() -> FakeCLObject:
    return FakeCLObject(CTX, devices=[FakeCLObject(DEVICE)])


def test_2d_sobel_reaches_clCreateImage_byte_for_byte():
    sobel = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])
    with FakeImages() as cl:
        cl.expected_host_bytes = 9 * 2
        w = WeightImage(context(), sobel, center=(1, 1))
    assert cl.calls["clGetSupportedImageFormats"] == [(CTX, 0x4, 0x4110, 0), (CTX, 0x4, 0x4110, 2)]
    [(ctx, flags, fmt, desc, data)] = cl.calls["clCreateImage"]
    assert (ctx, flags, fmt) == (CTX, 0x4 | 0x20, R_HALF)  # READ_ONLY | COPY_HOST_PTR
    assert desc == weight_desc_bytes(3, 3, 1, 1, 1, 0)
    assert data == sobel.astype(np.float16).tobytes()
    assert (w.path, w.image.int_ptr, w.image_format) == ("native", IMAGE, R_HALF)
    assert "clReleaseMemObject" not in cl.calls


def test_separable_phases_float32():
    """fx = 5, fy = 3: slices of 2 x max(fx, fy) with row 1 zero-padded; 4 phases."""
    rng = np.random.default_rng(2)
    weights = rng.uniform(-1, 1, (4, 2, 5))
    weights[:, 1, 3:] = 0
    with FakeImages() as cl:
        cl.expected_host_bytes = 4 * 2 * 5 * 4
        w = WeightImage(
            context(), weights, center=(4, 2), separable=True, dtype=np.float32, filter_size=(5, 3)
        )
    [(_, flags, fmt, desc, data)] = cl.calls["clCreateImage"]
    assert (flags, fmt) == (0x24, R_FLOAT)
    assert desc == weight_desc_bytes(5, 3, 4, 4, 2, C.CL_WEIGHT_IMAGE_SEPARABLE_QCOM)
    assert data == weights.astype(np.float32).tobytes()
    assert (w.num_phases, w.phases_per_axis, w.separable) == (4, 4, True)


def test_2d_phases_are_the_slice_count():
    with FakeImages() as cl:
        cl.expected_host_bytes = 16 * 2 * 3 * 2
        WeightImage(context(), np.ones((16, 2, 3)), center=(0, 1))
    desc = cl.calls["clCreateImage"][0][3]
    assert desc == weight_desc_bytes(3, 2, 16, 0, 1, 0)


def test_device_limits_are_enforced():
    """The fake reports HOF max filter 16x8, 16 phases, block-matching region 32x24."""
    with FakeImages() as cl:
        limits = accelerated_limits(context())
        assert limits == qcom_ext.AcceleratedLimits((16, 8), 16, (32, 24), native=True)
        with pytest.raises(ConfigError, match=r"3x9 is larger than 16x8, the device's"):
            WeightImage(context(), np.ones((9, 3)), center=(0, 0))
        with pytest.raises(ConfigError, match="64 phases is more than 16"):
            WeightImage(context(), np.ones((64, 1, 1)), center=(0, 0))
        with pytest.raises(ConfigError, match="32 phases is more than 16"):
            WeightImage(context(), np.ones((32, 2, 1)), center=(0, 0), separable=True)
        assert box_size(16, 8, device=context()).tobytes() == np.float32([16, 8]).tobytes()
        with pytest.raises(ConfigError, match="16x9 is larger than 16x8, the device's"):
            box_size(16, 9, device=context())
    assert "clCreateImage" not in cl.calls


def test_missing_format_is_refused_before_creating():
    with (
        FakeImages(formats=[R_HALF]) as cl,
        pytest.raises(
            ConfigError,
            match=r"no \{CL_R, CL_FLOAT\} weight-image format .*\{CL_R, CL_HALF_FLOAT\}",
        ),
    ):
        WeightImage(context(), np.ones((3, 3)), center=(1, 1), dtype=np.float32)
    assert "clCreateImage" not in cl.calls


def test_format_query_failure_is_a_clerror():
    with (
        FakeImages(formats_status=C.CL_INVALID_CONTEXT),
        pytest.raises(CLError, match=r"clGetSupportedImageFormats failed: CL_INVALID_CONTEXT"),
    ):
        WeightImage(context(), np.ones((3, 3)), center=(1, 1))


def test_driver_refusal_is_a_clerror_naming_the_image():
    with FakeImages(create_status=C.CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) as cl:
        cl.expected_host_bytes = 18
        with pytest.raises(
            CLError,
            match=r"clCreateImage failed: "
            r"CL_INVALID_IMAGE_FORMAT_DESCRIPTOR \(-39\): weight image 3x3, "
            r"1 phase\(s\), centre \(1, 1\), 2-D",
        ):
            WeightImage(context(), np.ones((3, 3)), center=(1, 1))
    assert "clReleaseMemObject" not in cl.calls  # nothing was created


def test_wrapping_failure_releases_the_image(monkeypatch):
    def broken(handle):
        raise RuntimeError("pyopencl refused the handle")

    monkeypatch.setattr(accelerated_module, "_wrap_image", broken)
    with FakeImages() as cl:
        cl.expected_host_bytes = 18
        with pytest.raises(RuntimeError, match="refused"):
            WeightImage(context(), np.ones((3, 3)), center=(1, 1))
    assert cl.calls["clReleaseMemObject"] == [(IMAGE,)]


def test_disabled_extension_takes_the_fallback_limits(monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_accelerated_image_ops")
    with FakeImages():
        assert accelerated_limits(context()) == FALLBACK_LIMITS


def test_device_without_the_extension_never_reaches_the_driver(monkeypatch):
    created = []
    monkeypatch.setattr(
        accelerated_module,
        "_create_fallback",
        lambda ctx, spec: created.append(spec) or (FakeCLObject(1), R_FLOAT),
    )
    with FakeImages(extensions="cl_khr_fp16 cl_qcom_perf_hint") as cl:
        w = WeightImage(context(), np.ones((3, 3)), center=(1, 1))
    assert w.path == "fallback" and len(created) == 1
    assert "clCreateImage" not in cl.calls and "clGetSupportedImageFormats" not in cl.calls


def test_device_without_images_is_refused_before_anything_is_made():
    """No extension and no images: no path can keep the builtins' semantics."""
    with FakeImages(extensions="cl_khr_fp16 cl_qcom_perf_hint") as cl:
        cl.device_info[0x1016] = struct.pack("<I", 0)  # CL_DEVICE_IMAGE_SUPPORT
        clear_cache()
        with pytest.raises(qcom_ext.ExtensionUnavailable, match="image"):
            WeightImage(context(), np.ones((3, 3)), center=(1, 1))
        with pytest.raises(qcom_ext.ExtensionUnavailable):
            box_size(2, 2, device=context())
    assert "clCreateImage" not in cl.calls and "clGetSupportedImageFormats" not in cl.calls
