"""A substitute for ``clGetImageRequirementsInfoEXT`` (cl_ext_image_requirements_info), and
recorders for the context it is asked in (see tests/fakes/__init__.py for the vocabulary).

:class:`FakeRequirements` records, per call, the context (and the devices the real driver
says it holds, asked while the call runs), the properties pointer, the flags, the raw
``cl_image_format`` and ``cl_image_desc`` bytes and the ``param_name``, and answers from a
table in the widths the specification gives (``size_t`` alignments and size, ``cl_uint``
maxima). :class:`ContextLedger` stands in for ``clCreateContext`` / ``clReleaseContext``
on top of the real ones, so a test sees every context made and released.
"""

from __future__ import annotations

import struct

from qcom_ext.binding.lib import C, driver, ffi

from .driver import addr, answer_info

DESC = struct.Struct("<I4x6Q2IQ")  # cl_image_desc, LP64: 72 bytes

#: param -> (value, width in bytes), the widths of the specification's table
ANSWERS = {
    C.CL_IMAGE_REQUIREMENTS_ROW_PITCH_ALIGNMENT_EXT: (256, 8),
    C.CL_IMAGE_REQUIREMENTS_SLICE_PITCH_ALIGNMENT_EXT: (4096, 8),
    C.CL_IMAGE_REQUIREMENTS_BASE_ADDRESS_ALIGNMENT_EXT: (4096, 8),
    C.CL_IMAGE_REQUIREMENTS_SIZE_EXT: (123456, 8),
    C.CL_IMAGE_REQUIREMENTS_MAX_WIDTH_EXT: (16384, 4),
    C.CL_IMAGE_REQUIREMENTS_MAX_HEIGHT_EXT: (16384, 4),
    C.CL_IMAGE_REQUIREMENTS_MAX_DEPTH_EXT: (2048, 4),
    C.CL_IMAGE_REQUIREMENTS_MAX_ARRAY_SIZE_EXT: (2048, 4),
}


def image_bytes(fmt, desc) -> dict:
    """The raw ``cl_image_format`` bytes and the unpacked ``cl_image_desc`` of a call."""
    return {
        "format": ffi.buffer(ffi.cast("char *", fmt), 8)[:],
        "desc": DESC.unpack(ffi.buffer(ffi.cast("char *", desc), DESC.size)[:]),
    }


def answer(answers: dict, param, size, value, size_ret) -> int:
    """``answers[param]`` (value, width) answered as a driver would (:func:`answer_info`)."""
    number, width = answers[int(param)]
    return answer_info(number.to_bytes(width, "little"), size, value, size_ret)


def context_devices(context) -> list[int]:
    """The devices the real driver says ``context`` holds (CL_INVALID_CONTEXT: [])."""
    size = ffi.new("size_t *")
    get = driver.clGetContextInfo
    if get(context, C.CL_CONTEXT_DEVICES, 0, ffi.NULL, size) != 0:
        return []
    devices = ffi.new("cl_device_id[]", size[0] // ffi.sizeof("cl_device_id"))
    get(context, C.CL_CONTEXT_DEVICES, size[0], devices, ffi.NULL)
    return [addr(d) for d in devices]


class FakeRequirements:
    """``clGetImageRequirementsInfoEXT=FakeRequirements()``; ``status`` fails every call,
    ``answers`` overrides entries of :data:`ANSWERS`."""

    def __init__(self, answers: dict | None = None, status: int = 0) -> None:
        self.answers = {**ANSWERS, **(answers or {})}
        self.status, self.calls = status, []

    def __call__(self, context, props, flags, fmt, desc, param, size, value, size_ret):
        self.calls.append(
            {
                "context": addr(context),
                "devices": context_devices(context),
                "properties": addr(props),
                "flags": int(flags),
                "param": int(param),
                "size": int(size),
                **image_bytes(fmt, desc),
            }
        )
        return self.status or answer(self.answers, param, size, value, size_ret)

    @property
    def params(self) -> list[int]:
        return [call["param"] for call in self.calls]


class ContextLedger:
    """Substitutes for clCreateContext / clReleaseContext over the real entry points
    (resolved at construction, outside any substitution): ``made`` and ``released`` list
    the handles; ``create_status`` makes creation fail before the driver is asked."""

    def __init__(self, create_status: int = 0) -> None:
        self._create = driver.function("clCreateContext")
        self._release = driver.function("clReleaseContext")
        self.create_status = create_status
        self.made: list[int] = []
        self.released: list[int] = []

    def create(self, props, count, devices, notify, user_data, errcode):
        if self.create_status:
            errcode[0] = self.create_status
            return ffi.NULL
        handle = self._create(props, count, devices, notify, user_data, errcode)
        if handle != ffi.NULL:
            self.made.append(addr(handle))
        return handle

    def release(self, context):
        self.released.append(addr(context))
        return self._release(context)

    def substitutes(self) -> dict:
        return {"clCreateContext": self.create, "clReleaseContext": self.release}
