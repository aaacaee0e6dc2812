"""``qcom-ext compat`` (qcom_ext.tools.fleet.matrix, quirk_proposals, render_*): fleet
reports merged into a matrix, contradictions and quirk proposals.

 * Fixtures: 2,000 synthetic reports (qcom_ext.tools.fleet.synthetic, seed 3) with a
   planted failing compiler range, a noisy one and flaky identities; a few hand-made
   reports for dedup, hostile strings and the partitioned directory.
 * Reference: a pure-Python aggregation of the same files (below), and the plants.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from qcom_ext.device.compiler_version import CompilerVersion
from qcom_ext.device.quirks import CompilerRange, Quirk
from qcom_ext.tools import cli
from qcom_ext.tools.fleet import intake, synthetic
from qcom_ext.tools.fleet.identity import identity_key
from qcom_ext.tools.fleet.quirk_proposals import propose
from qcom_ext.tools.fleet.render_html import render_html
from qcom_ext.tools.fleet.render_text import MATRIX_HEADERS, render_markdown

duckdb = pytest.importorskip("duckdb", reason="qcom-ext compat needs qcom_ext[fleet]")
from qcom_ext.tools.fleet import matrix  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COUNT = 2000
SOME = 200  # the command line's tests read the first 200


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    path = tmp_path_factory.mktemp("fleet") / "fleet.ndjson"
    synthetic.write_ndjson(path, COUNT, seed=3)
    return path


@pytest.fixture(scope="module")
def merged(fleet):
    return matrix.merge([fleet])


def _reference(path: Path):
    """Current reports (newest per identity), history count, matrix and contradictions,
    in plain Python."""
    by_identity = defaultdict(list)
    for number, line in enumerate(path.read_text().splitlines(), 1):
        report = json.loads(line)
        by_identity[report["identity_key"]].append((report["created"], f"{path}:{number}", report))
    current = [max(reports, key=lambda r: r[:2])[2] for reports in by_identity.values()]
    cells = defaultdict(lambda: (set(), Counter()))
    for report in current:
        ident = report["identity"]
        model = ident["adreno_model"]
        for c in report["checks"]:
            key = (model, None if model else ident["device_name"], ident["driver_version"],
                   ident["compiler_version"], c["extension"], c["path"])  # fmt: skip
            cells[key][0].add(report["identity_key"])
            cells[key][1][c["verdict"]] += 1
    contradictions = set()
    for key, reports in by_identity.items():
        verdicts = defaultdict(set)
        for _, _, report in reports:
            for c in report["checks"]:
                if c["verdict"] != "unchecked":
                    verdicts[c["id"]].add(c["verdict"])
        contradictions |= {(key, check) for check, v in verdicts.items() if len(v) > 1}
    return current, sum(map(len, by_identity.values())) - len(current), cells, contradictions


def test_the_merge_matches_a_plain_python_aggregation(fleet, merged):
    current, history, cells, contradictions = _reference(fleet)
    assert (merged.intake.read, merged.intake.merged, merged.intake.skipped) == (COUNT, COUNT, [])
    assert (merged.current, merged.history, merged.identities) == (
        len(current),
        history,
        len(current),
    )
    got = {
        tuple(r[k] for k in matrix.MATRIX_COLUMNS[:6]): {
            k: r[k] for k in matrix.MATRIX_COLUMNS[6:]
        }
        for r in merged.matrix
    }
    verdicts = ("pass", "fail", "crash", "skip", "unchecked")
    want = {
        key: {"identities": len(ids), **{v: counts[v] for v in verdicts}}
        for key, (ids, counts) in cells.items()
    }
    assert got == want
    assert {(c["identity_key"], c["check_id"]) for c in merged.contradictions} == contradictions
    assert 0 < len(contradictions) < 50  # the flaky identities are there, and few
    assert {c["check_id"] for c in merged.contradictions} == {synthetic.FLAKY_CHECK}
    assert history > 0


def _outcome(report, ext, path):
    verdicts = {
        c["verdict"] for c in report["checks"] if (c["extension"], c["path"]) == (ext, path)
    }
    if verdicts & {"fail", "crash"}:
        return "fail"
    return "pass" if "pass" in verdicts else None


def test_the_planted_range_is_proposed_and_the_noisy_one_is_not(fleet, merged):
    ext, path, family, first_failing, first_passing = synthetic.PLANTED_RANGE
    planted = [p for p in merged.proposals if (p.extension, p.path) == (ext, path)]
    assert len(planted) == 1 and not planted[0].models  # every model, one entry
    compilers = planted[0].compilers
    assert compilers.family == family
    assert compilers.at_least[0] == first_failing and compilers.below[0] == first_passing
    noisy = synthetic.NOISY_RANGE
    assert not [
        p for p in merged.proposals if (p.extension, p.path, p.models) == (*noisy[:2], frozenset())
    ]
    # Every proposal holds on the reference's current reports: in range all fail,
    # outside all pass (same family, and model where it names one).
    current, *_ = _reference(fleet)
    for proposal in merged.proposals:
        seen = Counter()
        for report in current:
            ident = report["identity"]
            version = CompilerVersion.parse(ident["compiler_version"])
            outcome = _outcome(report, proposal.extension, proposal.path)
            if version is None or version.family != proposal.compilers.family or outcome is None:
                continue
            if proposal.models and ident["adreno_model"] not in proposal.models:
                continue
            inside = proposal.compilers.contains(version)
            assert outcome == ("fail" if inside else "pass"), (proposal.id, report["identity_key"])
            seen[inside] += 1
        assert (seen[True], seen[False]) == (len(proposal.failing), proposal.passing)


def _evaluated(entry: str) -> Quirk:
    """The Quirk an entry's text makes (its comment lines dropped, nothing else in scope)."""
    code = "\n".join(line for line in entry.splitlines() if not line.startswith("#"))
    scope = {"__builtins__": {}, "frozenset": frozenset, "Quirk": Quirk}
    return eval(code.rstrip().rstrip(","), {**scope, "CompilerRange": CompilerRange})


def test_a_proposal_prints_as_a_quirks_py_entry(merged):
    ext, path, family, first_failing, first_passing = synthetic.PLANTED_RANGE
    (proposal,) = [p for p in merged.proposals if (p.extension, p.path) == (ext, path)]
    quirk = _evaluated(proposal.entry())
    assert quirk.id == proposal.id and quirk.compilers == (proposal.compilers,)
    assert quirk.downgrades[0][0] == ext  # a native path that fails: not used there
    inside = CompilerVersion.parse(f"Compiler {family}.{first_failing}.50.00")
    outside = CompilerVersion.parse(f"Compiler {family}.{first_passing}.50.00")
    assert quirk.applies("qualcomm", "740", inside) and not quirk.applies(
        "qualcomm", "740", outside
    )
    assert all(f"# {json.dumps(r)}" in proposal.entry() for r in proposal.failing[:10])


def _outcomes(table, ext="cl_qcom_x", path="native", model="740"):
    """``outcomes`` rows from {version: (failing, passing)}."""
    return [
        {
            "adreno_model": model,
            "compiler_version": v,
            "extension": ext,
            "path": path,
            "failing": [f"r{v}-{i} k" for i in range(f)] or None,
            "passing": p,
        }
        for v, (f, p) in table.items()
    ]


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"E031.38": (0, 2), "E031.41": (2, 0), "E031.42": (1, 0), "E031.45": (0, 1)},
         CompilerRange("E031", at_least=(41,), below=(45,))),
        ({"E031.41": (2, 0), "E031.45": (0, 2)},
         CompilerRange("E031", at_least=(41,), below=(45,))),
        ({"E031.38": (0, 2), "E031.45": (3, 0)}, CompilerRange("E031", at_least=(45,))),
        ({"E031.38": (0, 2), "E031.41": (2, 1), "E031.45": (0, 1)}, None),  # noisy: one passes
        ({"E031.38": (0, 2), "E031.41": (2, 0), "E031.42": (0, 1), "E031.43": (1, 0)}, None),
        ({"E031.38": (0, 2), "E031.41": (1, 0)}, None),  # one failing report: too few
        ({"E031.38": (0, 1), "E031.41": (3, 0)}, None),  # one passing report: too few
        ({"E031.41": (3, 0), "E031.45": (2, 0)}, None),  # fails everywhere: no range
    ],
    ids=["range", "two-versions", "open-above", "noisy", "two-ranges", "few-failing",
         "few-passing", "everywhere"],
)  # fmt: skip
def test_the_proposal_rule(table, expected):
    proposals = propose(_outcomes(table))
    assert [p.compilers for p in proposals] == ([expected] if expected else [])


def test_one_proposal_for_every_model_rather_than_one_per_model():
    rows = _outcomes({"E031.38": (0, 2), "E031.41": (2, 0)}, model="730")
    rows += _outcomes({"E031.38": (0, 1), "E031.41": (1, 0)}, model="740")
    assert [p.models for p in propose(rows)] == [frozenset()]
    rows += _outcomes({"E031.38": (0, 1), "E031.41": (0, 1)}, model="750")  # 750 passes
    assert [p.models for p in propose(rows)] == [frozenset({"730"})]  # 740: too few


def _report(base, **identity):
    report = copy.deepcopy(base)
    report["identity"].update(identity)
    report["identity_key"] = identity_key(report["identity"])
    return report


HOSTILE = '<script>alert("x")</script>|`` ``` |\x1b[2J\x07'


def test_hostile_strings_are_escaped_in_html_markdown_and_entries(tmp_path, fleet):
    base = json.loads(fleet.read_text().splitlines()[0])
    other = _report(base, device_name=HOSTILE, adreno_model=None, compiler_version=None,
                    compiler_key=None)  # fmt: skip
    path = tmp_path / "hostile.ndjson"
    path.write_text(json.dumps(other) + "\n")
    merged = matrix.merge([path, tmp_path / "<img src=x>.json"])
    page = render_html(merged)
    assert "<script>alert" not in page and "&lt;script&gt;alert(&quot;x&quot;)" in page
    assert "\x1b" not in page and "|\ufffd[2J\ufffd" in page
    assert "<img" not in page
    assert page.count("<script>") == 1  # the sorter's own
    tags = re.findall(r"<[^>]*>", page)  # no tag loads anything, no style fetches
    assert not [t for t in tags if re.search(r"\s(src|href)\s*=", t)]
    assert not re.search(r"https?://|@import|url\(", page)
    markdown = render_markdown(merged)
    row = next(line for line in markdown.splitlines() if "alert" in line)
    assert "&lt;script&gt;" in row and "\\|" in row and "\x1b" not in markdown
    assert len(re.findall(r"(?<!\\)\|", row)) == len(MATRIX_HEADERS) + 1
    hostile_ext = propose(_outcomes({"E031.38": (0, 2), "E031.41": (2, 0)}, ext=HOSTILE + '"\n)'))
    quirk = _evaluated(hostile_ext[0].entry())
    assert quirk.downgrades[0][0] == HOSTILE + '"\n)'


def test_the_newest_report_of_an_identity_counts_and_the_older_is_history(tmp_path, fleet):
    base = json.loads(fleet.read_text().splitlines()[0])
    old, new = copy.deepcopy(base), copy.deepcopy(base)
    old["created"], new["created"] = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"
    for c in old["checks"]:
        c["verdict"] = "fail"
    for c in new["checks"]:
        c["verdict"] = "pass"
    (tmp_path / "new.json").write_text(json.dumps(new))
    (tmp_path / "old.json").write_text(json.dumps(old))  # read after the newer one
    merged = matrix.merge([tmp_path])
    assert (merged.current, merged.history, merged.identities) == (1, 1, 1)
    assert sum(r["pass"] for r in merged.matrix) == len(new["checks"])
    assert sum(r["fail"] for r in merged.matrix) == 0
    assert len(merged.contradictions) == len(new["checks"])
    assert merged.contradictions[0]["reports"] == [
        f"{tmp_path / 'old.json'} fail",
        f"{tmp_path / 'new.json'} pass",
    ]


def test_a_partitioned_directory_aggregates_with_the_same_sql(tmp_path, fleet, merged):
    lines = fleet.read_text().splitlines()
    parts = defaultdict(list)
    for line in lines:
        ident = json.loads(line)["identity"]
        parts[(ident["os_name"].lower(), ident["adreno_model"] or "none")].append(line)
    for (os_name, model), chunk in parts.items():
        folder = tmp_path / "reports" / f"os={os_name}" / f"model={model}"
        folder.mkdir(parents=True)
        (folder / "part-0.ndjson").write_text("\n".join(chunk) + "\n")
    raw = matrix.aggregate([str(tmp_path / "reports" / "*" / "*" / "*.ndjson")])
    assert (raw.current, raw.history, raw.identities) == (
        merged.current,
        merged.history,
        merged.identities,
    )
    assert raw.matrix == merged.matrix
    assert [(c["identity_key"], c["check_id"]) for c in raw.contradictions] == [
        (c["identity_key"], c["check_id"]) for c in merged.contradictions
    ]
    assert [(p.id, p.compilers, len(p.failing)) for p in raw.proposals] == [
        (p.id, p.compilers, len(p.failing)) for p in merged.proposals
    ]


def test_unchecked_files_of_the_wrong_shape_are_a_typed_error(tmp_path):
    path = tmp_path / "raw.ndjson"
    path.write_text('{"identity_key": "a", "created": "x", "checks": 5, "identity": {}}\n')
    with pytest.raises(matrix.MergeError, match=r"DuckDB could not merge the reports: .*ARRAY"):
        matrix.aggregate([str(path)])


def test_processes_share_the_files_out_and_merge_the_same(tmp_path, fleet, merged, monkeypatch):
    lines = fleet.read_text().splitlines(keepends=True)
    for part in range(3):
        (tmp_path / f"part-{part}.ndjson").write_text("".join(lines[part::3]))
    (tmp_path / "part-3.ndjson").write_text("{truncated\n")
    monkeypatch.setattr(intake, "PARALLEL_BYTES", 0)
    both = matrix.merge([tmp_path], workers=2)
    one = matrix.merge([tmp_path], workers=1)
    assert both.matrix == one.matrix == merged.matrix
    assert (both.current, both.history) == (one.current, one.history)
    assert [str(s) for s in both.intake.skipped] == [str(s) for s in one.intake.skipped]
    assert (both.intake.read, len(both.intake.skipped)) == (COUNT + 1, 1)
    assert len(intake._shares(sorted(tmp_path.glob("*.ndjson")), 2)) == 2


def test_docs_show_the_sql_the_code_runs():
    docs = (ROOT / "docs" / "fleet.md").read_text()
    sql = matrix.SQL_PATH.read_text()
    assert f"```sql\n{sql}```" in docs
    assert list(matrix.statements()) == [
        "reports",
        "loaded",
        "ranked",
        "totals",
        "matrix",
        "contradictions",
        "outcomes",
    ]


def test_the_command_line_writes_each_format(tmp_path, fleet, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "qcom_ext.report", "schema_version": 2}')
    some = tmp_path / "some.ndjson"
    some.write_text("\n".join(fleet.read_text().splitlines()[:SOME]) + "\n")
    for fmt in ("markdown", "json", "html"):
        out = tmp_path / f"m.{fmt}"
        assert cli.main(["compat", str(some), str(bad), "--format", fmt, "-o", str(out)]) == 0
        assert out.stat().st_size > 1000
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["intake"]["skipped_inputs"] == [
        {"where": str(bad), "reason": "future schema 2 (this qcom_ext reads 1)"}
    ]
    assert data["intake"]["read"] == SOME + 1
    err = capsys.readouterr().err
    assert f"qcom-ext compat: skipped {bad}: future schema 2" in err


def test_nothing_to_merge_is_exit_status_1(tmp_path, capsys):
    (tmp_path / "a.ndjson").write_text("[[[\n{}\n")
    assert cli.main(["compat", str(tmp_path), "--format", "json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["intake"]["skipped"] == 2
    assert captured.err.splitlines()[-1] == "qcom-ext compat: no report merged (2 read)"


def test_without_duckdb_the_command_says_what_to_install(monkeypatch, tmp_path, capsys, fleet):
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb raises ImportError
    assert cli.main(["compat", str(fleet)]) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "pip install 'qcom_ext[fleet]'" in lines[0]
    assert lines[0].startswith("qcom-ext: error:") and captured.out == ""
    with pytest.raises(matrix.FleetUnavailable):
        matrix.merge([fleet])
