"""query_image_info's native path: what reaches clQueryImageInfoQCOM, byte for byte.

A real device claims cl_qcom_extended_query_image_info (tests/fakes/claiming.py) and a cffi
callback stands in for clQueryImageInfoQCOM: it records the device, flags, the raw
cl_image_format and cl_image_desc bytes and the param_name, and answers from a table
in the widths a driver may use (size_t or cl_uint).
"""

from __future__ import annotations

import struct
import sys
import warnings

import pytest
from conftest import DEVICES
from fakes.claiming import claiming
from fakes.driver import addr
from fakes.image_requirements import answer, image_bytes

from qcom_ext import CLError, ImageInfo, QcomExtWarning, query_image_info
from qcom_ext.binding.lib import C, ffi

pytestmark = [
    pytest.mark.skipif(
        ffi.sizeof("void *") != 8 or sys.byteorder != "little",
        reason="the byte layouts below are the LP64 little-endian ones",
    ),
    pytest.mark.skipif(
        not any(c.image_support for c in DEVICES), reason="needs a device with images"
    ),
]
EXTENSION = "cl_qcom_extended_query_image_info"
ANSWERS = {  # param -> (value, width in bytes)
    C.CL_IMAGE_ROW_PITCH: (2560, 8),
    C.CL_IMAGE_SLICE_PITCH: (2560 * 480, 8),
    C.CL_IMAGE_SIZE_QCOM: (2560 * 480 * 3 + 4096, 8),
    C.CL_IMAGE_ELEMENT_SIZE: (4, 8),
    C.CL_IMAGE_ROW_ALIGNMENT_QCOM: (256, 4),  # a cl_uint answer
    C.CL_IMAGE_SLICE_ALIGNMENT_QCOM: (4096, 4),
    C.CL_IMAGE_BASE_ADDRESS_ALIGNMENT_QCOM: (4096, 8),
}


@pytest.fixture
def device(monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    return next(c for c in DEVICES if c.image_support).device_id


class FakeQuery:
    def __init__(self, answers=ANSWERS, status: int = 0):
        self.answers, self.status, self.calls = answers, status, []

    def __call__(self, device, flags, fmt, desc, param, size, value, size_ret):
        self.calls.append(
            {
                "device": addr(device),
                "flags": int(flags),
                "param": int(param),
                "size": int(size),
                **image_bytes(fmt, desc),
            }
        )
        return self.status or answer(self.answers, param, size, value, size_ret)


def test_2d_marshalling(device):
    fake = FakeQuery()
    with claiming(device, extensions=[EXTENSION], clQueryImageInfoQCOM=fake):
        info = query_image_info(device, ("RGBA", "UNORM_INT8"), (640, 480))
    assert info == ImageInfo(
        row_pitch=2560,
        slice_pitch=0,
        size=2560 * 480 * 3 + 4096,
        element_size=4,
        row_alignment=256,
        slice_alignment=0,
        base_address_alignment=4096,
        path="native",
    )
    asked = [call["param"] for call in fake.calls]
    assert asked == [0x1112, 0x411B, 0x1111, 0x40A2, 0x411F]  # no slice queries for 2D
    for call in fake.calls:
        assert call["device"] == device
        assert call["flags"] == C.CL_MEM_READ_ONLY
        assert call["format"] == struct.pack("<II", 0x10B5, 0x10D2)  # CL_RGBA, CL_UNORM_INT8
        assert call["desc"] == (0x10F1, 640, 480, 0, 0, 0, 0, 0, 0, 0)  # IMAGE2D, NULL buffer
        assert call["size"] == 8


def test_2d_array_marshalling_and_flags(device):
    fake = FakeQuery()
    flags = C.CL_MEM_READ_WRITE | C.CL_MEM_HOST_NO_ACCESS
    with claiming(device, extensions=[EXTENSION], clQueryImageInfoQCOM=fake):
        info = query_image_info(
            device, ("R", "HALF_FLOAT"), (640, 480, 3), flags=flags, image_type="2d_array"
        )
    assert info.slice_pitch == 2560 * 480 and info.slice_alignment == 4096
    asked = [call["param"] for call in fake.calls]
    assert asked == [0x1112, 0x1113, 0x411B, 0x1111, 0x40A2, 0x40A3, 0x411F]
    assert {call["flags"] for call in fake.calls} == {0x201}
    assert fake.calls[0]["format"] == struct.pack("<II", 0x10B0, 0x10DD)  # CL_R, HALF_FLOAT
    assert fake.calls[0]["desc"] == (0x10F3, 640, 480, 0, 3, 0, 0, 0, 0, 0)


def test_3d_desc(device):
    fake = FakeQuery()
    with claiming(device, extensions=[EXTENSION], clQueryImageInfoQCOM=fake):
        query_image_info(device, ("RGBA", "FLOAT"), (8, 6, 5), image_type="3d")
    assert fake.calls[0]["desc"] == (0x10F2, 8, 6, 5, 0, 0, 0, 0, 0, 0)


def test_driver_error_names_the_query(device):
    fake = FakeQuery(status=C.CL_IMAGE_FORMAT_NOT_SUPPORTED)
    with (
        claiming(device, extensions=[EXTENSION], clQueryImageInfoQCOM=fake),
        pytest.raises(CLError) as caught,
    ):
        query_image_info(device, ("RGBA", "UNORM_INT8"), (64, 64))
    assert caught.value.code == -10
    assert caught.value.routine == "clQueryImageInfoQCOM"
    assert "CL_IMAGE_ROW_PITCH of a 2d CL_RGBA/CL_UNORM_INT8 image (width=64, height=64)" in str(
        caught.value
    )


def test_oversized_answer_is_an_error(device):
    def answer(device_, flags, fmt, desc, param, size, value, size_ret):
        size_ret[0] = 16
        return 0

    with (
        claiming(device, extensions=[EXTENSION], clQueryImageInfoQCOM=answer),
        pytest.raises(CLError, match="16-byte value"),
    ):
        query_image_info(device, ("RGBA", "UNORM_INT8"), (64, 64))


def test_missing_entry_point_computes_with_one_warning(device):
    with claiming(device, extensions=[EXTENSION]), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        info = query_image_info(device, ("RGBA", "UNORM_INT8"), (64, 64))
    assert info.path == "fallback" and info.row_pitch >= 256
    messages = [str(w.message) for w in seen if issubclass(w.category, QcomExtWarning)]
    assert len(messages) == 1 and "lacks clQueryImageInfoQCOM" in messages[0]


def test_disabled_extension_never_calls_the_driver(device, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", EXTENSION)
    fake = FakeQuery()
    with claiming(device, extensions=[EXTENSION], clQueryImageInfoQCOM=fake):
        info = query_image_info(device, ("RGBA", "UNORM_INT8"), (64, 64))
    assert info.path == "fallback" and fake.calls == []
