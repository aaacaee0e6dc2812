"""qcom-ext selftest: the accelerated image ops checked on each device, and the report's
native-against-portable comparison (built from synthetic runs: no Adreno here)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from qcom_ext import cli
from qcom_ext.selftest import SelftestReport, _fill, _portable_forced, run_selftest


def test_selftest_passes_on_the_device(device_caps, kernel_context):
    report = run_selftest(device_caps.device_id, seed=3)
    if not device_caps.image_support:
        assert report.extension_path == "unavailable" and report.skipped
        return
    assert report.extension_path == device_caps.path("cl_qcom_accelerated_image_ops")
    assert report.ok, [c for c in report.checks if not c.ok]
    assert len(report.checks) == 9 * (2 if report.extension_path == "native" else 1)
    assert {c.path for c in report.checks} <= {"native", "fallback"}
    exact = [c for c in report.checks if c.tolerance == 0]
    assert len(exact) >= 3 and all(c.max_error == 0 for c in exact)


def test_selftest_command_json(device_caps, kernel_context, capsys):
    import pyopencl as cl

    spec = next(f"{p}:{d}" for p, platform in enumerate(cl.get_platforms())
                for d, device in enumerate(platform.get_devices())
                if device.int_ptr == device_caps.device_id)  # fmt: skip
    status = cli.main(["selftest", "--device", spec, "--json", "--seed", "2"])
    data = json.loads(capsys.readouterr().out)
    assert status == (0 if data["ok"] else 1) == 0
    assert data["device"] == device_caps.label
    assert all(check["ok"] for check in data["checks"])


def test_comparison_flags_where_native_and_portable_differ():
    want = np.zeros(4)
    native = {"same": (np.zeros(4), want, 1e-5), "shifted": (np.ones(4), want, 1e-5)}
    portable = {"same": (np.zeros(4), want, 1e-5), "shifted": (np.zeros(4), want, 1e-5)}
    report = _fill(SelftestReport("fake", "native"), [("native", native),
                                                      ("fallback", portable)])  # fmt: skip
    assert [(c.name, c.path, c.ok) for c in report.checks] == [
        ("same", "native", True), ("shifted", "native", False),
        ("same", "fallback", True), ("shifted", "fallback", True)]  # fmt: skip
    assert [(c.name, c.max_difference, c.ok) for c in report.comparisons] == [
        ("same", 0.0, True), ("shifted", 1.0, False)]  # fmt: skip
    assert not report.ok and report.to_dict()["comparisons"][1]["ok"] is False


def test_portable_forcing_keeps_other_disabled_names(monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_bitreverse")
    with _portable_forced():
        assert os.environ["QCOM_EXT_DISABLE"] == (
            "cl_qcom_accelerated_image_ops,cl_qcom_bitreverse"
        )
    assert os.environ["QCOM_EXT_DISABLE"] == "cl_qcom_bitreverse"
    monkeypatch.delenv("QCOM_EXT_DISABLE")
    with _portable_forced():
        pass
    assert "QCOM_EXT_DISABLE" not in os.environ


def test_selftest_rejects_a_bad_seed(capsys):
    with pytest.raises(SystemExit):
        cli.main(["selftest", "--seed", "x"])
    assert "invalid int value" in capsys.readouterr().err
