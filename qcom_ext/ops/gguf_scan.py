"""The bounds of a GGUF file's header, key/values and tensor infos, checked before gguf-py
parses it.

gguf-py trusts every count and length in a file: an array length past the end of the
file has its reader loop without progress while its memory grows, and arrays nested a
few thousand deep overflow the interpreter's stack. :func:`scan_header` walks the same
bytes first (GGUF versions 2 and 3, either byte order) with ordinary file reads and
refuses, as :class:`GGUFFileError`, any count or length that the rest of the file cannot
hold and arrays nested deeper than :data:`MAX_NESTING`. It reads the file's metadata
only: scalar arrays are skipped whole, strings by their length.

The layout (ggml's docs/gguf.md): "GGUF", u32 version, u64 tensor count, u64 key/value
count; each key/value a string key, a u32 value type and the value (a string is a u64
length and its bytes; an array a u32 item type, a u64 count and the items); each tensor
info a string name, u32 n_dims, u64 ne[n_dims], u32 GGML type, u64 offset.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

from qcom_ext.errors import QcomExtError

__all__ = ["MAX_NESTING", "GGUFFileError", "scan_header"]

#: The deepest arrays of arrays a file may hold (llama.cpp's files nest none).
MAX_NESTING = 16
#: Bytes of each fixed-size GGUF value type (GGUFValueType: 8 is STRING, 9 ARRAY).
_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
#: The fewest bytes an item of a type takes: a string its length, an array its type and
#: count; a key/value its key's length, its type and a one-byte value; a tensor info its
#: name's length, n_dims, type and offset.
_FEWEST = {_STRING: 8, _ARRAY: 12}
_KV_BYTES, _TENSOR_BYTES = 8 + 4 + 1, 8 + 4 + 4 + 8
_VERSIONS = (2, 3)  # what gguf-py reads; it reports any other version itself


class GGUFFileError(QcomExtError, ValueError):
    """A GGUF file that cannot be read (absent, unreadable, truncated, corrupt) or written."""


class _Cursor:
    """Reads ``file`` forward, refusing anything past its ``size``."""

    def __init__(self, file: BinaryIO, name: str, size: int) -> None:
        self.file, self.name, self.size, self.at, self.order = file, name, size, 0, "<"

    def need(self, count: int, what: str) -> None:
        if count > self.size - self.at:
            raise GGUFFileError(
                f"{self.name}: {what} needs {count} bytes at offset {self.at}, past the end "
                f"of the file ({self.size} bytes): not a well-formed GGUF file"
            )

    def take(self, count: int, what: str) -> bytes:
        self.need(count, what)
        data = self.file.read(count)
        if len(data) != count:
            raise GGUFFileError(f"{self.name}: the file shrank while it was read")
        self.at += count
        return data

    def skip(self, count: int, what: str) -> None:
        self.need(count, what)
        self.at += count
        self.file.seek(self.at)

    def u32(self, what: str) -> int:
        return struct.unpack(self.order + "I", self.take(4, what))[0]

    def u64(self, what: str) -> int:
        return struct.unpack(self.order + "Q", self.take(8, what))[0]

    def string(self, what: str) -> None:
        self.skip(self.u64(f"the length of {what}"), what)

    def count(self, what: str, each: int) -> int:
        """A u64 count of items of at least ``each`` bytes, checked against the rest."""
        value = self.u64(f"the count of {what}")
        if value * each > self.size - self.at:
            raise GGUFFileError(
                f"{self.name}: {what} counts {value} items of at least {each} bytes at "
                f"offset {self.at}; the file has {self.size - self.at} bytes left: not a "
                "well-formed GGUF file"
            )
        return value


def _value(cursor: _Cursor, kind: int, what: str, depth: int) -> None:
    if kind in _SCALAR_BYTES:
        cursor.skip(_SCALAR_BYTES[kind], what)
    elif kind == _STRING:
        cursor.string(what)
    elif kind == _ARRAY:
        item = cursor.u32(f"the item type of {what}")
        if item == _ARRAY and depth + 1 >= MAX_NESTING:
            raise GGUFFileError(
                f"{cursor.name}: {what} nests arrays more than {MAX_NESTING} deep "
                "(MAX_NESTING): not a file qcom_ext reads"
            )
        if item in _SCALAR_BYTES:
            cursor.skip(cursor.count(what, _SCALAR_BYTES[item]) * _SCALAR_BYTES[item], what)
        elif item in _FEWEST:
            for _ in range(cursor.count(what, _FEWEST[item])):
                _value(cursor, item, f"an item of {what}", depth + 1)
        else:
            raise GGUFFileError(f"{cursor.name}: {what} has items of unknown type {item}")
    else:
        raise GGUFFileError(f"{cursor.name}: {what} has unknown value type {kind}")


def scan_header(file: BinaryIO, name: str, size: int) -> None:
    """Check the header, key/values and tensor infos of the GGUF file open as ``file``
    (``size`` bytes, read from its start; ``name`` for messages): :class:`GGUFFileError`
    for a count or length past the end of the file, or arrays nested too deep. A file
    that is not GGUF, or of another version, is left to gguf-py to refuse."""
    cursor = _Cursor(file, name, size)
    if size < 24 or cursor.take(4, "the magic") != b"GGUF":
        return
    version = struct.unpack("<I", cursor.take(4, "the version"))[0]
    if version & 0xFFFF == 0:  # written on a machine of the other byte order
        cursor.order, version = ">", struct.unpack(">I", struct.pack("<I", version))[0]
    if version not in _VERSIONS:
        return
    tensors = cursor.u64("the tensor count")
    pairs = cursor.count("the key/values", _KV_BYTES)
    for index in range(pairs):
        cursor.string(f"the key of key/value {index}")
        kind = cursor.u32(f"the type of key/value {index}")
        _value(cursor, kind, f"key/value {index}", 0)
    if tensors * _TENSOR_BYTES > size - cursor.at:
        raise GGUFFileError(
            f"{name}: {tensors} tensors need at least {tensors * _TENSOR_BYTES} bytes of "
            f"tensor infos at offset {cursor.at}; the file has {size - cursor.at} bytes left"
        )
    for index in range(tensors):
        cursor.string(f"the name of tensor {index}")
        dims = cursor.u32(f"the dimension count of tensor {index}")
        cursor.skip(8 * dims, f"the dimensions of tensor {index}")
        cursor.skip(4 + 8, f"the type and offset of tensor {index}")
