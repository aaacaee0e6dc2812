"""Device facts from real captures: the model when OpenCL does not name it (the kernel
driver's sysfs files), the OpenCL implementation, the OpenCL versions, the compiler as an
ordered value, the cl_qcom_* names qcom_ext does not handle, and the report at 80 columns.

The captures are the public ones in tests/data/README.md: the QCS8550 Linux board (Adreno
740, whose OpenCL strings name no model), the Adreno 730/650/640 Android drivers, a
Windows X1-85 driver string and Adreno 630 under Mesa's rusticl.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import adreno_strings
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from qcom_ext import REGISTRY, DeviceCaps
from qcom_ext.device.compiler_version import CompilerVersion
from qcom_ext.device.driver_strings import (
    DRIVERS,
    driver_kind,
    find_model,
    parse_opencl_c_version,
    parse_opencl_version,
)
from qcom_ext.device.kgsl import KgslFacts
from qcom_ext.tools import cli

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
ADRENO = adreno_strings()


def rusticl_extensions() -> str:
    """The partial rusticl list: notes (``#``) and the cut marker left out."""
    lines = (DATA / "fd630-rusticl-PARTIAL.txt").read_text().splitlines()
    text = " ".join(line for line in lines if not line.startswith("#"))
    return text.replace("[...]", " ")


#: Capture name -> the strings of DeviceCaps.from_info (tests/data/README.md).
CAPTURES: dict[str, dict] = {
    "qcs8550-740": dict(
        extensions=ADRENO["adreno740-cl3.0"],
        device_name="QUALCOMM ",
        device_version="OpenCL 3.0 ",
        vendor_id=0x5143,
        platform_name="QUALCOMM Snapdragon(TM)",
        platform_version="OpenCL 3.0 QUALCOMM build: commit unknown",
        driver_version="OpenCL 3.0 QUALCOMM build: commit unknown Compiler E031.42.20.00",
    ),
    "adreno730": dict(
        extensions=ADRENO["adreno730-cl3.0"],
        device_name="QUALCOMM Adreno(TM)",
        device_version="OpenCL 3.0 Adreno(TM) 730",
        vendor_id=0x5143,
        platform_version="OpenCL 3.0 QUALCOMM build: commit #16c1863 changeid #I6928db2619 "
        "Date: 01/19/23 Thu Local Branch:  Remote Branch: ",
        driver_version="OpenCL 3.0 QUALCOMM build: commit #16c1863 changeid #I6928db2619 "
        "Date: 01/19/23 Thu Local Branch:  Remote Branch:  Compiler E031.38.11.12",
    ),
    "adreno650": dict(
        extensions=ADRENO["adreno650-cl2.0"],
        device_version="OpenCL 2.0 Adreno(TM) 650",
        vendor_id=0x5143,
        driver_version="OpenCL 2.0 QUALCOMM build: commit #191610ae03 changeid #I1c9d8 "
        "Date: 09/17/20 Thu Local Branch: Remote Branch: "
        "refs/tags/AU_LINUX_ANDROID_LA.UM.9.12.10.00.00.582.274 Compiler E031.37.12.01",
    ),
    "adreno640": dict(
        extensions=ADRENO["adreno640-cl2.0"],
        device_version="OpenCL 2.0 Adreno(TM) 640",
        vendor_id=0x5143,
    ),
    "x1-85": dict(
        extensions="cl_khr_fp16 cl_qcom_perf_hint",
        device_name="Qualcomm(R) Adreno(TM) X1-85 GPU",
        device_version="OpenCL 3.0 Adreno(TM) X1-85",
        driver_version="OpenCL 3.0 QUALCOMM build: 827.0 Compiler DX.18.05.00",
        vendor_id=0x5143,
    ),
    "fd630-rusticl": dict(
        extensions=rusticl_extensions(),
        device_name="FD630",
        device_version="OpenCL 3.0 ",
        opencl_c_version="OpenCL C 1.2 ",
        driver_version="25.0.7-2",
        vendor_id=0x5143,
        platform_name="rusticl",
    ),
}
#: Capture -> (model, model_source, driver, label, compiler text, OpenCL version).
EXPECTED = {
    "qcs8550-740": (None, None, "qualcomm", "adreno-unknown-gpu", "E031.42.20.00", (3, 0)),
    "adreno730": ("730", "device_version", "qualcomm", "adreno-730-gpu", "E031.38.11.12", (3, 0)),
    "adreno650": ("650", "device_version", "qualcomm", "adreno-650-gpu", "E031.37.12.01", (2, 0)),
    "adreno640": ("640", "device_version", "qualcomm", "adreno-640-gpu", None, (2, 0)),
    "x1-85": ("X1-85", "device_version", "qualcomm", "adreno-x1-85-gpu", "DX.18.05.00", (3, 0)),
    "fd630-rusticl": ("630", "device_name", "rusticl", "rusticl-adreno-630-gpu", None, (3, 0)),
}


def capture(name: str, **kwargs) -> DeviceCaps:
    return DeviceCaps.from_info(**{**CAPTURES[name], "disabled": (), **kwargs})


# ---- the captures -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_every_capture_reports_its_facts(name):
    caps = capture(name)
    model, source, driver, label, compiler, opencl = EXPECTED[name]
    assert caps.is_adreno
    assert (caps.adreno_model, caps.model_source, caps.driver, caps.label) == (
        model,
        source,
        driver,
        label,
    )
    assert caps.adreno_compiler == compiler
    assert (caps.compiler_version is None) == (compiler is None)
    if compiler:
        assert caps.compiler_version.text == compiler
    assert caps.opencl_version == opencl
    assert caps.qualcomm_driver == (driver == "qualcomm")
    # mad24 is fast on Adreno hardware whatever the driver (Mesa's ir3 has 24-bit
    # multiplies too): the flag follows the hardware
    assert "-DUSE_MAD24" in caps.compiler_options()
    advertised = set(CAPTURES[name]["extensions"].split())
    for ext, status in caps.statuses.items():
        assert (status.path == "native") == (ext in advertised), (ext, status)


def test_qcs8550_model_comes_from_the_kernel_driver():
    """Device name ``QUALCOMM `` and version ``OpenCL 3.0 ``: only KGSL names the GPU."""
    caps = capture("qcs8550-740", kgsl=KgslFacts(gpu_model="Adreno740v2"))
    assert (caps.adreno_model, caps.model_source, caps.label) == (
        "740",
        "kgsl:gpu_model",
        "adreno-740-gpu",
    )
    by_chip = capture("qcs8550-740", kgsl=KgslFacts(gpu_model="", chip_id=0x07040001))
    assert (by_chip.adreno_model, by_chip.model_source) == ("740", "kgsl:chipid")
    data = json.loads(caps.to_json())
    assert data["adreno"]["model_source"] == "kgsl:gpu_model"
    assert "model from kgsl:gpu_model" in str(caps)


def test_strings_that_name_a_model_win_over_the_kernel_driver():
    caps = capture("adreno730", kgsl=KgslFacts(gpu_model="Adreno740v2"))
    assert (caps.adreno_model, caps.model_source) == ("730", "device_version")


def test_kernel_facts_never_name_a_device_that_is_not_qualcomms_driver():
    facts = KgslFacts(gpu_model="Adreno630v2")
    rusticl = capture("fd630-rusticl", device_name="", kgsl=facts)  # a name without FD630
    assert rusticl.adreno_model is None and rusticl.model_source is None
    pocl = DeviceCaps.from_info(
        extensions="", platform_name="Portable Computing Language", kgsl=facts, disabled=()
    )
    assert not pocl.is_adreno and pocl.adreno_model is None


def test_rusticl_adreno_is_adreno_hardware_but_not_qualcomms_driver():
    caps = capture("fd630-rusticl")
    assert caps.opencl_c_version_number == (1, 2)
    assert not any(s.path == "native" for s in caps.statuses.values())
    assert caps.unknown_qcom == ()
    assert "-DUSE_MAD24" in caps.compiler_options()  # a hardware fact: ir3 has mad.u24
    assert "rusticl" in caps.label
    # the Qualcomm compiler is never read from another implementation's strings
    faked = capture("fd630-rusticl", driver_version="Compiler E031.45.02.06")
    assert faked.compiler_version is None and faked.adreno_compiler is None


# ---- the OpenCL implementation ------------------------------------------------------------

DRIVER_CASES = [
    # (expected, keyword arguments of driver_kind)
    ("qualcomm", dict(vendor_id=0x5143)),
    ("qualcomm", dict(platform_name="QUALCOMM Snapdragon(TM)")),
    ("qualcomm", dict(driver_version="OpenCL 3.0 QUALCOMM build: 0838.2 Compiler E031.50")),
    ("qualcomm", dict(device_version="OpenCL 3.0 Adreno(TM) 740")),
    ("rusticl", dict(platform_name="rusticl", device_name="FD630", vendor_id=0x5143)),
    ("rusticl", dict(platform_name="rusticl", device_name="AMD Radeon", vendor_id=0x1002)),
    ("clvk", dict(platform_name="clvk", device_name="Adreno (TM) 740", vendor_id=0x5143)),
    # Microsoft's layer over D3D12 on Windows on Snapdragon: never Qualcomm's driver
    (
        "openclon12",
        dict(
            platform_name="OpenCLOn12",
            platform_version="OpenCL 3.0 D3D12 Implementation",
            device_name="Qualcomm(R) Adreno(TM) X1-85 GPU",
            vendor_id=0x5143,
        ),
    ),
    ("openclon12", dict(platform_version="OpenCL 1.2 D3D12 Implementation")),
    ("pocl", dict(platform_name="Portable Computing Language", vendor_id=0x10DE)),
    ("pocl", dict(platform_version="OpenCL 3.0 PoCL 6.0  Linux")),
    ("nvidia", dict(platform_name="NVIDIA CUDA", vendor_id=0x10DE)),
    ("nvidia", dict(vendor_id=0x10DE)),
    ("oclgrind", dict(platform_name="Oclgrind", device_name="Oclgrind Simulator")),
    ("intel", dict(platform_name="Intel(R) OpenCL Graphics", vendor_id=0x8086)),
    ("intel", dict(platform_name="Intel(R) OpenCL")),
    ("amd", dict(platform_name="AMD Accelerated Parallel Processing", vendor_id=0x1002)),
    ("amd", dict(platform_name="AMD Accelerated Parallel Processing")),
    ("other", dict(platform_name="Clover", device_name="FD630", vendor_id=0x5143)),
    ("other", dict(platform_name="", device_name="FD740")),
    ("other", dict(platform_name="Some Vendor OpenCL", vendor_id=0x1234)),
    ("other", dict()),
]


@pytest.mark.parametrize(("expected", "kwargs"), DRIVER_CASES)
def test_driver_kind(expected, kwargs):
    assert driver_kind(**kwargs) == expected


def test_every_driver_kind_is_covered():
    assert {expected for expected, _ in DRIVER_CASES} == set(DRIVERS)


@given(
    texts=st.lists(st.text(max_size=40), min_size=4, max_size=4),
    vendor=st.sampled_from([0, 0x5143, 0x10DE, 0x8086, 0x1002, 0x1234]),
)
def test_any_strings_give_one_known_driver(texts, vendor):
    name, version, platform, driver = texts
    kind = driver_kind(
        platform_name=platform, device_name=name, device_version=version,
        driver_version=driver, vendor_id=vendor,
    )  # fmt: skip
    assert kind in DRIVERS


@pytest.mark.parametrize(
    ("kwargs", "label"),
    [
        (dict(platform_name="Portable Computing Language", driver_version="3.1+debian",
              device_type="cpu"), "pocl-3.1-cpu"),
        (dict(platform_name="NVIDIA CUDA", device_name="NVIDIA H200", vendor_id=0x10DE,
              driver_version="550.54.15"), "nvidia-550.54.15-gpu"),
        (dict(device_version="OpenCL 3.0 Adreno(TM) 740", vendor_id=0x5143), "adreno-740-gpu"),
        (dict(platform_name="Oclgrind", device_name="Oclgrind Simulator",
              driver_version="21.10", device_type="cpu"), "oclgrind-21.10-cpu"),
        (dict(platform_name="clvk", device_name="Adreno (TM) 740", vendor_id=0x5143),
         "clvk-adreno-740-gpu"),
        (dict(platform_name="Clover", device_name="FD630", vendor_id=0x5143),
         "clover-adreno-630-gpu"),
        (dict(platform_name="OpenCLOn12", device_name="Qualcomm(R) Adreno(TM) X1-85 GPU",
              vendor_id=0x5143), "openclon12-adreno-x1-85-gpu"),
    ],
)  # fmt: skip
def test_labels(kwargs, label):
    """Existing labels (users' QCOM_EXT_TEST_DEVICES) stay exactly as they were; an Adreno
    under another implementation than Qualcomm's says which."""
    assert DeviceCaps.from_info(extensions="", disabled=(), **kwargs).label == label


# ---- model, versions and compiler from the strings ------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "found"),
    [
        (dict(device_version="OpenCL 3.0 Adreno(TM) 740"), ("740", "device_version")),
        (dict(device_name="QUALCOMM Adreno(TM) 619"), ("619", "device_name")),
        (dict(device_name="FD630"), ("630", "device_name")),
        (dict(device_name="Mesa FD618 (rev 2)"), ("618", "device_name")),
        (dict(opencl_c_version="OpenCL C 2.0 Adreno(TM) 650"), ("650", "opencl_c_version")),
        (dict(device_name="QUALCOMM ", device_version="OpenCL 3.0 "), None),
        (dict(device_name="XFD630"), None),
        (dict(device_name="FD6300"), None),
        (dict(device_version="FD630"), None),  # Mesa's form is a device name only
    ],
)
def test_find_model_names_its_source(kwargs, found):
    assert find_model(**kwargs) == found


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("OpenCL 3.0 Adreno(TM) 740", (3, 0)),
        ("OpenCL 3.0 ", (3, 0)),
        ("OpenCL 2.0 Adreno(TM) 650", (2, 0)),
        ("OpenCL 1.2 CUDA", (1, 2)),
        ("OpenCL 3.0 PoCL HSTR: pthread-x86_64", (3, 0)),
        ("OpenCL 12.34", (12, 34)),
        ("OpenCL C 1.2 ", None),  # a C version is not a device version
        ("OpenCL 3", None),
        ("Adreno OpenCL 3.0", None),
        ("", None),
    ],
)
def test_opencl_version(text, version):
    assert parse_opencl_version(text) == version


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("OpenCL C 1.2 ", (1, 2)),
        ("OpenCL C 3.0 Adreno(TM) 740", (3, 0)),
        ("OpenCL C 1.2 PoCL", (1, 2)),
        ("OpenCL 3.0 ", None),
        ("OpenCL C", None),
    ],
)
def test_opencl_c_version(text, version):
    assert parse_opencl_c_version(text) == version


COMPILER_FORMS = [
    # (driver version, platform version, family, numbers); sources: anchors-usage.md 4
    (
        "OpenCL 2.0 QUALCOMM build: commit #abc changeid #I12 Date: 10/05/21 Tue "
        "Local Branch: Remote Branch: Compiler E031.38.01.08",
        "",
        "E031",
        (38, 1, 8),
    ),
    ("OpenCL 3.0 QUALCOMM build: 0838.2 Compiler E031.50.15.00", "", "E031", (50, 15, 0)),
    ("OpenCL 3.0 QUALCOMM build: 0861.0 Compiler E17.51.03.00", "", "E17", (51, 3, 0)),
    ("OpenCL 3.0 QUALCOMM build: 827.0 Compiler DX.18.05.00", "", "DX", (18, 5, 0)),
    ("31.0.112.0 VDX.17.75.00", "", "DX", (17, 75, 0)),  # no word "Compiler"
    ("E031.45.02.06", "", "E031", (45, 2, 6)),
    ("OpenCL 3.0 QUALCOMM build: commit unknown", "OpenCL 3.0 Compiler E031.41.00.00", "E031",
     (41, 0, 0)),  # only the platform version names it
]  # fmt: skip


@pytest.mark.parametrize(("driver", "platform", "family", "numbers"), COMPILER_FORMS)
def test_every_compiler_form_gives_an_ordered_value(driver, platform, family, numbers):
    caps = DeviceCaps.from_info(
        extensions="",
        vendor_id=0x5143,
        driver_version=driver,
        platform_version=platform,
        disabled=(),
    )
    version = caps.compiler_version
    assert (version.family, version.numbers) == (family, numbers)
    assert caps.adreno_compiler == version.text  # the string field, from the same parse
    assert version >= CompilerVersion.of(family, numbers[0])
    assert json.loads(caps.to_json())["adreno"]["compiler_version"] == {
        "text": version.text,
        "family": family,
        "numbers": list(numbers),
    }


# ---- cl_qcom_* names qcom_ext does not handle -----------------------------------------------

UNKNOWN = (
    "cl_qcom_ahardwarebuffer_direct_import",  # in the registry: never reported
    "cl_qcom_local_memory_control",
    "cl_qcom_subgroup_uniform_load",
    "cl_qcom_subgroup_constant_load",
    "cl_qcom_extra_vector_types",
)


def test_unknown_qcom_names_are_reported_not_dropped():
    extensions = f"{ADRENO['adreno740-cl3.0']} {' '.join(UNKNOWN)} cl_khr_unknown_thing"
    caps = capture("adreno730", extensions=extensions)
    expected = tuple(sorted(set(UNKNOWN) - set(REGISTRY)))
    assert len(expected) == 4
    assert caps.unknown_qcom == expected
    assert json.loads(caps.to_json())["unknown_qcom"] == list(expected)
    text = " ".join(str(caps).split())
    assert f"also advertised, not handled by qcom_ext: {', '.join(expected)}" in text
    assert set(caps.statuses) == set(REGISTRY)  # still only the known ones get a path
    platform = DeviceCaps.from_info(
        extensions="", platform_extensions="cl_qcom_extra_vector_types", disabled=()
    )
    assert platform.unknown_qcom == ("cl_qcom_extra_vector_types",)
    assert capture("adreno640").unknown_qcom == ()


# ---- the report: --json keys, 80 columns ------------------------------------------------------

REPORTS = [
    capture("qcs8550-740", kgsl=KgslFacts(gpu_model="Adreno740v2")),
    capture("fd630-rusticl"),
    capture("adreno730", extensions=f"{ADRENO['adreno730-cl3.0']} {' '.join(UNKNOWN)}"),
    DeviceCaps.from_info(
        extensions="cl_khr_command_buffer cl_khr_subgroup_shuffle",
        platform_name="Portable Computing Language",
        platform_version="OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, "
        "LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG",
        device_name="pthread-skylake-avx512-Intel(R) Xeon(R) Processor",
        device_version="OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512",
        driver_version="3.1+debian",
        device_type="cpu",
        disabled=("cl_qcom_perf_hint",),
    ),
]


def with_trials(caps: DeviceCaps) -> DeviceCaps:
    """``caps`` with a crashed and a passed trial (the probe table lists them)."""
    from qcom_ext.device.verdicts import Verdict

    verdicts = [
        Verdict(
            "cl_qcom_extended_query_image_info", "the query", "crashed", "SIGSEGV", "2026-01-02"
        ),
        Verdict("cl_qcom_recordable_queues", "the trial recording", "ok", "", "2026-01-02"),
    ]
    return caps.with_verdicts({v.extension: v for v in verdicts})


REPORTS.append(with_trials(capture("adreno730")))


def assert_fits(text: str, width: int = 80) -> None:
    lines = text.splitlines()
    too_long = [line for line in lines if len(line.rstrip()) > width]
    assert not too_long, too_long
    words = {word.strip(",") for line in lines for word in line.split()}
    for name in REGISTRY:
        assert name in words, f"{name} is cut or missing"


@pytest.mark.parametrize("caps", REPORTS, ids=lambda caps: caps.label)
def test_str_fits_80_columns_without_cutting_names(caps):
    text = str(caps)
    assert_fits(text)
    for status in caps.statuses.values():  # every reason is shown, whole
        assert " ".join(status.reason.split()) in " ".join(text.split())
    for name in caps.unknown_qcom:
        assert name in text.split() or f"{name}," in text.split()


@pytest.mark.parametrize("caps", REPORTS, ids=lambda caps: caps.label)
def test_probe_table_fits_80_columns_without_cutting_names(caps):
    out = io.StringIO()
    cli._render(caps, Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert_fits(text)
    assert caps.summary() in " ".join(text.split())
    assert caps.driver in text and caps.label in text
    if caps.unknown_qcom:
        assert "also advertised, not handled by qcom_ext:" in text
    for name, verdict in caps.verdicts.items():
        assert any(
            line.split()[:2] == [name, verdict.outcome]
            for line in text.splitlines()[1:]
            if line.split()
        )


def test_driver_strings_are_shown_as_text_not_markup():
    """A driver string is untrusted: ``[/x]`` (rich's closing markup) is printed as is."""
    caps = DeviceCaps.from_info(
        extensions="cl_qcom_[/x]",
        device_name="[/bold] GPU",
        driver_version="1.0 [red]",
        platform_name="[/]",
        disabled=(),
    )
    out = io.StringIO()
    cli._render(caps, Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    for shown in ("[/bold] GPU", "1.0 [red]", "cl_qcom_[/x]"):
        assert shown in text


def test_probe_command_at_columns_80_and_its_json(monkeypatch, capsys):
    caps = REPORTS[2]
    monkeypatch.setattr(cli, "probe", lambda device=None, **kwargs: caps)
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["probe"]) == 0
    text = capsys.readouterr().out
    assert_fits(text)
    assert "qualcomm" in text and "E031.38.11.12" in text
    assert cli.main(["probe", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["device"]["driver"] == "qualcomm"
    assert report["device"]["opencl_version"] == [3, 0]
    assert report["device"]["opencl_c_version_number"] is None
    assert report["adreno"]["model_source"] == "device_version"
    assert report["adreno"]["compiler_version"] == {
        "text": "E031.38.11.12",
        "family": "E031",
        "numbers": [38, 11, 12],
    }
    assert report["unknown_qcom"] == list(caps.unknown_qcom)


def test_probe_of_this_machine_fits_80_columns():
    """``qcom-ext probe --all`` as a user runs it in an 80-column terminal."""
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-m", "qcom_ext", "probe", "--all"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    if result.returncode != 0 and "no OpenCL platform" in result.stderr:
        pytest.skip("no OpenCL platform")
    assert result.returncode == 0, result.stderr
    assert_fits(result.stdout)
