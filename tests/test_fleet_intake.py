"""``qcom-ext compat``'s intake (qcom_ext.tools.fleet.intake, .check): every bad report is
skipped with a one-line reason and counted, nothing crashes, nothing bad is merged.

 * Fixtures: synthetic reports (qcom_ext.tools.fleet.synthetic), spoilt one way each.
 * Reference: the reports' own fields; what is merged is what was written.
"""

from __future__ import annotations

import copy
import doctest
import io
import json

import pytest
from conftest import DATA

from qcom_ext.tools.fleet import check, intake, render_text, synthetic
from qcom_ext.tools.fleet.check import ReportError, check_report
from qcom_ext.tools.fleet.identity import identity_key
from qcom_ext.tools.fleet.intake import MAX_DEPTH, MAX_REPORT_BYTES, read_reports


@pytest.fixture(scope="module")
def good():
    return list(synthetic.reports(3, seed=7))


def _line(report) -> str:
    return json.dumps(report, separators=(",", ":"))


def _rekey(report):
    report["identity_key"] = identity_key(report["identity"])
    return report


def _spoil(report, how):
    bad = copy.deepcopy(report)
    how(bad)
    return _line(bad)


def _set(path, value, rekey=False):
    def how(report):
        *parents, last = path
        target = report
        for part in parents:
            target = target[part]
        target[last] = value
        if rekey:
            _rekey(report)

    return how


def _pop(*path):
    def how(report):
        *parents, last = path
        target = report
        for part in parents:
            target = target[part]
        del target[last]

    return how


def _dup_check(report):
    report["checks"].append(dict(report["checks"][0]))


# (id, the bad line from a good report, a part of the reason)
BAD = [
    ("truncated", lambda r: _line(r)[: len(_line(r)) // 2], "not JSON"),
    ("deep", lambda r: "[" * 200_000 + "]" * 200_000, f"nested deeper than {MAX_DEPTH}"),
    ("deep-unclosed", lambda r: '{"a":' + "[" * 500_000, "nested deeper"),
    ("huge", lambda r: '{"pad":"' + "x" * (MAX_REPORT_BYTES + 10) + '"}', "over 1048576 bytes"),
    ("array", lambda r: "[]", "report: expected an object, got list"),
    ("number", lambda r: "7", "expected an object, got int"),
    ("wrong-schema", lambda r: _spoil(r, _set(["schema"], "other.report")), "wrong schema"),
    ("future", lambda r: _spoil(r, _set(["schema_version"], 2)), "future schema 2"),
    ("version-bool", lambda r: _spoil(r, _set(["schema_version"], True)), "an integer"),
    ("no-checks", lambda r: _spoil(r, _pop("checks")), "missing checks"),
    ("created", lambda r: _spoil(r, _set(["created"], "yesterday")), "created:"),
    ("verdict", lambda r: _spoil(r, _set(["checks", 0, "verdict"], "ok")), "verdict"),
    ("max-error", lambda r: _spoil(r, _set(["checks", 0, "max_error"], "0")), "max_error"),
    ("check-id", lambda r: _spoil(r, _set(["checks", 0, "id"], "x/y/z")), "extension/path"),
    ("dup-check", lambda r: _spoil(r, _dup_check), "appears twice"),
    ("key", lambda r: _spoil(r, _set(["identity", "os_version"], "99")), "does not match"),
    ("identity-extra", lambda r: _spoil(r, _set(["identity", "x"], "1", True)), "unknown"),
    (
        "compiler-key",
        lambda r: _spoil(r, _set(["identity", "compiler_key"], ["41"], True)),
        "compiler_key",
    ),
    ("model-type", lambda r: _spoil(r, _set(["identity", "adreno_model"], 740, True)), "model"),
    ("probe", lambda r: _spoil(r, _set(["probe", "paths"], [])), "probe.paths"),
    ("synthetic-note", lambda r: _spoil(r, _pop("synthetic_note")), "synthetic_note"),
]


@pytest.mark.parametrize(("make", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_line_is_skipped_with_its_reason_and_the_rest_merged(tmp_path, good, make, reason):
    path = tmp_path / "fleet.ndjson"
    bad = make(good[1])
    path.write_text("\n".join([_line(good[0]), bad, "", _line(good[2])]) + "\n")
    out = io.StringIO()
    got = read_reports([path], out)
    assert (got.read, got.merged, len(got.skipped)) == (3, 2, 1)
    skipped = got.skipped[0]
    assert skipped.where == f"{path}:2"
    assert reason in skipped.reason
    assert "\n" not in str(skipped) and len(str(skipped)) < len(str(path)) + 200
    merged = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [m["source"] for m in merged] == [f"{path}:1", f"{path}:4"]
    assert [m["identity_key"] for m in merged] == [
        good[0]["identity_key"],
        good[2]["identity_key"],
    ]


def test_what_is_merged_is_the_checked_report_slimmed(tmp_path, good):
    path = tmp_path / "one.json"
    path.write_text(json.dumps(good[0], indent=2))  # a pretty-printed single report
    out = io.StringIO()
    assert read_reports([path], out).merged == 1
    (row,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert row["source"] == str(path)
    assert row["identity"] == good[0]["identity"]
    assert row["checks"] == [{"id": c["id"], "verdict": c["verdict"]} for c in good[0]["checks"]]


def test_files_directories_and_missing_paths(tmp_path, good):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "r.json").write_text(_line(good[0]))
    (tmp_path / "a" / "r.jsonl").write_text(_line(good[1]) + "\n" + _line(good[2]))
    (tmp_path / "a" / "notes.txt").write_text("not a report")
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe{}")
    got = read_reports([tmp_path / "a", tmp_path / "bad.json", tmp_path / "nope"], io.StringIO())
    assert (got.read, got.merged) == (4, 3)
    reasons = sorted(str(s) for s in got.skipped)
    assert reasons == [
        f"{tmp_path / 'bad.json'}: not UTF-8 (byte 0)",
        f"{tmp_path / 'nope'}: no such file or directory",
    ]


def test_a_huge_single_file_is_not_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(intake, "MAX_REPORT_BYTES", 1000)
    path = tmp_path / "big.json"
    path.write_text('{"x": "' + "y" * 5000 + '"}')
    got = read_reports([path], io.StringIO())
    assert [s.reason for s in got.skipped] == ["report over 1000 bytes"]


def test_the_depth_scan_runs_before_the_parser(monkeypatch):
    class NoParser:
        def loads(self, *args, **kwargs):
            raise AssertionError("the parser was reached")

    monkeypatch.setattr(intake, "_orjson", NoParser)
    with pytest.raises(ReportError, match="nested deeper than 32"):
        intake.parse(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}'])
def test_what_rfc_8259_does_not_allow_is_not_json(text):
    """NaN and Infinity (which Python's json would read) are refused by the parse,
    before the structural check."""
    with pytest.raises(ReportError, match=r"^not JSON \("):
        intake.parse(text.encode())


def test_a_good_report_passes_and_its_key_is_recomputed(good):
    assert check_report(copy.deepcopy(good[0])) == good[0]
    forged = _rekey(copy.deepcopy(good[0]))
    forged["identity"]["device_name"] = "another"
    with pytest.raises(ReportError, match="identity_key does not match identity"):
        check_report(forged)


@pytest.mark.parametrize("module", [intake, check, render_text, synthetic])
def test_docstring_examples(module):
    assert doctest.testmod(module).failed == 0


def _schema_valid(report) -> bool:
    import jsonschema

    from qcom_ext.tools.fleet.report import schema

    return jsonschema.Draft202012Validator(schema()).is_valid(report)


def _hand_valid(report) -> bool:
    try:
        check_report(report)
    except ReportError:
        return False
    return True


# Spoilt reports the schema judges the same way as the hand check (the STRICTER cases
# below are the ones it judges differently, on purpose).
AGREE = [
    *(
        b[:2]
        for b in BAD
        if b[0] not in ("truncated", "deep", "deep-unclosed", "huge", "key", "dup-check")
    ),
    ("selftest", lambda r: _spoil(r, _set(["selftest"], {"ran": True, "seed": 0, "only": None}))),
    ("selftest-bad", lambda r: _spoil(r, _set(["selftest"], {"ran": 1, "seed": 0, "only": None}))),
    ("extra-top", lambda r: _spoil(r, _set(["extra"], 1))),
    ("env-extra", lambda r: _spoil(r, _set(["environment", "x"], "1"))),
    ("path-label", lambda r: _spoil(r, _set(["checks", 0, "path"], "gpu"))),
    ("negative", lambda r: _spoil(r, _set(["checks", 0, "seconds"], -1))),
    ("facts", lambda r: _spoil(r, _set(["probe", "facts"], {"a": [{"b": None}]}))),
    ("os-null", lambda r: _spoil(r, _set(["identity", "os_name"], None, True))),
    ("quirk-id", lambda r: _spoil(r, _set(["probe", "quirks"], [{"id": "", "reason": ""}]))),
    (
        "ext-name",
        lambda r: _spoil(
            r, _set(["probe", "paths", "cl_khr_fp16"], {"path": "native", "reason": ""})
        ),
    ),
]
STRICTER_SAMPLES = [
    ("key", lambda r: _spoil(r, _set(["identity", "os_version"], "99"))),
    ("id-of-another-path", lambda r: _spoil(r, _set(["checks", 0, "path"], "unavailable"))),
    ("dup-check", lambda r: _spoil(r, _dup_check)),
    ("key-negative", lambda r: _spoil(r, _set(["identity", "compiler_key"], [-1], True))),
    ("key-float", lambda r: _spoil(r, _set(["identity", "compiler_key"], [41.0], True))),
]


def test_the_hand_check_agrees_with_the_json_schema(good):
    pytest.importorskip("jsonschema", reason="the test extra's jsonschema validates the schema")
    from qcom_ext.tools.fleet.from_capture import report_from_capture

    real = [report_from_capture(p) for p in sorted(DATA.glob("adreno*.txt"))]
    samples = [
        ("synthetic", _line(good[0])),
        *((f"capture{i}", _line(r)) for i, r in enumerate(real)),
    ]
    samples += [(name, make(good[1])) for name, make in AGREE]
    verdicts = {
        name: (_schema_valid(json.loads(s)), _hand_valid(json.loads(s))) for name, s in samples
    }
    disagree = {name: v for name, v in verdicts.items() if v[0] != v[1]}
    assert not disagree, disagree
    assert sum(schema for schema, _ in verdicts.values()) == 3 + len(real)  # the good ones
    for name, make in STRICTER_SAMPLES:
        report = json.loads(make(good[1]))
        assert (_schema_valid(report), _hand_valid(report)) == (True, False), name
