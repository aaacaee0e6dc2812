"""qcom_ext.device.shared: the caps of a context's devices, the path they share, labels,
and require(), the one way a native path gets its entry point or the typed error."""

from __future__ import annotations

import pyopencl as cl
import pytest
from fakes.driver import DEVICE, PLATFORM, adreno740_device_info, fake_driver, platform_info

from qcom_ext import ConfigError, DeviceCaps, ExtensionUnavailable, QcomExtWarning
from qcom_ext.binding.lib import ffi
from qcom_ext.device import shared
from qcom_ext.device.probe import clear_cache, probe
from qcom_ext.errors import EntryPointMissing

PERF = "cl_qcom_perf_hint"


def caps(extensions: str = "", **kwargs) -> DeviceCaps:
    return DeviceCaps.from_info(extensions=extensions, disabled=(), **kwargs)


def test_devices_that_disagree_share_the_fallback():
    native, absent = caps(PERF), caps()
    assert shared.shared_path([native, native], PERF) == "native"
    assert shared.shared_path([native, absent], PERF) == "fallback"
    assert shared.all_native([native], PERF) and not shared.all_native([native, absent], PERF)
    ext, reason = shared.why_not_native([native, absent], PERF)
    assert ext == PERF and reason.startswith(f"{absent.label}: ")


def test_the_path_without_an_entry_point_is_the_one_below_native():
    recordable = caps("cl_qcom_recordable_queues cl_khr_command_buffer")
    assert shared.shared_path([recordable], "cl_qcom_recordable_queues") == "native"
    assert shared.absent_path([recordable], "cl_qcom_recordable_queues") == (
        "khr:cl_khr_command_buffer"
    )


def test_caps_of_every_spelling_of_a_device(device_caps):
    device = device_caps.device()
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    for where in (device, device_caps.device_id, context, queue, [device], device_caps):
        assert shared.caps_of(where) == (device_caps,), where
    assert shared.context_caps(context) == (device_caps,)
    assert shared.label(device) == device_caps.label == shared.label(device_caps)
    assert shared.labels([device_caps]) == f"{device_caps.label} ({device_caps.device_name})"


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ([], "devices is empty"),
        ("gpu", "expected a pyopencl.Device or a cl_device_id handle"),
        (0, "expected a pyopencl.Device or a cl_device_id handle"),
        (True, "expected a pyopencl.Device or a cl_device_id handle"),
    ],
)
def test_caps_of_refuses_what_names_no_device(where, message):
    with pytest.raises(ConfigError, match=message):
        shared.caps_of(where)


def test_a_device_listed_twice_is_refused(device_caps):
    with pytest.raises(ConfigError, match="more than once"):
        shared.caps_of([device_caps.device(), device_caps.device_id])


def test_context_caps_wants_a_context(device_caps):
    with pytest.raises(ConfigError, match=r"expected a pyopencl\.Context, got Device"):
        shared.context_caps(device_caps.device())


def test_context_caps_asks_the_driver_for_a_bare_handle(device_caps):
    """A stand-in with a handle and no device list (as the fake drivers use) gets its
    devices from clGetContextInfo."""
    context = cl.Context([device_caps.device()])

    class Bare:
        int_ptr, devices = context.int_ptr, None

    assert shared.context_caps(Bare()) == (device_caps,)
    assert shared.context_devices(context.int_ptr) == [device_caps.device_id]


def test_require_refuses_a_path_that_is_not_native():
    with pytest.raises(ExtensionUnavailable, match="not advertised") as info:
        shared.require(caps(), PERF, "clSetPerfHintQCOM")
    assert info.value.extension == PERF
    with pytest.raises(ExtensionUnavailable, match="does not advertise it"):
        shared.require(caps(), "cl_khr_subgroups", "clGetKernelSubGroupInfoKHR")


@pytest.fixture
def fake_adreno():
    clear_cache()
    yield
    clear_cache()


def test_require_returns_the_entry_point_or_names_every_missing_one(fake_adreno):
    info = adreno740_device_info()
    no_address = lambda platform, name: ffi.NULL  # noqa: E731  (nothing else is exported)
    with fake_driver(
        info,
        platform_info(),
        [],
        clSetPerfHintQCOM=lambda ctx, hint: 7,
        clGetExtensionFunctionAddressForPlatform=no_address,
    ):
        adreno = probe(DEVICE)
        assert adreno.platform_id == PLATFORM and adreno.path(PERF) == "native"
        function = shared.require(adreno, PERF, "clSetPerfHintQCOM")
        assert function(ffi.NULL, 0) == 7
        with pytest.raises(EntryPointMissing) as missing:
            shared.require_all(
                adreno, "cl_qcom_recordable_queues", ("clNewRecordingQCOM", "clEndRecordingQCOM")
            )
    assert str(missing.value) == (
        f"cl_qcom_recordable_queues is advertised by {adreno.label}, but the driver lacks "
        "clNewRecordingQCOM, clEndRecordingQCOM"
    )


RECORDABLE = "cl_qcom_recordable_queues"


def test_a_route_is_the_shared_path_with_its_reason():
    native, absent = caps(PERF), caps()
    route = shared.Route.of([native, absent], PERF)
    assert (route.path, route.native, route.tier, route.lacking) == (
        "fallback",
        False,
        "fallback",
        PERF,
    )
    assert route.reason.startswith(f"{absent.label}: not advertised")
    assert route.labels == shared.labels([native, absent])
    both = shared.Route.of([native], PERF, "cl_qcom_priority_hint")  # the first one lacking
    assert (both.path, both.lacking, both.extension) == ("fallback", "cl_qcom_priority_hint", PERF)
    assert shared.Route.of([native], PERF).native and shared.route(native, PERF).native
    with pytest.raises(ConfigError, match="at least one device and one extension"):
        shared.Route.of([], PERF)


def test_refuse_raises_the_one_typed_error():
    route = shared.Route.of([caps()], "cl_qcom_protected_context")
    assert route.path == "unavailable" and route.unavailable()
    with pytest.raises(ExtensionUnavailable, match=r"; no host mapping$") as info:
        route.refuse("no host mapping")
    assert info.value.extension == "cl_qcom_protected_context"
    with pytest.raises(ExtensionUnavailable, match=r"on opencl-gpu \(.*\): other$") as info:
        route.refuse(extension=PERF, reason="other")
    assert info.value.extension == PERF


def test_downgrade_warns_once_and_takes_the_path_below_native():
    recordable = caps(f"{RECORDABLE} cl_khr_command_buffer")
    route = shared.Route.of([recordable], RECORDABLE)
    missing = EntryPointMissing(f"{RECORDABLE} is advertised, but the driver lacks it")
    with pytest.warns(QcomExtWarning) as seen:
        after = route.downgrade(missing, "recordings take the Khronos path", stacklevel=1)
    assert len(seen) == 1 and seen[0].filename == __file__  # stacklevel 1: downgrade's caller
    assert (
        str(seen[0].message) == f"{recordable.label}: {missing}; recordings take the Khronos path"
    )
    assert (after.path, after.reason, after.lacking) == (
        "khr:cl_khr_command_buffer",
        str(missing),
        RECORDABLE,
    )
    assert route.native  # the route itself is a value: unchanged


def test_require_on_a_khronos_route_asks_the_tier(monkeypatch):
    asked = []
    monkeypatch.setattr(
        shared, "require_all", lambda c, ext, names: asked.append(ext) or {n: n for n in names}
    )
    route = shared.Route.of([caps(f"{RECORDABLE} cl_khr_command_buffer")], RECORDABLE)
    assert route.require("clNewRecordingQCOM") == "clNewRecordingQCOM" and asked == [RECORDABLE]
    khr = shared.Route.of([caps("cl_khr_command_buffer")], RECORDABLE)
    assert khr.require("a", "b") == {"a": "a", "b": "b"} and asked[-1] == "cl_khr_command_buffer"
