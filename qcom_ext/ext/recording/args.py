"""What a recording holds: kernel arguments, dispatches and checked replay updates.

Shared by the three backends of :class:`qcom_ext.Recording`. Everything here is pure
Python over pyopencl objects; nothing is enqueued, so every check can run before a
replay touches a queue.

>>> import numpy as np
>>> arg = KernelArg.of(np.float32(0.5))
>>> arg.kind, arg.size, arg.raw
('bytes', 4, b'\\x00\\x00\\x00?')
>>> arg.replaced_by(2).raw == np.float32(2).tobytes()   # plain numbers take the dtype
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from qcom_ext.binding.lib import ffi
from qcom_ext.errors import ConfigError
from qcom_ext.ext.memory.memobj import hold

__all__ = ["Dispatch", "KernelArg", "Updates", "check_sizes", "normalize_updates"]

_MEM_SIZE = ffi.sizeof("cl_mem")
# pyopencl's own generated invokers set by-value arguments with Kernel._set_arg_buf
# (0.09 µs); the public set_arg costs about 5.8 µs for bytes or a numpy scalar (pocl 3.1).
_SET_ARG_BUF = getattr(cl.Kernel, "_set_arg_buf", None)


@dataclass(eq=False, slots=True)  # not frozen: a frozen __init__ costs 1 µs per update
class KernelArg:
    """One kernel argument as ``clSetKernelArg`` sees it.

    ``kind`` is ``mem`` (a memory object), ``null`` (``None``: a NULL ``cl_mem``),
    ``local`` (``cl.LocalMemory``), ``svm`` (a ``cl.SVMPointer``), ``sampler`` or
    ``bytes`` (a numpy scalar or any bytes-like value). ``value`` is what pyopencl's
    ``Kernel.set_arg`` takes; ``raw`` the bytes of a ``bytes`` argument; ``handle`` the
    ``cl_mem``/``cl_sampler``/SVM address; ``size`` the ``arg_size``.
    """

    kind: str
    value: Any
    size: int
    raw: bytes | None = None
    dtype: np.dtype | None = None
    handle: int = 0
    mem_type: int = 0  # cl_mem_object_type of a ``mem`` argument (buffer, image kind)

    @classmethod
    def of(cls, value: Any, where: str = "argument", context: Any = None) -> KernelArg:
        """Snapshot ``value`` the way pyopencl's ``set_arg`` would pass it.

        With ``context``, a memory object or sampler of another context is refused.
        """
        if isinstance(value, np.generic):  # first: the usual per-replay update
            raw = value.tobytes()
            return cls("bytes", raw, len(raw), raw=raw, dtype=value.dtype)
        if value is None:
            return cls("null", None, _MEM_SIZE)
        if isinstance(value, cl.MemoryObjectHolder):
            _same_context(value, context, where)
            return cls("mem", value, _MEM_SIZE, handle=value.int_ptr, mem_type=value.type)
        if isinstance(value, cl.LocalMemory):
            if value.size <= 0:
                raise ConfigError(f"{where} is cl.LocalMemory({value.size}); it needs >= 1 byte")
            return cls("local", value, value.size)
        if isinstance(value, cl.SVMPointer):
            return cls("svm", value, 0, handle=value.svm_ptr)
        if isinstance(value, cl.Sampler):
            _same_context(value, context, where)
            return cls("sampler", value, ffi.sizeof("cl_sampler"), handle=value.int_ptr)
        if isinstance(value, np.ndarray) and value.ndim == 0:
            scalar = np.asarray(value)
            raw = scalar.tobytes()
            return cls("bytes", raw, len(raw), raw=raw, dtype=scalar.dtype)
        if isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
            return cls("bytes", raw, len(raw), raw=raw)
        if isinstance(value, (bool, int, float, complex)):
            raise ConfigError(
                f"{where} is a Python {type(value).__name__} ({value!r}); pass a numpy scalar "
                "such as np.int32(...) or np.float32(...): the kernel's C type sets its size"
            )
        if hasattr(value, "base_data"):
            raise ConfigError(f"{where} is a pyopencl array; pass its buffer (array.data)")
        raise ConfigError(
            f"{where} has type {type(value).__name__}; expected a numpy scalar, bytes, a "
            "pyopencl memory object, SVM pointer or sampler, cl.LocalMemory, or None"
        )

    @property
    def key(self) -> tuple[Any, ...]:
        """What decides whether two arguments set the same bits."""
        return (self.kind, self.size, self.raw, self.handle)

    def same_as(self, other: KernelArg) -> bool:
        return self.key == other.key

    def set_on(self, kernel: cl.Kernel, index: int) -> None:
        """Set this argument on a pyopencl kernel, by the cheapest call pyopencl has."""
        if self.raw is not None and _SET_ARG_BUF is not None:
            _SET_ARG_BUF(kernel, index, self.raw)
        else:
            kernel.set_arg(index, self.value)

    def retained(self) -> KernelArg:
        """This argument holding an OpenCL reference of its own to its memory object or
        sampler: a caller's ``release()`` cannot free what a recording replays."""
        if self.kind == "mem":
            own = hold(self.value)
        elif self.kind == "sampler":
            own = cl.Sampler.from_int_ptr(self.handle, retain=True)
        else:
            return self
        return KernelArg(
            self.kind, own, self.size, self.raw, self.dtype, self.handle, self.mem_type
        )

    def release(self) -> None:
        """Give back the reference :meth:`retained` took (a no-op for other arguments)."""
        if self.kind == "mem":  # a pyopencl Sampler has no release(): its collection does it
            self.value.release()

    def replaced_by(self, value: Any, where: str = "argument", context: Any = None) -> KernelArg:
        """The argument ``value`` as an update of this one; ConfigError if it cannot be.

        A plain Python number is converted to the recorded numpy dtype (exactly: no
        silent rounding of a float into an integer, no overflow). A memory object must
        be of the recorded type (a buffer for a buffer, the same image type for an
        image) and of ``context``.
        """
        if self.dtype is not None and isinstance(value, (bool, int, float)):
            value = _to_dtype(value, self.dtype, where)
        new = KernelArg.of(value, where, context)
        mems = ("mem", "null")
        if not (new.kind == self.kind or (new.kind in mems and self.kind in mems)):
            raise ConfigError(f"{where} was recorded as {self.describe()}; got {new.describe()}")
        if new.kind in mems and _image_type(new) != _image_type(self):
            raise ConfigError(f"{where} was recorded as {self.describe()}; got {new.describe()}")
        if new.kind == "bytes":
            if new.size != self.size:
                raise ConfigError(
                    f"{where} was recorded with {self.size} bytes ({self.describe()}); "
                    f"got {new.size} bytes ({new.describe()})"
                )
            if self.dtype is not None and new.dtype is not None and new.dtype != self.dtype:
                raise ConfigError(f"{where} was recorded as {self.dtype}; got {new.dtype}")
        return new

    def describe(self) -> str:
        if self.kind == "bytes":
            return f"a {self.dtype} scalar" if self.dtype is not None else f"{self.size} bytes"
        if _image_type(self):
            return f"an image memory object (cl_mem_object_type {self.mem_type:#x})"
        return {
            "mem": "a memory object",
            "null": "None (a NULL cl_mem)",
            "local": f"cl.LocalMemory({self.size})",
            "svm": "an SVM pointer",
            "sampler": "a sampler",
        }[self.kind]


_BUFFER = int(cl.mem_object_type.BUFFER)


def _image_type(arg: KernelArg) -> int:
    """The image type of a ``mem`` argument; 0 for a buffer or NULL."""
    return arg.mem_type if arg.kind == "mem" and arg.mem_type != _BUFFER else 0


def _same_context(value: Any, context: Any, where: str) -> None:
    if context is not None and value.context.int_ptr != context.int_ptr:
        raise ConfigError(
            f"{where} ({type(value).__name__}) belongs to another context than the recording's"
        )


def _to_dtype(value: bool | int | float, dtype: np.dtype, where: str) -> np.generic:
    kind = dtype.kind
    if kind == "b" or isinstance(value, bool):
        if kind != "b" or not isinstance(value, bool):
            raise ConfigError(f"{where} is {dtype}; got {value!r}")
        return np.bool_(value)
    if kind in "iu":
        if not isinstance(value, int):
            raise ConfigError(f"{where} is {dtype}; got the float {value!r}")
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise ConfigError(f"{where} is {dtype}; {value} is out of range")
        return dtype.type(value)
    if kind in "fc":
        try:
            with np.errstate(over="raise"):
                converted = dtype.type(value)
        except (OverflowError, FloatingPointError):
            converted = None  # an int too large for any float, or a float beyond the dtype
        if converted is None or (math.isfinite(value) and not np.all(np.isfinite(converted))):
            raise ConfigError(f"{where} is {dtype}; {value!r} is out of its range")
        return converted
    raise ConfigError(f"{where} is {dtype}; pass a value of that dtype, not {value!r}")


#: The largest work size or offset OpenCL takes: a size_t.
SIZE_MAX = (1 << (8 * ffi.sizeof("size_t"))) - 1


def _dims(value: Any, what: str, minimum: int) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)):
        items: tuple[Any, ...] = (value,)
    elif isinstance(value, (tuple, list)):
        items = tuple(value)
    else:
        raise ConfigError(f"{what} must be an int or a sequence of 1 to 3 ints, got {value!r}")
    if not 1 <= len(items) <= 3:
        raise ConfigError(f"{what} must have 1 to 3 dimensions, got {value!r}")
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)) or item < minimum:
            raise ConfigError(f"{what} must be integers >= {minimum}, got {value!r}")
        if item > SIZE_MAX:
            raise ConfigError(f"{what}: {item} does not fit in a size_t (at most {SIZE_MAX})")
        out.append(int(item))
    return tuple(out)


def check_sizes(
    where: str,
    global_size: tuple[int, ...],
    local_size: tuple[int, ...] | None,
    global_offset: tuple[int, ...] | None,
    max_work_group: int | None,
) -> None:
    """Dimensions agree, global is a multiple of local, local fits the kernel."""
    dims = len(global_size)
    for name, value in (("local_size", local_size), ("global_offset", global_offset)):
        if value is not None and len(value) != dims:
            raise ConfigError(
                f"{where}: {name} {value} has {len(value)} dimensions, global_size "
                f"{global_size} has {dims}"
            )
    if global_offset is not None:
        for g, o in zip(global_size, global_offset, strict=True):
            if g + o > SIZE_MAX:
                raise ConfigError(
                    f"{where}: global_offset {global_offset} plus global_size {global_size} "
                    f"exceeds a size_t ({SIZE_MAX}: CL_INVALID_GLOBAL_OFFSET)"
                )
    if local_size is not None:
        if any(g % loc for g, loc in zip(global_size, local_size, strict=True)):
            raise ConfigError(
                f"{where}: global_size {global_size} is not a multiple of local_size "
                f"{local_size} (recordings use uniform work-groups on every path)"
            )
        if max_work_group is not None and math.prod(local_size) > max_work_group:
            raise ConfigError(
                f"{where}: local_size {local_size} has {math.prod(local_size)} work-items; "
                f"the kernel allows {max_work_group} (CL_KERNEL_WORK_GROUP_SIZE)"
            )


@dataclass
class Dispatch:
    """One recorded NDRange: the user's kernel, argument snapshot and sizes.

    ``args`` hold OpenCL references of their own to memory objects and samplers
    (:meth:`release` gives them back); ``local_budget`` is the local memory the
    ``__local`` pointer arguments may take together (the device's, less the kernel's own).
    """

    index: int
    kernel: cl.Kernel
    args: tuple[KernelArg, ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    global_offset: tuple[int, ...] | None
    max_work_group: int | None = None
    context: Any = None
    local_budget: int | None = None

    @classmethod
    def record(
        cls,
        index: int,
        kernel: Any,
        global_size: Any,
        local_size: Any,
        args: tuple[Any, ...],
        global_offset: Any,
        device: Any,
        context: Any = None,
    ) -> Dispatch:
        if not isinstance(kernel, cl.Kernel):
            raise ConfigError(f"dispatch {index}: expected a pyopencl.Kernel, got {kernel!r}")
        name = f"dispatch {index} ({kernel.function_name})"
        if context is not None and kernel.context.int_ptr != context.int_ptr:
            raise ConfigError(
                f"{name}: the kernel belongs to another context than the recording's"
            )
        if len(args) != kernel.num_args:
            raise ConfigError(
                f"{name}: the kernel takes {kernel.num_args} arguments, got {len(args)}"
            )
        snap = tuple(KernelArg.of(v, f"{name} argument {i}", context) for i, v in enumerate(args))
        gws = _dims(global_size, f"{name}: global_size", 1)
        lws = None if local_size is None else _dims(local_size, f"{name}: local_size", 1)
        off = None if global_offset is None else _dims(global_offset, f"{name}: offset", 0)
        info = cl.kernel_work_group_info
        max_wg = kernel.get_work_group_info(info.WORK_GROUP_SIZE, device)
        check_sizes(name, gws, lws, off, max_wg)
        own = cl.Kernel(kernel.program, kernel.function_name)  # no __local argument set
        budget = device.local_mem_size - own.get_work_group_info(info.LOCAL_MEM_SIZE, device)
        check_local_memory(name, snap, budget)
        retained = tuple(arg.retained() for arg in snap)
        return cls(index, kernel, retained, gws, lws, off, max_wg, context, budget)

    def release(self) -> None:
        """Give back the references the recorded arguments hold (idempotent)."""
        args, self.args = self.args, ()
        for arg in args:
            arg.release()

    def private_kernel(self, set_args: bool = True) -> cl.Kernel:
        """A new kernel object of the same function, with the recorded arguments set.

        Recordings never set arguments on the caller's kernel: each dispatch owns one,
        so a kernel used by several dispatches (or by the caller) cannot interfere.
        """
        kernel = cl.Kernel(self.kernel.program, self.kernel.function_name)
        if set_args:
            for i, arg in enumerate(self.args):
                arg.set_on(kernel, i)
        return kernel


def check_local_memory(where: str, args: Any, budget: int | None) -> None:
    """The ``__local`` pointer arguments together fit ``budget`` bytes
    (``CL_DEVICE_LOCAL_MEM_SIZE`` less the kernel's own ``CL_KERNEL_LOCAL_MEM_SIZE``)."""
    total = sum(arg.size for arg in args if arg.kind == "local")
    if budget is not None and total > budget:
        raise ConfigError(
            f"{where}: the cl.LocalMemory arguments take {total} bytes; the device and "
            f"kernel leave {budget} (CL_DEVICE_LOCAL_MEM_SIZE less CL_KERNEL_LOCAL_MEM_SIZE)"
        )


@dataclass
class Updates:
    """Checked per-replay changes, keyed by dispatch index."""

    args: dict[tuple[int, int], KernelArg] = field(default_factory=dict)
    global_size: dict[int, tuple[int, ...]] = field(default_factory=dict)
    local_size: dict[int, tuple[int, ...]] = field(default_factory=dict)
    global_offset: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.args or self.global_size or self.local_size or self.global_offset)

    @property
    def sizes(self) -> bool:
        return bool(self.global_size or self.local_size or self.global_offset)


NO_UPDATES = Updates()


def _index(key: Any, count: int, what: str) -> int:
    if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
        raise ConfigError(f"{what}: dispatch index {key!r} is not an integer")
    if not 0 <= key < count:
        raise ConfigError(
            f"{what}: unknown dispatch index {key}; the recording has {count} dispatches "
            f"(0 to {count - 1})"
        )
    return int(key)


def normalize_updates(
    dispatches: list[Dispatch],
    args: Any,
    global_size: Any,
    local_size: Any,
    global_offset: Any,
) -> Updates:
    """Check every update against the recording; raise ConfigError on the first bad one."""
    if not (args or global_size or local_size or global_offset):
        return NO_UPDATES
    tables = {
        "args": args,
        "global_size": global_size,
        "local_size": local_size,
        "global_offset": global_offset,
    }
    for name, table in tables.items():
        if table and not isinstance(table, Mapping):
            keys = "(dispatch_index, arg_index)" if name == "args" else "dispatch_index"
            raise ConfigError(f"{name} must be a mapping {{{keys}: value}}, got {table!r}")
    out = Updates()
    _arg_updates(dispatches, dict(args or {}), out)
    for name, minimum in (("global_size", 1), ("local_size", 1), ("global_offset", 0)):
        _size_updates(dispatches, name, dict(tables[name] or {}), minimum, getattr(out, name))
    for d in {*out.global_size, *out.local_size, *out.global_offset}:
        _check_dispatch(dispatches[d], d, out)
    return out


def _arg_updates(dispatches: list[Dispatch], args: dict[Any, Any], out: Updates) -> None:
    for key, value in args.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ConfigError(f"args keys are (dispatch_index, arg_index) pairs, got {key!r}")
        d = _index(key[0], len(dispatches), "args")
        dispatch = dispatches[d]
        a = key[1]
        n = len(dispatch.args)
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= a < n:
            raise ConfigError(
                f"args: argument index {a!r} of dispatch {d} ({dispatch.kernel.function_name}) "
                f"is out of range; the kernel takes {n} arguments"
            )
        where = f"dispatch {d} argument {a}"
        out.args[(d, int(a))] = dispatch.args[a].replaced_by(value, where, dispatch.context)
    for d in {d for (d, _), arg in out.args.items() if arg.kind == "local"}:
        merged = [out.args.get((d, i), old) for i, old in enumerate(dispatches[d].args)]
        check_local_memory(f"args: dispatch {d}", merged, dispatches[d].local_budget)


def _size_updates(
    dispatches: list[Dispatch],
    name: str,
    table: dict[Any, Any],
    minimum: int,
    target: dict[int, tuple[int, ...]],
) -> None:
    for key, value in table.items():
        d = _index(key, len(dispatches), name)
        target[d] = _dims(value, f"{name}[{d}]", minimum)
        if name == "local_size" and dispatches[d].local_size is None:
            raise ConfigError(
                f"local_size[{d}]: dispatch {d} was recorded with local_size=None; "
                "record an explicit local size to update it"
            )


def _check_dispatch(dispatch: Dispatch, d: int, out: Updates) -> None:
    """The sizes of dispatch ``d`` after ``out``'s updates are ones it can run with."""
    check_sizes(
        f"dispatch {d} ({dispatch.kernel.function_name})",
        out.global_size.get(d, dispatch.global_size),
        out.local_size.get(d, dispatch.local_size),
        out.global_offset.get(d, dispatch.global_offset),
        dispatch.max_work_group,
    )
    if len(out.global_size.get(d, dispatch.global_size)) != len(dispatch.global_size):
        raise ConfigError(
            f"global_size[{d}]: dispatch {d} was recorded with "
            f"{len(dispatch.global_size)} dimensions"
        )
