"""Error types and their messages."""

from __future__ import annotations

import pytest

from qcom_ext import (
    BuildError,
    CLError,
    ConfigError,
    ExtensionUnavailable,
    LibraryNotFound,
    NoPlatformError,
    QcomExtError,
)
from qcom_ext.binding.lib import check


def test_cl_error_message_and_fields():
    err = CLError("clNewRecordingQCOM", -36)
    assert str(err) == "clNewRecordingQCOM failed: CL_INVALID_COMMAND_QUEUE (-36)"
    assert (err.routine, err.code, err.name) == (
        "clNewRecordingQCOM",
        -36,
        "CL_INVALID_COMMAND_QUEUE",
    )
    assert isinstance(err, QcomExtError)


def test_unknown_code_is_named_unknown():
    assert str(CLError("clFoo", -4242)) == "clFoo failed: UNKNOWN_ERROR (-4242)"


def test_check_raises_only_on_failure():
    check(0, "clFinish")
    with pytest.raises(CLError, match=r"clFinish failed: CL_OUT_OF_RESOURCES \(-5\)"):
        check(-5, "clFinish")


def test_extension_unavailable_names_extension_device_and_reason():
    err = ExtensionUnavailable("cl_qcom_protected_context", "pocl-3.0-cpu", "never falls back")
    assert (
        str(err) == "cl_qcom_protected_context is not available on pocl-3.0-cpu: never falls back"
    )


def test_build_error_carries_log_and_options():
    err = BuildError("line 3: error: oops", ["-I", "kernels"], "/tmp/k.cl")
    assert err.log == "line 3: error: oops" and err.options == ("-I", "kernels")
    assert "-I kernels" in str(err) and "/tmp/k.cl" in str(err) and "oops" in str(err)


def test_library_errors_say_what_was_tried():
    err = LibraryNotFound([("QCOM_EXT_OPENCL_LIBRARY", "/nope.so: cannot open")])
    assert "/nope.so: cannot open" in str(err) and "QCOM_EXT_OPENCL_LIBRARY" in str(err)
    assert "no OpenCL platform" in str(NoPlatformError("/usr/lib/libOpenCL.so.1"))


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_errors_module_imports_nothing_of_qcom_ext():
    """errors.py is the bottom layer: importing it loads no other qcom_ext module, and the
    binding registers the status names when it loads (no import from errors upward)."""
    import subprocess
    import sys

    code = (
        "import sys, qcom_ext.errors as e\n"
        "layers = ('binding', 'device', 'ext', 'ops', 'reference', 'tools')\n"
        "loaded = [m for m in sys.modules if m.split('.')[1:2] and m.split('.')[1] in layers]\n"
        "before = e.error_name(-36)\n"
        "import qcom_ext.binding.lib\n"
        "print(loaded, before, e.error_name(-36), str(e.CLError('clFoo', -5)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "[]"
    assert out[1:3] == ["UNKNOWN_ERROR", "CL_INVALID_COMMAND_QUEUE"]
    assert " ".join(out[3:]) == "clFoo failed: CL_OUT_OF_RESOURCES (-5)"
