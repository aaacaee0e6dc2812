"""Every sample runs to success on every device that can run it, and every picture a
sample writes shows what numpy says it must (tests/sample_pictures.py; Pillow is a
requirement here, as in the ``test`` extra)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sample_pictures as pictures
from PIL import Image

# Each test runs a sample script in a child process: a minute and a half in all, cold.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def run_sample(
    name: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    if not (SAMPLES / name).is_file():
        pytest.skip("not running from a source checkout")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    return subprocess.run(
        [sys.executable, str(SAMPLES / name), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )


def device_spec(caps) -> str:
    import pyopencl as cl

    for p_index, platform in enumerate(cl.get_platforms()):
        for d_index, device in enumerate(platform.get_devices()):
            if device.int_ptr == caps.device_id:
                return f"{p_index}:{d_index}"
    raise AssertionError(f"{caps.label} not found among pyopencl's devices")


#: How a sample reports a time: the first run (kernel builds included) apart from the
#: steady state.
FIRST_THEN = re.compile(
    r"first run [\d.]+ m?s \(kernel builds included\), then [\d.]+ m?s \(median of 3\)"
)


def test_samples_take_the_device_label_as_the_cli_does(device_caps):
    """``--device`` as ``qcom-ext --device`` reads it: the label ``qcom-ext probe`` prints."""
    result = run_sample("bitreverse.py", "--device", device_caps.label, "--bits", "10")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"{device_caps.label}: cl_qcom_bitreverse -> ")


def test_a_sample_refuses_a_device_it_cannot_find_in_one_line():
    result = run_sample("box_filter.py", "--device", "no-such-device-cpu")
    assert result.returncode == 2 and result.stdout == "", result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("box_filter.py: error: --device 'no-such-device-cpu' names no device")
    assert "the devices here: 0:0 = " in line


def test_probe_sample_lists_every_device(device_caps):
    result = run_sample("probe.py")
    assert result.returncode == 0, result.stderr
    assert device_caps.label in result.stdout


def test_probe_sample_one_device(device_caps):
    result = run_sample("probe.py", "--device", device_spec(device_caps))
    assert result.returncode == 0, result.stderr
    assert "cl_qcom_protected_context" in result.stdout


def test_bitreverse_sample(device_caps, kernel_context):
    result = run_sample("bitreverse.py", "--device", device_spec(device_caps), "--bits", "12")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK" in result.stdout
    assert device_caps.path("cl_qcom_bitreverse") in result.stdout


def test_dot8_matmul_sample(device_caps, kernel_context):
    result = run_sample(
        "dot8_matmul.py", "--device", device_spec(device_caps), "--size", "9x23x14"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert device_caps.path("cl_qcom_dot_product8") in result.stdout
    assert result.stdout.count("(exact)") == 2 and result.stdout.rstrip().endswith("OK")


def conv_net_kernels(context) -> list[tuple[str, str, str]]:
    """(layer, kernel, where) of samples/conv_net.py's three layers, made here as the
    sample makes them (same shapes and options) on the device of ``context``."""
    import pyopencl as cl

    from qcom_ext import ops

    queue = cl.CommandQueue(context)
    zeros = np.zeros
    expand = ops.Conv2d1x1(queue, zeros((24, 3)), zeros(24), activation="relu6")
    depthwise = ops.DepthwiseConv2d(
        queue, zeros((24, 1, 3, 3)), zeros(24), stride=2, padding=1, activation="relu6"
    )
    project = ops.Conv2d1x1(queue, zeros((16, 24)), zeros(16))
    return [
        ("expand 1x1 3->24", expand.launcher.identity.kernel, "NHWC buffers"),
        ("depthwise 3x3/2", depthwise.launcher.identity.kernel, "RGBA image layout"),
        ("project 1x1 24->16", project.launcher.identity.kernel, "NHWC buffers"),
    ]


@pytest.mark.parametrize("source", ["synthetic", "png"])
def test_conv_net_sample(device_caps, kernel_context, tmp_path, source):
    args = ["--size", "21x13"]
    if source == "png":
        pixels = (np.arange(17 * 11 * 3) % 251).astype(np.uint8).reshape(11, 17, 3)
        Image.fromarray(pixels).save(tmp_path / "in.png")
        args = ["--image", str(tmp_path / "in.png")]
    result = run_sample("conv_net.py", "--device", device_spec(device_caps), *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert device_caps.path("cl_qcom_ml_ops") in result.stdout
    if not device_caps.image_support:
        assert "Skipped" in result.stdout
        return
    for layer, kernel, where in conv_net_kernels(kernel_context):
        # the kernel is the device's choice (NVIDIA's names differ from pocl's): the one
        # the same layer built here on the same device runs
        assert f"{layer:<19} {kernel} on {where}" in result.stdout, (layer, kernel)
    expected = "output 11x7x16" if source == "synthetic" else "output 9x6x16"
    assert expected in result.stdout and result.stdout.rstrip().endswith("OK")


def test_perf_hint_sample_paths(device_caps):
    result = run_sample("perf_hint.py", "--device", device_spec(device_caps), "--runs", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    path = device_caps.path("cl_qcom_perf_hint")
    for hint in ("high", "normal", "low"):
        assert f"perf_hint={hint:<6} path={path}" in result.stdout
    assert result.stdout.rstrip().endswith("OK")


def test_perf_hint_sample_times_the_kernel(device_caps, kernel_context):
    result = run_sample("perf_hint.py", "--device", device_spec(device_caps), "--runs", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(" us  exact") == 3


def test_protected_context_sample(device_caps):
    result = run_sample("protected_context.py", "--device", device_spec(device_caps))
    assert result.returncode == 0, result.stdout + result.stderr
    if device_caps.path("cl_qcom_protected_context") == "native":
        assert "protected context created" in result.stdout
    else:
        assert "refused, as expected" in result.stdout
        assert (
            f"cl_qcom_protected_context is not available on {device_caps.label}" in result.stdout
        )


@pytest.mark.parametrize("forced", [False, True], ids=["probed", "replay"])
def test_recordable_queue_sample(device_caps, kernel_context, tmp_path, forced):
    env = {"QCOM_EXT_DISABLE": "cl_qcom_recordable_queues"} if forced else {}
    png = tmp_path / "last.png"
    options = ["--frames", "5", "--size", "96x40", "--png", str(png)]
    result = run_sample(
        "recordable_queue.py", "--device", device_spec(device_caps), *options, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    paths = {
        "native": "native",
        "khr:cl_khr_command_buffer": "khr_command_buffer",
        "fallback": "replay",
    }
    expected = "replay" if forced else paths[device_caps.path("cl_qcom_recordable_queues")]
    assert lines[0].startswith(f"{device_caps.label}: cl_qcom_recordable_queues -> ")
    assert f"Recording path {expected} " in lines[1] and "4 dispatches" in lines[1]
    assert sum(line.startswith("frame ") for line in lines) == 5
    assert "µs per dispatch" in result.stdout and lines[-1] == "OK"
    shown = {re.search(r"µs \((\w+)\), frame done", line).group(1) for line in lines[2:7]}
    for how in shown:  # every label a frame shows is explained once
        assert sum(line.startswith(f"({how}): ") for line in lines) == 1, result.stdout
    if expected == "khr_command_buffer" and "replay" in shown:
        assert "cl_khr_command_buffer_mutable_dispatch" in result.stdout
    pictures.assert_png(png, "L", pictures.pipeline_png(96, 40, frames=5), tolerance=0)


def test_gallery_lists_every_sample_with_its_preview():
    script = ROOT / "docs" / "make_gallery.py"
    if not script.is_file():
        pytest.skip("not running from a source checkout")
    result = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_sample_prints_its_probe_line():
    for path in SAMPLES.glob("*.py"):
        if path.name.startswith("_") or path.name == "probe.py":
            continue
        text = path.read_text()
        assert "_common.report(caps, " in text, path.name
        assert '_common.report(caps, "cl_' in text or 'EXTENSION = "cl_' in text, path.name


@pytest.mark.parametrize(
    ("options", "env"),
    [
        ([], {}),
        (["--existing"], {}),
        ([], {"QCOM_EXT_DISABLE": "cl_qcom_create_buffer_from_image"}),
    ],
    ids=["probed", "existing-image", "forced-fallback"],
)
def test_buffer_from_image_sample(device_caps, kernel_context, tmp_path, options, env):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    png = tmp_path / "pair.png"
    result = run_sample(
        "buffer_from_image.py",
        "--device",
        device_spec(device_caps),
        "--size",
        "45x13",
        "--png",
        str(png),
        *options,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    path = device_caps.path("cl_qcom_create_buffer_from_image")
    if env or (path != "native" and (options or not path.startswith("khr:"))):
        path = "fallback"
    assert f"pair path {path}: zero-copy {path != 'fallback'}" in result.stdout
    assert result.stdout.count(" ok") == 2 and result.stdout.rstrip().endswith("OK")
    pictures.assert_png(png, "RGBA", pictures.pair_png(45, 13), tolerance=0)


@pytest.mark.parametrize(
    "disabled",
    ["", "cl_qcom_onchip_global_memory", "cl_qcom_recordable_queues"],
    ids=["probed", "onchip-fallback", "replay-recording"],
)
def test_onchip_memory_sample(device_caps, kernel_context, disabled):
    env = {"QCOM_EXT_DISABLE": disabled} if disabled else {}
    result = run_sample(
        "onchip_memory.py",
        "--device",
        device_spec(device_caps),
        "--elements",
        "999",
        "--replays",
        "4",
        env=env,
    )
    native = device_caps.path("cl_qcom_onchip_global_memory") == "native" and disabled != (
        "cl_qcom_onchip_global_memory"
    )
    if native and disabled == "cl_qcom_recordable_queues":  # on-chip needs a native recording
        assert result.returncode == 2 and "only inside a native recording" in result.stdout
        return
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"onchip={native} (path {'native' if native else 'fallback'}" in result.stdout
    replays = [line for line in result.stdout.splitlines() if line.startswith("replay ")]
    assert len(replays) == 4 and all(" ok" in line for line in replays)
    assert all(line.endswith("scrubbed") != native for line in replays)
    assert result.stdout.rstrip().endswith("OK")


def test_large_buffer_sample(device_caps, kernel_context):
    result = run_sample(
        "large_buffer.py", "--device", device_spec(device_caps), "--mib", "3", "--chunk-mib", "1"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    native = device_caps.path("cl_qcom_large_buffer") == "native"
    path = "native" if native else "fallback"
    assert f"path {path}, CL_LARGE_BUFFER_QCOM passed: {native}" in result.stdout
    assert f"built with -qcom-enable-large-buffer: {native}" in result.stdout
    assert "fill_pattern + affine on 786432 uints: ok" in result.stdout
    assert "refused: size " in result.stdout and device_caps.label in result.stdout
    assert "allocate_chunked: 3 buffers (1048576@0, 1048576@1048576, 1048576@2097152): ok" in (
        result.stdout
    )
    assert result.stdout.rstrip().endswith("OK")


@pytest.mark.parametrize("memfd", [False, True], ids=["device-planes", "memfd"])
def test_nv12_to_rgba_sample(device_caps, kernel_context, tmp_path, memfd):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    if memfd and (
        not hasattr(os, "memfd_create") or device_caps.path("cl_qcom_dmabuf_host_ptr") == "native"
    ):
        pytest.skip("--memfd exercises the mapped dma-buf import (Linux, off Adreno)")
    png = tmp_path / "frame.png"
    options = ["--size", "96x64", "--range", "full", "--png", str(png)]
    result = run_sample(
        "nv12_to_rgba.py",
        "--device",
        device_spec(device_caps),
        *options,
        *(["--memfd"] if memfd else []),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    path = "native" if device_caps.path("cl_qcom_other_image") == "native" else "fallback"
    assert f"Nv12Image 96x64: path {path}" in result.stdout
    assert ("on a memfd" in result.stdout) == memfd
    assert "max difference from the numpy BT.601 reference" in result.stdout
    assert lines[-1] == "OK"
    pictures.assert_png(png, "RGBA", pictures.nv12_png(96, 64), tolerance=1)


def test_nv12_to_rgba_sample_reads_a_raw_frame(device_caps, kernel_context, tmp_path):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    frame = tmp_path / "frame.nv12"
    frame.write_bytes(bytes(range(256)) * 9)  # 48x32 NV12 = 2304 bytes
    spec = device_spec(device_caps)
    result = run_sample(
        "nv12_to_rgba.py", "--device", spec, "--input", str(frame), "--size", "48x32"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "OK"
    wrong = run_sample(
        "nv12_to_rgba.py", "--device", spec, "--input", str(frame), "--size", "64x32"
    )
    assert wrong.returncode == 2 and "holds 2304 bytes" in wrong.stderr


def test_bicubic_sample(device_caps, kernel_context, tmp_path):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    png = tmp_path / "up.png"
    result = run_sample(
        "bicubic.py", "--device", device_spec(device_caps), "--size", "40x24", "--png", str(png)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"cl_qcom_filter_bicubic -> {device_caps.path('cl_qcom_filter_bicubic')}" in (
        result.stdout
    )
    assert "40x24 -> 80x48" in result.stdout and result.stdout.rstrip().endswith("OK")
    expected = pictures.bicubic_png(40, 24)
    pictures.assert_png(png, "RGBA", expected, tolerance=1)
    pictures.assert_png(tmp_path / "up-reference.png", "RGBA", expected, tolerance=0)


@pytest.mark.parametrize("shape", [("100000", "16", "64"), ("1000", "3", "8")])
def test_bf16_dot_sample(device_caps, kernel_context, shape):
    n, groups, local = shape
    result = run_sample(
        "bf16_dot.py",
        "--device",
        device_spec(device_caps),
        "--n",
        n,
        "--groups",
        groups,
        "--local",
        local,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    path = device_caps.path("cl_qcom_bfloat16_product")
    assert f"cl_qcom_bfloat16_product -> {path}" in result.stdout
    if path != "native":
        assert "bit for bit equal to the replay" in result.stdout
    assert result.stdout.rstrip().endswith("OK")


def test_vector_image_gather_sample(device_caps, kernel_context, tmp_path):
    png = tmp_path / "half.png"
    args = ("--device", device_spec(device_caps), "--size", "66x38", "--png", str(png))
    result = run_sample("vector_image_gather.py", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    status = device_caps.status("cl_qcom_vector_image_ops")
    assert f"cl_qcom_vector_image_ops -> {status.path}" in result.stdout
    if not status.usable:
        assert "no 2x2 gathers" in result.stdout
        return
    assert "66x38 -> 33x19 RGBA float" in result.stdout
    assert result.stdout.rstrip().endswith("OK")
    pictures.assert_png(png, "RGBA", pictures.gather_png(66, 38), tolerance=1)


@pytest.mark.parametrize("forced", [False, True], ids=["probed", "emulated"])
def test_subgroup_prefix_sum_sample(device_caps, kernel_context, forced):
    if forced and device_caps.path("cl_qcom_subgroup_shuffle") == "fallback":
        pytest.skip(f"{device_caps.label} already takes the emulated path ('probed')")
    env = {"QCOM_EXT_DISABLE": "cl_qcom_subgroup_shuffle"} if forced else {}
    args = (
        "--device",
        device_spec(device_caps),
        "--n",
        "70001",
        "--emulated-sub-group-size",
        "16",
    )
    result = run_sample("subgroup_prefix_sum.py", *args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    path = "fallback" if forced else device_caps.path("cl_qcom_subgroup_shuffle")
    assert f"cl_qcom_subgroup_shuffle -> {path}" in result.stdout
    if path == "fallback":
        assert "sub-groups of 16" in result.stdout
    assert result.stdout.rstrip().endswith("OK")


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("convolve.py", ["--size", "64x40"]),
        ("box_filter.py", ["--size", "48x32", "--boxes", "1.5,2.75"]),
        ("block_match.py", ["--size", "96x64", "--radius", "3"]),
    ],
)
def test_accelerated_image_ops_samples(device_caps, kernel_context, tmp_path, name, args):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    png = tmp_path / "out.png"
    result = run_sample(name, "--device", device_spec(device_caps), *args, "--png", str(png))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{device_caps.label}: cl_qcom_accelerated_image_ops -> ")
    assert lines[-1] == "OK"
    timings = [line for line in lines if FIRST_THEN.search(line)]  # first run apart
    assert len(timings) == {"convolve.py": 2, "box_filter.py": 2}.get(name, 1), lines
    if name == "convolve.py":
        pictures.assert_png(png, "L", pictures.convolve_png(64, 40))
    elif name == "box_filter.py":
        pictures.assert_png(png, "RGB", pictures.box_png(48, 32, [1.5, 2.75]))
    else:
        pictures.check_motion_png(png, 96, 64, radius=3)


@pytest.mark.parametrize("activations", ["float32", "q8_0"])
def test_mlp_decode_sample(device_caps, kernel_context, activations):
    pytest.importorskip("gguf", reason="the sample writes its weights with the gguf package")
    result = run_sample(
        "mlp_decode.py",
        "--device",
        device_spec(device_caps),
        "--size",
        "64x96",
        "--tokens",
        "3",
        "--activations",
        activations,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{device_caps.label}: cl_qcom_ml_ops -> ")
    assert "ffn_up.weight, ffn_up.bias, ffn_down.weight, ffn_down.bias" in lines[1]
    assert "q4_0 weights (6912 bytes)" in lines[2] and f"{activations} activations" in lines[2]
    assert lines[-2].endswith("ms per token (3 decode steps, wall clock)") and lines[-1] == "OK"
