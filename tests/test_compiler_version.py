"""The Adreno compiler version parser: every form seen in the field, ordering, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qcom_ext.device.compiler_version import CompilerVersion

FIELD_FORMS = [
    # (driver or platform string, family, numbers); sources: anchors-usage.md section 4
    (
        "OpenCL 2.0 QUALCOMM build: commit #abc changeid #I12 Date: 10/05/21 Tue "
        "Local Branch: Remote Branch: Compiler E031.38.01.08",
        "E031",
        (38, 1, 8),
    ),
    ("OpenCL 3.0 QUALCOMM build: 0838.2 Compiler E031.50.15.00", "E031", (50, 15, 0)),
    (
        "OpenCL 2.0 QUALCOMM build: commit #191610ae03 09/17/20 "
        "AU_LINUX_ANDROID_LA.UM.9.12.10.00.00.582.274 Compiler E031.37.12.01",
        "E031",
        (37, 12, 1),
    ),
    ("E031.45.02.06", "E031", (45, 2, 6)),
    ("OpenCL 3.0 QUALCOMM build: 0861.0 Compiler E17.51.03.00", "E17", (51, 3, 0)),
    ("OpenCL 3.0 QUALCOMM build: 827.0 Compiler DX.18.05.00", "DX", (18, 5, 0)),
    ("31.0.112.0 VDX.17.75.00", "DX", (17, 75, 0)),
]


@pytest.mark.parametrize(("text", "family", "numbers"), FIELD_FORMS)
def test_every_field_form_parses(text, family, numbers):
    version = CompilerVersion.parse(text)
    assert version is not None
    assert (version.family, version.numbers) == (family, numbers)
    assert version.text in text


@pytest.mark.parametrize(
    "text",
    ["", "OpenCL 3.0 QUALCOMM build: commit unknown", "3.1+debian", "XE031.1", "E0310.1", "DXE.1"],
)
def test_strings_without_a_compiler_give_none(text):
    assert CompilerVersion.parse(text) is None


def test_compiler_word_wins_over_a_bare_version_earlier_in_the_text():
    text = "branch DX.1.2 Compiler E031.41.00.00"
    assert CompilerVersion.parse(text) == CompilerVersion.of("E031", 41)


def test_first_text_naming_a_compiler_wins():
    assert CompilerVersion.parse(None, "pocl", "Compiler E031.41") == CompilerVersion.of(
        "E031", 41
    )


def test_order_within_a_family_and_missing_numbers_count_as_zero():
    order = ["E031.37.12.01", "E031.38.11", "E031.38.11.14", "E031.41", "E031.45.02.06", "E031.47"]
    parsed = [CompilerVersion.parse(t) for t in order]
    assert parsed == sorted(reversed(parsed))
    assert CompilerVersion.of("E031", 45) == CompilerVersion.parse("E031.45.00.00")
    assert hash(CompilerVersion.of("E031", 45)) == hash(CompilerVersion.parse("E031.45.00.00"))


def test_families_do_not_order_against_each_other():
    with pytest.raises(TypeError, match=r"E031\.47 against DX\.17"):
        _ = CompilerVersion.of("E031", 47) < CompilerVersion.of("DX", 17)
    assert CompilerVersion.of("E031", 47) != CompilerVersion.of("DX", 47)


@pytest.mark.parametrize(
    ("family", "numbers", "message"),
    [("E99", (1,), "compiler family 'E99'"), ("E031", (), "numbers"), ("DX", (-1,), "numbers")],
)
def test_bad_versions_are_refused_naming_the_value(family, numbers, message):
    with pytest.raises(ValueError, match=message):
        CompilerVersion(family, numbers)


def test_json_form():
    assert CompilerVersion.of("E031", 45, 2, 6).to_dict() == {
        "text": "E031.45.02.06",
        "family": "E031",
        "numbers": [45, 2, 6],
    }


@given(
    st.sampled_from(["E031", "E17", "DX"]),
    st.lists(st.integers(0, 9999), min_size=1, max_size=4),
    st.lists(st.integers(0, 9999), min_size=1, max_size=4),
)
def test_order_matches_tuple_order_padded_with_zeros(family, a, b):
    va, vb = CompilerVersion(family, tuple(a)), CompilerVersion(family, tuple(b))
    pa, pb = tuple(a) + (0,) * (4 - len(a)), tuple(b) + (0,) * (4 - len(b))
    assert (va < vb) == (pa < pb) and (va == vb) == (pa == pb)
    assert CompilerVersion.parse(f"Compiler {va.text}") == va


@given(st.text(max_size=400))
def test_any_text_parses_or_gives_none(text):
    result = CompilerVersion.parse(text)
    assert result is None or result.text in text
