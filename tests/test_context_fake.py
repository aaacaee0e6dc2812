"""The native paths of create_context / create_queue / set_perf_hint on a fake Adreno.

cffi callbacks stand in for the driver (tests/fakes/driver.py): the info queries present an
Adreno 740 (or a device with the Khronos queue hints), and clCreateContext,
clCreateCommandQueue(WithProperties), clSetPerfHintQCOM and the release calls record
exactly what reaches them. The handles they return are fake, so the step that wraps a
handle into pyopencl (``_wrap_context`` / ``_wrap_queue``) is replaced by a stand-in
object; everything before and after it is the real code.
"""

from __future__ import annotations

import struct
import sys
import warnings

import pytest
from fakes.driver import (
    DEVICE,
    PLATFORM,
    addr,
    adreno740_device_info,
    cstr,
    fake_driver,
    platform_info,
)

import qcom_ext
from qcom_ext import CLError, ConfigError, ContextInfo, QcomExtWarning
from qcom_ext.binding.lib import C, ffi
from qcom_ext.ext import context as context_module

pytestmark = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little",
    reason="the byte layouts below are the LP64 little-endian ones",
)

CTX, QUEUE = 0xC0, 0xA0
PERF = {"high": 0x40C3, "normal": 0x40C4, "low": 0x40C5}
PRIORITY = {"high": 0x40CA, "normal": 0x40CB, "low": 0x40CC}
KHR = {"high": 1, "normal": 2, "low": 4}


def words(pointer, word: str) -> tuple[int, ...] | None:
    """A zero-terminated property list as the driver sees it, read from its raw bytes."""
    if pointer == ffi.NULL:
        return None
    typed = ffi.cast(f"{word} *", pointer)
    count = 0
    while typed[count] != 0:
        count += 2
    raw = ffi.buffer(ffi.cast("char *", pointer), (count + 1) * 8)[:]
    return struct.unpack(f"<{count + 1}{'q' if word == 'intptr_t' else 'Q'}", raw)


class FakeCL:
    """The fake driver: ``with FakeCL(...) as cl:`` substitutes every entry point used."""

    def __init__(
        self,
        extensions: str | None = None,
        platform_version: str = "OpenCL 3.0",
        platform_extensions: str = "cl_khr_icd",
        set_perf_hint: bool = True,
    ):
        self.device_info = adreno740_device_info()
        if extensions is not None:
            self.device_info[0x1030] = cstr(extensions)
        self.platform_info = platform_info(platform_version, platform_extensions)
        self.set_perf_hint = set_perf_hint
        self.calls: dict[str, list] = {}
        self.status = {"context": 0, "queue": 0, "hint": 0}

    def _log(self, name: str, *record) -> None:
        self.calls.setdefault(name, []).append(record)

    def count(self, name: str) -> int:
        return len(self.calls.get(name, []))

    def _create_context(self, props, num_devices, devices, notify, user_data, errcode):
        ids = [addr(devices[i]) for i in range(num_devices)]
        self._log("clCreateContext", words(props, "intptr_t"), ids)
        errcode[0] = self.status["context"]
        return ffi.NULL if self.status["context"] else ffi.cast("cl_context", CTX)

    def _create_queue_props(self, ctx, dev, props, errcode):
        self._log(
            "clCreateCommandQueueWithProperties",
            addr(ctx),
            addr(dev),
            words(props, "cl_queue_properties"),
        )
        errcode[0] = self.status["queue"]
        return ffi.NULL if self.status["queue"] else ffi.cast("cl_command_queue", QUEUE)

    def _create_queue(self, ctx, dev, properties, errcode):
        self._log("clCreateCommandQueue", addr(ctx), addr(dev), properties)
        errcode[0] = self.status["queue"]
        return ffi.NULL if self.status["queue"] else ffi.cast("cl_command_queue", QUEUE)

    def __enter__(self) -> FakeCL:
        extra = {
            "clCreateContext": self._create_context,
            "clReleaseContext": lambda c: self._log("clReleaseContext", addr(c)) or 0,
            "clCreateCommandQueueWithProperties": self._create_queue_props,
            "clCreateCommandQueue": self._create_queue,
            "clReleaseCommandQueue": lambda q: self._log("clReleaseCommandQueue", addr(q)) or 0,
            "clGetExtensionFunctionAddressForPlatform": lambda p, name: (
                self._log("lookup", addr(p), ffi.string(name)) or ffi.NULL
            ),
        }
        if self.set_perf_hint:
            extra["clSetPerfHintQCOM"] = lambda c, hint: (
                self._log("clSetPerfHintQCOM", addr(c), hint) or self.status["hint"]
            )
        self._block = fake_driver(self.device_info, self.platform_info, [], **extra)
        self._block.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._block.__exit__(*exc)


@pytest.fixture(autouse=True)
def fake_wrapping(fake_cl_objects):
    fake_cl_objects(context_module, "_wrap_context", "_wrap_queue")


def quiet_create(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ctx = qcom_ext.create_context(DEVICE, **kwargs)
    return ctx, [str(w.message) for w in caught if issubclass(w.category, QcomExtWarning)]


@pytest.mark.parametrize("perf", ["high", "normal", "low"])
@pytest.mark.parametrize("priority", ["high", "normal", "low"])
@pytest.mark.parametrize("protected", [False, True])
def test_native_context_properties_are_the_reference_tokens(perf, priority, protected):
    with FakeCL() as cl:
        ctx, messages = quiet_create(perf_hint=perf, priority_hint=priority, protected=protected)
    expected = (0x1084, PLATFORM, 0x40C2, PERF[perf], 0x40C9, PRIORITY[priority])
    expected += (0x40C7, 1, 0) if protected else (0,)
    assert cl.calls["clCreateContext"] == [(expected, [DEVICE])]
    assert messages == []
    assert ctx.int_ptr == CTX
    assert qcom_ext.context_info(ctx) == ContextInfo(perf, "native", priority, "native", protected)
    assert cl.count("clReleaseContext") == 0


def test_tokens_are_accepted_as_hints():
    with FakeCL() as cl:
        quiet_create(perf_hint=C.CL_PERF_HINT_LOW_QCOM, priority_hint=C.CL_PRIORITY_HINT_HIGH_QCOM)
    assert cl.calls["clCreateContext"][0][0] == (
        0x1084,
        PLATFORM,
        0x40C2,
        0x40C5,
        0x40C9,
        0x40CA,
        0,
    )


def test_set_perf_hint_reaches_clSetPerfHintQCOM():
    with FakeCL() as cl:
        ctx, _ = quiet_create(priority_hint="low")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            qcom_ext.set_perf_hint(ctx, "normal")
            qcom_ext.set_perf_hint(ctx, 0x40C5)
    assert cl.calls["clSetPerfHintQCOM"] == [(CTX, 0x40C4), (CTX, 0x40C5)]
    assert qcom_ext.context_info(ctx) == ContextInfo("low", "native", "low", "native", False)


def test_set_perf_hint_failure_is_a_clerror():
    with FakeCL() as cl:
        ctx, _ = quiet_create()
        cl.status["hint"] = C.CL_INVALID_PROPERTY
        with pytest.raises(
            CLError, match=r"clSetPerfHintQCOM failed: CL_INVALID_PROPERTY \(-64\)"
        ):
            qcom_ext.set_perf_hint(ctx, "high")
    assert qcom_ext.context_info(ctx).perf_hint is None  # unchanged on failure


def test_missing_clSetPerfHintQCOM_is_treated_as_absent():
    with FakeCL(set_perf_hint=False) as cl:
        ctx, _ = quiet_create()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            qcom_ext.set_perf_hint(ctx, "low")
    assert (PLATFORM, b"clSetPerfHintQCOM") in cl.calls["lookup"]
    messages = [str(w.message) for w in caught if w.category is QcomExtWarning]
    assert len(messages) == 1 and "clSetPerfHintQCOM" in messages[0], messages
    assert "perf_hint='low' -> fallback" in messages[0]  # what the hint does instead
    assert qcom_ext.context_info(ctx).perf_hint_path == "fallback"


def test_driver_refusal_is_a_clerror_naming_the_properties():
    with FakeCL() as cl:
        cl.status["context"] = C.CL_INVALID_PROPERTY
        with pytest.raises(CLError) as raised:
            qcom_ext.create_context(DEVICE, perf_hint="high", protected=True)
    message = str(raised.value)
    assert message.startswith("clCreateContext failed: CL_INVALID_PROPERTY (-64)")
    assert "CL_CONTEXT_PERF_HINT_QCOM=CL_PERF_HINT_HIGH_QCOM" in message
    assert "CL_CONTEXT_PROTECTED_QCOM=CL_TRUE" in message
    assert cl.count("clReleaseContext") == 0  # nothing was created


def test_context_is_released_when_wrapping_fails(monkeypatch):
    def broken(handle):
        raise RuntimeError("wrapping failed")

    monkeypatch.setattr(context_module, "_wrap_context", broken)
    with FakeCL() as cl, pytest.raises(RuntimeError, match="wrapping failed"):
        qcom_ext.create_context(DEVICE, perf_hint="low")
    assert cl.calls["clReleaseContext"] == [(CTX,)]
    assert context_module._lookup(CTX) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"perf_hint": "medium"}, r"perf_hint='medium' is not accepted; expected 'high'"),
        ({"perf_hint": 0x40CA}, r"CL_PERF_HINT_HIGH_QCOM \(0x40c3\)"),  # a priority token
        ({"priority_hint": 1.0}, r"priority_hint=1.0 is not accepted"),
        ({"priority_hint": True}, r"priority_hint=True is not accepted"),
        ({"priority_hint": "high", "perf_hint": ["low"]}, r"perf_hint=\['low'\]"),
        ({"protected": "yes"}, r"protected must be True or False"),
        ({"devices": "0:0"}, r"expected a pyopencl.Device or a cl_device_id handle"),
        ({"devices": []}, r"devices is empty"),
        ({"devices": [DEVICE, DEVICE]}, r"same device more than once"),
    ],
)
def test_bad_context_arguments_create_nothing(kwargs, message):
    kwargs = {"devices": DEVICE, **kwargs}
    with FakeCL() as cl, pytest.raises(ConfigError, match=message):
        qcom_ext.create_context(**kwargs)
    assert cl.count("clCreateContext") == 0


def test_disabled_extensions_take_the_fallback(monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_perf_hint")
    with FakeCL() as cl:
        ctx, messages = quiet_create(perf_hint="high", priority_hint="normal")
    assert cl.calls["clCreateContext"][0][0] == (0x1084, PLATFORM, 0x40C9, 0x40CB, 0)
    assert qcom_ext.context_info(ctx) == ContextInfo("high", "fallback", "normal", "native")
    assert len(messages) == 1 and "perf_hint='high' -> fallback" in messages[0]
    assert "priority_hint" not in messages[0]


def test_protected_disabled_is_refused(monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_protected_context")
    with FakeCL() as cl, pytest.raises(qcom_ext.ExtensionUnavailable, match="QCOM_EXT_DISABLE"):
        qcom_ext.create_context(DEVICE, protected=True)
    assert cl.count("clCreateContext") == 0


KHR_DEVICE = "cl_khr_fp16 cl_khr_priority_hints cl_khr_throttle_hints"


@pytest.mark.parametrize("where", ["device", "platform"])
def test_hints_map_to_khronos_queue_properties(where):
    exts = {"extensions": KHR_DEVICE}
    if where == "platform":  # pocl >= 6 lists the hints as platform extensions only
        exts = {"extensions": "cl_khr_fp16", "platform_extensions": f"cl_khr_icd {KHR_DEVICE}"}
    with FakeCL(**exts) as cl:
        ctx, messages = quiet_create(perf_hint="low", priority_hint="high")
        plain = qcom_ext.create_queue(ctx)
        override = qcom_ext.create_queue(ctx, priority="normal", profiling=True)
    assert cl.calls["clCreateContext"] == [(None, [DEVICE])]  # no vendor property sent
    info = qcom_ext.context_info(ctx)
    assert (info.perf_hint_path, info.priority_hint_path) == (
        "khr:cl_khr_throttle_hints",
        "khr:cl_khr_priority_hints",
    )
    assert len(messages) == 1
    assert "perf_hint='low' -> khr:cl_khr_throttle_hints" in messages[0]
    assert "CL_QUEUE_PRIORITY_KHR=CL_QUEUE_PRIORITY_HIGH_KHR" in messages[0]
    assert cl.calls["clCreateCommandQueueWithProperties"] == [
        (CTX, DEVICE, (0x1096, KHR["high"], 0x1097, KHR["low"], 0)),
        (CTX, DEVICE, (0x1093, 0x2, 0x1096, KHR["normal"], 0x1097, KHR["low"], 0)),
    ]
    assert (plain.int_ptr, override.int_ptr) == (QUEUE, QUEUE)


def test_set_perf_hint_on_the_khronos_path_changes_later_queues():
    with FakeCL(extensions=KHR_DEVICE) as cl:
        ctx, _ = quiet_create()
        with pytest.warns(QcomExtWarning, match="khr:cl_khr_throttle_hints"):
            qcom_ext.set_perf_hint(ctx, "high")
        qcom_ext.create_queue(ctx)
    assert cl.count("clSetPerfHintQCOM") == 0
    assert cl.calls["clCreateCommandQueueWithProperties"][0][2] == (0x1097, 1, 0)


@pytest.mark.parametrize("level", ["high", "normal", "low"])
def test_explicit_queue_hints(level):
    with FakeCL(extensions=KHR_DEVICE) as cl:
        ctx, _ = quiet_create()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            qcom_ext.create_queue(
                ctx, DEVICE, priority=level, throttle=level.upper(), out_of_order=True
            )
    assert cl.calls["clCreateCommandQueueWithProperties"] == [
        (CTX, DEVICE, (0x1093, 0x1, 0x1096, KHR[level], 0x1097, KHR[level], 0))
    ]


def test_rejected_queue_properties_are_named():
    with FakeCL(extensions=KHR_DEVICE) as cl:
        ctx, _ = quiet_create()
        cl.status["queue"] = C.CL_INVALID_QUEUE_PROPERTIES
        with pytest.raises(CLError) as raised:
            qcom_ext.create_queue(ctx, priority="high", profiling=True)
    assert str(raised.value).startswith(
        "clCreateCommandQueueWithProperties failed: CL_INVALID_QUEUE_PROPERTIES (-35): "
        "properties: CL_QUEUE_PRIORITY_KHR=CL_QUEUE_PRIORITY_HIGH_KHR, CL_QUEUE_PROFILING_ENABLE"
    )
    assert cl.count("clReleaseCommandQueue") == 0


def test_queue_is_released_when_wrapping_fails(monkeypatch):
    def broken(handle):
        raise RuntimeError("wrapping failed")

    with FakeCL() as cl:
        ctx, _ = quiet_create()
        monkeypatch.setattr(context_module, "_wrap_queue", broken)
        with pytest.raises(RuntimeError, match="wrapping failed"):
            qcom_ext.create_queue(ctx)
    assert cl.calls["clReleaseCommandQueue"] == [(QUEUE,)]


@pytest.mark.parametrize("profiling", [False, True])
def test_native_recordable_queue_uses_the_1x_entry_point(profiling):
    with FakeCL() as cl:
        ctx, _ = quiet_create()
        qcom_ext.create_queue(ctx, recordable=True, profiling=profiling)
    assert cl.calls["clCreateCommandQueue"] == [(CTX, DEVICE, (1 << 30) | (2 if profiling else 0))]
    assert cl.count("clCreateCommandQueueWithProperties") == 0


def test_recordable_on_a_non_native_device_is_an_ordinary_in_order_queue():
    with FakeCL(extensions=KHR_DEVICE) as cl:
        ctx, _ = quiet_create()
        qcom_ext.create_queue(ctx, recordable=True)
    assert cl.calls["clCreateCommandQueueWithProperties"] == [(CTX, DEVICE, (0,))]
    assert cl.count("clCreateCommandQueue") == 0


def test_hints_on_queues_without_a_properties_list_are_no_ops():
    khr_everywhere = f"{KHR_DEVICE} cl_qcom_recordable_queues"
    with FakeCL(extensions=khr_everywhere) as cl:
        ctx, _ = quiet_create()
        with pytest.warns(QcomExtWarning, match="priority='low' is a no-op: clCreateCommandQueue"):
            qcom_ext.create_queue(ctx, recordable=True, priority="low")
    assert cl.calls["clCreateCommandQueue"] == [(CTX, DEVICE, 1 << 30)]


def test_opencl_1x_platforms_use_clCreateCommandQueue():
    with FakeCL(platform_version="OpenCL 1.2", extensions=KHR_DEVICE) as cl:
        ctx, _ = quiet_create()
        with pytest.warns(QcomExtWarning, match="throttle='high' is a no-op"):
            qcom_ext.create_queue(ctx, profiling=True, throttle="high")
    assert cl.calls["clCreateCommandQueue"] == [(CTX, DEVICE, 2)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"recordable": True, "out_of_order": True}, r"recordable=True needs an in-order queue"),
        ({"profiling": 1}, r"profiling must be True or False, got 1"),
        ({"priority": "urgent"}, r"priority='urgent' is not accepted.*CL_QUEUE_PRIORITY_MED_KHR"),
        ({"throttle": 0x40C3}, r"throttle=16579 is not accepted"),
        ({"device": 0x9999}, r"device 39321 \(0x9999\) is not a device handle"),
        ({"device": 2.5}, r"expected a pyopencl.Device"),
    ],
)
def test_bad_queue_arguments_create_nothing(kwargs, message):
    with FakeCL() as cl:
        ctx, _ = quiet_create()
        with pytest.raises(ConfigError, match=message):
            qcom_ext.create_queue(ctx, **kwargs)
    assert cl.count("clCreateCommandQueue") + cl.count("clCreateCommandQueueWithProperties") == 0


def test_protected_context_queues_cannot_profile():
    with FakeCL() as cl:
        ctx, _ = quiet_create(protected=True)
        with pytest.raises(ConfigError, match="CL_INVALID_QUEUE_PROPERTIES"):
            qcom_ext.create_queue(ctx, profiling=True)
        qcom_ext.create_queue(ctx)
    assert cl.calls["clCreateCommandQueueWithProperties"] == [(CTX, DEVICE, (0,))]


def test_context_info_rejects_non_contexts():
    with pytest.raises(ConfigError, match=r"expected a pyopencl\.Context, got int"):
        qcom_ext.context_info(CTX)
