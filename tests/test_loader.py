"""Which OpenCL library is opened, and how entry points are found."""

from __future__ import annotations

import pyopencl as cl
import pytest

from qcom_ext import LibraryNotFound
from qcom_ext.binding.info import platform_ids
from qcom_ext.binding.lib import ENV_LIBRARY, driver, ffi, open_library


def test_default_library_is_pyopencls_loader(monkeypatch):
    monkeypatch.delenv(ENV_LIBRARY, raising=False)
    library = open_library()
    assert library.origin == "pyopencl's ICD loader"
    assert library.path == cl._cl.__file__


def test_platform_handles_are_pyopencls():
    assert platform_ids() == [p.int_ptr for p in cl.get_platforms()]


def test_override_that_does_not_load_names_the_path(monkeypatch, tmp_path):
    missing = tmp_path / "libOpenCL-missing.so"
    monkeypatch.setenv(ENV_LIBRARY, str(missing))
    with pytest.raises(LibraryNotFound) as info:
        open_library()
    assert str(missing) in str(info.value)
    assert info.value.tried[0][0] == ENV_LIBRARY


def test_override_is_used_alone(monkeypatch):
    monkeypatch.setenv(ENV_LIBRARY, cl._cl.__file__)
    library = open_library()
    assert (library.origin, library.path) == (ENV_LIBRARY, cl._cl.__file__)


@pytest.fixture
def platform():
    platforms = platform_ids()
    if not platforms:
        pytest.skip("no OpenCL platform")
    return platforms[0]


def test_absent_extension_function_is_none_never_a_null_pointer(platform):
    assert driver.extension_function(platform, "clSetPerfHintQCOM") is None
    assert driver.extension_function(platform, "clNewRecordingQCOM") is None


def test_symbol_lookup_backs_up_a_null_extension_address(platform):
    # Some Adreno drivers answer NULL from clGetExtensionFunctionAddressForPlatform for
    # functions they export; the library's own symbol must then be used.
    with driver.substitute(clGetExtensionFunctionAddressForPlatform=lambda p, n: ffi.NULL):
        fn = driver.extension_function(platform, "clGetPlatformInfo")
        assert fn is not None
        size = ffi.new("size_t *")
        assert fn(ffi.cast("cl_platform_id", platform), 0x0902, 0, ffi.NULL, size) == 0
        assert size[0] > 1


def test_extension_address_is_asked_with_platform_and_name(platform):
    asked = []

    def get_address(p, name):
        asked.append((int(ffi.cast("uintptr_t", p)), ffi.string(name)))
        return ffi.NULL

    with driver.substitute(clGetExtensionFunctionAddressForPlatform=get_address):
        assert driver.extension_function(platform, "clEnqueueRecordingQCOM") is None
    assert asked == [(platform, b"clEnqueueRecordingQCOM")]


def test_command_buffer_entry_point_found_where_advertised():
    import qcom_ext

    for caps in qcom_ext.probe_all():
        fn = driver.extension_function(caps.platform_id, "clCreateCommandBufferKHR")
        if caps.has("cl_khr_command_buffer"):
            assert fn is not None, caps.label
