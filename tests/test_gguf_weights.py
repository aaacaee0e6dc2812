"""GGUF weight files (qcom_ext.ops.gguf_weights): round trips, the dimension order checked
against the raw bytes of the format (a file this test writes byte by byte, and one parsed
byte by byte), refused types, names and files, and the optional gguf package.

The byte layout (GGUF version 3, little-endian; ggml's docs/gguf.md): "GGUF", u32 version,
u64 tensor count, u64 key/value count, the key/values (string key, u32 type, value), then
per tensor: string name, u32 n_dims, u64 ne[n_dims] (fastest-varying first), u32 GGML
type, u64 offset into the data section; the data section starts at the next multiple of
the alignment (32). Strings are a u64 length and UTF-8 bytes.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qcom_ext.errors import ConfigError, QcomExtError
from qcom_ext.ops import (
    QuantizedWeights,
    dequantize,
    load_weight,
    quantize,
    save_weights,
    weight_names,
)
from qcom_ext.ops.gguf_weights import GGUFFileError, GGUFUnavailable, TensorNotFound

ROOT = Path(__file__).resolve().parent.parent
#: GGML type ids (ggml.h's enum ggml_type), written here independently of gguf-py.
F32, F16, Q4_0, Q4_1, Q8_0, I32 = 0, 1, 2, 3, 8, 26
GGUF_STRING, GGUF_UINT32 = 8, 4


@pytest.fixture
def gguf():
    return pytest.importorskip(
        "gguf", reason="reading and writing GGUF needs the gguf package (qcom_ext[gguf])"
    )


def _matrix(n: int, k: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, k)).astype(np.float32)


# ---- GGUF bytes, written and parsed by hand -------------------------------------------------


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def gguf_bytes(tensors: list[tuple[str, list[int], int, bytes]]) -> bytes:
    """A GGUF v3 file: general.architecture and ``tensors`` as (name, ne, type, data)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1)
    head += _string("general.architecture") + struct.pack("<I", GGUF_STRING) + _string("hand")
    blob = b""
    for name, ne, kind, data in tensors:
        head += _string(name) + struct.pack(f"<I{len(ne)}QIQ", len(ne), *ne, kind, len(blob))
        blob += data + bytes(-len(data) % 32)
    return head + bytes(-len(head) % 32) + blob


def parse_gguf(data: bytes) -> dict[str, tuple[list[int], int, bytes]]:
    """name -> (ne, GGML type, the tensor's bytes) of a GGUF v3 file, by hand."""
    assert data[:4] == b"GGUF" and struct.unpack_from("<I", data, 4)[0] == 3
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    at = 24

    def string() -> str:
        nonlocal at
        (size,) = struct.unpack_from("<Q", data, at)
        at += 8 + size
        return data[at - size : at].decode()

    for _ in range(n_kv):
        string()
        (kind,) = struct.unpack_from("<I", data, at)
        at += 4
        if kind == GGUF_STRING:
            string()
        else:
            at += {GGUF_UINT32: 4}[kind]
    infos = []
    for _ in range(n_tensors):
        name = string()
        (n_dims,) = struct.unpack_from("<I", data, at)
        ne = list(struct.unpack_from(f"<{n_dims}Q", data, at + 4))
        kind, offset = struct.unpack_from("<IQ", data, at + 4 + 8 * n_dims)
        at += 4 + 8 * n_dims + 12
        infos.append((name, ne, kind, offset))
    start = at + (-at % 32)
    sizes = {F32: 4, F16: 2}
    out = {}
    for name, ne, kind, offset in infos:
        count = int(np.prod(ne))
        size = count * sizes[kind] if kind in sizes else count // 32 * (34 if kind == Q8_0 else 18)
        out[name] = (ne, kind, data[start + offset : start + offset + size])
    return out


# ---- round trips ----------------------------------------------------------------------------


def test_saved_weights_load_back_exactly_in_file_order(tmp_path, gguf):
    path = tmp_path / "mlp.gguf"
    w1, w2 = quantize(_matrix(6, 64, 1), "q8_0"), quantize(_matrix(3, 96, 2), "q4_0")
    dense = _matrix(5, 7, 3)
    bias = np.arange(6, dtype=np.float16)
    save_weights(path, {"up": w1, "down": w2, "dense": dense, "up.bias": bias})
    assert weight_names(path) == ["up", "down", "dense", "up.bias"]
    for name, want in (("up", w1), ("down", w2)):
        got = load_weight(path, name)
        assert isinstance(got, QuantizedWeights)
        assert (got.format, got.shape) == (want.format, want.shape)
        np.testing.assert_array_equal(got.to_ggml(), want.to_ggml())
    for name, want in (("dense", dense), ("up.bias", bias)):
        got = load_weight(path, name)
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable and got.base is None  # a copy, not a view of the file


def test_any_quantized_shape_round_trips(tmp_path, gguf):
    @settings(max_examples=25, deadline=None)
    @given(st.integers(1, 9), st.integers(1, 5), st.sampled_from(["q8_0", "q4_0"]))
    def check(n, blocks, fmt):
        q = quantize(_matrix(n, 32 * blocks, n * blocks), fmt)
        path = tmp_path / "w.gguf"
        save_weights(path, {"w": q, "x": np.zeros((blocks, n), np.float32)})
        got = load_weight(path, "w")
        assert got.shape == (n, 32 * blocks)
        np.testing.assert_array_equal(dequantize(got), dequantize(q))
        assert load_weight(path, "x").shape == (blocks, n)

    check()


def test_gguf_py_exposes_ne_as_shape_and_numpy_order_as_data_shape(tmp_path, gguf):
    # What the loader relies on: ReaderTensor.shape is ggml's ne ([K, N]), data.shape is
    # numpy's order, (N, K) or (N, bytes per row) for quantized types.
    path = tmp_path / "w.gguf"
    save_weights(path, {"q": quantize(_matrix(3, 64), "q8_0"), "f": _matrix(3, 64)})
    tensors = {t.name: t for t in gguf.GGUFReader(path).tensors}
    assert tensors["q"].shape.tolist() == [64, 3] and tensors["q"].data.shape == (3, 68)
    assert tensors["f"].shape.tolist() == [64, 3] and tensors["f"].data.shape == (3, 64)
    assert tensors["q"].tensor_type == gguf.GGMLQuantizationType.Q8_0


def test_the_written_bytes_follow_the_gguf_layout(tmp_path, gguf):
    q4, dense = quantize(_matrix(3, 64), "q4_0"), _matrix(2, 5)
    path = tmp_path / "w.gguf"
    save_weights(path, {"w": q4, "d": dense, "h": dense.astype(np.float16)}, arch="llama")
    data = path.read_bytes()
    assert (
        _string("general.architecture") + struct.pack("<I", GGUF_STRING) + _string("llama") in data
    )
    tensors = parse_gguf(data)
    assert tensors["w"][:2] == ([64, 3], Q4_0)  # ne fastest first: K, then N
    assert tensors["w"][2] == q4.to_ggml().tobytes()  # ggml's interleaved blocks, row-major
    assert tensors["d"][:2] == ([5, 2], F32)
    assert tensors["d"][2] == dense.astype("<f4").tobytes()
    assert tensors["h"][:2] == ([5, 2], F16)


def test_a_file_written_byte_by_byte_loads_as_the_n_by_k_matrix(tmp_path, gguf):
    q8, q4 = quantize(_matrix(3, 64, 7), "q8_0"), quantize(_matrix(2, 32, 8), "q4_0")
    dense = _matrix(4, 6, 9)
    path = tmp_path / "hand.gguf"
    path.write_bytes(
        gguf_bytes(
            [
                ("q8", [64, 3], Q8_0, q8.to_ggml().tobytes()),
                ("q4", [32, 2], Q4_0, q4.to_ggml().tobytes()),
                ("row", [64], Q8_0, q8.to_ggml()[1].tobytes()),  # one row: ne = [K]
                ("dense", [6, 4], F32, dense.astype("<f4").tobytes()),
            ]
        )
    )
    assert weight_names(path) == ["q8", "q4", "row", "dense"]
    for name, want in (("q8", q8), ("q4", q4)):
        got = load_weight(path, name)
        assert got.format == want.format and got.shape == want.shape
        np.testing.assert_array_equal(dequantize(got), dequantize(want))
    row = load_weight(path, "row")
    assert row.shape == (1, 64)
    np.testing.assert_array_equal(dequantize(row)[0], dequantize(q8)[1])
    np.testing.assert_array_equal(load_weight(path, "dense"), dense)


# ---- refused tensors, names and files -------------------------------------------------------


def test_other_ggml_types_are_refused_naming_the_type(tmp_path, gguf):
    path = tmp_path / "other.gguf"
    path.write_bytes(
        gguf_bytes(
            [
                ("q41", [32, 1], Q4_1, bytes(20)),
                ("ints", [4], I32, np.arange(4, dtype="<i4").tobytes()),
            ]
        )
    )
    for name, kind in (("q41", "Q4_1"), ("ints", "I32")):
        with pytest.raises(
            ConfigError, match=rf"'{name}'.* {kind}: .*'F32', 'F16', 'Q8_0', 'Q4_0'"
        ):
            load_weight(path, name)


def test_a_quantized_tensor_of_three_dimensions_is_refused(tmp_path, gguf):
    path = tmp_path / "experts.gguf"
    path.write_bytes(gguf_bytes([("experts", [32, 2, 3], Q8_0, bytes(6 * 34))]))
    with pytest.raises(ConfigError, match=r"ne = \[32, 2, 3\]"):
        load_weight(path, "experts")


def test_a_missing_name_lists_the_names_present(tmp_path, gguf):
    path = tmp_path / "w.gguf"
    save_weights(path, {"a.weight": _matrix(1, 2), "b.weight": _matrix(1, 2)})
    with pytest.raises(TensorNotFound) as info:
        load_weight(path, "c.weight")
    assert isinstance(info.value, KeyError) and isinstance(info.value, QcomExtError)
    assert str(info.value) == f"no tensor 'c.weight' in {path}; it has ['a.weight', 'b.weight']"


@pytest.mark.parametrize(
    "content",
    [b"", b"not a gguf file at all, just text\n", b"GGUF" + struct.pack("<I", 99) + bytes(40)],
    ids=["empty", "text", "version 99"],
)
def test_a_file_that_is_not_gguf_is_a_gguf_file_error(tmp_path, gguf, content):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    for read in (weight_names, lambda p: load_weight(p, "w")):
        with pytest.raises(GGUFFileError, match=re.escape(str(path))):
            read(path)


def test_a_missing_file_is_a_gguf_file_error(tmp_path, gguf):
    with pytest.raises(GGUFFileError, match=r"absent\.gguf"):
        load_weight(tmp_path / "absent.gguf", "w")


def test_every_truncation_of_a_file_is_refused_or_reads_the_whole_tensor(tmp_path, gguf):
    full = tmp_path / "full.gguf"
    q = quantize(_matrix(2, 64), "q8_0")
    save_weights(full, {"w": q, "b": np.ones(3, np.float32)})
    data = full.read_bytes()
    cut = tmp_path / "cut.gguf"
    for size in range(len(data)):
        cut.write_bytes(data[:size])
        try:
            got = load_weight(cut, "w")
        except GGUFFileError:
            continue
        np.testing.assert_array_equal(got.to_ggml(), q.to_ggml())  # only the padding was cut


def test_a_corrupted_file_raises_only_typed_errors(tmp_path, gguf):
    path = tmp_path / "w.gguf"
    save_weights(path, {"w": quantize(_matrix(2, 64), "q8_0"), "b": np.ones(3, np.float32)})
    data = path.read_bytes()
    header = len(data) - 160 - 32  # what precedes the two tensors' padded data
    rng = np.random.default_rng(23)
    outcomes = set()
    for _ in range(300):
        broken = bytearray(data)
        for at in rng.integers(0, header, size=rng.integers(1, 4)):
            broken[at] = rng.integers(0, 256)
        path.write_bytes(bytes(broken))
        try:
            load_weight(path, "w")
            outcomes.add("read")
        except QcomExtError as exc:  # GGUFFileError, TensorNotFound, ConfigError
            outcomes.add(type(exc).__name__)
            assert str(path) in str(exc)
    assert {"GGUFFileError", "read"} <= outcomes, outcomes


BAD_SAVES = {
    "name too long": ({"x" * 64: np.ones(2, np.float32)}, "x" * 64),
    "name of multibyte characters": ({"é" * 32: np.ones(2, np.float32)}, "é" * 32),
    "empty name": ({"": np.ones(2, np.float32)}, "''"),
    "name not a string": ({7: np.ones(2, np.float32)}, "7"),
    "float64": ({"w": np.ones(2)}, "float64"),
    "int8": ({"w": np.ones(2, np.int8)}, "int8"),
    "scalar": ({"w": np.float32(1.0)}, "float32"),
    "0-d array": ({"w": np.array(1.0, np.float32)}, "shape ()"),
    "5-D": ({"w": np.ones((1, 1, 1, 1, 2), np.float32)}, "(1, 1, 1, 1, 2)"),
    "empty array": ({"w": np.ones((0, 4), np.float32)}, "(0, 4)"),
    "a list": ({"w": [1.0, 2.0]}, "list"),
    "not a mapping": ([("w", np.ones(2, np.float32))], "list"),
}


@pytest.mark.parametrize("case", list(BAD_SAVES))
def test_bad_weights_to_save_are_refused_and_nothing_is_written(tmp_path, gguf, case):
    weights, named = BAD_SAVES[case]
    path = tmp_path / "w.gguf"
    with pytest.raises(ConfigError) as info:
        save_weights(
            path,
            {"fine": np.ones(2, np.float32), **weights} if isinstance(weights, dict) else weights,
        )
    assert named in str(info.value), str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_path_that_is_no_path_is_refused(gguf):
    for call in (
        lambda: load_weight(None, "w"),
        lambda: weight_names(3.5),
        lambda: save_weights(None, {"w": np.ones(2, np.float32)}),
    ):
        with pytest.raises(ConfigError, match=r"path (None|3\.5)"):
            call()


@pytest.mark.parametrize("arch", ["", None, 3])
def test_a_bad_arch_is_refused(tmp_path, gguf, arch):
    with pytest.raises(ConfigError, match=repr(arch)):
        save_weights(tmp_path / "w.gguf", {"w": np.ones(2, np.float32)}, arch=arch)


def test_a_failed_save_leaves_the_old_file_and_no_partial_one(tmp_path, gguf, monkeypatch):
    path = tmp_path / "w.gguf"
    save_weights(path, {"old": np.ones(2, np.float32)})
    before = path.read_bytes()

    def broken(self):
        raise OSError("disk full")

    monkeypatch.setattr(gguf.GGUFWriter, "write_tensors_to_file", broken)
    with pytest.raises(GGUFFileError, match="disk full"):
        save_weights(path, {"new": np.ones(2, np.float32)})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["w.gguf"]


def test_big_endian_and_non_contiguous_arrays_are_written_as_their_values(tmp_path, gguf):
    path = tmp_path / "w.gguf"
    big = np.arange(6, dtype=">f4").reshape(2, 3)
    strided = np.arange(12, dtype=np.float16).reshape(3, 4)[:, ::2]
    save_weights(path, {"big": big, "strided": strided})
    np.testing.assert_array_equal(load_weight(path, "big"), big)
    np.testing.assert_array_equal(load_weight(path, "strided"), strided)


# ---- the optional package -------------------------------------------------------------------


def test_without_gguf_every_function_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "gguf", None)  # `import gguf` raises ImportError
    calls = [
        lambda: weight_names(tmp_path / "w.gguf"),
        lambda: load_weight(tmp_path / "w.gguf", "w"),
        lambda: save_weights(tmp_path / "w.gguf", {"w": np.ones(2, np.float32)}),
    ]
    for call in calls:
        with pytest.raises(GGUFUnavailable, match=r"pip install 'qcom_ext\[gguf\]'") as info:
            call()
        assert isinstance(info.value, ImportError) and isinstance(info.value, QcomExtError)
    assert list(tmp_path.iterdir()) == []


def test_importing_qcom_ext_ops_does_not_import_gguf():
    code = "import sys, qcom_ext.ops; print('gguf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_gguf_extra_is_declared_and_installed_for_the_tests():
    text = (ROOT / "pyproject.toml").read_text()
    extras = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    assert "\ngguf = [" in extras
    test_extra = extras.split("\ntest = [", 1)[1].split("]", 1)[0]
    assert '"gguf' in test_extra  # .ci/run installs .[pocl,test]


# ---- docs/ops.md's example ------------------------------------------------------------------


def test_the_docs_example_runs(tmp_path, gguf, monkeypatch):
    page = (ROOT / "docs" / "ops.md").read_text()
    section = page.split("## Quantized weights (q8_0, q4_0) and GGUF", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs/ops.md", "exec"), {})
    assert (tmp_path / "mlp.gguf").is_file()
