"""Synthetic reports from the real Adreno captures (issue 29, item 4): the probe's facts
come from real strings (tests/data/adreno*.txt and the driver strings published with
them, tests/data/captures.json), the verdicts are generated and the report says so."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from conftest import adreno_strings

from qcom_ext.errors import ConfigError
from qcom_ext.tools.fleet.from_capture import capture_strings, report_from_capture
from qcom_ext.tools.fleet.identity import identity_key
from qcom_ext.tools.fleet.report import schema

DATA = Path(__file__).parent / "data"
VALIDATOR = jsonschema.Draft202012Validator(schema())
#: What each capture's strings say: Adreno model, compiler as printed, its ordered key.
EXPECTED = {
    "adreno640-cl2.0": ("640", None, None),
    "adreno650-cl2.0": ("650", "E031.37.12.01", [0, 37, 12, 1]),
    "adreno730-cl3.0": ("730", "E031.38.11.12", [0, 38, 11, 12]),
    "adreno740-cl3.0": ("740", "E031.42.20.00", [0, 42, 20]),
}


def test_every_capture_has_its_published_strings():
    assert sorted(EXPECTED) == sorted(adreno_strings())
    published = json.loads((DATA / "captures.json").read_text())
    assert sorted(k for k in published if not k.startswith("_")) == sorted(EXPECTED)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_each_capture_gives_a_valid_labelled_report_with_its_real_strings(stem):
    report = report_from_capture(DATA / f"{stem}.txt")
    VALIDATOR.validate(report)
    model, compiler, key = EXPECTED[stem]
    ident = report["identity"]
    assert (ident["adreno_model"], ident["compiler_version"], ident["compiler_key"]) == (
        model,
        compiler,
        key,
    )
    assert report["synthetic"] is True and f"{stem}.txt" in report["synthetic_note"]
    assert "verdicts generated" in report["synthetic_note"]
    assert report["identity_key"] == identity_key(ident)
    strings = capture_strings(DATA / f"{stem}.txt")
    assert ident["device_version"] == strings["device_version"].strip()
    advertised = set(adreno_strings()[stem].split())
    assert set(report["probe"]["extensions"]) == advertised
    for check in report["checks"]:
        if check["path"] == "native" and check["extension"] not in advertised:
            assert check["verdict"] == "skip" and check["reason"] == "not advertised"
    ran = [c for c in report["checks"] if c["verdict"] not in ("skip", "unchecked")]
    assert ran and all(c["verdict"] == "pass" for c in ran)
    ran_natively = {c["extension"] for c in ran if c["path"] == "native"}
    assert ran_natively and ran_natively <= advertised
    assert report["probe"]["quirks"], "every Qualcomm driver gets at least adreno-mad24"


def test_the_four_captures_have_four_identities():
    keys = {report_from_capture(DATA / f"{stem}.txt")["identity_key"] for stem in EXPECTED}
    assert len(keys) == len(EXPECTED)


def test_verdicts_come_from_the_function_and_skips_from_the_paths():
    def verdict(extension, path, case):
        return "crash" if (extension, path) == ("cl_qcom_recordable_queues", "native") else "fail"

    report = report_from_capture(DATA / "adreno740-cl3.0.txt", verdicts=verdict)
    VALIDATOR.validate(report)
    by_id = {c["id"]: c["verdict"] for c in report["checks"]}
    assert by_id["cl_qcom_recordable_queues/native/recording"] == "crash"
    assert by_id["cl_qcom_bitreverse/native/bitreverse"] == "fail"
    assert by_id["cl_qcom_ion_host_ptr/native/ion"] == "skip"  # 740 has no ION import


def test_an_extension_string_with_strings_given_is_a_capture_too():
    text = adreno_strings()["adreno730-cl3.0"]
    strings = {"device_version": "OpenCL 3.0 Adreno(TM) 730", "driver_version": "Compiler E17.51"}
    report = report_from_capture(text, strings=strings, created="2026-11-28T00:00:00Z")
    VALIDATOR.validate(report)
    assert report["identity"]["compiler_key"] == [1, 51]
    assert report["created"] == "2026-11-28T00:00:00Z"
    assert report["identity"]["os_name"] == "unknown"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"verdicts": "skip"}, "skips follow the paths"),
        ({"verdicts": "flaky"}, "synthetic verdict 'flaky'"),
        ({"verdicts": 3}, "expected a verdict name or a function"),
        ({"strings": {"serial": "x"}}, r"capture strings \['serial'\]"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        report_from_capture(DATA / "adreno640-cl2.0.txt", **kwargs)


def test_unreadable_captures_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="expected a path to an adreno"):
        report_from_capture(b"cl_qcom_bitreverse")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cannot be read"):
        report_from_capture(tmp_path / "missing.txt")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        report_from_capture(tmp_path / "bad.txt")
    (tmp_path / "x.txt").write_text("cl_qcom_bitreverse")
    (tmp_path / "captures.json").write_text('{"x": {"device_name": 3}}')
    with pytest.raises(ConfigError, match="captures index"):
        report_from_capture(tmp_path / "x.txt")
