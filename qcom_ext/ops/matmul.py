"""``y = x @ W.T + bias`` with W in float32, float16, q8_0 or q4_0 (the fallback of
cl_qcom_ml_ops' fully-connected and GEMM operators; docs/ops.md, "Matmul").

:class:`Linear` uploads W once (struct of arrays, see :mod:`qcom_ext.ops._matmul_layout`),
reads it through image1d_buffer views or buffers (``path``, chosen by the probe) and runs
the GEMV kernels for up to 8 rows of x (a decode step) or the tiled GEMM above (a
prefill). x is float32 or float16 (numpy in, numpy out; :class:`BufferMatrix` in,
BufferMatrix out); y is float32. ``activation_format="q8_0"`` quantizes x per block of 32
on the device and takes integer dot products (qcom_dot8_acc) against q8_0 or q4_0 W (up to
8 rows in one launch); ``"auto"`` runs whichever of the two :meth:`Linear.tune` measured
faster (:mod:`qcom_ext.ops._matmul_activations`).

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

import threading
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ops import _matmul_programs as programs
from qcom_ext.ops._casting import cast_array, compute_dtype, float_array
from qcom_ext.ops._matmul_activations import (
    ACTIVATION_FORMATS,
    FLOAT,
    INTEGER,
    AutoChoice,
    check_format,
    gemv_kind,
)
from qcom_ext.ops._matmul_layout import PATHS, DeviceWeights, choose_path, pack
from qcom_ext.ops._matmul_matrix import BufferMatrix, memory_span, overlap, shape2
from qcom_ext.ops._matmul_programs import (
    GEMV_MAX_ROWS,
    Gemm,
    Gemv,
    gemv_candidates,
    gemv_local,
)
from qcom_ext.ops._tensor import allocate, upload
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
    shape2(array.shape, "weight shape")
    if fmt in QUANT_FORMATS:
        return quantize(cast_array(array, "weight", np.float32), fmt)
    target = np.float16 if fmt == "f16" else np.float32
    return np.ascontiguousarray(cast_array(array, "weight", target))


#: The largest magnitude in a block whose scale float16 holds (ggml's d = amax / 127 for
#: q8_0, m / -8 for q4_0; 65520 and above round to inf).
SCALE_LIMITS = {"q8_0": 65520.0 * 127, "q4_0": 65520.0 * 8}


def _finite_scales(weights: QuantizedWeights) -> None:
    """A ConfigError naming the first row and block whose float16 scale is not finite:
    every output would be inf or NaN (as the f16 format refuses weights beyond half)."""
    bad = ~np.isfinite(weights.scales)
    if bad.any():
        row, block = (int(v) for v in np.argwhere(bad)[0])
        limit = SCALE_LIMITS[weights.format]
        raise ConfigError(
            f"weight row {row}, block {block} (columns {32 * block}..{32 * block + 31}): "
            f"its {weights.format} scale is {float(weights.scales[row, block])}, beyond "
            f"float16 (a block's largest |w| must stay under {limit:.4g}); y would be "
            f"inf or NaN; blocks so: {int(bad.sum())}. Scale W down or use f32"
        )


class Linear:
    """``y = x @ W.T + bias`` with W ``(N, K)`` on the device (see the module).

    ``weight``: a float32/float16 array or :class:`~qcom_ext.ops.QuantizedWeights`;
    ``weight_format``: "f32", "f16", "q8_0" or "q4_0" (a float array is cast or quantized
    on upload; default: the array's or the QuantizedWeights' own); ``bias``: ``(N,)`` or
    None; ``activation_format``: None, "q8_0" (q8_0 and q4_0 W only) or "auto" (the
    measured faster of the two, float untuned: see :meth:`tune`); ``path``: None
    (the probe's choice), "image" or "buffer"; ``gemm_tile``: a key of
    :data:`~qcom_ext.ops._matmul_programs.GEMM_TILES` (default: chosen per device).

    Threads may share a layer and a queue (one call's kernels are enqueued at a time);
    in-order and out-of-order queues both work (:mod:`qcom_ext.ext.program.launch`).
    q8_0 / q4_0 weights with a scale beyond float16 are refused (a ConfigError naming the
    row and block), and ``activation_format="q8_0"`` keeps NaN and inf: a block of x
    holding one makes its row's outputs NaN.

    ``fused_rows``: the most rows of x that q8_0 activations take through the one-launch
    integer GEMV (:data:`GEMV_MAX_ROWS`); above it the quantizer and the integer GEMV
    are two launches (0: always two, to compare them).
    """

    fused_rows: int = GEMV_MAX_ROWS

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
        self.activation_format = check_format(activation_format, self.weight_format)
        self.quantized = stored if isinstance(stored, QuantizedWeights) else None
        if self.quantized is not None:
            _finite_scales(self.quantized)
        self.bias_values = bias_vector(bias, self.shape[0])
        self.context, self.device = queue.context, queue.device
        packed = pack(stored, self.weight_format)
        self.nb = packed.nb
        self._sizes = (np.int32(self.shape[1]), np.int32(self.shape[0]), np.int32(self.nb))
        self.path, self.path_reason = choose_path(self.context, self.device, packed, path)
        self.weights = DeviceWeights(self.context, packed, self.path)
        self._auto = None
        if activation_format == "auto":
            self._auto = AutoChoice(self.device, self.weight_format, self.path, self.shape)
        self.weight_bytes = packed.nbytes
        self.bias = upload(self.context, self.bias_values, "the bias")
        owned = (self.weights.words, self.weights.scales, self.bias)
        self._owned = tuple(memory_span(b) for b in owned)  # what out= must not overlap
        # One call at a time enqueues its launches: the scratch buffers of the q8_0
        # activations' quantizer launch are the layer's (per queue), so another thread's
        # quantizer must not come between a call's quantizer and its GEMV.
        self._lock = threading.Lock()
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
        gemv = rows <= GEMV_MAX_ROWS or self.activation_format == "q8_0"
        return "gemv" if gemv else "gemm"

    def activations_for(self, rows: int, x_dtype: Any = np.float32) -> str | None:
        """How a call with ``rows`` rows of ``x_dtype`` takes x: "q8_0" (quantized, integer
        dot products) or None (float); "auto" answers with its remembered choice."""
        return "q8_0" if self._integer(rows, np.dtype(x_dtype) == np.float16) else None

    def _integer(self, rows: int, x_half: bool) -> bool:
        if self._auto is not None:
            return self._auto.integer(rows, x_half)
        return self.activation_format == "q8_0"

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
        shape2(want, "y")
        given = out is not None
        if out is None:
            out = BufferMatrix.empty(self.context, want, np.float32)
        if not isinstance(out, BufferMatrix) or out.shape != want or out.dtype != np.float32:
            raise ConfigError(f"out must be a float32 BufferMatrix of shape {want}")
        for name, matrix in (("x", x), ("out", out)):
            if matrix.buffer.context != self.context:
                raise ConfigError(f"{name} belongs to another context than {where}")
        if given:
            self._check_alias(x, out)
        return x, out

    def _check_alias(self, x: BufferMatrix, out: BufferMatrix) -> None:
        """A ConfigError where ``out`` overlaps x or the layer's weights or bias: the
        kernels read them while they write y."""
        if out is x or out.buffer == x.buffer or overlap(out.span, x.span):
            raise ConfigError(
                "out overlaps x (the same matrix, buffer or bytes of one): the kernels read "
                "x while they write y; give out a buffer of its own"
            )
        if any(overlap(out.span, owned) for owned in self._owned):
            raise ConfigError(
                "out overlaps the buffers of this Linear's weights or bias; give out a "
                "buffer of its own"
            )

    def _kernel(self, queue: Any, key: tuple[Any, ...]) -> Any:
        """The built Gemv / Gemm of ``key`` (("gemv", rows, x half, kind) or ("gemm",
        tile, x half)), built once per layer."""
        found = self._kernels.get(key)
        if found is None:
            common = (self.weight_format, self.path, key[2], self.in_features)
            if key[0] == "gemv":
                found = Gemv.build(queue, *common, key[1], key[3])
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
        events: list[Any] = []
        with self._lock:
            for kernel, global_size, args in self._launches(queue, x, out, events):
                local = self._local(kernel, global_size, local_size)
                events.append(kernel.launcher(queue, global_size, *args, local_size=local))
        return events

    def _launches(
        self,
        queue: Any,
        x: BufferMatrix,
        out: BufferMatrix,
        events: list[Any],
        kind: str | None = None,
    ) -> list[tuple]:
        """(kernel, global size, arguments) of each launch for ``x`` -> ``out`` (the GEMV
        of ``kind``, one of GEMV_KINDS, where given); the activation quantizer, where
        there is one, is enqueued now (its event joins ``events``)."""
        rows, half = x.shape[0], x.dtype == np.float16
        k, n, nb = self._sizes  # int32 scalars, made once: each costs a µs a call
        tail = [self.bias, out.buffer, n]
        if kind is None and self.family(rows) == "gemm":
            tile = programs.gemm_tile(self.device, rows, self._tile)
            gemm = self._kernel(queue, ("gemm", tile, half))
            global_size, _ = gemm.sizes(rows, self.out_features)
            args = [x.buffer, k, k, nb, np.int32(rows), n, *tail]
            return [(gemm, global_size, [*self.weights.args(), *args])]
        if kind is None:
            kind = gemv_kind(self._integer(rows, half), rows, self.fused_rows)
        inputs = [x.buffer]
        if kind == "launches":
            inputs = self._quantized_input(queue, x, events)
        launches = []
        for row0 in range(0, rows, GEMV_MAX_ROWS):
            slab = min(GEMV_MAX_ROWS, rows - row0)
            gemv = self._kernel(queue, ("gemv", slab, half, kind))
            global_size = (1, -(-self.out_features // gemv.rpw))
            args = [*inputs, k, k, nb, n, *tail, np.int32(row0)]
            launches.append((gemv, global_size, [*self.weights.args(), *args]))
        return launches

    def _quantized_input(self, queue: Any, x: BufferMatrix, events: list[Any]) -> list[Any]:
        """x quantized to q8_0 on the device (enqueued): [words, scales, sums]."""
        rows, nb = x.shape[0], self.nb
        first = ("gemv", min(GEMV_MAX_ROWS, rows), x.dtype == np.float16, "launches")
        quantizer = self._kernel(queue, first).quantizer  # the GEMV of the first launch's
        key = (rows, queue.int_ptr)  # per queue: its calls run in order (chained if OOO)
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
            sizes = (self.nb, global_size[1], kernel.items, kernel.split)
            return gemv_local(*sizes, *kernel.default_local)
        if local_size is not None and not _gemv_fits(tuple(local_size), kernel.items):
            raise ConfigError(
                f"local_size {local_size!r}: the GEMV takes 2 sizes, the first a power of "
                f"two, at most {kernel.items} work-items"
            )
        return None if local_size is None else tuple(local_size)

    def tune(self, queue: Any, x: Any, **options: Any) -> TuningResult:
        """Tune the local size of the kernel that runs for ``x`` (a numpy array or a
        :class:`BufferMatrix`; see :func:`qcom_ext.tune` for ``options``); later calls
        with the same shapes use the result. The GEMM's local size is its tile's.
        ``candidates`` replace the GEMV's own (each ``(L0, L1)`` it takes, else a
        ConfigError). With ``activation_format="auto"`` (quantized W, up to 8 rows) the
        float and the one-launch integer GEMV are both tuned (``budget_s`` each) and the
        faster is remembered: later calls of this row count run it."""
        if not isinstance(x, BufferMatrix):
            array = self._host_input(x).reshape(-1, self.in_features)
            x = BufferMatrix.from_numpy(queue.context, array)
        x, out = self._prepared(queue, x, None)
        given = options.pop("candidates", None)
        rows, half = x.shape[0], x.dtype == np.float16
        if self._auto is not None and self._auto.tunable(rows):
            kinds = {FLOAT: "float", INTEGER: "fused"}
            plans = {c: self._launches(queue, x, out, [], kind)[0] for c, kind in kinds.items()}
            candidates = {
                c: _candidates(self.nb, g, size, given) for c, (g, size, _) in plans.items()
            }
            budget = options.pop("budget_s", 5.0)
            key = self._auto.key(rows, half)
            return self._auto.tune(queue, plans, candidates, key, budget, options)
        kernel, global_size, args = self._launches(queue, x, out, [])[0]
        if isinstance(kernel, Gemv):
            given = _candidates(self.nb, kernel, global_size, given)
        return tune_report(
            kernel.launcher.kernel,
            global_size,
            args,
            candidates=given,
            queue=queue,
            pad_global=True,
            identity=kernel.launcher.identity,
            **options,
        )


def _candidates(nb: int, kernel: Gemv, global_size: Any, given: Any) -> list[Any]:
    """The GEMV local sizes to tune: ``given`` (checked: each ``(L0, L1)`` it takes, or
    None) or its own."""
    if given is None:
        return gemv_candidates(nb, global_size[1], kernel.items, kernel.split)
    given = list(given)
    bad = [c for c in given if c is not None and not _gemv_fits(_shape(c), kernel.items)]
    if bad:
        raise ConfigError(
            f"candidates {bad!r}: the GEMV takes local sizes (L0, L1) with L0 a power "
            f"of two of at most {kernel.items} and L1 >= 1 (or None, the driver's)"
        )
    return given


def _shape(local: Any) -> tuple[Any, ...]:
    """A candidate as a tuple (a non-sequence alone in one, which the GEMV refuses)."""
    try:
        return tuple(local)
    except TypeError:
        return (local,)


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
