"""``qcom-ext tune`` runs the convolution suite and fills the tuning cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, env: dict) -> subprocess.CompletedProcess:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "qcom_ext", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**os.environ, "PYTHONPATH": path, **env},
    )


def expected_kernels(context, kinds: str, scale: float) -> dict[str, str]:
    """Layer name -> the kernel ``qcom-ext tune --variants default`` runs for it on the
    device of ``context``: the suite's layers prepared here, as the command prepares them
    (the conv and depthwise layers only with image support), each one's default variant."""
    import numpy as np
    import pyopencl as cl

    from qcom_ext.ops._variants import VariantLayer
    from qcom_ext.ops.suite import prepare, suite

    queue = cl.CommandQueue(context)
    images = context.devices[0].image_support
    expected = {}
    for layer in suite(kinds=kinds.split(","), scale=scale):
        if layer.kind in ("conv", "depthwise") and not images:
            continue
        op, x = prepare(queue, layer, batch=1, dtype=np.dtype("float32"))
        launcher = op.launcher
        if isinstance(op, VariantLayer):
            launcher = op.plan(op.default_variant(x.shape), x, op.output_for(queue, x))[0]
        expected[layer.name] = launcher.identity.kernel
    return expected


@pytest.mark.slow
def test_tune_small_suite_then_served_from_the_cache(
    kernel_context, device_caps, tmp_path, tuning_cache_dir
):
    from test_samples import device_spec

    env = {"QCOM_EXT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    args = [
        "tune",
        "--device",
        device_spec(device_caps),
        "--scale",
        "0.1",
        "--kinds",
        "depthwise,1x1,int8",
        "--budget-s",
        "0.5",
        "--repeats",
        "2",
        "--variants",
        "default",  # tests/test_ops_variants.py runs the variant search
    ]
    first = run(*args, "--json", str(tmp_path / "a.json"), env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "median gain over the driver's choice" in first.stdout
    results = json.loads((tmp_path / "a.json").read_text())["results"]
    # each layer ran the kernel this device's default variant of it builds (its name is
    # the device's: NVIDIA's differs from pocl's), and every layer of the kinds ran
    chosen = {r["layer"]: r["kernel"] for r in results}
    assert chosen == expected_kernels(kernel_context, "depthwise,1x1,int8", 0.1)
    assert not any(r["from_cache"] for r in results)
    assert len(list((tmp_path / "cache" / "tuning").glob("*.json"))) == len(results)
    second = run(*args, "--json", str(tmp_path / "b.json"), env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    again = json.loads((tmp_path / "b.json").read_text())["results"]
    assert all(r["from_cache"] for r in again)
    assert [r["local_size"] for r in again] == [r["local_size"] for r in results]


def test_tune_rejects_bad_options(tmp_path):
    result = run("tune", "--kinds", "fft", env={"QCOM_EXT_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 1 and "unknown layer kind" in result.stderr


def test_tune_opens_the_chosen_device_without_the_environment(monkeypatch):
    import pyopencl as cl

    import qcom_ext
    from qcom_ext.tools import tune_cli

    every = qcom_ext.probe_all()
    if not every:
        pytest.skip("no OpenCL device")
    platform = len(cl.get_platforms()) - 1
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    caps, queue = tune_cli._open(f"{platform}:0")
    assert caps.device_id == cl.get_platforms()[platform].get_devices()[0].int_ptr
    assert queue.device.int_ptr == caps.device_id and "PYOPENCL_CTX" not in os.environ
    assert queue.properties & cl.command_queue_properties.PROFILING_ENABLE
