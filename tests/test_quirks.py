"""The table of known driver and compiler quirks (qcom_ext.device.quirks): where each entry
applies (range edges, models, drivers), what it does (flags, downgrades), and that
docs/QUIRKS.md lists it with its source. Real builds and the displays:
test_quirks_builds.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import adreno_strings

from qcom_ext import DeviceCaps
from qcom_ext.device import quirks as quirks_module
from qcom_ext.device.compiler_version import CompilerVersion
from qcom_ext.device.extensions import REGISTRY, khronos_names
from qcom_ext.device.quirks import (
    ADRENO,
    OCLGRIND,
    QUALCOMM,
    QUIRKS,
    CompilerRange,
    Quirk,
    applying,
    downgraded,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "QUIRKS.md"
BY_ID = {q.id: q for q in QUIRKS}
REDUCE = BY_ID["e031-sub-group-reduce-sigsegv"]
ALL_FLAGS = [flag for quirk in QUIRKS for flag in quirk.flags]


def qualcomm(compiler: str | None, model: str | None = "740", extensions: str = "", **kw):
    """A report from the strings of Qualcomm's driver (Android form) with ``compiler``."""
    tail = f" Compiler {compiler}" if compiler else ""
    return DeviceCaps.from_info(
        extensions=extensions,
        device_version=f"OpenCL 3.0 Adreno(TM) {model}" if model else "OpenCL 3.0 ",
        device_name="QUALCOMM Adreno(TM)" if model else "QUALCOMM ",
        driver_version=f"OpenCL 3.0 QUALCOMM build: commit #c1fe339905{tail}",
        platform_name="QUALCOMM Snapdragon(TM)",
        platform_version="OpenCL 3.0 QUALCOMM build: commit unknown",
        vendor_id=0x5143,
        **{"disabled": (), **kw},
    )


def ids(caps: DeviceCaps) -> list[str]:
    return [q.id for q in caps.quirks]


# ---- the table ------------------------------------------------------------------------------


def test_every_entry_is_well_formed():
    assert len(BY_ID) == len(QUIRKS), "quirk ids are unique"
    known = set(REGISTRY) | khronos_names()
    for quirk in QUIRKS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", quirk.id), quirk.id
        assert quirk.summary and quirk.source.startswith(("https://", "http://")), quirk.id
        assert all(url.startswith("https://") for url in quirk.see_also), quirk.id
        assert {ext for ext, _ in quirk.downgrades} <= known, quirk.id
        families = [r.family for r in quirk.compilers]
        assert len(families) == len(set(families)), f"{quirk.id}: one range per family"
        if quirk.driver == QUALCOMM:  # a Qualcomm-driver entry says which versions
            assert quirk.compilers, quirk.id


def test_bad_entries_are_refused():
    with pytest.raises(ValueError, match="driver"):
        Quirk("x-y", "s", "https://example.org", driver="mesa")
    with pytest.raises(ValueError, match="-DNAME"):
        Quirk("x-y", "s", "https://example.org", flags=("-D NOT A FLAG",))
    with pytest.raises(ValueError, match="family"):
        CompilerRange("E32", below=(1,))


def doc_sections() -> dict[str, str]:
    parts = re.split(r"^### `([^`]+)`$", DOC.read_text(), flags=re.MULTILINE)
    return {
        parts[i]: re.split(r"^## ", parts[i + 1], flags=re.MULTILINE)[0]
        for i in range(1, len(parts), 2)
    }


def test_the_doc_lists_every_entry_with_its_source():
    sections = doc_sections()
    assert list(sections) == [q.id for q in QUIRKS], "docs/QUIRKS.md: one section per entry"
    for quirk in QUIRKS:
        text = " ".join(sections[quirk.id].split())
        assert f"Applies to: {quirk.where}" in text, quirk.id
        assert f"Effect: {quirk.effect}" in text, quirk.id
        for url in (quirk.source, *quirk.see_also):
            assert url in text, (quirk.id, url)
    # the README links the probe page, which links this one
    assert "docs/probe.md" in (ROOT / "README.md").read_text()
    assert "](QUIRKS.md)" in (ROOT / "docs" / "probe.md").read_text()


# ---- where each entry applies ---------------------------------------------------------------

# (quirk, compiler, model, applies): the versions the public threads name, and the
# "vector subgroup broadcast support" that real llama.cpp logs print for their compilers.
PINNED = [
    ("e031-sub-group-reduce-sigsegv", "E031.37.12.01", "660", True),
    ("e031-sub-group-reduce-sigsegv", "E031.38.10.99", "660", True),
    ("e031-sub-group-reduce-sigsegv", "E031.38.11.00", "660", False),
    ("e031-sub-group-reduce-sigsegv", "E031.38.11.14", "730", False),
    ("e031-sub-group-reduce-sigsegv", "E17.01.00", "850", False),
    ("e031-sub-group-reduce-sigsegv", "DX.17.75.00", "X1-85", False),
    ("e031-q6k-flat-mul-mat-wrong", "E031.38.01.08", "642L", True),
    ("e031-q6k-flat-mul-mat-wrong", "E031.41.03.64", "740", True),
    ("e031-q6k-flat-mul-mat-wrong", "E031.45.02.06", "750", False),
    ("e031-q6k-flat-mul-mat-wrong", "E031.50.19.13", "840", False),
    ("e031-q6k-flat-mul-mat-wrong", "E17.51.00.00", "850", False),
    ("e031-38-gqa-r4-attention-wrong", "E031.38.11.14", "730", True),
    ("e031-38-gqa-r4-attention-wrong", "E031.38.11.14", "642L", False),
    ("e031-38-gqa-r4-attention-wrong", "E031.41.03.64", "740", False),
    ("e031-41-fa-mixed-type-build-crash", "E031.41.03.64", "740", True),
    ("e031-41-fa-mixed-type-build-crash", "E031.45.02.06", "750", False),
    ("e031-41-fa-mixed-type-build-crash", "E031.38.11.14", "730", False),
    ("a7x-moe-repack-miscompile", "E031.41.03.64", "740", True),
    ("a7x-moe-repack-miscompile", "E031.45.02.06", "750", True),
    ("a7x-moe-repack-miscompile", "E031.50.19.13", "840", False),
    ("e17-fa-moe-build-crash", "E17.51.00.00", "850", True),
    ("e17-fa-moe-build-crash", "E031.50.19.13", "840", False),
    ("no-vector-sub-group-broadcast", "E031.41.03.64", "740", True),  # llama.cpp#25870
    ("no-vector-sub-group-broadcast", "E031.42.20.00", "740", True),  # CodeLinaro#17
    ("no-vector-sub-group-broadcast", "E031.50.19.13", "840", False),  # llama.cpp#25477
    ("no-vector-sub-group-broadcast", "E031.50.15.00", "643", False),  # whisper.cpp#3935
    ("no-vector-sub-group-broadcast", "DX.17.75.00", "X1-85", False),
    ("no-vector-sub-group-broadcast", "E17.51.00.00", "850", False),
]


@pytest.mark.parametrize(("quirk_id", "compiler", "model", "expected"), PINNED)
def test_the_versions_the_threads_name(quirk_id, compiler, model, expected):
    assert (quirk_id in ids(qualcomm(compiler, model))) == expected


def _step(numbers: tuple[int, ...], delta: int) -> tuple[int, ...]:
    """``numbers`` (padded to 4, two digits after the first) moved by ``delta`` steps."""
    a, b, c, d = (*numbers, 0, 0, 0, 0)[:4]
    value = ((a * 100 + b) * 100 + c) * 100 + d + delta
    return (value // 1000000, value // 10000 % 100, value // 100 % 100, value % 100)


def _edges(r: CompilerRange) -> list[tuple[tuple[int, ...], bool]]:
    """(version, inside) just below, at and just above each edge of ``r``."""
    low, high = r.at_least, r.below
    cases = []
    if high is not None:
        cases += [(_step(high, -1), True), (_step(high, 0), False), (_step(high, 1), False)]
    if low is not None:
        inside_above = high is None or _step(low, 1) < _step(high, 0)
        cases += [(_step(low, -1), False), (_step(low, 0), True), (_step(low, 1), inside_above)]
    if low is None and high is None:
        cases += [((1, 0, 0, 0), True), ((99, 99, 99, 99), True)]
    return cases


RANGES = [(q, r) for q in QUIRKS for r in q.compilers]


@pytest.mark.parametrize(("quirk", "r"), RANGES, ids=[f"{q.id}:{r.family}" for q, r in RANGES])
def test_each_range_edge(quirk, r):
    model = sorted(quirk.models)[0] if quirk.models else "740"
    for numbers, inside in _edges(r):
        version = CompilerVersion(r.family, numbers).text
        assert (quirk.id in ids(qualcomm(version, model))) == inside, version
    other = next(f for f in ("E031", "E17", "DX") if f not in {x.family for x in quirk.compilers})
    assert quirk.id not in ids(qualcomm(f"{other}.38.01.00", model))


@pytest.mark.parametrize("quirk", [q for q in QUIRKS if q.models], ids=lambda q: q.id)
def test_model_keyed_entries_apply_on_their_models_only(quirk):
    r = quirk.compilers[0]
    version = CompilerVersion(r.family, _step(r.at_least or r.below or (40,), 0)).text
    if r.below and not r.at_least:
        version = CompilerVersion(r.family, _step(r.below, -1)).text
    for model in sorted(quirk.models):
        assert quirk.id in ids(qualcomm(version, model)), model
    for model in ("642L", "660", "830", "X1-85"):
        assert quirk.id not in ids(qualcomm(version, model)), model
    assert quirk.id not in ids(qualcomm(version, None)), "an unknown model"


def test_unknown_compiler_or_model_keys_nothing():
    no_compiler = qualcomm(None, "740")
    assert ids(no_compiler) == ["adreno-mad24"]
    # QCS8550 Linux: no OpenCL string names the model; the compiler is known
    board = qualcomm("E031.42.20.00", None)
    assert ids(board) == [
        "adreno-mad24",
        "e031-q6k-flat-mul-mat-wrong",
        "e031-41-fa-mixed-type-build-crash",
        "no-vector-sub-group-broadcast",
    ]
    assert board.adreno_model is None and "a7x-moe-repack-miscompile" not in ids(board)


def test_the_compiler_may_be_in_the_platform_version_or_have_no_word_compiler():
    caps = DeviceCaps.from_info(
        extensions="",
        device_version="OpenCL 3.0 Adreno(TM) 660",
        driver_version="OpenCL 3.0 QUALCOMM build: commit unknown",
        platform_name="QUALCOMM Snapdragon(TM)",
        platform_version="OpenCL 3.0 QUALCOMM build: commit #1 Compiler E031.37.12.01",
        vendor_id=0x5143,
        disabled=(),
    )
    assert REDUCE.id in ids(caps)
    windows = {
        "extensions": "",
        "device_name": "Qualcomm(R) Adreno(TM) X1-85 GPU",
        "platform_name": "QUALCOMM Snapdragon(TM)",
        "vendor_id": 0x5143,
        "disabled": (),
    }
    old = DeviceCaps.from_info(driver_version="OpenCL 3.0 QUALCOMM VDX.16.10.00", **windows)
    new = DeviceCaps.from_info(driver_version="OpenCL 3.0 QUALCOMM VDX.17.75.00", **windows)
    assert "no-vector-sub-group-broadcast" in ids(old)
    assert "no-vector-sub-group-broadcast" not in ids(new)
    assert applying(old) == old.quirks


OTHERS = {
    "pocl": dict(
        platform_name="Portable Computing Language",
        device_name="cpu-haswell-AMD EPYC",
        driver_version="3.1+debian",
        device_type="cpu",
    ),
    "nvidia": dict(
        platform_name="NVIDIA CUDA",
        device_name="NVIDIA H100 80GB HBM3",
        driver_version="550.54.15",
        vendor_id=0x10DE,
    ),
    "rusticl-fd630": dict(
        platform_name="rusticl",
        device_name="FD630",
        device_version="OpenCL 3.0 ",
        driver_version="25.0.7-2",
        opencl_c_version="OpenCL C 1.2 ",
        vendor_id=0x5143,
    ),
    # strings that would match if the implementation were not checked
    "rusticl-adreno-with-compiler-text": dict(
        platform_name="rusticl",
        device_name="FD660",
        device_version="OpenCL 3.0 Adreno(TM) 660",
        driver_version="25.0.7 QUALCOMM Compiler E031.37.12.01",
        vendor_id=0x5143,
    ),
    "clvk-on-adreno": dict(
        platform_name="clvk",
        device_name="Adreno (TM) 660",
        device_version="OpenCL 3.0 Adreno(TM) 660",
        driver_version="Vulkan QUALCOMM 512.502 Compiler E031.37.12.01",
        vendor_id=0x5143,
    ),
}


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_qualcomm_driver_entries_never_apply_to_other_drivers(name):
    caps = DeviceCaps.from_info(extensions="cl_khr_subgroups", disabled=(), **OTHERS[name])
    assert not [q for q in caps.quirks if q.driver == QUALCOMM], ids(caps)
    assert "-DQCOM_EXT_QUIRK_NO_SUB_GROUP_REDUCE" not in caps.compiler_options()
    # only the entry for any driver on Adreno hardware, where the hardware is Adreno
    assert ids(caps) == (["adreno-mad24"] if caps.is_adreno else [])


def test_oclgrind_gets_its_entry_only():
    grind = DeviceCaps.from_info(
        extensions="", platform_name="Oclgrind", device_name="Oclgrind Simulator"
    )
    assert ids(grind) == ["oclgrind-bitreverse"]
    assert grind.compiler_options() == ("-DQCOM_EXT_QUIRK_OCLGRIND",)


def test_applies_is_the_rule_for_every_driver_kind():
    v = CompilerVersion.of("E031", 37)
    assert REDUCE.applies(QUALCOMM, "660", v)
    assert not REDUCE.applies(ADRENO, "660", v) and not REDUCE.applies(None, "660", v)
    mad24 = BY_ID["adreno-mad24"]
    assert mad24.applies(QUALCOMM, None, None) and mad24.applies(ADRENO, None, None)
    assert not mad24.applies(OCLGRIND, None, None) and not mad24.applies(None, None, None)


# ---- what each entry does -------------------------------------------------------------------


def test_flags_reach_the_compiler_options_in_table_order():
    old = qualcomm("E031.37.12.01", "660", extensions="cl_qcom_bitreverse")
    options = old.compiler_options()
    assert options == (
        "-DQCOM_EXT_NATIVE_cl_qcom_bitreverse",
        "-DUSE_MAD24",
        "-DQCOM_EXT_QUIRK_NO_SUB_GROUP_REDUCE",
    )
    trial = old.trial_options("cl_qcom_dot_product8", "fallback")
    assert trial == ("-DUSE_MAD24", "-DQCOM_EXT_QUIRK_NO_SUB_GROUP_REDUCE")
    fixed = qualcomm("E031.38.11.00", "660", extensions="cl_qcom_bitreverse")
    assert "-DQCOM_EXT_QUIRK_NO_SUB_GROUP_REDUCE" not in fixed.compiler_options()
    report_only = [q for q in old.quirks if not q.flags]
    assert report_only and all(q.effect == "report only" for q in report_only)


HANG = Quirk(
    "test-bitreverse-wrong",
    "qcom_bitreverse returns wrong bits",
    "https://example.org/issues/1",
    compilers=(CompilerRange("E031", below=(40,)),),
    downgrades=(("cl_qcom_bitreverse", "qcom_bitreverse returns wrong bits"),),
)
TIER = Quirk(
    "test-bit-ops-wrong",
    "bit_reverse returns wrong bits",
    "https://example.org/issues/2",
    models=frozenset({"730"}),
    compilers=(CompilerRange("E031", below=(40,)),),
    downgrades=(("cl_khr_extended_bit_ops", "bit_reverse returns wrong bits"),),
)


def test_downgrades_take_the_path_without_the_extension(monkeypatch):
    monkeypatch.setattr(quirks_module, "QUIRKS", (*QUIRKS, HANG, TIER))
    exts = adreno_strings()["adreno740-cl3.0"] + " cl_khr_extended_bit_ops"
    fine = qualcomm("E031.41.03.64", "740", extensions=exts)
    assert fine.path("cl_qcom_bitreverse") == "native" and not fine.broken
    old = qualcomm("E031.38.11.14", "740", extensions=exts)
    assert old.path("cl_qcom_bitreverse") == "khr:cl_khr_extended_bit_ops"
    reason = old.status("cl_qcom_bitreverse").reason
    assert "quirk test-bitreverse-wrong: https://example.org/issues/1" in reason
    assert "-DQCOM_EXT_KHR_cl_qcom_bitreverse" in old.compiler_options()
    assert "-DQCOM_EXT_NATIVE_cl_qcom_bitreverse" not in old.compiler_options()
    both = qualcomm("E031.38.11.14", "730", extensions=exts)  # the tier goes too
    assert both.path("cl_qcom_bitreverse") == "fallback"
    assert "test-bit-ops-wrong" in both.status("cl_qcom_bitreverse").reason
    report = json.loads(both.to_json())
    assert [q["id"] for q in report["quirks"]][-2:] == [
        "test-bitreverse-wrong",
        "test-bit-ops-wrong",
    ]
    assert {pair[0] for pair in report["broken"]} == {
        "cl_qcom_bitreverse",
        "cl_khr_extended_bit_ops",
    }
    # later changes of the report keep them
    assert both.with_disabled(["cl_qcom_perf_hint"]).path("cl_qcom_bitreverse") == "fallback"
    assert both.with_verdicts({}).broken == both.broken


def test_a_downgrade_keeps_an_earlier_reason():
    merged = downgraded([("cl_qcom_bitreverse", "its trial crashed")], [HANG, TIER])
    assert merged == (
        ("cl_qcom_bitreverse", "its trial crashed"),
        (
            "cl_khr_extended_bit_ops",
            "bit_reverse returns wrong bits (quirk test-bit-ops-wrong: https://example.org/issues/2)",
        ),
    )
