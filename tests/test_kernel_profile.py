"""The kernel profile (``python -m benchmarks profile-suite``): the suite on every device, the
PTX and ptxas parsers on recorded-format NVIDIA text (tests/data/nvidia/), and the
occupancy arithmetic against hand-worked cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest
from conftest import lab_module

_kernel_profile, _occupancy, _ptx = (
    lab_module(n) for n in ("_kernel_profile", "_occupancy", "_ptx")
)
Launch, OpWork, captured_launches = (
    _kernel_profile.Launch,
    _kernel_profile.OpWork,
    _kernel_profile.captured_launches,
)
markdown, nvidia_fields = _kernel_profile.markdown, _kernel_profile.nvidia_fields
SM_LIMITS, occupancy = _occupancy.SM_LIMITS, _occupancy.occupancy
classify, instruction_mix, is_ptx, ptxas_info = (
    _ptx.classify,
    _ptx.instruction_mix,
    _ptx.is_ptx,
    _ptx.ptxas_info,
)

NVIDIA = Path(__file__).parent / "data" / "nvidia"
GENERIC = ("kernel", "global_size", "wave_size", "private_mem_size", "local_mem_size")
NV_ONLY = ("registers", "spill_store_bytes", "instruction_mix", "occupancy", "arch")
ATTRIBUTES = {"compute_capability": (9, 0), "registers_per_block": 65536, "warp_size": 32}


@pytest.fixture(scope="module")
def cases_module():
    return lab_module("cases_profile")


@pytest.fixture
def small_images(monkeypatch, tmp_path):
    monkeypatch.setenv("QCOM_EXT_BENCH_ACCELERATED_SIZE", "48x32")
    monkeypatch.setenv("QCOM_EXT_BENCH_BICUBIC_SIZE", "24x16")
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path / "cache"))


# --- the suite on pocl ----------------------------------------------------------------


def test_every_default_kernel_gets_a_row(cases_module, device_caps, kernel_context, small_images):
    rows, skipped = cases_module.profile_rows(device_caps, small=True)
    assert skipped == {}
    assert [r["op"] for r in rows if r["op"] in cases_module.OPS] == [r["op"] for r in rows]
    assert {r["op"] for r in rows} == set(cases_module.OPS)
    kernels = {r["op"]: r["kernel"] for r in rows}
    assert kernels["gemv q4_0"] == kernels["gemv f16"] == kernels["gemv q4_0 M=8"] == "matmul_gemv"
    # q8_0 activations up to 8 rows: the one-launch integer GEMV alone (no quantizer row)
    assert kernels["gemv q4_0 x q8_0"] == kernels["gemv q4_0 x q8_0 M=8"] == "matmul_gemv_q8"
    assert sum(r["op"] == "gemv q4_0 x q8_0" for r in rows) == 1
    for row in rows:
        assert all(row[k] is not None for k in GENERIC), row
        assert row["wave_size"] >= 1 and row["max_work_group_size"] >= 1
        assert row["bytes_per_output"] > 0 and row["intensity"] > 0
        if row["local_size"] is not None:
            assert np.prod(row["local_size"]) <= row["max_work_group_size"]
        if device_caps.driver == "nvidia":
            # ptxas's lines, where the rebuild printed them: under pytest the driver's own
            # JIT cache (CUDA_CACHE_DISABLE unset at start) skips ptxas, so none are here;
            # the suite's documented run sets it (docs/BENCHMARKS.md, "Kernel profiles")
            assert row["registers"] is None or row["registers"] > 0, row
        else:  # no NVIDIA device: its NVIDIA fields are absent, never guessed
            assert all(row[k] is None for k in NV_ONLY), row
    box = next(r for r in rows if r["op"] == "box 7x7")
    assert box["bytes_per_output"] == 32.0  # RGBA float read once, written once
    bicubic = next(r for r in rows if r["op"] == "bicubic 2x")
    assert bicubic["bytes_per_output"] == 20.0  # 16 B written + a quarter of 16 B read
    assert bicubic["global_size"][0] * bicubic["global_size"][1] > 0


def test_the_runner_writes_the_table_json_and_doc_block(
    cases_module, device_caps, kernel_context, small_images, tmp_path
):
    run = lab_module("__main__")  # python -m benchmarks

    doc, out = tmp_path / "BENCH.md", tmp_path / "profile.json"
    doc.write_text("# Benchmarks\n")
    argv = ["profile-suite", "--profile-small", "--device", device_caps.label]
    assert run.main([*argv, "--json", str(out), "--update-doc", str(doc)]) == 0
    data = json.loads(out.read_text())["suites"]["profile-suite"]
    assert data["small"] is True and len(data["kernels"]) >= len(cases_module.OPS)
    text = doc.read_text()
    assert "profile-suite" in text and "| op | kernel | global | work-group |" in text
    assert "`matmul_gemv`" in text and "| box 7x7 |" in text


def test_captured_launches_record_and_still_run(kernel_context):
    source = "__kernel void twice(__global float *v) { v[get_global_id(0)] *= 2.0f; }"
    kernel = cl.Program(kernel_context, source).build().twice
    queue = cl.CommandQueue(kernel_context)
    host = np.arange(8, dtype=np.float32)
    buffer = cl.Buffer(kernel_context, cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    kernel.set_args(buffer)
    original = cl.enqueue_nd_range_kernel
    with captured_launches() as launches:
        cl.enqueue_nd_range_kernel(queue, kernel, (8,), (4,))
        cl.enqueue_nd_range_kernel(queue, kernel, (8,), None)
    assert cl.enqueue_nd_range_kernel is original
    assert [(x.global_size, x.local_size) for x in launches] == [((8,), (4,)), ((8,), None)]
    cl.enqueue_copy(queue, host, buffer)
    np.testing.assert_array_equal(host, np.arange(8) * 4.0)


# --- PTX and ptxas text ---------------------------------------------------------------


def test_instruction_mix_of_the_recorded_ptx():
    ptx = (NVIDIA / "kernels_sm90.ptx").read_text()
    assert is_ptx(ptx) and not is_ptx(b"\x7fELF\x02\x01\x01")
    mixes = instruction_mix(ptx)
    assert sorted(mixes) == ["box_image", "box_tiles"]  # the .func helper is no kernel
    image = mixes["box_image"]
    assert dict(image.counts) == {
        "other": 4,  # 3 ld.param, ret
        "move": 6,
        "integer": 3,  # 2 mad.lo.s32, shl.b32
        "convert": 2,
        "fp32_add": 7,
        "texture": 2,
        "fp32_mul": 4,
        "surface": 1,
    }
    assert image.total == 29 and image.global_loads == {} == image.global_stores
    tiles = mixes["box_tiles"]
    assert dict(tiles.counts) == {
        "other": 4,
        "move": 5,
        "integer": 7,  # mad, mul.wide, 2 add.s64, shl, 2 add.s32
        "compare": 2,
        "branch": 2,
        "global_load": 2,
        "global_store": 2,
        "shared_store": 1,
        "shared_load": 1,
        "barrier": 1,
        "fp32_fma": 4,
        "local_store": 1,
        "local_load": 1,
        "convert": 1,  # cvt.rn.f16.f32 inside an inline { } scope
    }
    assert tiles.global_loads == {"v4.f32": 1, "f32": 1}
    assert tiles.global_stores == {"v4.f32": 1, "v2.f32": 1}
    assert tiles.to_dict()["total"] == 34


@pytest.mark.parametrize(
    "opcode, category",
    [
        ("ldu.global.v2.f32", "global_load"),
        ("ld.const.f32", "other"),
        ("tld4.r.2d.v4.f32.f32", "texture"),
        ("suld.b.2d.v4.b32.trap", "surface"),
        ("barrier.sync", "barrier"),
        ("mad.rn.f32", "fp32_fma"),
        ("div.rn.f32", "fp32_other"),
        ("fma.rn.f16x2", "fp16"),
        ("and.pred", "other"),
        ("xor.b32", "integer"),
        ("selp.b32", "compare"),
        ("atom.global.add.u32", "atomic"),
    ],
)
def test_classify(opcode, category):
    assert classify(opcode) == category


def test_ptxas_lines_of_the_recorded_log():
    info = ptxas_info((NVIDIA / "ptxas_verbose.log").read_text())
    assert sorted(info) == ["box_image", "box_tiles"]  # helper has no "Used" line
    image, tiles = info["box_image"], info["box_tiles"]
    assert (image.registers, image.smem_bytes, image.spill_store_bytes) == (22, 0, 0)
    assert (tiles.registers, tiles.smem_bytes, tiles.stack_frame_bytes) == (64, 4096, 32)
    assert (tiles.spill_store_bytes, tiles.spill_load_bytes, tiles.arch) == (4, 4, "sm_90")


def test_ptxas_used_line_with_other_fields_before_smem():
    # the shape of tpruvot/ccminer PR 36's log (sm_50)
    log = (
        "ptxas info    : Compiling entry function 'k' for 'sm_50'\n"
        "ptxas info    : Used 255 registers, 312 bytes cumulative stack size, "
        "8192 bytes smem, 324 bytes cmem[0], 4 bytes cmem[2]\n"
    )
    assert (ptxas_info(log)["k"].registers, ptxas_info(log)["k"].smem_bytes) == (255, 8192)
    assert ptxas_info("no ptxas here") == {}


def test_nvidia_fields_from_recorded_text():
    log = (NVIDIA / "ptxas_verbose.log").read_text()
    ptx = (NVIDIA / "kernels_sm90.ptx").read_text()
    launch = Launch(kernel=None, global_size=(4096, 16), local_size=(16, 16))
    fields = nvidia_fields("box_tiles", log, ptx, ATTRIBUTES, launch, local_mem=0)
    assert fields["registers"] == 64 and fields["spill_store_bytes"] == 4
    assert fields["instruction_mix"]["counts"]["barrier"] == 1
    occ = fields["occupancy"]  # 64 regs x 256 items, 4 KiB smem (from ptxas) on 9.0
    assert (occ["blocks_per_sm"], occ["limited_by"], occ["fraction"]) == (4, "registers", 0.5)
    unknown = nvidia_fields("box_tiles", log, ptx, ATTRIBUTES, Launch(None, (64,), None), 0)
    assert unknown["registers"] == 64 and unknown["occupancy"] is None  # driver's choice
    missing = nvidia_fields("nope", log, ptx, ATTRIBUTES, launch, 0)
    assert missing["registers"] is None and missing["instruction_mix"] is None
    row = {
        "op": "box",
        "global_size": [4096, 16],
        "local_size": [16, 16],
        "wave_size": 32,
        "private_mem_size": 0,
        "local_mem_size": 4096,
        "spills": False,
        "bytes_per_output": 32.0,
        "intensity": 6.125,
        "kernel": "box_tiles",
        **fields,
    }
    table = markdown([{**row, "nvidia_note": None}, {**row, "nvidia_note": "why"}])
    assert table.count("* box `box_tiles`: why") == 1
    assert "| 64 | 4/4 | 50% (4 WG/SM, registers) |" in table
    assert "barrier 1" in table and "ld.global v4.f32:1, f32:1" in table


# --- occupancy ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cc, threads, registers, local, expected",
    [
        # 64 regs x 256: 2048 regs a warp, 8 warps a sub-partition, 32 an SM: 4 WGs, 50 %
        ((9, 0), 256, 64, 0, (4, "registers", 32, 0.5)),
        # 48 KiB + 1 KiB reserved = 50176 B a WG, 228 KiB an SM: 4 WGs of 4 warps, 25 %
        ((9, 0), 128, 32, 48 * 1024, (4, "local memory", 16, 0.25)),
        # 255 regs round to 8192 a warp; 32 warps need 256K > 64K a block: cannot launch
        ((9, 0), 1024, 255, 0, (0, "registers", 0, 0.0)),
        # few registers, 64 items: 2048 threads / 64 = 32 WGs = the slot limit, 100 %
        ((9, 0), 64, 16, 0, (32, "threads", 64, 1.0)),
        # cc 8.6: 1536 threads an SM, 6 WGs of 256
        ((8, 6), 256, 32, 0, (6, "threads", 48, 1.0)),
        # cc 7.5: no reserved shared memory, 64 KiB an SM: 2 WGs of 32 KiB
        ((7, 5), 128, 32, 32 * 1024, (2, "local memory", 8, 0.25)),
    ],
)
def test_occupancy_hand_worked(cc, threads, registers, local, expected):
    o = occupancy(cc, threads=threads, registers=registers, local_mem_bytes=local)
    assert (o.blocks_per_sm, o.limited_by, o.active_warps, o.fraction) == expected
    assert o.max_warps == SM_LIMITS[cc].max_threads // 32


def test_occupancy_is_not_guessed_for_unknown_devices():
    assert occupancy((12, 1), threads=256, registers=32, local_mem_bytes=0) is None
    assert occupancy((9, 0), threads=0, registers=32, local_mem_bytes=0) is None


def test_op_work_definition():
    work = OpWork(outputs=4, bytes=80.0, flops=512.0)
    assert (work.bytes_per_output, work.intensity) == (20.0, 6.4)
