"""The installed pytest plugin, as a downstream project sees it (pytester sessions)."""

from __future__ import annotations

import pytest

import qcom_ext
from qcom_ext.tools.pytest_plugin import device_ids, selected_devices

pytest_plugins = ["pytester"]

DEVICES = selected_devices()
needs_device = pytest.mark.skipif(not DEVICES, reason="no OpenCL device found")

PER_DEVICE = """
def test_context(cl_context, cl_queue, cl_device, device_caps):
    assert cl_queue.context == cl_context
    assert cl_context.devices == [cl_device]
    assert device_caps.device_name == cl_device.name
"""


@needs_device
def test_fixtures_run_once_per_device_with_label_ids(pytester):
    pytester.makepyfile(PER_DEVICE)
    result = pytester.runpytest("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(DEVICES))
    for test_id in device_ids(DEVICES):
        result.stdout.fnmatch_lines([f"*test_context[[]{test_id}[]] PASSED*"])


@needs_device
def test_device_selector_and_report_header(pytester, monkeypatch):
    label = DEVICES[0].label
    monkeypatch.setenv("QCOM_EXT_TEST_DEVICES", label)
    pytester.makepyfile(PER_DEVICE)
    pytester.makeini("[pytest]\nqcom_ext = true\n")  # the header only where asked for
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider")
    wanted = [c for c in DEVICES if label in c.label]
    result.assert_outcomes(passed=len(wanted))
    result.stdout.fnmatch_lines([f"qcom_ext device: {wanted[0].summary()}"])


@needs_device
def test_requires_ext_skips_with_the_device_and_extension_named(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.requires_ext("cl_qcom_recordable_queues")
        def test_native(device_caps):
            assert device_caps.has("cl_qcom_recordable_queues")
        """
    )
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    have = sum(c.has("cl_qcom_recordable_queues") for c in DEVICES)
    result.assert_outcomes(passed=have, skipped=len(DEVICES) - have)
    if have < len(DEVICES):
        result.stdout.fnmatch_lines(["*does not advertise cl_qcom_recordable_queues*"])


@needs_device
def test_fallback_and_native_runs_each_path(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fallback_and_native("cl_qcom_bitreverse")
        def test_path(qcom_path, request):
            path = qcom_path.path("cl_qcom_bitreverse")
            if request.node.callspec.params["qcom_path"] == "fallback":
                assert path == "fallback"
            else:
                assert path != "fallback"
        """
    )
    result = pytester.runpytest("-v", "-rs", "-p", "no:cacheprovider")
    own = sum(c.path("cl_qcom_bitreverse") not in ("fallback", "unavailable") for c in DEVICES)
    result.assert_outcomes(passed=len(DEVICES) + own, skipped=len(DEVICES) - own)
    result.stdout.fnmatch_lines(["*fallback*PASSED*"])


@needs_device
def test_the_fallback_is_forced_without_touching_the_environment(pytester):
    """qcom_path forces the fallback with disabling(), not QCOM_EXT_DISABLE: the
    library's own probe() calls in the test take it, os.environ stays as it was, and
    nothing of it is left for the next test."""
    pytester.makepyfile(
        """
        import os
        import pytest
        import qcom_ext

        BEFORE = os.environ.get("QCOM_EXT_DISABLE")
        NAME = "cl_qcom_bitreverse"

        @pytest.mark.fallback_and_native(NAME)
        def test_path(qcom_path, device_caps, request):
            assert os.environ.get("QCOM_EXT_DISABLE") == BEFORE
            seen = qcom_ext.probe(device_caps.device_id).path(NAME)
            assert seen == qcom_path.path(NAME)
            forced = request.node.callspec.params["qcom_path"] == "fallback"
            assert (seen == "fallback") == forced

        def test_after(device_caps):
            assert qcom_ext.probe(device_caps.device_id).path(NAME) == device_caps.path(NAME)
        """
    )
    result = pytester.runpytest("-v", "-rs", "-p", "no:cacheprovider")
    own = sum(c.path("cl_qcom_bitreverse") not in ("fallback", "unavailable") for c in DEVICES)
    result.assert_outcomes(passed=2 * len(DEVICES) + own, skipped=len(DEVICES) - own)


def test_fallback_and_native_needs_the_fixture_and_one_name(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fallback_and_native("cl_qcom_bitreverse", "cl_qcom_dot_product8")
        def test_two(qcom_path):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*fallback_and_native takes one extension name*"])


def test_markers_are_registered_for_strict_markers(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.requires_ext("cl_qcom_bitreverse")
        def test_nothing():
            pass

        @pytest.mark.fallback_and_native("cl_qcom_bitreverse")
        def test_paths(qcom_path):
            pass
        """
    )
    result = pytester.runpytest("--strict-markers", "--co", "-q", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()  # an unregistered marker is an error here
    result.stdout.fnmatch_lines(["*test_nothing*"])


def test_plugin_is_installed_as_an_entry_point():
    from importlib.metadata import entry_points

    plugins = {ep.value for ep in entry_points(group="pytest11")}
    assert "qcom_ext.tools.pytest_plugin" in plugins, qcom_ext.__file__
