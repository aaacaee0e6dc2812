"""Weight tensors in GGUF files (llama.cpp's format), through the optional ``gguf`` package.

``pip install 'qcom_ext[gguf]'`` adds it; it is imported on the first call, so importing
:mod:`qcom_ext.ops` never needs it. :func:`load_weight` returns F32 and F16 tensors as
numpy arrays and Q8_0 and Q4_0 tensors as :class:`~qcom_ext.ops.quant.QuantizedWeights`
(the bytes of the file are ggml's blocks: :meth:`QuantizedWeights.from_ggml`);
:func:`save_weights` writes both kinds, :func:`weight_names` lists a file's tensors.

GGUF lists a tensor's dimensions fastest-varying first (ggml's ``ne``): a weight of
``ne = [K, N]`` is the numpy ``(N, K)`` matrix, N rows of K, the layout of ``y = x @ W.T``.
gguf-py's ``ReaderTensor.shape`` is ``ne``; its ``data.shape`` is the numpy order (for
quantized types, the last dimension counted in bytes).

>>> import os, tempfile
>>> import numpy as np
>>> from qcom_ext.ops import load_weight, quantize, save_weights, weight_names
>>> w = np.linspace(-1, 1, 2 * 64, dtype=np.float32).reshape(2, 64)
>>> layer = {"fc.weight": quantize(w, "q4_0"), "fc.bias": np.ones(2, np.float32)}
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "fc.gguf")
...     save_weights(path, layer)
...     names, q = weight_names(path), load_weight(path, "fc.weight")
...     bias = load_weight(path, "fc.bias")
>>> names, q.format, q.shape, bias
(['fc.weight', 'fc.bias'], 'q4_0', (2, 64), array([1., 1.], dtype=float32))
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from qcom_ext.errors import ConfigError, QcomExtError
from qcom_ext.ops.gguf_scan import GGUFFileError, scan_header
from qcom_ext.ops.quant import QuantizedWeights

__all__ = [
    "SUPPORTED_TYPES",
    "GGUFFileError",
    "GGUFUnavailable",
    "TensorNotFound",
    "load_weight",
    "save_weights",
    "weight_names",
]

#: The GGML tensor types qcom_ext reads and writes.
SUPPORTED_TYPES = ("F32", "F16", "Q8_0", "Q4_0")
#: numpy dtypes written as F32 / F16.
_FLOAT_TYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16"}
#: ggml's GGML_MAX_NAME counts the terminating NUL; GGML_MAX_DIMS.
_MAX_NAME_BYTES, _MAX_DIMS = 63, 4
#: What gguf-py raises on a file that is not a well-formed GGUF file.
_PARSE_ERRORS = (ValueError, IndexError, KeyError, TypeError, OverflowError, EOFError)


class GGUFUnavailable(QcomExtError, ImportError):
    """The optional ``gguf`` package is not installed: ``pip install 'qcom_ext[gguf]'``."""


class TensorNotFound(QcomExtError, KeyError):
    """No tensor of that name in the file; the message lists the names it has."""

    def __str__(self) -> str:  # KeyError's str() would show the message's repr
        return str(self.args[0]) if self.args else ""


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as exc:
        raise GGUFUnavailable(
            f"GGUF files need the gguf package ({exc}): pip install 'qcom_ext[gguf]'"
        ) from exc
    return gguf


def _path(path: object) -> str:
    try:
        return os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        raise ConfigError(f"path {path!r}: a str or os.PathLike expected") from None


@contextlib.contextmanager
def _parsed(path: str | os.PathLike[str]) -> Iterator[tuple[Any, BinaryIO]]:
    """gguf-py's reader of the GGUF file ``path`` and the file, open while the block runs.
    The header is checked first (:func:`~qcom_ext.ops.gguf_scan.scan_header`) and gguf-py
    parses the very file checked; what it cannot parse is a :class:`GGUFFileError`."""
    gguf, name = _gguf(), _path(path)
    try:
        file = open(name, "rb")  # noqa: SIM115  (closed by the with below)
    except OSError as exc:
        raise GGUFFileError(f"{name}: cannot be read ({exc})") from exc
    with file:
        try:
            scan_header(file, name, os.fstat(file.fileno()).st_size)
            file.seek(0)
            reader = gguf.GGUFReader(file)
        except OSError as exc:
            raise GGUFFileError(f"{name}: cannot be read ({exc})") from exc
        except (*_PARSE_ERRORS, RecursionError, MemoryError) as exc:
            if isinstance(exc, GGUFFileError):
                raise
            raise GGUFFileError(
                f"{name}: not a well-formed GGUF file ({type(exc).__name__}: {exc})"
            ) from exc
        yield reader, file


def weight_names(path: str | os.PathLike[str]) -> list[str]:
    """The names of the tensors in the GGUF file ``path``, in file order."""
    with _parsed(path) as (reader, _):
        return [tensor.name for tensor in reader.tensors]


def _tensor_array(file: BinaryIO, tensor: Any, where: str) -> np.ndarray:
    """The tensor's bytes read from ``file`` (not through gguf-py's memory map, where a
    file that shrinks is a SIGBUS): gguf-py's view gives only the dtype and shape."""
    view = tensor.data  # a np.memmap view: its bytes are never touched here
    start, count = int(tensor.data_offset), int(view.nbytes)
    size = os.fstat(file.fileno()).st_size
    if start + count > size:
        raise GGUFFileError(
            f"{where}: its {count} bytes at offset {start} run past the end of the file "
            f"({size} bytes)"
        )
    data = bytearray(count)
    window, done = memoryview(data), 0
    file.seek(start)
    while done < count:
        got = file.readinto(window[done:])
        if not got:
            raise GGUFFileError(f"{where}: the file shrank to {done + start} bytes while read")
        done += got
    return np.frombuffer(data, dtype=view.dtype).reshape(view.shape)


def load_weight(path: str | os.PathLike[str], name: str) -> QuantizedWeights | np.ndarray:
    """Tensor ``name`` of the GGUF file ``path``: a numpy array (F32, F16; numpy order, the
    reverse of ggml's ``ne``) or :class:`QuantizedWeights` (Q8_0, Q4_0: ``ne = [K, N]`` is
    the ``(N, K)`` matrix). Read out of the file with ordinary reads (a file that shrinks
    meanwhile is a :class:`GGUFFileError`), which is closed on return."""
    with _parsed(path) as (reader, file):
        found = {tensor.name: tensor for tensor in reader.tensors}
        if name not in found:
            raise TensorNotFound(
                f"no tensor {name!r} in {os.fspath(path)}; it has {list(found) or 'none'}"
            )
        tensor = found[name]
        kind = tensor.tensor_type.name
        where = f"tensor {name!r} of {os.fspath(path)}"
        if kind not in SUPPORTED_TYPES:
            raise ConfigError(f"{where} is GGML type {kind}: qcom_ext reads {SUPPORTED_TYPES}")
        if kind in ("F32", "F16"):
            dtype = np.float32 if kind == "F32" else np.float16
            return np.array(_tensor_array(file, tensor, where), dtype=dtype)
        if reader.byte_order != "I":
            raise ConfigError(f"{where}: quantized tensors are read from little-endian files only")
        ne = [int(size) for size in tensor.shape]
        if len(ne) > 2 and any(size != 1 for size in ne[2:]):
            raise ConfigError(f"{where} has ggml shape ne = {ne}: a matrix (ne = [K, N]) expected")
        n = ne[1] if len(ne) > 1 else 1
        blocks = _tensor_array(file, tensor, where)
    try:
        return QuantizedWeights.from_ggml(blocks, kind.lower(), (n, ne[0]))
    except ConfigError as exc:
        raise ConfigError(f"{where} (ne = {ne}): {exc}") from exc


def save_weights(
    path: str | os.PathLike[str],
    weights: Mapping[str, QuantizedWeights | np.ndarray],
    arch: str = "qcom_ext",
) -> None:
    """Write ``weights`` (name -> :class:`QuantizedWeights`, or a float32 / float16 array)
    to the GGUF file ``path`` with ``general.architecture = arch``, replacing it whole: a
    failure leaves no file (or the old one) behind. The file is written under a fresh
    name of :func:`tempfile.mkstemp` in the same directory (created exclusively, mode
    0600: nothing planted there is followed or written into), then renamed onto
    ``path``; the new file keeps mode 0600."""
    gguf = _gguf()
    if not isinstance(arch, str) or not arch:
        raise ConfigError(f"arch {arch!r}: a non-empty string expected")
    if not isinstance(weights, Mapping):
        raise ConfigError(f"weights of type {type(weights).__name__}: a mapping name -> tensor")
    entries = [_entry(name, value) for name, value in weights.items()]
    target = Path(_path(path))
    try:
        fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    except OSError as exc:
        raise GGUFFileError(f"{os.fspath(path)}: cannot be written ({exc})") from exc
    try:
        with os.fdopen(fd, "wb") as out:
            _write(gguf, out, arch, entries)
        os.replace(partial, target)
    except OSError as exc:
        raise GGUFFileError(f"{os.fspath(path)}: cannot be written ({exc})") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def _entry(name: object, value: object) -> tuple[str, np.ndarray, str | None]:
    """(name, the array to write, its GGML type for quantized blocks), checked."""
    if not isinstance(name, str) or not 0 < len(name.encode()) <= _MAX_NAME_BYTES:
        raise ConfigError(
            f"tensor name {name!r}: a string of 1 to {_MAX_NAME_BYTES} UTF-8 bytes expected "
            "(ggml's GGML_MAX_NAME)"
        )
    if isinstance(value, QuantizedWeights):
        return name, value.to_ggml(), value.format.upper()
    if not isinstance(value, np.ndarray):
        raise ConfigError(
            f"tensor {name!r} of type {type(value).__name__}: QuantizedWeights or a float32 "
            "or float16 numpy array expected"
        )
    native = value.dtype.newbyteorder("=")
    if native not in _FLOAT_TYPES:
        raise ConfigError(
            f"tensor {name!r} of dtype {value.dtype}: GGUF F32 / F16 take float32 or float16 "
            "(astype one of them, or quantize)"
        )
    if not 1 <= value.ndim <= _MAX_DIMS or value.size == 0:
        raise ConfigError(
            f"tensor {name!r} of shape {value.shape}: 1 to {_MAX_DIMS} dimensions, not empty"
        )
    return name, np.ascontiguousarray(value, dtype=native), None  # the writer orders bytes


def _write(gguf: Any, out: BinaryIO, arch: str, entries: list) -> None:
    """The GGUF file of ``entries`` written to ``out``, a file qcom_ext opened (gguf-py
    opens none: it writes where its ``fout`` says; closing ``out`` is the caller's)."""
    writer = gguf.GGUFWriter(None, arch)
    for name, data, quantized in entries:
        raw = getattr(gguf.GGMLQuantizationType, quantized) if quantized else None
        writer.add_tensor(name, data, raw_dtype=raw)
    if any(quantized for _, _, quantized in entries):
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.fout, writer.state = [out], gguf.gguf_writer.WriterState.EMPTY  # as if it opened out
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    out.flush()
