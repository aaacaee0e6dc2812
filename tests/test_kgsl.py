"""The Adreno kernel driver's sysfs facts (qcom_ext/device/kgsl.py) in fake sysfs trees:
the forms the kernel writes, and every unreadable or malformed file a miss."""

from __future__ import annotations

import os
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qcom_ext.device import kgsl as kgsl_module
from qcom_ext.device.kgsl import MAX_BYTES, KgslFacts, read_kgsl


def sysfs(tmp_path: Path, **files: bytes | str) -> Path:
    """A fake /sys/class/kgsl/kgsl-3d0 holding ``files``."""
    root = tmp_path / "kgsl-3d0"
    root.mkdir()
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (root / name).write_bytes(data)
    return root


@pytest.mark.parametrize(
    ("files", "facts", "found"),
    [
        ({"gpu_model": "Adreno740v2\n"}, ("Adreno740v2", None), ("740", "kgsl:gpu_model")),
        ({"gpu_model": "Adreno830v2"}, ("Adreno830v2", None), ("830", "kgsl:gpu_model")),
        ({"gpu_model": "Adreno 630\n"}, ("Adreno 630", None), ("630", "kgsl:gpu_model")),
        (
            {"gpu_model": "Adreno67510v2\n", "gpu_chipid": "0x6030001\n"},
            ("Adreno67510v2", 0x6030001),
            ("630", "kgsl:chipid"),
        ),
        ({"gpu_chipid": "0x43050A01\n"}, (None, 0x43050A01), None),  # not the legacy layout
        ({"gpu_chipid": "6030001\n"}, (None, None), None),  # not the kernel's 0x%X form
        ({"gpu_model": "Adreno740v2 extra"}, ("Adreno740v2 extra", None), None),
        ({"gpu_model": b"Adreno\xff740"}, (None, None), None),
        ({"gpu_model": "Adreno740v2" + " " * MAX_BYTES}, (None, None), None),  # too long
        ({"gpu_model": "Adr\x00eno740"}, (None, None), None),
        ({}, (None, None), None),
    ],
)
def test_read_kgsl(tmp_path, files, facts, found):
    read = read_kgsl(sysfs(tmp_path, **files))
    assert (read.gpu_model, read.chip_id) == facts
    assert read.model() == found


def test_kgsl_files_that_are_not_files_are_misses(tmp_path):
    root = sysfs(tmp_path)
    (root / "gpu_model").mkdir()
    os.mkfifo(root / "gpu_chipid")  # opening it for reading must not block
    assert read_kgsl(root) == KgslFacts()
    assert read_kgsl(tmp_path / "absent") == KgslFacts()
    assert read_kgsl(root / "gpu_model" / "x") == KgslFacts()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_unreadable_kgsl_file_is_a_miss(tmp_path):
    root = sysfs(tmp_path, gpu_model="Adreno740v2")
    (root / "gpu_model").chmod(0)
    assert read_kgsl(root) == KgslFacts()


@given(model=st.binary(max_size=300), chip=st.binary(max_size=40))
def test_any_kgsl_file_content_is_a_fact_or_a_miss(tmp_path_factory, model, chip):
    root = sysfs(tmp_path_factory.mktemp("kgsl"), gpu_model=model, gpu_chipid=chip)
    found = read_kgsl(root).model()
    assert found is None or (
        len(found[0]) == 3 and found[0].isdigit() and found[1].startswith("kgsl:")
    )


@given(chip_id=st.integers(0, 2**32 - 1))
def test_chip_ids_map_only_in_the_legacy_layout(chip_id):
    model = kgsl_module.model_from_chip_id(chip_id)
    digits = [(chip_id >> shift) & 0xFF for shift in (24, 16, 8)]
    legacy = digits[0] >= 2 and all(d <= 9 for d in digits)
    assert (model is not None) == legacy
    if legacy:
        assert model == "".join(str(d) for d in digits)
        assert kgsl_module.parse_chip_id(f"{chip_id:#X}\n".replace("0X", "0x")) == chip_id


@given(text=st.text(alphabet=string.printable, max_size=30))
def test_gpu_model_parses_only_its_format(text):
    model = kgsl_module.model_from_gpu_model(text)
    if model is not None:
        assert text.strip().startswith("Adreno") and model in text
