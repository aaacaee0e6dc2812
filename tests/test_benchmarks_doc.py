"""docs/BENCHMARKS.md: every measured table sits in a block ``qcom-ext bench --update-doc``
writes (stamp: device label, driver, date, command), the page lists one command per block,
``--update-doc`` replaces a block in place, and the page opens with the summary (issue 18):
one table per device of every bandwidth-bound operation against the buffer copy."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from pathlib import Path

import pytest
from conftest import benchmark_module, lab_module

from qcom_ext.tools.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "BENCHMARKS.md"
_run = benchmark_module("run")
_lab = lab_module("__main__")

#: The two command lines that write this page's blocks, and the packages of their cases:
#: the wheel's ``qcom-ext bench`` and the checkout's lab.
RUNNERS = {
    ("qcom-ext", "bench"): _run.PACKAGES,
    ("python", "-m", "benchmarks"): _lab.LAB_PACKAGES,
}

BLOCK = re.compile(r"^<!-- bench (\S+) (\S+) -->\n(.*?)^<!-- /bench -->\n", re.M | re.S)
STAMP = re.compile(r"^\*\*(?P<label>[^*]+)\*\* \(.*driver \S+.*\b(?P<date>20\d\d-\d\d-\d\d)")
COMMAND = re.compile(r"^Command: `(?P<command>[^`]+)`(?P<legacy> \(run before this page)?", re.M)
# a cell that is a measurement: a number, with a unit, a percentage or an "x" factor
MEASURED_CELL = re.compile(
    r"^[-+]?\d[\d.,]*(e[-+]?\d+)?\s*(ns|µs|us|ms|s|GB/s|GFLOP/s|Mpix/s|x|%)?"
    r"(\s*\(baseline\))?(,.*)?$"
)


def tables(markdown: str) -> list[list[list[str]]]:
    """The markdown tables of a text: rows of cells (the header rule dropped)."""
    found, rows = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            found.append(rows)
            rows = []
    return found


def measured(table: list[list[str]]) -> bool:
    """Whether a table holds measurements (a cell that is only a number, maybe with unit)."""
    return any(MEASURED_CELL.match(cell) for row in table[1:] for cell in row)


def blocks(markdown: str) -> list[tuple[str, str, str]]:
    return BLOCK.findall(markdown)


def regeneration_commands(markdown: str) -> list[str]:
    """The command lines of the sh blocks under ``## Regenerating this page``."""
    section = markdown.split("## Regenerating this page", 1)[1].split("\n## ", 1)[0]
    lines = []
    for body in re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S):
        lines += [line.strip() for line in body.splitlines() if line.strip()]
    return lines


def block_names(command: str) -> tuple[str | None, list[str]]:
    """(--doc-key, the blocks' names) that a ``qcom-ext bench`` (or lab, ``python -m
    benchmarks``) command line writes, read with the runner's own parser over the cases
    that command runs."""
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words.pop(0)  # environment assignments
    runner = next((r for r in RUNNERS if tuple(words[: len(r)]) == r), None)
    assert runner is not None, command
    packages, words = RUNNERS[runner], words[len(runner) :]
    cases = _run.discover(packages)
    found = _run.discover_suites(cases, packages)
    suites = {s.name for s in found}
    args = _run._parser(" ".join(runner), found).parse_args(words)
    assert str(args.update_doc) == "docs/BENCHMARKS.md", command
    wanted = [n for n in args.cases if n not in suites]
    names = [n for n in args.cases if n in suites]
    if wanted or not names:
        names.append(",".join(sorted({c.group for c in _run.select(cases, wanted)})))
    if args.summary:
        names.append("summary")
    return args.doc_key, names


def test_the_table_detector_tells_measurements_from_prose():
    runner = "| group | case | median |\n|---|---|--:|\n| probe | `probe_cold` | 424 µs |\n"
    prose = "| group | case | measures |\n|---|---|---|\n| `probe` | `probe_cold` | a probe |\n"
    suite = (
        "| layer | gain | GB/s | of copy BW |\n|---|--:|--:|--:|\n| dw | 2.14x | 1896.8 | 64% |"
    )
    assert measured(tables(runner)[0]) and measured(tables(suite)[0])
    assert not measured(tables(prose)[0])


def test_every_measured_table_sits_in_a_generated_block():
    text = DOC.read_text()
    outside = BLOCK.sub("", text)
    loose = [t for t in tables(outside) if measured(t)]
    assert not loose, f"measured tables outside <!-- bench --> blocks: {[t[0] for t in loose]}"
    assert tables(outside), "the hand-written Cases table should remain outside the blocks"
    assert len([t for _, _, body in blocks(text) for t in tables(body)]) >= 20


def test_every_block_is_closed_and_stamped_with_device_driver_date_and_command():
    text = DOC.read_text()
    found = blocks(text)
    opened = re.findall(r"^<!-- bench ", text, re.M)
    assert len(opened) == len(found) == len(re.findall(r"^<!-- /bench -->", text, re.M))
    assert len({(key, names) for key, names, _ in found}) == len(found), "duplicate blocks"
    listed = set(regeneration_commands(text))
    for key, names, body in found:
        where = f"block {key} {names}"
        stamp = STAMP.match(body)
        assert stamp, f"{where}: no stamp line (device label, driver, date) first"
        if key.startswith("pocl-"):  # keyed by label (no --doc-key)
            assert stamp["label"] == key, where
        command = COMMAND.search(body)
        assert command, f"{where}: no Command: line"
        if not command["legacy"]:
            assert command["command"] in listed, f"{where}: its command is not listed"
        assert any(measured(t) for t in tables(body)), f"{where}: no measured table"


def test_the_page_lists_one_regeneration_command_per_block():
    text = DOC.read_text()
    commands = regeneration_commands(text)
    keys = {block_names(c)[0] for c in commands} - {None}
    wanted: Counter[tuple[str, str]] = Counter()
    for command in commands:
        key, names = block_names(command)
        wanted.update((key or "<device label>", name) for name in names)
    have = Counter(
        (key if key in keys else "<device label>", names) for key, names, _ in blocks(text)
    )
    assert have == wanted


def _qcom_ext_bench(argv: list[str]) -> int:
    return cli_main(["bench", *argv])


def _replace_twice(tmp_path: Path, args: list[str], run=_qcom_ext_bench) -> tuple[str, str, str]:
    """The doc before, after one and after two ``qcom-ext bench ... --update-doc`` runs
    (``run``: the lab's ``python -m benchmarks``)."""
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(DOC.read_text())
    before = doc.read_text()
    texts = []
    for _ in range(2):
        assert run([*args, "--update-doc", str(doc)]) == 0
        texts.append(doc.read_text())
    return before, texts[0], texts[1]


def _check_replaced_in_place(before: str, after: str, begin: str, label: str) -> str:
    start = before.index(begin)
    end_before = before.index("<!-- /bench -->", start)
    assert after.count(begin) == 1 and after.index(begin) == start
    end_after = after.index("<!-- /bench -->", start)
    assert after[:start] == before[:start]
    assert after[end_after:] == before[end_before:]
    body = after[start:end_after]
    assert f"**{label}**" in body
    runner = r"(qcom-ext bench|python -m benchmarks)"
    assert re.search(rf"^Command: `([A-Z_]+=\S+ )*{runner} .*--update-doc ", body, re.M)
    return body


def _shape(body: str) -> list[str]:
    """A block without its numbers, dates and verdicts: what must not change between runs."""
    lines = [line.replace("NOT met", "met") for line in body.splitlines()]
    return [re.sub(r"[\d.]+(e[-+]?\d+)?\s*(ns|µs|ms|s)?", "#", line) for line in lines]


@pytest.mark.slow
def test_update_doc_replaces_a_block_in_place_and_idempotently(tmp_path, monkeypatch, device_caps):
    from test_samples import device_spec

    spec = device_spec(device_caps)
    monkeypatch.setenv("PYOPENCL_CTX", spec)  # main() sets it; restored after the test
    begin = "<!-- bench pocl-3.1-cpu probe,startup -->"
    args = [
        "probe",
        "startup",
        "--device",
        spec,
        "--rounds",
        "1",
        "--batch-ms",
        "1",
        "--doc-key",
        "pocl-3.1-cpu",
    ]
    before, once, twice = _replace_twice(tmp_path, args)
    first = _check_replaced_in_place(before, once, begin, device_caps.label)
    second = _check_replaced_in_place(before, twice, begin, device_caps.label)
    assert "`import_and_platforms`" in second and "--rounds 1" in second
    assert _shape(first) == _shape(second)


def _run_suite_twice(
    tmp_path, monkeypatch, device_caps, name: str, environ: dict[str, str]
) -> tuple[str, str, str]:
    """:func:`_replace_twice` for suite ``name`` (keyed pocl-3.1-cpu) on this device, with
    the ``environ`` variables set; skipped where the device has no images."""
    from test_samples import device_spec

    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label}: {name} needs images")
    spec = device_spec(device_caps)
    monkeypatch.setenv("PYOPENCL_CTX", spec)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    args = [name, "--device", spec, "--rounds", "1", "--doc-key", "pocl-3.1-cpu"]
    return _replace_twice(tmp_path, args, _lab.main)


@pytest.mark.slow
def test_a_suite_writes_its_own_block_in_place(tmp_path, monkeypatch, device_caps, kernel_context):
    environ = {"QCOM_EXT_BENCH_BICUBIC_SIZE": "32x16"}
    before, once, twice = _run_suite_twice(
        tmp_path, monkeypatch, device_caps, "bicubic-suite", environ
    )
    begin = "<!-- bench pocl-3.1-cpu bicubic-suite -->"
    body = _check_replaced_in_place(before, twice, begin, device_caps.label)
    assert "QCOM_EXT_BENCH_BICUBIC_SIZE=32x16 python -m benchmarks bicubic-suite" in body
    assert "32x16 RGBA float -> 64x32" in body and "| `upscale2x_blocks`" in body
    assert _shape(_check_replaced_in_place(before, once, begin, device_caps.label)) == _shape(body)


@pytest.mark.slow
def test_the_former_suite_name_writes_the_renamed_block(
    tmp_path, monkeypatch, device_caps, kernel_context
):
    """``hof-suite`` and ``QCOM_EXT_HOF_SIZE`` (the names before the rename) still run the
    accelerated suite, at that size, into its ``accelerated-suite`` block."""
    monkeypatch.delenv("QCOM_EXT_BENCH_ACCELERATED_SIZE", raising=False)
    monkeypatch.setattr(lab_module("cases_accelerated"), "opencv", lambda: None)
    # the tuned rows choose between two builds (the whole space is test_variant_*'s)
    space = {"strips": (((1, 4),), ((8, 4),)), "blocked": (((2, 2),), ((8, 4),))}
    monkeypatch.setattr(lab_module("_accelerated_work"), "TUNE_SPACE", space)
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path / "cache"))
    before, once, twice = _run_suite_twice(
        tmp_path, monkeypatch, device_caps, "hof-suite", {"QCOM_EXT_HOF_SIZE": "16x16"}
    )
    begin = "<!-- bench pocl-3.1-cpu accelerated-suite -->"
    body = _check_replaced_in_place(before, twice, begin, device_caps.label)
    assert "QCOM_EXT_HOF_SIZE=16x16 python -m benchmarks hof-suite" in body
    assert "16x16 RGBA float" in body and "| 5x5 convolution |" in body
    assert "hof-suite -->" not in twice
    _check_replaced_in_place(before, once, begin, device_caps.label)


SUMMARY_HEAD = (
    "| op | time | of buffer copy | of image copy | vs torch | target | device | driver | date |"
)
#: The summary of ``qcom-ext bench --summary`` (the wheel alone): no lab columns.
WHEEL_SUMMARY_HEAD = "| op | time | of buffer copy | device | driver | date |"


#: The summary rows each suite writes (the operations that start their names).
SUITE_ROWS = {
    "accelerated-suite": ("7x7 box filter", "5x5 convolution", "8x8 block match"),
    "bicubic-suite": ("bicubic 2x",),
    "conv-suite": ("depthwise",),
    "ops-suite": ("GEMV f16", "GEMV q8_0", "GEMV q4_0", "depthwise 3x3"),
}


def test_the_page_opens_with_a_summary_table_per_device():
    """The first section is the summary; each of its blocks is a ``summary`` block whose
    one table has the columns of bench/report.py's summary_table, a row per operation
    with its share of the buffer copy (or its ratio to torch) and its verdict (the lab's;
    the wheel's: a row per case and op with its time, no lab columns), stamped with the
    block's own device and driver."""
    text = DOC.read_text()
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections[0] == "Summary", sections[:3]
    section = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    found = blocks(section)
    assert found and all(names == "summary" for _, names, _ in found)
    assert any(key == "pocl-3.1-cpu" for key, _, _ in found)
    assert len([b for b in blocks(text) if b[1] == "summary"]) == len(found)  # all here
    for key, _, body in found:
        (table,) = [t for t in tables(body) if measured(t)]
        label, driver = STAMP.match(body)["label"], re.search(r"driver (\S+)", body)[1]
        ops = [row[0] for row in table[1:]]
        command = re.search(r"^Command: `([^`]*)`", body, re.M)[1]
        for suite, wanted in SUITE_ROWS.items():  # a row per operation of each suite run
            for op in wanted if suite in command.split() else ():
                assert any(o.startswith(op) for o in ops), f"{key}: no {op} row"
        lab = "python -m benchmarks" in command
        head = SUMMARY_HEAD if lab else WHEEL_SUMMARY_HEAD
        assert " | ".join(["", *table[0], ""]).strip() == head
        if not lab:
            for row in table[1:]:
                assert row[3:5] == [label, driver] and MEASURED_CELL.match(row[1]), row
            continue
        for row in table[1:]:
            assert row[6:8] == [label, driver], row
            assert MEASURED_CELL.match(row[2]) or MEASURED_CELL.match(row[4]), row
            assert re.search(r"(>=|<=) .*: (met|NOT met|not judged)$", row[5]), row


def test_no_prose_states_a_kernel_as_a_multiple_of_the_image_copy():
    """Shares of the image copy above 1 read as if a kernel beat the memory system: the
    prose states results against the buffer copy (issue 18)."""
    prose = BLOCK.sub("", DOC.read_text())
    claims = re.findall(r"[\d.]+x (the )?image copy|\d{3,}% of (the )?image.copy", prose)
    assert not claims, claims
