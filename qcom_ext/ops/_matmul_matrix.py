"""The matrices of matmul on the device: :class:`BufferMatrix` (a row-major float32 or
float16 matrix in a pyopencl Buffer, its shape checked against the buffer however it is
made), the check of a matrix shape, and where a buffer's bytes lie (:func:`memory_span`,
what the aliasing checks of ``Linear`` compare)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qcom_ext.errors import ConfigError
from qcom_ext.ext.memory.memobj import hold
from qcom_ext.ext.program.launch import copy
from qcom_ext.ops._tensor import MAX_ELEMENTS, allocate, held_dtype, upload

__all__ = ["BufferMatrix", "memory_span", "overlap", "shape2"]


@dataclass(frozen=True)
class BufferMatrix:
    """A row-major ``(rows, cols)`` float32 or float16 matrix in a pyopencl Buffer, checked
    when made, however it is made: ``shape`` 2 positive ints, ``dtype`` float32 or
    float16 and the buffer at least ``nbytes`` long (a ConfigError otherwise). It holds a
    reference of its own to the buffer (:func:`~qcom_ext.ext.memory.memobj.hold`): a
    caller's ``buffer.release()`` cannot free it under the matrix."""

    buffer: Any
    shape: tuple[int, int]
    dtype: np.dtype
    _held: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        import pyopencl as cl

        if not isinstance(self.buffer, cl.Buffer):
            raise ConfigError(
                f"a BufferMatrix holds a pyopencl Buffer, not {type(self.buffer).__name__}"
            )
        object.__setattr__(self, "shape", shape2(self.shape, "matrix shape"))
        object.__setattr__(self, "dtype", held_dtype(self.dtype, "matrix"))
        if self.buffer.size < self.nbytes:
            raise ConfigError(
                f"a {self.shape} {self.dtype.name} matrix needs {self.nbytes} bytes; "
                f"the buffer has {self.buffer.size}"
            )
        object.__setattr__(self, "_held", hold(self.buffer))

    @functools.cached_property
    def span(self) -> tuple[int, int, int]:
        """(the memory object its buffer is in, first byte, end): a sub-buffer's parent
        and offset, so that overlapping matrices can be told."""
        return memory_span(self.buffer)

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    @classmethod
    def empty(cls, context: Any, shape: tuple[int, int], dtype: Any = np.float32) -> BufferMatrix:
        """A new matrix of ``shape``; contents undefined."""
        shape, dtype = shape2(shape, "matrix shape"), held_dtype(dtype, "matrix")
        buffer = allocate(context, shape[0] * shape[1] * dtype.itemsize, f"a {shape} matrix")
        return cls(buffer, shape, dtype)

    @classmethod
    def wrap(cls, buffer: Any, shape: tuple[int, int], dtype: Any) -> BufferMatrix:
        """An existing buffer holding a ``shape`` matrix of ``dtype`` (float32/float16)."""
        return cls(buffer, shape, dtype)

    @classmethod
    def from_numpy(cls, context: Any, array: np.ndarray) -> BufferMatrix:
        """A matrix in a new read-only buffer holding a copy of the 2-D ``array``."""
        shape = shape2(array.shape, "matrix shape")
        dtype = held_dtype(array.dtype, "matrix")
        what = f"a {shape} {dtype.name} matrix"
        return cls(upload(context, np.ascontiguousarray(array), what), shape, dtype)

    def to_numpy(self, queue: Any) -> np.ndarray:
        """The matrix read back to the host (blocking)."""

        if self.buffer.context != queue.context:
            raise ConfigError("the matrix belongs to another context than the queue")
        out = np.empty(self.shape, self.dtype)
        copy(queue, out, self.buffer)
        return out


def memory_span(buffer: Any) -> tuple[int, int, int]:
    """(the memory object ``buffer`` is in, its first byte there, its end): a sub-buffer
    is placed in its parent."""
    import pyopencl as cl

    parent = buffer.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT)
    if parent is None:
        return buffer.int_ptr, 0, buffer.size
    offset = int(buffer.get_info(cl.mem_info.OFFSET))
    return parent.int_ptr, offset, offset + buffer.size


def overlap(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def shape2(shape: Any, what: str) -> tuple[int, int]:
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
