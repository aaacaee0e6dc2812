"""``qcom-ext report`` (issue 29, item 1): one file per device, valid against the schema it
ships (``qcom_ext/schemas/report-1.json``), checks with stable ids and CTS verdicts, and
nothing private in it, whatever the environment plants.

Each device's report is made once (``report_of``: the CLI, a few extensions, as a device
owner runs it) and read by every test of this file. The schema's own strictness, the
verdict mapping and the privacy rule are checked on their own.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import socket
import stat
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from qcom_ext import probe
from qcom_ext._resources import schemas_dir
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import ConfigError
from qcom_ext.tools import cli
from qcom_ext.tools.fleet import report as report_module
from qcom_ext.tools.fleet.checks import case_id, checks_from_selftest, planned
from qcom_ext.tools.fleet.identity import identity_key
from qcom_ext.tools.fleet.report import counts, default_filename, schema
from qcom_ext.tools.selftest import _registry
from qcom_ext.tools.selftest._report import (
    BUILDS_NOTHING,
    CaseResult,
    Comparison,
    DeviceStrings,
    ExtensionReport,
    PathRun,
    SelftestReport,
)

#: A few extensions that show every kind of check on pocl: a fallback that builds a
#: kernel, a Khronos tier, a refusal where there is no path, one with no check at all.
ONLY = "bitreverse,perf_hint,recordable_queues,protected_context,ion_host_ptr,limited_printf"
VALIDATOR = jsonschema.Draft202012Validator(schema())
_REPORTS: dict[int, tuple[dict[str, Any], str]] = {}


def report_of(caps: DeviceCaps, tmp_path_factory) -> tuple[dict[str, Any], str]:
    """The report of ``caps``'s device as ``qcom-ext report`` writes it, and its stdout
    (made once per device)."""
    if caps.device_id not in _REPORTS:
        folder = tmp_path_factory.mktemp("report")
        out = folder / "report.json"
        argv = ["report", "--device", caps.label, "--only", ONLY, "-o", str(out)]
        import contextlib
        import io

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert cli.main(argv) == 0
        _REPORTS[caps.device_id] = json.loads(out.read_text(encoding="utf-8")), printed.getvalue()
    return _REPORTS[caps.device_id]


def test_the_schema_is_a_valid_draft_2020_12_schema_found_where_the_wheel_has_it():
    path = schemas_dir() / "report-1.json"
    assert path.parent == Path(report_module.__file__).parents[2] / "schemas"
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_each_device_report_is_valid_and_says_who_the_device_is(device_caps, tmp_path_factory):
    report, printed = report_of(device_caps, tmp_path_factory)
    VALIDATOR.validate(report)
    ident = report["identity"]
    assert ident["device_name"] == device_caps.device_name.strip()
    assert ident["driver_version"] == device_caps.driver_version.strip()
    assert ident["device_version"] == device_caps.device_version.strip()
    assert ident["os_name"] and ident["architecture"]
    assert report["identity_key"] == identity_key(ident)
    assert report["environment"]["pyopencl"] and report["environment"]["python"]
    assert report["probe"]["paths"] == device_caps.to_dict()["qcom"]
    assert report["probe"]["facts"]["label"] == device_caps.label
    assert report["synthetic"] is False and "synthetic_note" not in report
    assert report["selftest"]["ran"] is True
    tally = counts(report)
    assert f"{len(report['checks'])} checks: {tally['pass']} pass, {tally['fail']} fail" in printed


def test_check_ids_are_unique_and_the_same_as_the_selftest_plan_gives(
    device_caps, tmp_path_factory
):
    """The ids a real run writes are those the plan gives from the probe alone (what a
    synthetic report of the same device would hold): same check, same id."""
    report, _ = report_of(device_caps, tmp_path_factory)
    ids = [c["id"] for c in report["checks"]]
    assert len(ids) == len(set(ids))
    wanted = {f"cl_qcom_{name}" for name in ONLY.split(",")}
    plan = planned(device_caps, lambda extension, path, case: "pass")
    assert sorted(ids) == sorted(c["id"] for c in plan if c["extension"] in wanted)
    for check in report["checks"]:
        assert check["id"] == f"{check['extension']}/{check['path']}/{check['id'].split('/')[2]}"


def test_verdicts_follow_the_cts_rule(device_caps, tmp_path_factory):
    """A path the device lacks is a skip with its reason, never a failure; what runs
    passes (or fails on a device that builds nothing, as the selftest does)."""
    report, _ = report_of(device_caps, tmp_path_factory)
    by_id = {c["id"]: c for c in report["checks"]}
    assert by_id["cl_qcom_bitreverse/native/bitreverse"]["verdict"] == "skip"
    assert by_id["cl_qcom_bitreverse/native/bitreverse"]["reason"] == "not advertised"
    printf = by_id[f"cl_qcom_limited_printf/{device_caps.path('cl_qcom_limited_printf')}/no_check"]
    assert printf["verdict"] == "unchecked" and printf["reason"]
    refusal = by_id["cl_qcom_protected_context/unavailable/protected_refused"]
    assert refusal["verdict"] == "pass" and refusal["seconds"] >= 0
    kernel = by_id["cl_qcom_bitreverse/fallback/bitreverse"]
    if device_caps.builds_programs:
        assert kernel["verdict"] == "pass" and kernel["max_error"] == 0.0
        assert report["selftest"]["ok"] is True
    else:
        assert kernel["verdict"] == "fail" and "builds no program" in kernel["reason"]
        assert report["selftest"]["ok"] is False and report["selftest"]["build_problem"]
    assert all(c["reason"] for c in report["checks"] if c["verdict"] != "pass")
    assert not [c for c in report["checks"] if c["verdict"] == "crash"]


def _selftest(*extensions: ExtensionReport, verdicts=None, build_problem=None) -> SelftestReport:
    caps = probe()
    return SelftestReport(
        DeviceStrings.from_caps(caps),
        0,
        extensions=list(extensions),
        verdicts=verdicts or {},
        build_problem=build_problem,
    )


def test_failures_differences_and_child_crashes_map_to_their_verdicts():
    """Each selftest outcome reads as the verdict docs/report.md gives it."""
    ext = "cl_qcom_recordable_queues"
    (recording,) = _registry.cases_for(ext)
    name = recording.name
    item = ExtensionReport(ext, "khr:cl_khr_command_buffer", "")
    item.runs = [
        PathRun("khr:cl_khr_command_buffer", [CaseResult(name, 0.0, 0.0, 2.0)]),
        PathRun("fallback", [CaseResult(name, 0.0, 0.0, 3.0)]),
    ]
    item.comparisons = [Comparison(name, ("khr:cl_khr_command_buffer", "fallback"), 4.0, 0.0)]
    item.skipped = [("native", "advertised, but the trial recording crashed")]
    bit = "cl_qcom_bitreverse"
    broken = ExtensionReport(bit, "fallback", "")
    (reverse,) = _registry.cases_for(bit)
    broken.runs = [PathRun("fallback", [CaseResult(reverse.name, 7.0, 0.0, 1.5, mismatch="x")])]
    crashed = {"extension": ext, "trial": "the trial recording", "outcome": "crashed"}
    found = checks_from_selftest(
        _selftest(item, broken, verdicts={ext: {**crashed, "detail": "SIGSEGV"}})
    )
    verdicts = {c["id"]: (c["verdict"], c["reason"]) for c in found}
    assert verdicts[f"{ext}/khr:cl_khr_command_buffer/recording"][0] == "pass"
    assert verdicts[f"{ext}/fallback/recording"][0] == "fail"
    assert (
        "differs from the khr:cl_khr_command_buffer path"
        in verdicts[f"{ext}/fallback/recording"][1]
    )
    assert verdicts[f"{ext}/native/recording"] == (
        "crash",
        "the trial recording crashed (SIGSEGV) in a child process",
    )
    assert verdicts[f"{bit}/fallback/bitreverse"][0] == "fail"
    assert "error 7 over tolerance 0" in verdicts[f"{bit}/fallback/bitreverse"][1]
    failed = {**crashed, "outcome": "failed", "detail": "CL_INVALID_COMMAND_QUEUE"}
    again = checks_from_selftest(_selftest(item, verdicts={ext: failed}))
    assert [c["verdict"] for c in again if c["path"] == "native"] == ["fail"]
    unbuilt = ExtensionReport(bit, "fallback", "")
    unbuilt.runs = [
        PathRun("fallback", [CaseResult(reverse.name, 0, 0, 1, skipped=BUILDS_NOTHING)])
    ]
    (check,) = [c for c in checks_from_selftest(_selftest(unbuilt, build_problem="no LLVM"))]
    assert check["verdict"] == "fail" and check["reason"].endswith("no LLVM")
    stopped = ExtensionReport(bit, "fallback", "")
    stopped.runs = [PathRun("fallback", error="CLError: no context")]
    (check,) = checks_from_selftest(_selftest(stopped))
    assert (check["verdict"], check["reason"]) == ("fail", "CLError: no context")


def test_case_ids_are_unique_per_extension_and_independent_of_the_description():
    for extension in _registry.coverage():
        ids = [case_id(c) for c in _registry.cases_for(extension)]
        assert len(ids) == len(set(ids)), extension
        assert all(re.fullmatch(r"[a-z0-9_]+", i) for i in ids), ids
    (case,) = _registry.cases_for("cl_qcom_bitreverse")
    assert case_id(dataclasses.replace(case, name="reworded entirely")) == "bitreverse"


def _wrong_shapes() -> dict[str, Any]:
    base = {
        "schema": "qcom_ext.report",
        "schema_version": 1,
        "created": "2026-11-28T00:31:00Z",
        "synthetic": False,
        "identity": {
            **dict.fromkeys(("device_name", "device_version", "driver_version"), "x"),
            **dict.fromkeys(("os_name", "os_version", "architecture"), "y"),
            "adreno_model": "740",
            "compiler_version": "E031.42.02.00",
            "compiler_key": [0, 42, 2],
        },
        "identity_key": "0" * 64,
        "environment": {
            "python": "3.11.7",
            "pyopencl": None,
            "qcom_ext": "0.1.0",
            "platform_name": "p",
            "platform_version": "v",
        },
        "probe": {"extensions": [], "paths": {}, "quirks": [], "facts": {}},
        "checks": [
            {
                "id": "cl_qcom_bitreverse/fallback/bitreverse",
                "extension": "cl_qcom_bitreverse",
                "path": "fallback",
                "verdict": "pass",
                "max_error": 0.0,
                "seconds": 0.1,
                "reason": "",
            }
        ],
    }
    return base


def _set(path: str, value: Any):
    def change(report: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = report
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value

    return change


WRONG = {
    "a future schema version": _set("schema_version", 2),
    "another schema": _set("schema", "qcom_ext.selftest"),
    "created without Z": _set("created", "2026-11-28T00:31:00+00:00"),
    "synthetic without its note": _set("synthetic", True),
    "identity without os_name": _set("identity.os_name", KeyError),
    "identity with a host name": _set("identity.hostname", "box"),
    "compiler key of strings": _set("identity.compiler_key", ["E031", "42"]),
    "short identity key": _set("identity_key", "abc"),
    "unknown verdict": _set("checks.0.verdict", "flaky"),
    "id with spaces": _set("checks.0.id", "cl_qcom_bitreverse/fallback/qcom bitreverse"),
    "unknown path": _set("checks.0.path", "emulated"),
    "negative time": _set("checks.0.seconds", -1),
    "check without reason": _set("checks.0.reason", KeyError),
    "path entry without reason": _set("probe.paths", {"cl_qcom_bitreverse": {"path": "native"}}),
    "quirk without id": _set("probe.quirks", [{"reason": "x"}]),
    "extra top-level field": _set("user", "me"),
}


@pytest.mark.parametrize("change", WRONG.values(), ids=list(WRONG))
def test_the_schema_rejects_a_wrong_shape(change):
    good = _wrong_shapes()
    VALIDATOR.validate(good)  # the base is right: each change alone makes it wrong
    bad = copy.deepcopy(good)
    change(bad)
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(bad)


# ---- nothing private ---------------------------------------------------------------------

HOST, USER, SERIAL, MAC, IP = (
    "zorblax-7741",
    "quentinzed",
    "RZ8N91XQ2LK",
    "3c:22:fb:91:0a:7e",
    "192.168.44.17",
)
HOME = f"/home/{USER}"


def test_nothing_private_reaches_the_file(monkeypatch, tmp_path):
    """Host and user name, home path, serial number, MAC and IP planted in the
    environment and in the device's own strings: none of them is in the written file,
    and the device strings around them are kept."""
    import getpass
    import platform

    monkeypatch.setattr(socket, "gethostname", lambda: f"{HOST}.lab.example")
    monkeypatch.setattr(platform, "node", lambda: HOST)
    monkeypatch.setattr(getpass, "getuser", lambda: USER)
    for variable in ("USER", "LOGNAME"):
        monkeypatch.setenv(variable, USER)
    monkeypatch.setenv("HOME", HOME)
    monkeypatch.setenv("ANDROID_SERIAL", SERIAL)
    real = probe()
    planted = dataclasses.replace(
        real,
        device_name=f"{real.device_name} {MAC} serial: {SERIAL}",
        problems=(f"cache {HOME}/.cache/qcom_ext on {HOST} ({IP}) for {USER}",),
    )
    monkeypatch.setattr(report_module, "probe", lambda *args, **kwargs: planted)
    out = tmp_path / "r.json"
    assert cli.main(["report", "--no-selftest", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    for secret in (HOST, USER, SERIAL, MAC, IP, HOME):
        assert secret.lower() not in text.lower(), secret
    report = json.loads(text)
    VALIDATOR.validate(report)
    assert (
        report["identity"]["device_name"] == f"{real.device_name.strip()} <mac> serial: <serial>"
    )
    assert report["probe"]["facts"]["problems"] == [
        "cache ~/.cache/qcom_ext on <host> (<ip>) for <user>"
    ]
    assert report["identity"]["driver_version"] == real.driver_version.strip()


def test_the_file_is_written_whole_and_named_after_the_device(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", "--no-selftest"]) == 0
    (written,) = tmp_path.iterdir()
    report = json.loads(written.read_text(encoding="utf-8"))
    VALIDATOR.validate(report)
    assert written.name == default_filename(report)
    day = report["created"][:10].replace("-", "")
    assert re.fullmatch(rf"qcom-ext-report-[a-z0-9.-]+-{day}\.json", written.name)
    assert probe().label in written.name
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert report["checks"] == [] and report["selftest"]["ran"] is False
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == written.name and lines[1].endswith(
        "0 checks: 0 pass, 0 fail, 0 skip, 0 crash, 0 unchecked"
    )


def test_an_unwritable_place_is_a_clear_error_before_the_run(tmp_path, capsys):
    missing = tmp_path / "no-such-folder" / "r.json"
    assert cli.main(["report", "--no-selftest", "-o", str(missing)]) == 1
    assert "--output" in capsys.readouterr().err and not missing.parent.exists()
    with pytest.raises(ConfigError, match="cannot write there"):
        report_module.write_report({}, missing)
    folder = tmp_path / "a-folder"
    (folder / "inside").mkdir(parents=True)
    with pytest.raises(ConfigError, match="cannot write there"):  # the rename fails
        report_module.write_report({"schema": "qcom_ext.report"}, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-folder"]  # no partial file


@pytest.mark.slow  # the trials run in child processes
def test_a_trial_that_kills_its_child_is_a_crash_verdict(device_caps, tmp_path, monkeypatch):
    """``qcom-ext report --verify``: a Khronos tier whose trial aborts the child process
    is a ``crash`` check of that path, with the signal; the fallback's checks follow."""
    import _verify_trials

    from qcom_ext.device.probe import clear_cache

    extension, tier = _verify_trials.only_an_aborting_khr_trial(device_caps, monkeypatch, tmp_path)
    out = tmp_path / "r.json"
    try:
        argv = ["report", "--verify", "--only", extension, "--device", device_caps.label]
        assert cli.main([*argv, "-o", str(out)]) == 0
    finally:
        clear_cache()
    report = json.loads(out.read_text(encoding="utf-8"))
    VALIDATOR.validate(report)
    by_id = {c["id"]: c for c in report["checks"]}
    crashed = by_id[f"{extension}/khr:{tier}/aborts"]
    assert crashed["verdict"] == "crash" and "SIGABRT" in crashed["reason"]
    assert by_id[f"{extension}/fallback/recording"]["verdict"] == "pass"
    assert by_id[f"{extension}/khr:{tier}/recording"]["verdict"] == "skip"
    assert report["probe"]["paths"][extension]["path"] == "fallback"


def test_a_bad_device_or_extension_is_an_error_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert cli.main(["report", "--device", "no-such-platform", "-o", str(out)]) == 1
    assert "--device 'no-such-platform' names no device" in capsys.readouterr().err
    assert cli.main(["report", "--only", "no_such_extension", "-o", str(out)]) == 1
    assert "--only 'no_such_extension' is not a cl_qcom_* extension" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_the_scrubber_leaves_device_strings_and_common_names_alone(monkeypatch):
    """A container's user ``root`` names nobody: the word stays in text (its home path
    still goes); the real capture strings pass unchanged."""
    from qcom_ext.tools.fleet.privacy import Scrubber

    monkeypatch.setenv("USER", "root")
    monkeypatch.setenv("HOME", "/root")
    scrub = Scrubber.from_environment()
    assert scrub("the root of /root/.cache/x") == "the root of ~/.cache/x"
    published = json.loads((Path(__file__).parent / "data" / "captures.json").read_text())
    strings = [
        v for entry in published.values() if isinstance(entry, dict) for v in entry.values()
    ]
    assert strings and [Scrubber()(s) for s in strings] == strings
