"""The Khronos tiers real Adreno drivers advertise (issue 16, item 6), end to end.

* ``cl_ext_image_requirements_info`` (Adreno 740/750) for ``cl_qcom_extended_query_image_info``;
* ``cl_khr_external_memory_dma_buf`` (with ``cl_khr_external_memory``) for
  ``cl_qcom_dmabuf_host_ptr``;
* ``cl_khr_external_memory_android_hardware_buffer`` for the AHardwareBuffer import.

The path rule is checked through the probe of a fake Adreno 740 (its real extension
string, tests/data/adreno740-cl3.0.txt, edited per case). The marshalling goes through
substitutes (tests/fakes/): ``clGetImageRequirementsInfoEXT`` on a real device claiming the
tier (so the context it is asked in is a real one), ``clCreate{Buffer,Image}WithProperties``
and the acquire/release commands on the fake Adreno (tests/fakes/external.py), with
memfds standing in for dma-bufs.
"""

from __future__ import annotations

import os
import struct
import sys
import warnings

import pytest
from conftest import DEVICES, adreno_strings
from fakes import memfd as memfds
from fakes.claiming import claiming
from fakes.driver import DEVICE, addr, adreno740_device_info, cstr, fake_driver, platform_info
from fakes.external import KHR_AHB, KHR_DMA_BUF, QUEUE, FakeExternalDriver, open_fds
from fakes.image_requirements import ContextLedger, FakeRequirements
from fakes.memfd import mappings, needs_memfd
from fakes.memory import CTX, FakeContext

import qcom_ext
from qcom_ext import CLError, ConfigError, ExtensionUnavailable, ImageInfo, QcomExtWarning
from qcom_ext.binding.lib import C, driver, ffi
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.probe import read_device
from qcom_ext.ext.memory import khr_external, memobj
from qcom_ext.ext.memory.external import ExternalMemory, import_route
from qcom_ext.ext.memory.flags import access_flags
from qcom_ext.tools.selftest._paths import plan_paths

pytestmark = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little",
    reason="the byte layouts below are the LP64 little-endian ones",
)
INFO, EXT = "cl_qcom_extended_query_image_info", "cl_ext_image_requirements_info"
DMABUF, DMABUF_KHR = "cl_qcom_dmabuf_host_ptr", "cl_khr_external_memory_dma_buf"
AHB, AHB_KHR = (
    "cl_qcom_android_ahardwarebuffer_host_ptr",
    ("cl_khr_external_memory_android_hardware_buffer"),
)
ADRENO740 = adreno_strings()["adreno740-cl3.0"].split()


def edited(drop: str = "", add: str = "") -> str:
    return " ".join([n for n in ADRENO740 if n not in drop.split()] + add.split())


def probed(extensions: str) -> DeviceCaps:
    """The probe of the fake Adreno 740 with this extension string."""
    info = adreno740_device_info()
    info[0x1030] = cstr(extensions)
    with fake_driver(info, platform_info(), []):
        return read_device(DEVICE)


# ---- the path rule, as the probe reports it -------------------------------------------


def test_the_adreno740_string_advertises_the_image_tier_next_to_the_native_extension():
    assert EXT in ADRENO740 and INFO in ADRENO740 and DMABUF in ADRENO740
    caps = probed(edited())
    assert caps.path(INFO) == "native" and caps.path(DMABUF) == "native"
    assert caps.khronos_usable(EXT)
    # the native path wins; the selftest cannot force the tier on this device
    plan = plan_paths(caps, INFO)
    assert [path for path, _ in plan.runs] == ["native", "fallback"]
    ((path, reason),) = plan.skipped
    assert path == f"khr:{EXT}" and reason.startswith(f"not reachable here: {INFO} is native")


@pytest.mark.parametrize(
    ("extension", "drop", "add", "path", "because"),
    [
        (INFO, INFO, "", f"khr:{EXT}", f"Khronos equivalent {EXT}"),
        (DMABUF, DMABUF, KHR_DMA_BUF, f"khr:{DMABUF_KHR}", f"Khronos equivalent {DMABUF_KHR}"),
        (
            DMABUF,
            DMABUF,
            DMABUF_KHR,
            "fallback",
            f"{DMABUF_KHR} advertised, but its base cl_khr_external_memory is not advertised",
        ),
        (AHB, "", KHR_AHB, f"khr:{AHB_KHR}", f"Khronos equivalent {AHB_KHR}"),
        (
            AHB,
            "",
            AHB_KHR,
            "unavailable",
            f"{AHB_KHR} advertised, but its base cl_khr_external_memory is not advertised",
        ),
        (AHB, "", "", "unavailable", "only the Qualcomm driver can import an AHardwareBuffer"),
    ],
)
def test_probe_reports_the_tier_rows(extension, drop, add, path, because):
    caps = probed(edited(drop, add))
    status = caps.status(extension)
    assert status.path == path and because in status.reason, status
    assert caps.to_dict()["qcom"][extension]["path"] == path  # what probe --json says


def test_the_tier_path_is_the_one_the_selftest_runs_first():
    caps = probed(edited(DMABUF, KHR_DMA_BUF))
    plan = plan_paths(caps, DMABUF)
    assert plan.runs == (
        (f"khr:{DMABUF_KHR}", frozenset()),
        ("fallback", frozenset({DMABUF_KHR})),
    )
    assert [path for path, _ in plan.skipped] == ["native"]


def test_disabling_the_tier_leaves_the_fallback():
    caps = DeviceCaps.from_info(extensions=KHR_DMA_BUF, disabled=())
    assert caps.path(DMABUF) == f"khr:{DMABUF_KHR}"
    off = caps.with_disabled([DMABUF_KHR])
    assert off.path(DMABUF) == "fallback"
    assert f"{DMABUF_KHR} disabled by QCOM_EXT_DISABLE" in off.status(DMABUF).reason


# ---- cl_ext_image_requirements_info: query_image_info's Khronos tier -------------------

needs_images = pytest.mark.skipif(
    not any(c.image_support for c in DEVICES), reason="needs a device with images"
)


@pytest.fixture
def image_device(monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    caps = next(c for c in DEVICES if c.image_support)
    if INFO in caps.extensions:
        pytest.skip(f"{caps.label} has {INFO} natively: its tier is never taken there")
    return caps.device_id


def tier_query(device, fake, ledger=None, extensions=(EXT,), **extra):
    """The block in which ``device`` claims ``extensions`` and ``fake`` answers."""
    ledger = ledger or ContextLedger()
    return claiming(
        device,
        extensions=extensions,
        clGetImageRequirementsInfoEXT=fake,
        **ledger.substitutes(),
        **extra,
    )


@needs_images
def test_2d_layout_from_the_tier(image_device):
    fake, ledger = FakeRequirements(), ContextLedger()
    with tier_query(image_device, fake, ledger):
        info = qcom_ext.query_image_info(image_device, ("RGBA", "UNORM_INT8"), (100, 30))
    assert info == ImageInfo(
        row_pitch=512,  # 400 bytes rounded up to the 256-byte row pitch alignment
        slice_pitch=0,
        size=123456,  # the driver's CL_IMAGE_REQUIREMENTS_SIZE_EXT, not computed
        element_size=4,
        row_alignment=256,
        slice_alignment=0,
        base_address_alignment=4096,
        path=f"khr:{EXT}",
    )
    # max width, max height, row pitch alignment, size, base address alignment (cl_ext.h)
    assert [hex(p) for p in fake.params] == ["0x12b3", "0x12b4", "0x1290", "0x12b2", "0x1292"]
    (context,) = ledger.made
    for call in fake.calls:
        assert call["context"] == context and call["devices"] == [image_device]
        assert call["properties"] == 0  # no properties: NULL
        assert call["flags"] == C.CL_MEM_READ_ONLY
        assert call["format"] == struct.pack("<II", 0x10B5, 0x10D2)  # CL_RGBA, CL_UNORM_INT8
        assert call["desc"] == (0x10F1, 100, 30, 0, 0, 0, 0, 0, 0, 0)  # IMAGE2D
        assert call["size"] == 8
    assert ledger.released == [context]  # the query's context, released once


@needs_images
@pytest.mark.parametrize("from_buffer", [False, True])
def test_2d_array_slices_follow_the_slice_alignment_where_advertised(image_device, from_buffer):
    fake = FakeRequirements()
    extensions = (EXT, "cl_ext_image_from_buffer") if from_buffer else (EXT,)
    with tier_query(image_device, fake, extensions=extensions):
        info = qcom_ext.query_image_info(
            image_device, ("R", "FLOAT"), (100, 30, 3), image_type="2d_array"
        )
    assert info.row_pitch == 512
    slice_query = C.CL_IMAGE_REQUIREMENTS_SLICE_PITCH_ALIGNMENT_EXT
    if from_buffer:  # 512 x 30 = 15360 rounded up to 4096
        assert (info.slice_pitch, info.slice_alignment) == (16384, 4096)
        assert slice_query in fake.params
    else:  # the core rule: whole rows
        assert (info.slice_pitch, info.slice_alignment) == (15360, 512)
        assert slice_query not in fake.params
    asked_max = [p for p in fake.params if 0x12B3 <= p <= 0x12B6]
    assert asked_max == [0x12B3, 0x12B4, 0x12B6]  # width, height, array size
    assert fake.calls[0]["desc"] == (0x10F3, 100, 30, 0, 3, 0, 0, 0, 0, 0)


@needs_images
@pytest.mark.parametrize(
    ("kind", "shape", "asked"),
    [
        ("1d", (64,), [0x12B3]),
        ("1d_buffer", (64,), [0x12B3]),
        ("1d_array", (64, 5), [0x12B3, 0x12B6]),
        ("3d", (8, 6, 5), [0x12B3, 0x12B4, 0x12B5]),
    ],
)
def test_only_the_maxima_the_spec_allows_for_the_type_are_asked(image_device, kind, shape, asked):
    fake = FakeRequirements()
    with tier_query(image_device, fake):
        info = qcom_ext.query_image_info(image_device, ("RGBA", "FLOAT"), shape, image_type=kind)
    assert [p for p in fake.params if 0x12B3 <= p <= 0x12B6] == asked
    row_query = C.CL_IMAGE_REQUIREMENTS_ROW_PITCH_ALIGNMENT_EXT
    if kind == "1d_buffer":  # a buffer's own layout: no row alignment asked or applied
        assert row_query not in fake.params and info.row_pitch == 64 * 16
    else:
        assert info.row_pitch == max(shape[0] * 16, 256)  # rounded up to 256 bytes


@needs_images
def test_a_driver_maximum_refuses_the_image_and_releases_the_context(image_device):
    fake, ledger = (
        FakeRequirements({C.CL_IMAGE_REQUIREMENTS_MAX_HEIGHT_EXT: (20, 4)}),
        (ContextLedger()),
    )
    with (
        tier_query(image_device, fake, ledger),
        pytest.raises(ConfigError, match=r"height of 30 exceeds CL_IMAGE_REQUIREMENTS_MAX_HEIGHT"),
    ):
        qcom_ext.query_image_info(image_device, ("RGBA", "UNORM_INT8"), (100, 30))
    assert fake.params == [0x12B3, 0x12B4]  # nothing asked after the refusal
    assert ledger.released == ledger.made and len(ledger.made) == 1


@needs_images
def test_driver_errors_are_typed_and_release_the_context(image_device):
    fake, ledger = FakeRequirements(status=C.CL_INVALID_IMAGE_FORMAT_DESCRIPTOR), ContextLedger()
    with tier_query(image_device, fake, ledger), pytest.raises(CLError) as caught:
        qcom_ext.query_image_info(image_device, ("RGBA", "UNORM_INT8"), (64, 64))
    assert caught.value.routine == "clGetImageRequirementsInfoEXT"
    assert caught.value.code == C.CL_INVALID_IMAGE_FORMAT_DESCRIPTOR
    assert "CL_IMAGE_REQUIREMENTS_MAX_WIDTH_EXT of a 2d CL_RGBA/CL_UNORM_INT8 image" in str(
        caught.value
    )
    assert ledger.released == ledger.made and len(ledger.made) == 1


@needs_images
def test_a_context_the_driver_refuses_is_a_typed_error(image_device):
    fake, ledger = FakeRequirements(), ContextLedger(create_status=C.CL_OUT_OF_HOST_MEMORY)
    with tier_query(image_device, fake, ledger), pytest.raises(CLError) as caught:
        qcom_ext.query_image_info(image_device, ("RGBA", "UNORM_INT8"), (64, 64))
    assert caught.value.routine == "clCreateContext" and caught.value.code == -6
    assert fake.calls == [] and ledger.released == []


@needs_images
def test_a_qualcomm_format_is_refused_before_any_call(image_device):
    fake, ledger = FakeRequirements(), ContextLedger()
    with tier_query(image_device, fake, ledger), pytest.raises(ConfigError, match="element size"):
        qcom_ext.query_image_info(image_device, "QCOM_NV12/UNORM_INT8", (64, 64))
    assert fake.calls == [] and ledger.made == []


@needs_images
def test_the_native_extension_wins_over_its_tier(image_device):
    fake = FakeRequirements()

    def native(device, flags, fmt, desc, param, size, value, size_ret):
        ffi.memmove(value, (4096).to_bytes(8, "little"), 8)
        size_ret[0] = 8
        return 0

    with tier_query(image_device, fake, extensions=(INFO, EXT), clQueryImageInfoQCOM=native):
        info = qcom_ext.query_image_info(image_device, ("RGBA", "UNORM_INT8"), (64, 64))
    assert info.path == "native" and info.row_pitch == 4096 and fake.calls == []


@needs_images
def test_disabling_the_tier_computes_without_asking(image_device, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", EXT)
    fake, ledger = FakeRequirements(), ContextLedger()
    with tier_query(image_device, fake, ledger):
        info = qcom_ext.query_image_info(image_device, ("RGBA", "UNORM_INT8"), (64, 64))
    assert info.path == "fallback" and fake.calls == [] and ledger.made == []


@needs_images
def test_a_missing_entry_point_computes_with_one_warning(image_device):
    platform = next(c for c in DEVICES if c.device_id == image_device).platform_id
    if driver.extension_function(platform, "clGetImageRequirementsInfoEXT") is not None:
        pytest.skip("this driver has clGetImageRequirementsInfoEXT")
    with claiming(image_device, extensions=[EXT]), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        info = qcom_ext.query_image_info(image_device, ("RGBA", "UNORM_INT8"), (64, 64))
    assert info.path == "fallback"
    messages = [str(w.message) for w in seen if issubclass(w.category, QcomExtWarning)]
    assert len(messages) == 1 and "lacks clGetImageRequirementsInfoEXT" in messages[0]


# ---- cl_khr_external_memory_dma_buf: import_dmabuf's Khronos tier ------------------------

ON_TIER = {"extra": KHR_DMA_BUF, "drop": DMABUF}  # the fake 740, its dma-buf import Khronos


@pytest.fixture(autouse=True)
def fake_wrapping(fake_cl_objects):
    fake_cl_objects(memobj, "wrap")


@pytest.fixture
def memfd():
    with memfds.memfd(8192) as fd:
        yield fd


def same_file(fd: int) -> tuple[int, int]:
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


def acquired(fake: FakeExternalDriver, handle: int) -> list:
    """The command sequence a Khronos import must leave: one acquire of ``handle`` on a
    queue of the context's device, waited for, the queue released."""
    return [
        ("clCreateCommandQueueWithProperties", CTX, DEVICE),
        ("acquire", QUEUE, [handle], 0, True),
        ("clFinish", QUEUE),
        ("clReleaseCommandQueue", QUEUE),
    ]


@needs_memfd
@pytest.mark.parametrize("flags", ["read_write", "read_only"])
def test_dmabuf_buffer_goes_to_create_buffer_with_properties(memfd, flags):
    before = open_fds()
    with FakeExternalDriver(**ON_TIER) as fake:
        buf = qcom_ext.import_dmabuf(FakeContext(), memfd, 4096, flags=flags)
        (call,) = fake.imports
        key, fd = call.properties
        assert key == C.CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR == 0x2067
        assert fd != memfd and call.fd_target == same_file(memfd)  # a dup of the caller's fd
        assert call.routine == "clCreateBufferWithProperties" and call.size == 4096
        assert call.flags == access_flags(flags)  # no host-pointer flags, no host_ptr
        assert call.host_ptr == 0
        handle = buf.int_ptr
        assert fake.commands == acquired(fake, handle)
        assert getattr(buf, khr_external.MARK) == DMABUF_KHR
        assert mappings() == 0  # zero-copy: nothing mapped, nothing copied
        assert fake.owned == {handle: fd}
        driver.clReleaseMemObject(ffi.cast("cl_mem", handle))  # the driver lets go of it
    assert fake.released == [handle] and open_fds() == before
    os.fstat(memfd)  # the caller's fd was never closed


@needs_memfd
def test_dmabuf_size_is_the_whole_fd_without_qualcomm_padding(memfd):
    fake = FakeExternalDriver(**ON_TIER)
    fake.device_info[0x40A0] = struct.pack("<Q", 64)  # CL_DEVICE_EXT_MEM_PADDING (Qualcomm's)
    with fake:
        qcom_ext.import_dmabuf(FakeContext(), memfd)
        with pytest.raises(ConfigError, match="holds 8192 bytes; 16384 bytes do not fit"):
            qcom_ext.import_dmabuf(FakeContext(), memfd, 16384)
    assert [call.size for call in fake.imports] == [8192]


@needs_memfd
def test_dmabuf_image_goes_to_create_image_with_properties(memfd):
    with FakeExternalDriver(**ON_TIER) as fake:
        qcom_ext.import_dmabuf(
            FakeContext(), memfd, image_format="RGBA/UNORM_INT8", shape=(16, 8), row_pitch=128
        )
    (call,) = fake.imports
    assert call.routine == "clCreateImageWithProperties"
    assert call.properties[0] == 0x2067 and call.fd_target == same_file(memfd)
    assert call.format == (C.CL_RGBA, C.CL_UNORM_INT8)
    assert call.desc["image_type"] == C.CL_MEM_OBJECT_IMAGE2D
    assert (call.desc["image_width"], call.desc["image_height"]) == (16, 8)
    assert (call.desc["image_row_pitch"], call.desc["mem_object"]) == (128, 0)
    assert call.flags == C.CL_MEM_READ_WRITE and call.host_ptr == 0


@needs_memfd
def test_a_driver_refusal_is_typed_and_closes_only_the_dup(memfd):
    before = open_fds()
    fake = FakeExternalDriver(**ON_TIER)
    fake.status = C.CL_INVALID_DEVICE
    expected = (
        r"clCreateBufferWithProperties failed: CL_INVALID_DEVICE \(-33\): flags "
        r"CL_MEM_READ_WRITE, CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, size 4096"
    )
    with fake, pytest.raises(CLError, match=expected):
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096)
    assert open_fds() == before  # the dup is closed, nothing else
    os.fstat(memfd)
    assert fake.commands == [] and fake.owned == {} and fake.released == []


@needs_memfd
def test_a_failed_acquire_releases_the_object(memfd):
    before = open_fds()
    fake = FakeExternalDriver(**ON_TIER)
    fake.acquire_status = C.CL_INVALID_MEM_OBJECT
    with fake, pytest.raises(CLError, match="clEnqueueAcquireExternalMemObjectsKHR failed"):
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096)
    assert len(fake.released) == 1  # released once; the driver closed the fd it owned
    assert fake.commands[-1] == ("clReleaseCommandQueue", QUEUE)
    assert fake.owned == {} and open_fds() == before
    os.fstat(memfd)


@needs_memfd
def test_protected_memory_never_takes_the_tier(memfd):
    with FakeExternalDriver(**ON_TIER) as fake, pytest.raises(ExtensionUnavailable) as caught:
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096, protected=True)
    assert "never mapped into host memory nor imported through a Khronos tier" in str(caught.value)
    assert fake.imports == [] and fake.commands == [] and mappings() == 0


def test_a_protected_context_never_takes_the_tier_nor_a_mapping():
    caps = [DeviceCaps.from_info(extensions=KHR_DMA_BUF, disabled=())]
    memory = ExternalMemory.dmabuf(7)
    assert import_route(caps, memory)[0] == "khr"
    with pytest.raises(ExtensionUnavailable, match="dma-buf of a protected context is never"):
        import_route(caps, memory, protected_context=True)
    plain = [DeviceCaps.from_info(extensions="", disabled=())]
    assert import_route(plain, memory)[0] == "mapped"
    with pytest.raises(ExtensionUnavailable, match="never mapped into host memory"):
        import_route(plain, memory, protected_context=True)


@needs_memfd
def test_the_native_import_wins_over_the_tier(memfd):
    with FakeExternalDriver(extra=KHR_DMA_BUF) as fake:
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096)
    assert fake.imports == [] and len(fake.buffers) == 1  # clCreateBuffer with the struct
    assert fake.buffers[0].flags & C.CL_MEM_EXT_HOST_PTR_QCOM


def test_without_the_base_a_dmabuf_is_mapped():
    caps = probed(edited(DMABUF, DMABUF_KHR))
    route, extension, reason = import_route([caps], ExternalMemory.dmabuf(7))
    assert (route, extension) == ("mapped", DMABUF)
    assert f"{DMABUF_KHR} advertised, but its base cl_khr_external_memory" in reason


@needs_memfd
def test_a_cache_policy_on_the_tier_says_it_has_no_effect(memfd):
    with FakeExternalDriver(**ON_TIER), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096)  # the default: no warning
        qcom_ext.import_dmabuf(FakeContext(), memfd, 4096, cache_policy="uncached")
    messages = [str(w.message) for w in seen if issubclass(w.category, QcomExtWarning)]
    assert messages == [
        "cache_policy='uncached' has no effect on an import through "
        "cl_khr_external_memory_dma_buf (the driver picks the caching)"
    ]


# ---- cl_khr_external_memory_android_hardware_buffer ------------------------------------

AHB_TIER = {"extra": KHR_AHB, "host_bytes": 0}


def test_ahb_buffer_passes_the_pointer_and_size_zero():
    with FakeExternalDriver(**AHB_TIER) as fake:
        buf = qcom_ext.import_ahardwarebuffer(FakeContext(), 0x7F00ABC000)
        same = qcom_ext.import_ahardwarebuffer(FakeContext(), 0x7F00ABC000, 65536)
    first, second = fake.imports
    assert first.properties == [
        C.CL_EXTERNAL_MEMORY_HANDLE_ANDROID_HARDWARE_BUFFER_KHR,
        0x7F00ABC000,
    ]
    assert C.CL_EXTERNAL_MEMORY_HANDLE_ANDROID_HARDWARE_BUFFER_KHR == 0x2070
    assert (first.size, second.size) == (0, 0)  # the driver infers it; nonzero is an error
    assert first.flags == C.CL_MEM_READ_WRITE and first.host_ptr == 0
    assert getattr(buf, khr_external.MARK) == AHB_KHR and getattr(same, khr_external.MARK)
    assert [c[0] for c in fake.commands].count("acquire") == 2


def test_ahb_size_the_driver_did_not_infer_is_refused_and_released():
    with (
        FakeExternalDriver(**AHB_TIER) as fake,
        pytest.raises(ConfigError, match=r"holds 65536 bytes; .* \(pass size=0 or 65536\)"),
    ):
        qcom_ext.import_ahardwarebuffer(FakeContext(), 0x7F00ABC000, 4096)
    assert len(fake.released) == 1 and "acquire" not in [c[0] for c in fake.commands]


def test_ahb_image_lets_the_driver_infer_format_and_size():
    with FakeExternalDriver(**AHB_TIER) as fake:
        qcom_ext.import_ahardwarebuffer(
            FakeContext(), 0xA000, image_format="RGBA/UNORM_INT8", shape=(64, 32)
        )
        with pytest.raises(ConfigError, match=r"is a 64x32 image .* not the 64x16"):
            qcom_ext.import_ahardwarebuffer(
                FakeContext(), 0xA000, image_format="RGBA/UNORM_INT8", shape=(64, 16)
            )
    first, _ = fake.imports
    assert first.routine == "clCreateImageWithProperties"
    assert first.format is None and first.desc is None  # NULL: inferred by the driver
    assert first.properties == [0x2070, 0xA000]
    assert fake.released == [second_handle(fake)]


def second_handle(fake: FakeExternalDriver) -> int:
    """The handle of the second import (the fake counts handles from 0x5010)."""
    return 0x5000 + 0x10 * 2


# ---- handing imported memory back and forth --------------------------------------------


def test_release_and_acquire_external_enqueue_on_the_queue(cl_queue):
    calls = []

    def record(name):
        def entry(queue, count, mems, waits, wait_list, event):
            calls.append((name, addr(queue), [addr(mems[i]) for i in range(count)], waits))
            return 0

        return entry

    import pyopencl as cl

    buf = cl.Buffer(cl_queue.context, cl.mem_flags.READ_WRITE, 64)
    plain = cl.Buffer(cl_queue.context, cl.mem_flags.READ_WRITE, 64)
    setattr(buf, khr_external.MARK, DMABUF_KHR)  # as a Khronos import is marked
    device = cl_queue.device.int_ptr
    with claiming(
        device,
        extensions=["cl_khr_external_memory"],
        clEnqueueReleaseExternalMemObjectsKHR=record("release"),
        clEnqueueAcquireExternalMemObjectsKHR=record("acquire"),
    ):
        khr_external.release_external(cl_queue, buf)
        khr_external.acquire_external(cl_queue, buf)
        khr_external.release_external(cl_queue, plain)  # not a Khronos import: nothing
    q = cl_queue.int_ptr
    assert calls == [("release", q, [buf.int_ptr], 0), ("acquire", q, [buf.int_ptr], 0)]
    with pytest.raises(ConfigError, match=r"expected a pyopencl\.CommandQueue"):
        khr_external.release_external(cl_queue.context, buf)


# ---- selftest coverage of the tiers ----------------------------------------------------


@needs_images
def test_selftest_runs_the_image_tier_then_the_fallback(image_device):
    from qcom_ext.tools.selftest import run_selftest

    fake = FakeRequirements()
    with tier_query(image_device, fake):
        report = run_selftest(image_device, only=[INFO])
    item = report.extension(INFO)
    assert [run.path for run in item.runs] == [f"khr:{EXT}", "fallback"]
    tier, fallback = item.runs
    layout, over_buffer = tier.cases
    assert layout.ok and not layout.skipped and not layout.error
    assert fake.params  # the tier's run asked the driver
    # pocl makes no 2D image over a buffer: the check of the real layout says why it skipped
    assert "makes no 2D image over a buffer" in over_buffer.skipped
    assert [c.name for c in fallback.cases] == [layout.name]  # a khr-only check
    assert item.outcome == "pass" and report.ok


def test_selftest_plans_the_memory_tiers_and_skips_them_with_the_reason():
    from qcom_ext.tools.selftest import _registry

    dmabuf_cases = {c.name: c for c in _registry.cases_for(DMABUF)}
    handoff = dmabuf_cases["dma-buf handed back and forth (release_external / acquire_external)"]
    assert handoff.applies(f"khr:{DMABUF_KHR}") and not handoff.applies("native")
    assert dmabuf_cases["dma-buf written by the host, changed in place by a kernel"].applies(
        f"khr:{DMABUF_KHR}"
    )
    ahb = [c for c in _registry.cases_for(AHB) if c.applies(f"khr:{AHB_KHR}")]
    assert [c.name for c in ahb] == ["import of an AHardwareBuffer"]
    # where the tier is not advertised, the plan says so next to the path
    plan = plan_paths(probed(edited()), AHB)
    assert (f"khr:{AHB_KHR}", "not advertised") in plan.skipped
    plan = plan_paths(probed(edited(DMABUF, DMABUF_KHR)), DMABUF)
    assert (
        f"khr:{DMABUF_KHR}",
        "advertised, but its base cl_khr_external_memory is not advertised",
    ) in plan.skipped
