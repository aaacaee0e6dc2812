"""Every sample runs to success on every device that can run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def run_sample(name: str, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess:  # fmt: skip
    if not (SAMPLES / name).is_file():
        pytest.skip("not running from a source checkout")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    return subprocess.run(
        [sys.executable, str(SAMPLES / name), *args],
        capture_output=True, text=True, env=env, timeout=300, cwd=ROOT,
    )  # fmt: skip


def device_spec(caps) -> str:
    import pyopencl as cl

    for p_index, platform in enumerate(cl.get_platforms()):
        for d_index, device in enumerate(platform.get_devices()):
            if device.int_ptr == caps.device_id:
                return f"{p_index}:{d_index}"
    raise AssertionError(f"{caps.label} not found among pyopencl's devices")


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


@pytest.mark.parametrize("source", ["synthetic", "png"])
def test_conv_net_sample(device_caps, kernel_context, tmp_path, source):
    args = ["--size", "21x13"]
    if source == "png":
        Image = pytest.importorskip("PIL.Image")
        pixels = (np.arange(17 * 11 * 3) % 251).astype(np.uint8).reshape(11, 17, 3)
        Image.fromarray(pixels).save(tmp_path / "in.png")
        args = ["--image", str(tmp_path / "in.png")]
    result = run_sample("conv_net.py", "--device", device_spec(device_caps), *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert device_caps.path("cl_qcom_ml_ops") in result.stdout
    if not device_caps.image_support:
        assert "Skipped" in result.stdout
        return
    for layer in ("expand 1x1", "depthwise 3x3/2", "project 1x1"):
        assert layer in result.stdout
    assert "conv2d_1x1 on NHWC buffers" in result.stdout
    assert "depthwise_conv2d on RGBA image layout" in result.stdout
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
    result = run_sample("recordable_queue.py", "--device", device_spec(device_caps), *options,
                        env=env)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    paths = {"native": "native", "khr:cl_khr_command_buffer": "khr_command_buffer",
             "fallback": "replay"}  # fmt: skip
    expected = "replay" if forced else paths[device_caps.path("cl_qcom_recordable_queues")]
    assert f"Recording path {expected} " in lines[0] and "4 dispatches" in lines[0]
    assert sum(line.startswith("frame ") for line in lines) == 5
    assert "µs per dispatch" in result.stdout and lines[-1] == "OK"
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(png) as image:
        assert image.size == (96, 40) and image.mode == "L"
