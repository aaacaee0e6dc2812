"""A fake Adreno driver for memory objects: what clCreateBuffer / clCreateImage receive.

:class:`FakeMemDriver` serves the device queries of :func:`fakes.driver.fake_driver` (an
Adreno 740, with extra extensions as needed) and its substitutes record every
clCreateBuffer, clCreateImage, clGetSupportedImageFormats and clReleaseMemObject call with
the raw bytes behind the pointers (the host_ptr struct, the image format and descriptor),
exactly as a driver would read them. Handles are small fake integers; the step that wraps
a handle into a pyopencl object returns a :class:`fakes.driver.FakeCLObject` instead,
everything else is the real code.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from conftest import adreno_strings

from qcom_ext.binding.lib import C, ffi
from qcom_ext.device.probe import clear_cache

from .driver import DEVICE, addr, adreno740_device_info, cstr, fake_driver, platform_info, raw

CTX = 0xC0
STRUCT_SIZES = {
    "cl_mem_ext_host_ptr": 8,
    "cl_mem_ion_host_ptr": 24,
    "cl_mem_android_native_buffer_host_ptr": 16,
    "cl_mem_ahardwarebuffer_host_ptr": 16,
    "cl_mem_dmabuf_host_ptr": 24,
}


class FakeContext:
    """A context as qcom_ext sees it: a handle and the fake device."""

    int_ptr = CTX
    devices = (DEVICE,)


@dataclass
class Call:
    flags: int
    size: int | None = None
    host_ptr: int = 0
    host_bytes: bytes = b""
    format: tuple[int, int] | None = None
    desc: dict = field(default_factory=dict)


def decode_desc(desc) -> dict:
    """The cl_image_desc fields a driver reads (LP64 offsets 0..64)."""
    words = struct.unpack("<I4x6QIIQ", raw(desc, 72))
    names = (
        "image_type",
        "image_width",
        "image_height",
        "image_depth",
        "image_array_size",
        "image_row_pitch",
        "image_slice_pitch",
        "num_mip_levels",
        "num_samples",
        "mem_object",
    )
    return dict(zip(names, words, strict=True))


class FakeMemDriver:
    """``with FakeMemDriver(extra=...) as fake:`` installs substitutes for the memory
    entry points.

    ``host_bytes`` says how many bytes of ``host_ptr`` to copy out at call time (the size
    of the struct under test). ``status`` makes the next create calls fail;
    ``formats`` answers clGetSupportedImageFormats per flags.
    """

    def __init__(
        self,
        extensions: str | None = None,
        *,
        extra: str = "",
        drop: str = "",
        host_bytes: int = 24,
        device_info: dict | None = None,
    ) -> None:
        base = extensions if extensions is not None else adreno_strings()["adreno740-cl3.0"]
        names = [n for n in base.split() if n not in drop.split()] + extra.split()
        self.device_info = device_info or adreno740_device_info()
        self.device_info[0x1030] = cstr(" ".join(names))
        self.host_bytes = host_bytes
        self.buffers: list[Call] = []
        self.images: list[Call] = []
        self.released: list[int] = []
        self.format_queries: list[tuple[int, int, int]] = []
        self.formats: dict[int, list[tuple[int, int]]] = {}
        self.status = 0
        self.fail_after = None  # fail the n-th create call (0-based) instead of all
        self._next = 0x5000

    def _handle(self, errcode):
        index = len(self.buffers) + len(self.images) - 1
        failing = self.status and (self.fail_after is None or index >= self.fail_after)
        if errcode != ffi.NULL:
            errcode[0] = self.status if failing else 0
        if failing:
            return ffi.NULL
        self._next += 0x10
        return ffi.cast("cl_mem", self._next)

    def _bytes(self, host_ptr) -> bytes:
        return b"" if host_ptr == ffi.NULL else raw(host_ptr, self.host_bytes)

    def _create_buffer(self, ctx, flags, size, host_ptr, errcode):
        assert addr(ctx) == CTX
        self.buffers.append(Call(flags, size, addr(host_ptr), self._bytes(host_ptr)))
        return self._handle(errcode)

    def _create_image(self, ctx, flags, fmt, desc, host_ptr, errcode):
        assert addr(ctx) == CTX
        call = Call(
            flags,
            None,
            addr(host_ptr),
            self._bytes(host_ptr),
            struct.unpack("<II", raw(fmt, 8)),
            decode_desc(desc),
        )
        self.images.append(call)
        return self._handle(errcode)

    def _formats(self, ctx, flags, image_type, num_entries, formats, num_formats):
        self.format_queries.append((flags, image_type, num_entries))
        answer = self.formats.get(flags, [])
        if num_formats != ffi.NULL:
            num_formats[0] = len(answer)
        if formats != ffi.NULL:
            for i, (order, data_type) in enumerate(answer[:num_entries]):
                formats[i].image_channel_order = order
                formats[i].image_channel_data_type = data_type
        return 0

    def _release(self, mem):
        self.released.append(addr(mem))
        return 0

    def substitutes(self) -> dict:
        """Entry point name -> substitute (the info queries come from :func:`fake_driver`)."""
        return {
            "clCreateBuffer": self._create_buffer,
            "clCreateImage": self._create_image,
            "clGetSupportedImageFormats": self._formats,
            "clReleaseMemObject": self._release,
        }

    def __enter__(self) -> FakeMemDriver:
        clear_cache()  # the probe caches by handle: each fake device is probed afresh
        self._block = fake_driver(self.device_info, platform_info(), [], **self.substitutes())
        self._block.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._block.__exit__(*exc)
        clear_cache()


def ext_host_ptr(data: bytes) -> tuple[int, int]:
    """(allocation_type, host_cache_policy): the cl_mem_ext_host_ptr every struct starts with."""
    return struct.unpack_from("<II", data, 0)


def use_ext_flags(access: int) -> int:
    return access | C.CL_MEM_USE_HOST_PTR | C.CL_MEM_EXT_HOST_PTR_QCOM
