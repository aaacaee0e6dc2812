"""Quirk flags in real builds, and where quirks are shown: a flag reaches every program
built through the caps; the documented reduction recipe follows its flag; every quirk flag
forced on a device that needs none leaves qcom_ext's kernels' results unchanged; the
probe's quirks block, its --json and the selftest's lines."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess

import numpy as np
import pyopencl as cl
import pytest
from conftest import adreno_strings
from rich.console import Console
from test_quirks import ALL_FLAGS, BY_ID, DOC, REDUCE, ids, qualcomm

import qcom_ext
from qcom_ext import DeviceCaps
from qcom_ext._resources import kernels_dir
from qcom_ext.tools import cli
from qcom_ext.tools.selftest import run_selftest
from qcom_ext.tools.selftest._render import render

QUIRK_PROBE = """__kernel void quirk(__global int *out) {
#ifdef QCOM_EXT_QUIRK_NO_SUB_GROUP_REDUCE
    out[0] = 1;
#else
    out[0] = 0;
#endif
}"""


def _probe_flag(context) -> int:
    program = qcom_ext.build_program(context, QUIRK_PROBE)
    queue = cl.CommandQueue(context)
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 4)
    program.quirk(queue, (1,), None, out)
    value = np.zeros(1, np.int32)
    cl.enqueue_copy(queue, value, out)
    return int(value[0])


def test_a_quirk_flag_reaches_every_build_through_the_caps(
    device_caps, kernel_context, monkeypatch
):
    assert _probe_flag(kernel_context) == int(REDUCE in device_caps.quirks)
    quirky = dataclasses.replace(device_caps, quirks=(*device_caps.quirks, REDUCE))
    monkeypatch.setattr("qcom_ext.device.probe.probe", lambda device=None, **kwargs: quirky)
    context = cl.Context([device_caps.device()])  # programs are kept per context
    assert _probe_flag(context) == 1


# ---- forcing the flags on a device that needs none ------------------------------------------


def recipe() -> str:
    """The reduction kernel docs/QUIRKS.md shows (the one C block of its recipe)."""
    text = DOC.read_text().split("## Recipe", 1)[1]
    return re.search(r"```c\n(.*?)```", text, re.S).group(1)


def _group_sums(context, options) -> tuple[np.ndarray, int, np.ndarray]:
    program = qcom_ext.build_program(context, recipe(), options=options)
    queue = cl.CommandQueue(context)
    values = np.random.default_rng(4).integers(-1000, 1000, 4 * 64).astype(np.int32)
    mf = cl.mem_flags
    src = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=values)
    sums, marker = cl.Buffer(context, mf.WRITE_ONLY, 16), cl.Buffer(context, mf.WRITE_ONLY, 4)
    program.group_sums(queue, (256,), (64,), src, sums, marker, cl.LocalMemory(256))
    got, used = np.zeros(4, np.int32), np.zeros(1, np.int32)
    cl.enqueue_copy(queue, got, sums)
    cl.enqueue_copy(queue, used, marker)
    return got, int(used[0]), values.reshape(4, 64).sum(axis=1)


def test_the_documented_recipe_follows_the_flag(device_caps, kernel_context):
    forced, used, want = _group_sums(kernel_context, list(REDUCE.flags))
    np.testing.assert_array_equal(forced, want)
    assert used == 0  # the local-memory tree
    plain, used, want = _group_sums(kernel_context, [])
    np.testing.assert_array_equal(plain, want)
    assert used == int("cl_khr_subgroups" in device_caps.extensions)


BITREVERSE = """__kernel void k(__global uint *v) {
    v[get_global_id(0)] = qcom_bitreverse(v[get_global_id(0)]);
}"""


CLANG = next(
    (c for c in ("clang", *(f"clang-{v}" for v in range(20, 13, -1))) if shutil.which(c)), None
)


def _clang_check(source: str, options: list[str], tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "recipe.cl"
    path.write_text(source)
    front = ["-x", "cl", "-target", "spir64", "-Xclang", "-finclude-default-header"]
    command = [CLANG, *front, "-fsyntax-only", "-Werror", "-cl-std=CL2.0", *options, str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CLANG is None, reason="no clang with an OpenCL front end installed")
def test_the_recipe_sub_group_branch_compiles_and_the_flag_leaves_it(tmp_path):
    """No local device has sub-groups: clang's SPIR front end (cl_khr_subgroups defined)
    checks the branch the flag turns off, and that the flag does turn it off."""
    assert _clang_check(recipe(), [], tmp_path).returncode == 0
    wrong = recipe().replace("sub_group_reduce_add(x)", "sub_group_reduce_add(x, 1)")
    assert "sub_group_reduce_add" in _clang_check(wrong, [], tmp_path).stderr
    assert _clang_check(wrong, list(REDUCE.flags), tmp_path).returncode == 0


def _scan(context, options) -> np.ndarray:
    source = (kernels_dir() / "subgroup_prefix_sum.cl").read_text()
    program = qcom_ext.build_program(context, source, options=[*options, "-DLOCAL_SIZE=64"])
    queue = cl.CommandQueue(context)
    values = np.random.default_rng(5).integers(-50, 50, 64).astype(np.int32)
    mf = cl.mem_flags
    src = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=values)
    out, block = cl.Buffer(context, mf.WRITE_ONLY, 256), cl.Buffer(context, mf.WRITE_ONLY, 4)
    program.scan_blocks(queue, (64,), (64,), src, out, block, np.uint32(64))
    got = np.zeros(64, np.int32)
    cl.enqueue_copy(queue, got, out)
    bits = qcom_ext.build_program(context, BITREVERSE, options=options)
    words = np.array([0x1248EDBF, 1, 0x80000000, 0xDEADBEEF], np.uint32)
    buf = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=words)
    bits.k(queue, (4,), None, buf)
    reversed_ = np.zeros(4, np.uint32)
    cl.enqueue_copy(queue, reversed_, buf)
    assert reversed_[0] == 0xFDB71248  # the guide's example
    return np.concatenate([got, reversed_.view(np.int32), np.cumsum(values).astype(np.int32)])


def test_every_quirk_flag_forced_keeps_qcom_ext_kernels_equal(kernel_context):
    plain, forced = _scan(kernel_context, []), _scan(kernel_context, ALL_FLAGS)
    np.testing.assert_array_equal(forced, plain)
    np.testing.assert_array_equal(plain[:64], plain[-64:])  # the scan is numpy's cumsum


# ---- where they are shown -------------------------------------------------------------------


def _render_text(caps: DeviceCaps) -> str:
    console = Console(record=True, width=80, force_terminal=False, color_system=None)
    cli._render(caps, console)
    return console.export_text()


def test_probe_shows_a_quirks_block():
    caps = qualcomm("E031.38.11.14", "730", extensions=adreno_strings()["adreno730-cl3.0"])
    text = _render_text(caps)
    block = text.split("quirks:\n", 1)[1].split("adreno-730-gpu", 1)[0]
    for quirk in caps.quirks:
        assert f"  {quirk.id}: {quirk.effect}\n    {quirk.source}\n" in block, quirk.id
    assert all(len(line) <= 80 for line in block.splitlines())
    assert "quirks:" not in _render_text(DeviceCaps.from_info(extensions="", disabled=()))


def test_probe_json_lists_the_quirks(monkeypatch, capsys):
    caps = qualcomm("E031.41.03.64", "740")
    monkeypatch.setattr(cli, "probe", lambda device=None, **kwargs: caps)
    assert cli.main(["probe", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["quirks"]
    assert [q["id"] for q in listed] == ids(caps)
    for entry, quirk in zip(listed, caps.quirks, strict=True):
        assert set(entry) == {"id", "summary", "source", "flags", "downgrades"}
        assert (entry["source"], entry["flags"]) == (quirk.source, list(quirk.flags))


def test_selftest_reports_a_line_per_quirk(device_caps):
    quirky = dataclasses.replace(
        device_caps, quirks=(REDUCE, BY_ID["no-vector-sub-group-broadcast"])
    )
    report = run_selftest(quirky, only=["bitreverse"], seed=1)
    assert [q["id"] for q in report.to_dict()["quirks"]] == [
        "e031-sub-group-reduce-sigsegv",
        "no-vector-sub-group-broadcast",
    ]
    console = Console(record=True, width=200, force_terminal=False, color_system=None)
    render(report, console)
    lines = [line for line in console.export_text().splitlines() if line.startswith("quirk:")]
    assert lines == [
        f"quirk: {REDUCE.id}: -DQCOM_EXT_QUIRK_NO_SUB_GROUP_REDUCE ({REDUCE.source})",
        "quirk: no-vector-sub-group-broadcast: report only "
        "(https://github.com/ggml-org/llama.cpp/pull/15029)",
    ]
