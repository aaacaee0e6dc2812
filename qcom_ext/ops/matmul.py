"""``y = x @ W.T + bias`` with W in float32, float16, q8_0 or q4_0 (the fallback of
cl_qcom_ml_ops' fully-connected and GEMM operators; docs/ops.md, "Matmul").

:class:`Linear` uploads W once (struct of arrays, see :mod:`qcom_ext.ops._matmul_layout`),
reads it through image1d_buffer views or buffers (``path``, chosen by the probe) and runs
the GEMV kernels for up to 8 rows of x (a decode step) or the tiled GEMM above (a
prefill). x is float32 or float16 (numpy in, numpy out; :class:`BufferMatrix` in,
BufferMatrix out); y is float32. ``activation_format="q8_0"`` quantizes x per block of 32
on the device and takes integer dot products (qcom_dot8_acc) against q8_0 or q4_0 W.

>>> import numpy as np, pyopencl as cl, qcom_ext
>>> from qcom_ext import ops
>>> queue = cl.CommandQueue(cl.Context([qcom_ext.probe().device()]))
>>> w = np.linspace(-1, 1, 8 * 64, dtype=np.float32).reshape(8, 64)
>>> layer = ops.Linear(queue, w, weight_format="q4_0")
>>> layer.shape, layer.weight_format, layer.path in ops.MATMUL_PATHS
((8, 64), 'q4_0', True)
>>> x = np.ones((1, 64), np.float32)
>>> y = layer(queue, x)
>>> from qcom_ext.ops.quant import dequantize
>>> y.shape, bool(abs(y - x @ dequantize(layer.quantized).T).max() < 1e-4)
((1, 8), True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ext.memory.memobj import hold
from qcom_ext.ops import _matmul_programs as programs
from qcom_ext.ops._casting import cast_array, compute_dtype, float_array
from qcom_ext.ops._matmul_layout import PATHS, DeviceWeights, choose_path, pack
from qcom_ext.ops._matmul_programs import (
    GEMV_MAX_ROWS,
    Gemm,
    Gemv,
    gemv_candidates,
    gemv_local,
)
from qcom_ext.ops._tensor import MAX_ELEMENTS, allocate, held_dtype, upload
from qcom_ext.ops._weights import bias_vector
from qcom_ext.ops.quant import FORMATS as QUANT_FORMATS
from qcom_ext.ops.quant import QuantizedWeights, quantize
from qcom_ext.ops.tuning import TuningResult, tune_report

__all__ = [
    "ACTIVATION_FORMATS",
    "MATMUL_PATHS",
    "WEIGHT_FORMATS",
    "BufferMatrix",
    "Linear",
    "matmul",
]

#: How the kernels read W: through image1d_buffer views or plain buffers.
MATMUL_PATHS = PATHS
#: How W is stored on the device.
WEIGHT_FORMATS = ("f32", "f16", "q8_0", "q4_0")
#: ``activation_format`` values besides None (x kept in float).
ACTIVATION_FORMATS = ("q8_0",)


@dataclass(frozen=True)
class BufferMatrix:
    """A row-major ``(rows, cols)`` float32 or float16 matrix in a pyopencl Buffer. It
    holds a reference of its own to the buffer (:func:`~qcom_ext.ext.memory.memobj.hold`):
    a caller's ``buffer.release()`` cannot free it under the matrix."""

    buffer: Any
    shape: tuple[int, int]
    dtype: np.dtype
    _held: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_held", hold(self.buffer))

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    @classmethod
    def empty(cls, context: Any, shape: tuple[int, int], dtype: Any = np.float32) -> BufferMatrix:
        """A new matrix of ``shape``; contents undefined."""
        shape, dtype = _shape2(shape, "matrix shape"), held_dtype(dtype, "matrix")
        buffer = allocate(context, shape[0] * shape[1] * dtype.itemsize, f"a {shape} matrix")
        return cls(buffer, shape, dtype)

    @classmethod
    def wrap(cls, buffer: Any, shape: tuple[int, int], dtype: Any) -> BufferMatrix:
        """An existing buffer holding a ``shape`` matrix of ``dtype`` (float32/float16)."""
        matrix = cls(buffer, _shape2(shape, "matrix shape"), held_dtype(dtype, "matrix"))
        if buffer.size < matrix.nbytes:
            raise ConfigError(
                f"a {matrix.shape} {matrix.dtype.name} matrix needs {matrix.nbytes} bytes; "
                f"the buffer has {buffer.size}"
            )
        return matrix

    @classmethod
    def from_numpy(cls, context: Any, array: np.ndarray) -> BufferMatrix:
        """A matrix in a new read-only buffer holding a copy of the 2-D ``array``."""
        shape = _shape2(array.shape, "matrix shape")
        dtype = held_dtype(array.dtype, "matrix")
        what = f"a {shape} {dtype.name} matrix"
        return cls(upload(context, np.ascontiguousarray(array), what), shape, dtype)

    def to_numpy(self, queue: Any) -> np.ndarray:
        """The matrix read back to the host (blocking)."""
        import pyopencl as cl

        if self.buffer.context != queue.context:
            raise ConfigError("the matrix belongs to another context than the queue")
        out = np.empty(self.shape, self.dtype)
        cl.enqueue_copy(queue, out, self.buffer)
        return out


def _shape2(shape: Any, what: str) -> tuple[int, int]:
    """2 positive ints whose product the kernels' 32-bit indices reach."""
    try:
        items = tuple(shape)
    except TypeError:
        raise ConfigError(f"{what} must be 2 sizes (rows, cols), not {shape!r}") from None
    ints = all(
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items
    )
    if len(items) != 2 or not ints or min(items) < 1:
        raise ConfigError(f"{what} must be 2 positive ints (rows, cols), not {shape!r}")
    rows, cols = int(items[0]), int(items[1])
    if rows * cols > MAX_ELEMENTS:
        raise ConfigError(
            f"{what} ({rows}, {cols}) has more than the 2**31 - 1 elements the kernels' "
            "32-bit indices reach; split it"
        )
    return rows, cols


def _weight_format(weight: Any, weight_format: Any) -> str:
    """The storage of W: ``weight_format``, else the format of QuantizedWeights, else f16
    for float16 arrays and f32 for other float arrays."""
    if weight_format is not None and weight_format not in WEIGHT_FORMATS:
        raise ConfigError(f"weight_format {weight_format!r}: expected one of {WEIGHT_FORMATS}")
    if isinstance(weight, QuantizedWeights):
        if weight_format not in (None, weight.format):
            raise ConfigError(
                f"weight_format {weight_format!r}, but the weights are {weight.format} "
                "QuantizedWeights (dequantize them first to convert)"
            )
        return weight.format
    if weight_format is not None:
        return weight_format
    return "f16" if getattr(weight, "dtype", None) == np.float16 else "f32"


def _weights_in(weight: Any, fmt: str) -> np.ndarray | QuantizedWeights:
    """``weight`` stored as ``fmt``: QuantizedWeights as given, floats cast or quantized."""
    if isinstance(weight, QuantizedWeights):
        return weight
    array = float_array(weight, "weight")
    if array.ndim != 2 or 0 in array.shape:
        raise ConfigError(f"weight must be a non-empty (N, K) matrix, got shape {array.shape}")
    _shape2(array.shape, "weight shape")
    if fmt in QUANT_FORMATS:
        return quantize(cast_array(array, "weight", np.float32), fmt)
    target = np.float16 if fmt == "f16" else np.float32
    return np.ascontiguousarray(cast_array(array, "weight", target))


class Linear:
    """``y = x @ W.T + bias`` with W ``(N, K)`` on the device (see the module).

    ``weight``: a float32/float16 array or :class:`~qcom_ext.ops.QuantizedWeights`;
    ``weight_format``: "f32", "f16", "q8_0" or "q4_0" (a float array is cast or quantized
    on upload; default: the array's or the QuantizedWeights' own); ``bias``: ``(N,)`` or
    None; ``activation_format``: None or "q8_0" (q8_0 and q4_0 W only); ``path``: None
    (the probe's choice), "image" or "buffer"; ``gemm_tile``: a key of
    :data:`~qcom_ext.ops._matmul_programs.GEMM_TILES` (default: chosen per device).
    """

    def __init__(
        self,
        queue: Any,
        weight: Any,
        bias: Any = None,
        *,
        weight_format: str | None = None,
        activation_format: str | None = None,
        path: str | None = None,
        gemm_tile: str | None = None,
    ) -> None:
        self.weight_format = _weight_format(weight, weight_format)
        stored = _weights_in(weight, self.weight_format)
        self.shape: tuple[int, int] = tuple(stored.shape)  # type: ignore[assignment]
        if activation_format not in (None, *ACTIVATION_FORMATS):
            raise ConfigError(
                f"activation_format {activation_format!r}: expected None or one of "
                f"{ACTIVATION_FORMATS}"
            )
        if activation_format is not None and self.weight_format not in QUANT_FORMATS:
            raise ConfigError(
                f"activation_format {activation_format!r} takes q8_0 or q4_0 weights, not "
                f"{self.weight_format}"
            )
        self.activation_format = activation_format
        self.quantized = stored if isinstance(stored, QuantizedWeights) else None
        self.bias_values = bias_vector(bias, self.shape[0])
        self.context, self.device = queue.context, queue.device
        packed = pack(stored, self.weight_format)
        self.nb = packed.nb
        self._sizes = (np.int32(self.shape[1]), np.int32(self.shape[0]), np.int32(self.nb))
        self.path, self.path_reason = choose_path(self.context, self.device, packed, path)
        self.weights = DeviceWeights(self.context, packed, self.path)
        self.weight_bytes = packed.nbytes
        self.bias = upload(self.context, self.bias_values, "the bias")
        programs.gemm_tile(self.device, 1, gemm_tile)  # checked now
        self._tile = gemm_tile
        self._kernels: dict[tuple[Any, ...], Any] = {}
        self._scratch: dict[tuple[int, int], tuple[Any, Any, Any]] = {}

    @property
    def out_features(self) -> int:
        return self.shape[0]

    @property
    def in_features(self) -> int:
        return self.shape[1]

    def family(self, rows: int) -> str:
        """``"gemv"`` or ``"gemm"``: the kernels that run for ``rows`` rows of x."""
        gemv = rows <= GEMV_MAX_ROWS or self.activation_format is not None
        return "gemv" if gemv else "gemm"

    def __call__(self, queue: Any, x: Any, out: Any = None, *, local_size: Any = "tuned") -> Any:
        """y for ``x``: a numpy ``(M, K)`` (or ``(K,)``) float array -> numpy float32
        ``(M, N)`` (or ``(N,)``); a :class:`BufferMatrix` -> ``out`` (a new float32
        BufferMatrix when None). ``local_size``: "tuned" (the cached tuning, else the
        layer's default), None (the driver's choice) or a tuple (GEMV only)."""
        if isinstance(x, BufferMatrix):
            x, out = self._prepared(queue, x, out)
            self.enqueue(queue, x, out, local_size=local_size)
            return out
        if out is not None:
            raise ConfigError("out= takes a BufferMatrix, for a BufferMatrix input")
        array = self._host_input(x)
        source = BufferMatrix.from_numpy(queue.context, array.reshape(-1, self.in_features))
        result = self(queue, source, local_size=local_size).to_numpy(queue)
        return result.reshape(*array.shape[:-1], self.out_features)

    def _host_input(self, x: Any) -> np.ndarray:
        array = float_array(x, "x")
        if array.ndim not in (1, 2) or 0 in array.shape:
            raise ConfigError(f"x must be a non-empty (M, K) or (K,) array, got {array.shape}")
        if array.shape[-1] != self.in_features:
            raise ConfigError(
                f"x has {array.shape[-1]} columns; the weight {self.shape} takes "
                f"K = {self.in_features}"
            )
        return np.ascontiguousarray(cast_array(array, "x", compute_dtype(array.dtype)))

    def _prepared(self, queue: Any, x: BufferMatrix, out: Any) -> tuple[BufferMatrix, Any]:
        """``x`` and ``out`` (new when None) checked against the layer and the queue."""
        where = "this Linear"
        if queue.context != self.context:
            raise ConfigError(f"queue belongs to another context than {where}")
        if queue.device != self.device:
            raise ConfigError(
                f"queue is on {queue.device.name.strip()!r}; {where} was built for "
                f"{self.device.name.strip()!r}"
            )
        rows, k = x.shape
        if k != self.in_features:
            raise ConfigError(
                f"x has {k} columns; the weight {self.shape} takes K = {self.in_features}"
            )
        want = (rows, self.out_features)
        _shape2(want, "y")
        if out is None:
            out = BufferMatrix.empty(self.context, want, np.float32)
        if not isinstance(out, BufferMatrix) or out.shape != want or out.dtype != np.float32:
            raise ConfigError(f"out must be a float32 BufferMatrix of shape {want}")
        for name, matrix in (("x", x), ("out", out)):
            if matrix.buffer.context != self.context:
                raise ConfigError(f"{name} belongs to another context than {where}")
        return x, out

    def _kernel(self, queue: Any, key: tuple[Any, ...]) -> Any:
        """The built Gemv / Gemm of ``key`` (("gemv", rows, x half) or ("gemm", tile, x
        half)), built once per layer."""
        found = self._kernels.get(key)
        if found is None:
            common = (self.weight_format, self.path, key[2], self.in_features)
            if key[0] == "gemv":
                act = self.activation_format is not None
                found = Gemv.build(queue, *common, key[1], act)
            else:
                found = Gemm.build(queue, *common, key[1])
            found = self._kernels.setdefault(key, found)
        return found

    def enqueue(
        self, queue: Any, x: BufferMatrix, out: BufferMatrix, *, local_size: Any = "tuned"
    ) -> list[Any]:
        """Enqueue ``out = x @ W.T + bias`` (BufferMatrix, checked) on ``queue``; returns
        the events of the kernels, in order (the q8_0 activation quantizer's first)."""
        x, out = self._prepared(queue, x, out)
        events = []
        for kernel, global_size, args in self._launches(queue, x, out, events):
            local = self._local(kernel, global_size, local_size)
            events.append(kernel.launcher(queue, global_size, *args, local_size=local))
        return events

    def _launches(
        self, queue: Any, x: BufferMatrix, out: BufferMatrix, events: list[Any]
    ) -> list[tuple]:
        """(kernel, global size, arguments) of each launch for ``x`` -> ``out``; the
        activation quantizer, where there is one, is enqueued now (its event joins
        ``events``)."""
        rows, half = x.shape[0], x.dtype == np.float16
        k, n, nb = self._sizes  # int32 scalars, made once: each costs a µs a call
        tail = [self.bias, out.buffer, n]
        if self.family(rows) == "gemm":
            tile = programs.gemm_tile(self.device, rows, self._tile)
            gemm = self._kernel(queue, ("gemm", tile, half))
            global_size, _ = gemm.sizes(rows, self.out_features)
            args = [x.buffer, k, k, nb, np.int32(rows), n, *tail]
            return [(gemm, global_size, [*self.weights.args(), *args])]
        inputs = [x.buffer]
        if self.activation_format is not None:
            inputs = self._quantized_input(queue, x, events)
        launches = []
        for row0 in range(0, rows, GEMV_MAX_ROWS):
            gemv = self._kernel(queue, ("gemv", min(GEMV_MAX_ROWS, rows - row0), half))
            global_size = (1, -(-self.out_features // gemv.rpw))
            args = [*inputs, k, k, nb, n, *tail, np.int32(row0)]
            launches.append((gemv, global_size, [*self.weights.args(), *args]))
        return launches

    def _quantized_input(self, queue: Any, x: BufferMatrix, events: list[Any]) -> list[Any]:
        """x quantized to q8_0 on the device (enqueued): [words, scales, sums]."""
        rows, nb = x.shape[0], self.nb
        quantizer = self._kernel(queue, ("gemv", 1, x.dtype == np.float16)).quantizer
        key = (rows, queue.int_ptr)  # per queue: in-order, so calls never overlap
        scratch = self._scratch.get(key)
        if scratch is None:  # kept: a new buffer's first use costs time on some devices
            scratch = self._scratch.setdefault(
                key,
                (
                    allocate(self.context, rows * nb * 32, "the quantized activations"),
                    allocate(self.context, rows * nb * 2, "the activation scales"),
                    allocate(self.context, rows * nb * 4, "the activation sums"),
                ),
            )
        xq, xd, xs = scratch
        args = (x.buffer, np.int32(self.in_features), np.int32(nb), xq, xd, xs)
        events.append(quantizer(queue, (nb, rows), *args, local_size=None))
        return [xq, xd, xs]

    def _local(self, kernel: Any, global_size: tuple[int, int], local_size: Any) -> Any:
        """The local size of a launch: the GEMM's own; for the GEMV the tuned one (a cached
        entry only where the kernel can take it), else the default, or as given."""
        if isinstance(kernel, Gemm):
            return kernel.sizes(1, 1)[1]
        if local_size == "tuned":
            found = kernel.launcher.local_size(global_size)
            if found is not None and _gemv_fits(found, kernel.items):
                return found
            return gemv_local(self.nb, global_size[1], kernel.items, kernel.split)
        if local_size is not None and not _gemv_fits(tuple(local_size), kernel.items):
            raise ConfigError(
                f"local_size {local_size!r}: the GEMV takes 2 sizes, the first a power of "
                f"two, at most {kernel.items} work-items"
            )
        return None if local_size is None else tuple(local_size)

    def tune(self, queue: Any, x: Any, **options: Any) -> TuningResult:
        """Tune the local size of the kernel that runs for ``x`` (a numpy array or a
        :class:`BufferMatrix`; see :func:`qcom_ext.tune` for ``options``); later calls
        with the same shapes use the result. The GEMM's local size is its tile's."""
        if not isinstance(x, BufferMatrix):
            array = self._host_input(x).reshape(-1, self.in_features)
            x = BufferMatrix.from_numpy(queue.context, array)
        x, out = self._prepared(queue, x, None)
        kernel, global_size, args = self._launches(queue, x, out, [])[0]
        candidates = None
        if isinstance(kernel, Gemv):
            candidates = gemv_candidates(self.nb, global_size[1], kernel.items, kernel.split)
        return tune_report(
            kernel.launcher.kernel,
            global_size,
            args,
            candidates=candidates,
            queue=queue,
            pad_global=True,
            identity=kernel.launcher.identity,
            **options,
        )


def _gemv_fits(local: tuple[int, ...], items: int) -> bool:
    """Whether the GEMV takes ``local``: (L0, L1), L0 a power of two of at most ``items``
    (its reduction runs in passes of ``items`` work-items)."""
    if len(local) != 2 or not all(isinstance(v, (int, np.integer)) and v >= 1 for v in local):
        return False
    l0, l1 = int(local[0]), int(local[1])
    return l0 & (l0 - 1) == 0 and l0 <= items and l1 >= 1


def matmul(
    queue: Any,
    x: Any,
    weight: Any,
    bias: Any = None,
    *,
    weight_format: str | None = None,
    activation_format: str | None = None,
    path: str | None = None,
    shape: tuple[int, int] | None = None,
    dtype: Any = None,
) -> Any:
    """``x @ W.T + bias`` in one call (a :class:`Linear` built and run once). ``x``: a numpy
    array (numpy back), a :class:`BufferMatrix` or a pyopencl Buffer with ``shape`` (M, K)
    and ``dtype`` (a BufferMatrix back)."""
    import pyopencl as cl

    if isinstance(x, cl.Buffer):
        if shape is None:
            raise ConfigError("a pyopencl Buffer needs shape= (M, K)")
        x = BufferMatrix.wrap(x, shape, dtype if dtype is not None else np.float32)
    layer = Linear(
        queue,
        weight,
        bias,
        weight_format=weight_format,
        activation_format=activation_format,
        path=path,
    )
    return layer(queue, x)
