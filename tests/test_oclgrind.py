"""Every kernel of kernels/*.cl and every compat-header builtin under Oclgrind, checked
against numpy (tests/oclgrind_cases.py, run by tests/_oclgrind.py): out-of-bounds
accesses, data races, barrier divergence, API errors and uninitialized values are
reports, and any report fails. What ran is recorded by the cases and counted by Oclgrind
itself, and compared with what the sources declare, so nothing is left out silently.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _oclgrind import (
    DEFECTS,
    ROOT,
    SHARDS,
    Run,
    build_errors,
    builtin_names,
    credited_builtins,
    find_defects,
    kernel_names,
    launches,
    missing,
    run_python,
    run_shard,
    summary,
)

needs_oclgrind = pytest.mark.skipif(missing() is not None, reason=str(missing()))


class Results:
    """The Oclgrind runs of this module, made when first asked: the defect probes once,
    each shard by the test that checks it (so no one test pays for all), all of them for
    the tests over every run."""

    def __init__(self, workdir: Path) -> None:
        self.workdir, self._runs = workdir, {}
        self._defects: list[str] | None = None

    @property
    def defects(self) -> list[str]:
        if self._defects is None:
            self._defects = find_defects(self.workdir)
        return self._defects

    def run(self, shard: int) -> Run:
        if shard not in self._runs:
            self._runs[shard] = run_shard(self.workdir, shard, self.defects)
        return self._runs[shard]

    @property
    def runs(self) -> list[Run]:
        return [self.run(shard) for shard in range(SHARDS)]


@pytest.fixture(scope="module")
def oclgrind(tmp_path_factory) -> Results:
    return Results(tmp_path_factory.mktemp("oclgrind"))


@pytest.mark.slow
@needs_oclgrind
@pytest.mark.parametrize("shard", range(SHARDS))
def test_cases_match_numpy_without_reports(oclgrind, shard):
    run = oclgrind.run(shard)
    assert run.returncode == 0, run.failure()
    assert run.stdout.startswith("Oclgrind"), f"not on Oclgrind:\n{run.failure()}"
    reports = run.reports()
    assert not reports, f"{len(reports)} Oclgrind reports:\n\n" + "\n\n".join(reports[:20])
    recorded = sorted(launch["kernel"] for launch in run.manifest["launches"])
    assert sorted(run.counted_kernels()) == recorded, "Oclgrind ran other kernels than recorded"


@pytest.mark.slow
@needs_oclgrind
def test_every_kernel_and_builtin_ran(oclgrind):
    declared = kernel_names()
    ran = {(x["kernel"], x["file"]) for x in launches(oclgrind.runs) if x["file"]}
    not_run = sorted(
        f"{file}: {name}" for name, file in declared.items() if (name, file) not in ran
    )
    assert not not_run, f"kernels never run under Oclgrind: {not_run}"
    covered = credited_builtins(oclgrind.runs) | set(build_errors(oclgrind.runs))
    assert not sorted(builtin_names() - covered), "builtins never run under Oclgrind"


@pytest.mark.slow
@needs_oclgrind
def test_uninitialized_check_is_off_only_for_defects_this_oclgrind_has(oclgrind):
    cases = [c for run in oclgrind.runs for c in run.manifest["cases"].values()]
    off = {c["name"]: c["uninitialized"] for c in cases if c["uninitialized"] is not True}
    for name, reason in off.items():
        named = re.findall(r"(?:^off: |; )([\w-]+):", reason)
        assert named and set(named) <= set(oclgrind.defects), f"{name}: {reason}"
    assert len(off) < len(cases), "the uninitialized-value check ran nowhere"


@pytest.mark.slow
@needs_oclgrind
def test_reliability_doc_has_the_counts(oclgrind):
    text = (ROOT / "docs" / "RELIABILITY.md").read_text()
    section = text.split("## Oclgrind", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| ([^|]+?) \| (\d+) \|$", section, re.MULTILINE))
    counts = {key: str(value) for key, value in summary(oclgrind.runs).items()}
    if oclgrind.defects != list(DEFECTS):  # another Oclgrind than the one the doc describes
        rows = {k: v for k, v in rows.items() if "uninitialized" not in k}
        counts = {k: v for k, v in counts.items() if "uninitialized" not in k}
    assert rows == counts, "docs/RELIABILITY.md: run `python tests/_oclgrind.py` for the counts"
    for name in DEFECTS:
        assert f"`{name}`" in section, f"docs/RELIABILITY.md does not describe {name}"


BROKEN = """
import numpy as np, pyopencl as cl
dev = cl.get_platforms()[0].get_devices()[0]
src = '''
__kernel void oob(__global int *o) { o[get_global_id(0) + 1] = 1; }
__kernel void race(__global int *o) { o[0] = (int)get_global_id(0); }
__kernel void uninit(__global int *o)
{ int x[2]; x[0] = 1; o[get_global_id(0)] = x[get_global_id(0) & 1]; }
'''
for names in (["oob"], ["race", "uninit"]):  # two contexts: the log keeps both
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    program = cl.Program(ctx, src).build()
    out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)
    for name in names:
        cl.Kernel(program, name)(queue, (4,), (4,), out)
    queue.finish()
"""


@pytest.mark.slow
@needs_oclgrind
def test_reports_of_every_kind_and_context_are_caught(tmp_path):
    """The harness sees an out-of-bounds write in one context and a data race and an
    uninitialized value in a later one (a log file per context would lose the first)."""
    run = run_python(tmp_path, ["-c", BROKEN])
    assert run.returncode == 0, run.failure()
    text = "\n".join(run.reports())
    for kind in ("Invalid write", "data race", "Uninitialized value"):
        assert kind in text, f"{kind!r} not caught:\n{text[:3000]}"


def test_report_parser_drops_only_the_known_queries():
    probe = (
        "Oclgrind - OpenCL runtime error detected\n\tFunction: clGetDeviceInfo\n"
        "\tError:    CL_INVALID_VALUE\n\tFor argument 'param_name'\n\n"
    )
    source = (
        "Oclgrind - OpenCL runtime error detected\n\tFunction: clCreateKernel\n"
        "\tError:    CL_INVALID_KERNEL_NAME\n\tKernel '_source' not found\n\n"
    )
    api = (
        "Oclgrind - OpenCL runtime error detected\n\tFunction: clEnqueueNDRangeKernel\n"
        "\tError:    CL_INVALID_WORK_GROUP_SIZE\n\n"
    )
    invalid = "Invalid read of size 16 at global memory address 0x10\n\tKernel: k\n\n"
    quiet = Run([], 0, "", probe + "1 warning generated.\n" + source, "", None)
    assert quiet.reports() == []
    loud = Run([], 0, "", probe + api + source, invalid + invalid, None)
    assert len(loud.reports()) == 3
    assert "CL_INVALID_WORK_GROUP_SIZE" in loud.reports()[2]


def test_source_parsers(tmp_path):
    (tmp_path / "compat").mkdir()
    (tmp_path / "a.cl").write_text(
        "/* __kernel void commented(void) */\n"
        "__kernel __attribute__((reqd_work_group_size(8, 1, 1)))\nvoid plain(__global int *o)"
        " { }\n#define MAKE(name, op) \\\n__kernel void name(__global int *o) { o[0] = op; }\n"
        "MAKE(first, 1)\nMAKE(second, 2)\n"
    )
    assert kernel_names(tmp_path) == {"plain": "a.cl", "first": "a.cl", "second": "a.cl"}
    (tmp_path / "qcom_ext.h").write_text('#include "compat/x.h"\n')
    (tmp_path / "compat" / "x.h").write_text(
        "/* qcom_in_a_comment */\n#define QCOM_MACRO(x) qcom_ext_helper(x)\n"
        "int qcom_public(int v) { return qcom_ext_helper(v); }\n"
        'typedef enum { CLK_MODE_QCOM = 0 } qcom_modes_t;\n#error "see qcom_ext.docs"\n'
    )
    assert builtin_names(tmp_path) == {
        "QCOM_MACRO",
        "qcom_public",
        "CLK_MODE_QCOM",
        "qcom_modes_t",
    }


def test_case_scripts_are_one_mechanism():
    """The cases run through tests/_oclgrind.py only: no second launcher or log parser."""
    tests = Path(__file__).parent
    others = [
        p.name
        for p in tests.glob("*.py")
        if "OCLGRIND_LOG" in p.read_text() and p.name not in ("_oclgrind.py", Path(__file__).name)
    ]
    assert others == []
