"""What one built kernel needs on one device: :func:`kernel_info` and :class:`KernelInfo`.

Every field is a ``clGetKernelWorkGroupInfo`` answer, read through cffi (pyopencl cannot
ask for ``CL_KERNEL_WAVE_SIZE_QCOM``):

* ``wave_size``: on Adreno, ``CL_KERNEL_WAVE_SIZE_QCOM`` (0xAA02, a 64-bit answer; the
  token comes from MNN's ``OpenCLRuntime.hpp`` and MACE's ``opencl_extension.h``, no
  Qualcomm header names it); elsewhere, or where the driver refuses that query,
  ``CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE``. ``wave_size_from`` names the query
  that answered.
* ``max_work_group_size`` (``CL_KERNEL_WORK_GROUP_SIZE``), ``compile_work_group_size``
  (``CL_KERNEL_COMPILE_WORK_GROUP_SIZE``, ``(0, 0, 0)`` without ``reqd_work_group_size``),
  ``private_mem_size`` per work-item (``CL_KERNEL_PRIVATE_MEM_SIZE``) and
  ``local_mem_size`` (``CL_KERNEL_LOCAL_MEM_SIZE``), in bytes.
* ``spills``: :data:`SPILL_RULE`. A GPU keeps a work-item's private variables in
  registers; private memory the compiler reports is what did not fit (a register
  spill, or a private array it could not keep in registers), read and written through
  the memory hierarchy. llama.cpp's OpenCL backend logs the same query as a spill on
  Adreno (``../shared/reference/peers-adreno-techniques.md``). A CPU device's private
  memory is its ordinary stack: never a spill.

>>> import pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> src = "__kernel void k(__global float *a) { a[get_global_id(0)] += 1.0f; }"
>>> info = qcom_ext.kernel_info(cl.Kernel(qcom_ext.build_program(ctx, src), "k"),
...                             ctx.devices[0])
>>> info.kernel, info.wave_size >= 1, info.max_work_group_size >= 1
('k', True, True)
>>> info.spills == (info.device_type == "gpu" and info.private_mem_size > 0)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qcom_ext.binding.info import decode_uint
from qcom_ext.binding.lib import C, check, driver, ffi, handle_int
from qcom_ext.device.probe import probe
from qcom_ext.errors import CLError, DriverAnswerError

__all__ = ["SPILL_RULE", "WAVE_QUERIES", "KernelInfo", "kernel_info", "spills"]

#: The queries ``wave_size`` may come from, in the order they are tried on Adreno.
WAVE_QUERIES = ("CL_KERNEL_WAVE_SIZE_QCOM", "CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE")

#: When ``KernelInfo.spills`` is True.
SPILL_RULE = "a GPU device (CL_DEVICE_TYPE_GPU) and CL_KERNEL_PRIVATE_MEM_SIZE > 0"


@dataclass(frozen=True)
class KernelInfo:
    """The facts of one kernel on one device (module docstring)."""

    kernel: str  # its function name ("" for a raw handle)
    device: str  # the device's label, e.g. "adreno-740-gpu"
    device_type: str  # "gpu", "cpu", "accelerator", ...
    wave_size: int
    wave_size_from: str  # one of WAVE_QUERIES
    max_work_group_size: int
    compile_work_group_size: tuple[int, int, int]
    private_mem_size: int
    local_mem_size: int
    spills: bool

    def describe(self) -> str:
        """One line for warnings and tables.

        >>> KernelInfo("k", "adreno-740-gpu", "gpu", 64, WAVE_QUERIES[0], 1024, (0, 0, 0),
        ...            96, 0, True).describe()
        'kernel k on adreno-740-gpu spills: 96 bytes of private memory per work-item'
        """
        if self.spills:
            return (
                f"kernel {self.kernel} on {self.device} spills: {self.private_mem_size} bytes "
                "of private memory per work-item"
            )
        return f"kernel {self.kernel} on {self.device}: no spill"


def spills(device_type: str, private_mem_size: int) -> bool:
    """:data:`SPILL_RULE`.

    >>> spills("gpu", 16), spills("gpu", 0), spills("cpu", 4096)
    (True, False, False)
    """
    return device_type == "gpu" and private_mem_size > 0


def _query(kernel: Any, device: Any, param: int) -> bytes:
    """The raw answer of one ``clGetKernelWorkGroupInfo`` query (size first, then value)."""
    size = ffi.new("size_t *")
    check(driver.clGetKernelWorkGroupInfo(kernel, device, param, 0, ffi.NULL, size), _name(param))
    if size[0] == 0:
        return b""
    value = ffi.new("char[]", size[0])
    check(
        driver.clGetKernelWorkGroupInfo(kernel, device, param, size[0], value, ffi.NULL),
        _name(param),
    )
    return ffi.buffer(value, size[0])[:]


def _name(param: int) -> str:
    return f"clGetKernelWorkGroupInfo({param:#06x})"


def _uint(kernel: Any, device: Any, param: int) -> int:
    return decode_uint(_query(kernel, device, param), _name(param))


def _sizes(kernel: Any, device: Any, param: int) -> tuple[int, int, int]:
    raw = _query(kernel, device, param)
    width = ffi.sizeof("size_t")
    if len(raw) != 3 * width:
        raise DriverAnswerError(
            f"{_name(param)}: expected size_t[3] ({3 * width} bytes), got {len(raw)} bytes"
        )
    a, b, c = (int.from_bytes(raw[i : i + width], "little") for i in range(0, 3 * width, width))
    return a, b, c


def _wave(kernel: Any, device: Any, adreno: bool) -> tuple[int, str]:
    if adreno:
        try:
            wave = _uint(kernel, device, C.CL_KERNEL_WAVE_SIZE_QCOM)
        except (CLError, DriverAnswerError):
            wave = 0  # rusticl, or a driver that does not know the token
        if wave > 0:
            return wave, WAVE_QUERIES[0]
    preferred = _uint(kernel, device, C.CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE)
    return preferred, WAVE_QUERIES[1]


def kernel_info(kernel: Any, device: Any) -> KernelInfo:
    """The :class:`KernelInfo` of ``kernel`` on ``device`` (pyopencl objects or raw
    handles: a raw device handle must be one the enumeration lists, a raw kernel
    handle cannot be checked and reaches the driver as it is). A failing query raises
    :class:`~qcom_ext.CLError` naming it, except the wave-size query on Adreno, which
    falls back to the preferred work-group multiple.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> kernel = cl.Kernel(qcom_ext.build_program(ctx, "__kernel void k() {}"), "k")
    >>> qcom_ext.kernel_info(kernel, ctx.devices[0]).compile_work_group_size
    (0, 0, 0)
    """
    caps = probe(device)
    k = ffi.cast("cl_kernel", handle_int(kernel))
    d = ffi.cast("cl_device_id", handle_int(device))
    wave, source = _wave(k, d, caps.is_adreno)
    private = _uint(k, d, C.CL_KERNEL_PRIVATE_MEM_SIZE)
    return KernelInfo(
        kernel=str(getattr(kernel, "function_name", "") or ""),
        device=caps.label,
        device_type=caps.device_type,
        wave_size=wave,
        wave_size_from=source,
        max_work_group_size=_uint(k, d, C.CL_KERNEL_WORK_GROUP_SIZE),
        compile_work_group_size=_sizes(k, d, C.CL_KERNEL_COMPILE_WORK_GROUP_SIZE),
        private_mem_size=private,
        local_mem_size=_uint(k, d, C.CL_KERNEL_LOCAL_MEM_SIZE),
        spills=spills(caps.device_type, private),
    )
