"""The probe's decisions from strings alone: real Adreno extension strings, edge cases."""

from __future__ import annotations

import json
import string

import pytest
from conftest import adreno_strings
from hypothesis import given
from hypothesis import strategies as st

from qcom_ext import REGISTRY, ConfigError, DeviceCaps, Limits
from qcom_ext.device.caps import parse_adreno_compiler, parse_adreno_model, parse_disabled
from qcom_ext.device.compiler_version import CompilerVersion
from qcom_ext.device.extensions import khronos_names, resolve

ADRENO = adreno_strings()
DEVICE_VERSION = {
    "adreno640-cl2.0": "OpenCL 2.0 Adreno(TM) 640",
    "adreno650-cl2.0": "OpenCL 2.0 Adreno(TM) 650",
    "adreno730-cl3.0": "OpenCL 3.0 Adreno(TM) 730",
    "adreno740-cl3.0": "OpenCL 3.0 Adreno(TM) 740",
}


def adreno_caps(stem: str, **kwargs) -> DeviceCaps:
    return DeviceCaps.from_info(
        extensions=ADRENO[stem],
        device_version=DEVICE_VERSION[stem],
        device_name="QUALCOMM Adreno(TM)",
        vendor_id=0x5143,
        **{"disabled": (), **kwargs},
    )


def test_all_four_real_strings_are_present():
    assert sorted(ADRENO) == sorted(DEVICE_VERSION)


@pytest.mark.parametrize("stem", sorted(DEVICE_VERSION))
def test_every_advertised_qcom_extension_is_native(stem):
    caps = adreno_caps(stem)
    advertised = set(ADRENO[stem].split())
    assert caps.is_adreno
    assert caps.adreno_model == stem[len("adreno") : len("adreno") + 3]
    assert caps.label == f"adreno-{caps.adreno_model}-gpu"
    assert set(caps.statuses) == set(REGISTRY)
    for name, status in caps.statuses.items():
        if name in advertised:
            assert status.path == "native", (name, status)
            assert "advertised by the device" in status.reason
        else:
            assert status.path != "native", (name, status)
    # every cl_qcom_* in the string that the reference documents is recognised
    documented = {e for e in advertised if e.startswith("cl_qcom_")}
    assert documented <= set(REGISTRY)


def test_adreno740_specifics():
    caps = adreno_caps("adreno740-cl3.0")
    for name in (
        "cl_qcom_onchip_global_memory",
        "cl_qcom_large_buffer",
        "cl_qcom_bfloat16_product",
        "cl_qcom_protected_context",
    ):
        assert caps.path(name) == "native"
    # a Linux board: no Android buffer import, and nothing can stand in for it
    assert caps.path("cl_qcom_android_ahardwarebuffer_host_ptr") == "unavailable"
    assert caps.path("cl_qcom_ion_host_ptr") == "unavailable"


def test_adreno640_lacks_recording_and_falls_back():
    caps = adreno_caps("adreno640-cl2.0")
    assert caps.path("cl_qcom_recordable_queues") == "fallback"
    assert caps.path("cl_qcom_dot_product8") == "fallback"
    assert caps.path("cl_qcom_create_buffer_from_image") == "native"


def test_kill_switch_forces_fallback_and_is_reported():
    caps = adreno_caps("adreno740-cl3.0", disabled=["cl_qcom_perf_hint", "cl_qcom_dot_product8"])
    assert caps.path("cl_qcom_perf_hint") == "fallback"
    assert "disabled by QCOM_EXT_DISABLE" in caps.status("cl_qcom_perf_hint").reason
    # the Khronos tier (cl_khr_integer_dot_product is on this device) is skipped too
    assert caps.path("cl_qcom_dot_product8") == "fallback"
    assert caps.disabled == {"cl_qcom_perf_hint", "cl_qcom_dot_product8"}
    assert caps.to_dict()["disabled"] == ["cl_qcom_dot_product8", "cl_qcom_perf_hint"]


def test_kill_switch_all_and_protected_never_falls_back():
    caps = adreno_caps("adreno740-cl3.0", disabled=["all"])
    assert not any(s.path == "native" for s in caps.statuses.values())
    status = caps.status("cl_qcom_protected_context")
    assert status.path == "unavailable"
    assert "never fall back" in status.reason


def test_kill_switch_from_environment(monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_recordable_queues")
    caps = DeviceCaps.from_info(extensions=ADRENO["adreno730-cl3.0"])
    assert caps.path("cl_qcom_recordable_queues") == "fallback"
    assert caps.path("cl_qcom_perf_hint") == "native"


@pytest.mark.parametrize("bad", ["cl_qcom_nope", "all,cl_qcom_perf_hnt", "recordable_queues"])
def test_unknown_kill_switch_names_are_an_error(bad):
    with pytest.raises(ConfigError, match="QCOM_EXT_DISABLE names unknown") as info:
        parse_disabled(bad)
    assert bad.split(",")[-1] in str(info.value)
    assert "cl_qcom_recordable_queues" in str(info.value)  # lists what is accepted


def test_extension_names_are_never_substring_matched():
    caps = DeviceCaps.from_info(extensions="cl_qcom_ext_host_ptr_iocoherent", disabled=())
    assert caps.path("cl_qcom_ext_host_ptr_iocoherent") == "native"
    assert caps.path("cl_qcom_ext_host_ptr") == "fallback"
    assert not caps.has("cl_qcom_ext_host_ptr")


def test_khronos_tiers():
    caps = DeviceCaps.from_info(
        extensions="cl_khr_command_buffer cl_khr_integer_dot_product cl_khr_subgroup_shuffle "
        "cl_intel_required_subgroup_size cl_khr_extended_bit_ops",
        extension_versions={"cl_khr_command_buffer": "0.9.4"},
        limits=Limits(sub_group_sizes=(8, 16, 32)),
        disabled=(),
    )
    assert caps.path("cl_qcom_recordable_queues") == "khr:cl_khr_command_buffer"
    assert caps.status("cl_qcom_recordable_queues").reason.endswith("cl_khr_command_buffer 0.9.4")
    assert caps.path("cl_qcom_dot_product8") == "khr:cl_khr_integer_dot_product"
    assert caps.path("cl_qcom_subgroup_shuffle") == "khr:cl_khr_subgroup_shuffle"
    assert caps.path("cl_qcom_reqd_sub_group_size") == "khr:cl_intel_required_subgroup_size"
    assert caps.path("cl_qcom_bitreverse") == "khr:cl_khr_extended_bit_ops"
    assert {"-DQCOM_EXT_SUB_GROUP_SIZE_HALF=16", "-DQCOM_EXT_SUB_GROUP_SIZE_FULL=32"} <= set(
        caps.compiler_options()
    )
    no_sizes = DeviceCaps.from_info(extensions="cl_intel_required_subgroup_size", disabled=())
    assert no_sizes.path("cl_qcom_reqd_sub_group_size") == "fallback"  # NVIDIA: 0x4108 empty
    assert (
        "CL_DEVICE_SUB_GROUP_SIZES_INTEL is empty"
        in no_sizes.status("cl_qcom_reqd_sub_group_size").reason
    )
    assert not any("SUB_GROUP_SIZE" in o for o in no_sizes.compiler_options())
    disabled = DeviceCaps.from_info(
        extensions="cl_khr_command_buffer", disabled=["cl_khr_command_buffer"]
    )
    assert disabled.path("cl_qcom_recordable_queues") == "fallback"
    assert "cl_khr_command_buffer disabled" in disabled.status("cl_qcom_recordable_queues").reason


def test_platform_level_khronos_extensions_count():
    caps = DeviceCaps.from_info(
        extensions="", platform_extensions="cl_khr_icd cl_khr_priority_hints", disabled=()
    )
    assert caps.path("cl_qcom_priority_hint") == "khr:cl_khr_priority_hints"
    assert caps.path("cl_qcom_perf_hint") == "fallback"


def test_image2d_from_buffer_needs_a_pitch_alignment():
    zero = DeviceCaps.from_info(
        extensions="cl_khr_image2d_from_buffer",
        limits=Limits(image_pitch_alignment=0),
        disabled=(),
    )
    assert zero.path("cl_qcom_create_buffer_from_image") == "fallback"
    assert (
        "CL_DEVICE_IMAGE_PITCH_ALIGNMENT is 0"
        in zero.status("cl_qcom_create_buffer_from_image").reason
    )
    ok = DeviceCaps.from_info(
        extensions="cl_khr_image2d_from_buffer",
        limits=Limits(image_pitch_alignment=64),
        disabled=(),
    )
    assert ok.path("cl_qcom_create_buffer_from_image") == "khr:cl_khr_image2d_from_buffer"


def test_image_fallbacks_need_images():
    caps = DeviceCaps.from_info(extensions="", image_support=False, disabled=())
    for name, ext in REGISTRY.items():
        if ext.needs_images:
            assert caps.path(name) == "unavailable"
            assert "CL_DEVICE_IMAGE_SUPPORT" in caps.status(name).reason
    assert caps.path("cl_qcom_recordable_queues") == "fallback"


@pytest.mark.parametrize(
    ("texts", "model"),
    [
        (("OpenCL 3.0 Adreno(TM) 740",), "740"),
        (("OpenCL 2.0 Adreno(TM) 650",), "650"),
        (("", "Qualcomm(R) Adreno(TM) X1-85 GPU"), "X1-85"),
        (("OpenCL C 2.0 Adreno(TM) 619",), "619"),
        (("OpenCL 3.0 PoCL HSTR: pthread", "NVIDIA H200"), None),
    ],
)
def test_adreno_model(texts, model):
    assert parse_adreno_model(*texts) == model


@pytest.mark.parametrize(
    ("driver", "compiler"),
    [
        (
            "OpenCL 3.0 QUALCOMM build: commit #16c1863 changeid #I6928db2619 Date: 01/19/23 Thu "
            "Local Branch:  Remote Branch:  Compiler E031.38.11.12",
            "E031.38.11.12",
        ),
        (
            "OpenCL 2.0 QUALCOMM build: commit #191610ae03 changeid #I1c9d8 Date: 09/17/20 Thu "
            "Local Branch: Remote Branch: refs/tags/AU_LINUX_ANDROID_LA.UM.9.12.10.00.00.582.274 "
            "Compiler E031.37.12.01",
            "E031.37.12.01",
        ),
        ("OpenCL 3.0 QUALCOMM build: 827.0 Compiler DX.18.05.00", "DX.18.05.00"),
        ("OpenCL 2.0 QUALCOMM build: commit #xx Compiler E17.01.00", "E17.01.00"),
        ("31.0.112.0 VDX.17.75.00", "DX.17.75.00"),  # no word "Compiler" (llama.cpp#10693)
        ("E031.45.02.06", "E031.45.02.06"),
        ("3.1+debian", None),
        ("OpenCL 3.0 QUALCOMM build: commit unknown", None),
    ],
)
def test_adreno_compiler(driver, compiler):
    assert parse_adreno_compiler(driver) == compiler
    caps = DeviceCaps.from_info(extensions="", driver_version=driver, vendor_id=0x5143)
    assert caps.adreno_compiler == compiler  # the string field and the ordered value agree
    assert caps.compiler_version == CompilerVersion.parse(driver)


def test_windows_x1_report():
    caps = DeviceCaps.from_info(
        extensions="cl_khr_fp16 cl_qcom_perf_hint",
        device_name="Qualcomm(R) Adreno(TM) X1-85 GPU",
        device_version="OpenCL 3.0 Adreno(TM) X1-85",
        driver_version="OpenCL 3.0 QUALCOMM build: 827.0 Compiler DX.18.05.00",
        vendor_id=0x5143,
        disabled=(),
    )
    assert (caps.adreno_model, caps.adreno_compiler) == ("X1-85", "DX.18.05.00")
    assert caps.label == "adreno-x1-85-gpu"


def test_compiler_options_follow_the_paths():
    caps = adreno_caps("adreno740-cl3.0")
    options = caps.compiler_options()
    assert "-DQCOM_EXT_NATIVE_cl_qcom_bitreverse" in options
    assert "-DQCOM_EXT_NATIVE_cl_qcom_dot_product8" in options
    assert not any("perf_hint" in o for o in options)  # host-only extensions add nothing
    off = adreno_caps("adreno740-cl3.0", disabled=["cl_qcom_bitreverse"])
    assert "-DQCOM_EXT_NATIVE_cl_qcom_bitreverse" not in off.compiler_options()
    plain = DeviceCaps.from_info(extensions="cl_khr_extended_bit_ops", disabled=())
    assert plain.compiler_options() == ("-DQCOM_EXT_KHR_cl_qcom_bitreverse",)


def test_report_round_trips_through_json():
    caps = adreno_caps("adreno730-cl3.0")
    data = json.loads(caps.to_json())
    assert set(data["qcom"]) == set(REGISTRY)
    assert data["adreno"] == {
        "is_adreno": True,
        "model": "730",
        "compiler": None,
        "model_source": "device_version",
        "compiler_version": None,
    }
    assert data["qcom"]["cl_qcom_ml_ops"]["path"] == "native"
    assert "cl_qcom_recordable_queues" in str(caps)


def test_equal_inputs_give_equal_reports():
    first, second = adreno_caps("adreno650-cl2.0"), adreno_caps("adreno650-cl2.0")
    assert first is not second  # two reports built apart, not one compared with itself
    assert first == second and hash(first) == hash(second)
    assert first != adreno_caps("adreno740-cl3.0")  # and equality can fail


def test_unknown_extension_query_names_known_ones():
    with pytest.raises(KeyError, match="cl_qcom_perf_hint"):
        adreno_caps("adreno650-cl2.0").path("cl_qcom_typo")


_NAMES = sorted(set(REGISTRY) | khronos_names())
_JUNK = st.text(alphabet=string.ascii_letters + string.digits + "_-.", min_size=1, max_size=40)


@given(
    names=st.lists(st.one_of(st.sampled_from(_NAMES), _JUNK), max_size=40),
    separators=st.lists(st.sampled_from([" ", "  ", "\t", "\n"]), min_size=1, max_size=4),
    disabled=st.lists(st.sampled_from(_NAMES), max_size=5),
    images=st.booleans(),
)
def test_any_extension_string_gives_a_consistent_report(names, separators, disabled, images):
    text = "".join(n + separators[i % len(separators)] for i, n in enumerate(names))
    caps = DeviceCaps.from_info(
        extensions=text, disabled=disabled, image_support=images, vendor_id=0x5143
    )
    tokens = set(text.split())
    assert caps.extensions == tokens
    for name, status in caps.statuses.items():
        assert status.tier in {"native", "khr", "fallback", "unavailable"}
        assert status.reason
        assert (status.path == "native") == (name in tokens and name not in disabled)
        if status.tier == "khr":
            assert status.path[4:] in tokens and status.path[4:] in REGISTRY[name].khronos
    json.loads(caps.to_json())
    str(caps)


def test_khronos_usable_applies_the_same_rule_as_the_paths():
    caps = DeviceCaps.from_info(
        extensions="cl_khr_image2d_from_buffer cl_khr_command_buffer",
        platform_extensions="cl_khr_priority_hints",
        limits=Limits(image_pitch_alignment=0),
        disabled=["cl_khr_command_buffer"],
    )
    assert caps.khronos_usable("cl_khr_priority_hints")  # listed by the platform only
    assert not caps.khronos_usable("cl_khr_image2d_from_buffer")  # pitch alignment 0
    assert not caps.khronos_usable("cl_khr_command_buffer")  # kill switch
    assert not caps.khronos_usable("cl_khr_throttle_hints")  # not listed


def test_status_without_is_the_path_when_entry_points_are_missing():
    caps = adreno_caps("adreno740-cl3.0")
    assert caps.path("cl_qcom_dot_product8") == "native"
    assert caps.status_without("cl_qcom_dot_product8").path == "khr:cl_khr_integer_dot_product"
    assert caps.status_without("cl_qcom_recordable_queues").path == "fallback"
    protected = caps.status_without("cl_qcom_protected_context")
    assert protected.path == "unavailable" and "never fall back" in protected.reason
    with pytest.raises(KeyError, match="cl_qcom_perf_hint"):
        caps.status_without("cl_qcom_typo")


def test_oclgrind_gets_its_quirk_flag_and_others_do_not():
    grind = DeviceCaps.from_info(
        extensions="", platform_name="Oclgrind", device_name="Oclgrind Simulator"
    )
    assert "-DQCOM_EXT_QUIRK_OCLGRIND" in grind.compiler_options()
    pocl = DeviceCaps.from_info(extensions="", platform_name="Portable Computing Language")
    assert "-DQCOM_EXT_QUIRK_OCLGRIND" not in pocl.compiler_options()


def test_known_broken_khronos_tiers_are_not_used():
    exts = "cl_khr_subgroups cl_khr_subgroup_shuffle cl_intel_required_subgroup_size"
    common = dict(extensions=exts, limits=Limits(sub_group_sizes=(8, 16)), disabled=())
    broken = DeviceCaps.from_info(
        platform_name="Portable Computing Language", driver_version="5.0+debian", **common
    )
    fine = DeviceCaps.from_info(
        platform_name="Portable Computing Language", driver_version="6.0", **common
    )
    assert fine.path("cl_qcom_subgroup_shuffle") == "khr:cl_khr_subgroup_shuffle"
    assert broken.path("cl_qcom_subgroup_shuffle") == "fallback"
    assert "pocl 5.0" in broken.status("cl_qcom_subgroup_shuffle").reason
    assert broken.path("cl_qcom_reqd_sub_group_size") == "fallback"
    assert not broken.khronos_usable("cl_khr_subgroup_shuffle")
    assert "-DQCOM_EXT_KHR_cl_qcom_subgroup_shuffle" not in broken.compiler_options()
    assert json.loads(broken.to_json())["broken"][0][0] == "cl_khr_subgroup_shuffle"
    assert broken.broken[0][0] == "cl_khr_subgroup_shuffle" and fine.broken == ()


def test_broken_lives_on_the_report_and_limits_only_read_it():
    """``broken`` moved from Limits (it is not a limit) onto DeviceCaps; ``limits.broken``
    stays a read-only view of the report's list, and the old ways in are refused."""
    caps = DeviceCaps.from_info(
        extensions="cl_khr_command_buffer", disabled=(), broken=[("cl_khr_command_buffer", "b")]
    )
    assert caps.broken == (("cl_khr_command_buffer", "b"),)
    assert caps.limits.broken == caps.broken
    assert caps.path("cl_qcom_recordable_queues") == "fallback"
    assert "broken" not in json.loads(caps.to_json())["limits"]
    with pytest.raises(AttributeError):
        caps.limits.broken = ()
    with pytest.raises(TypeError):
        Limits(broken=())
    assert Limits().broken is None  # limits of no report
    with pytest.raises(ConfigError, match="broken="):
        resolve("cl_qcom_recordable_queues", set(), limits={"broken": [("x", "y")]})
