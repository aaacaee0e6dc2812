"""The declaration files themselves: they parse, load in order, and follow the rules."""

from __future__ import annotations

import re
from collections import Counter

import cffi
import pytest

from qcom_ext import REGISTRY
from qcom_ext._resources import cdefs_dir
from qcom_ext.binding import _cl_ffi
from qcom_ext.binding import lib as _lib
from qcom_ext.binding.cdefs import cdef_files, cdef_texts, cdefs_hash, parse
from qcom_ext.binding.ffi_build import GENERATED, generate
from qcom_ext.binding.lib import C, constant_names, error_codes, ffi

FILES = cdef_files()


def test_every_file_is_loaded_core_first():
    assert {p.name for p in FILES} == {p.name for p in cdefs_dir().glob("*.h")}
    assert FILES[0].name == "cl_core.h"
    names = [p.name for p in FILES]
    assert names.index("cl_qcom_ext_host_ptr.h") < names.index("cl_qcom_ion_host_ptr.h")


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_file_parses_after_its_predecessors(path):
    fresh = cffi.FFI()
    for earlier in FILES[: FILES.index(path) + 1]:
        fresh.cdef(earlier.read_text())


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_file_names_its_extension_and_cites_the_reference(path):
    head = path.read_text()[:1500]
    assert path.stem in head or path.name == "cl_core.h"
    if path.name.startswith("cl_qcom_"):
        assert re.search(r"§\s*\d+", head), f"{path.name} cites no qcom-extensions.md section"


def test_every_qcom_extension_with_host_tokens_has_its_file():
    kernel_only = {n for n, e in REGISTRY.items() if e.side == "kernel"}
    no_tokens = {"cl_qcom_extract_image_plane", "cl_qcom_ahardwarebuffer_direct_import"}
    expected = set(REGISTRY) - kernel_only - no_tokens
    # reqd_sub_group_size and limited_printf carry a related host token each
    expected |= {"cl_qcom_reqd_sub_group_size", "cl_qcom_limited_printf"}
    present = {p.stem for p in FILES}
    assert expected <= present, sorted(expected - present)


def test_no_constant_is_declared_twice():
    duplicates = [n for n, count in Counter(constant_names()).items() if count > 1]
    assert duplicates == []


def test_every_constant_resolves():
    for name in constant_names():
        assert isinstance(getattr(C, name), int), name


def test_every_entry_point_is_a_function_pointer_typedef():
    text = "\n".join(p.read_text() for p in FILES)
    names = re.findall(r"\(\s*\*\s*(cl\w+_fn)\s*\)", text)
    assert len(names) > 60
    for name in names:
        assert ffi.typeof(name).kind == "function", name


def test_error_code_table_is_built_from_the_constants():
    codes = error_codes()
    assert codes[0] == "CL_SUCCESS"
    assert codes[-30] == "CL_INVALID_VALUE"
    assert codes[-36] == "CL_INVALID_COMMAND_QUEUE"
    assert codes[-64] == "CL_INVALID_PROPERTY"
    assert codes[-1138] == "CL_INVALID_COMMAND_BUFFER_KHR"
    negative = [n for n in constant_names() if getattr(C, n) < 0]
    assert set(codes.values()) - {"CL_SUCCESS"} <= set(negative)
    assert all(name.startswith("CL_") for name in codes.values())


def test_generated_ffi_module_is_up_to_date():
    assert cdefs_hash(cdef_texts()) == _cl_ffi.CDEFS_SHA256, (
        f"{GENERATED.name} is stale: run python -m qcom_ext.binding.ffi_build"
    )
    assert "CDEFS_SHA256" in generate()


def test_generated_ffi_agrees_with_a_fresh_parse():
    fresh = parse(cdef_texts())
    text = "\n".join(t for _, t in cdef_texts())
    for name in set(re.findall(r"}\s*(\w+)\s*;", text)):  # struct typedef names
        assert ffi.sizeof(name) == fresh.sizeof(name), name
    for name in re.findall(r"\(\s*\*\s*(cl\w+_fn)\s*\)", text):
        assert _normal(ffi.typeof(name)) == _normal(fresh.typeof(name)), name


def _normal(ctype) -> str:
    # cffi names a typedef'd struct either way ("cl_image_format" / "struct
    # _cl_image_format") depending on how the FFI was built; the layout is the same.
    return re.sub(r"struct _?", "", str(ctype))


def test_stale_generated_module_falls_back_to_parsing(monkeypatch):
    monkeypatch.setattr(_cl_ffi, "CDEFS_SHA256", "0" * 64)
    with pytest.warns(_lib.QcomExtWarning, match="python -m qcom_ext.binding.ffi_build"):
        fresh, names = _lib._load_ffi()
    assert fresh is not _cl_ffi.ffi
    assert fresh.sizeof("cl_weight_image_desc_qcom") == ffi.sizeof("cl_weight_image_desc_qcom")
    assert names == constant_names()
