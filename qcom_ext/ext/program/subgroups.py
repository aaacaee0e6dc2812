"""Sub-group sizes: what a kernel actually runs with, and what "half"/"full" mean.

Adreno runs a kernel in half-wave or full-wave mode; the kernel attribute
``qcom_reqd_sub_group_size("half"|"full")`` (cl_qcom_reqd_sub_group_size,
qcom-extensions.md section 8; guide section 9.2) overrides the compiler's choice. In a
kernel built with :func:`qcom_ext.build_program`, write it as
``QCOM_REQD_SUB_GROUP_SIZE(half)`` / ``QCOM_REQD_SUB_GROUP_SIZE(full)``
(``kernels/compat/cl_qcom_reqd_sub_group_size.h``): natively that is the Qualcomm
attribute, with cl_intel_required_subgroup_size it is
``intel_reqd_sub_group_size(n)`` with the ``n`` of :func:`half_and_full`, elsewhere
nothing.

:func:`kernel_sub_group_size` asks the driver for the sub-group size a kernel runs
with (``clGetKernelSubGroupInfo``, or ``clGetKernelSubGroupInfoKHR`` on OpenCL 2.0).
On a device without sub-groups (no cl_khr_subgroups, no OpenCL 2.1+ sub-groups: pocl
3.x, NVIDIA OpenCL, Oclgrind) it is 1: every work-item is its own sub-group, the
attribute is dropped, and nothing runs in lock-step. The portable sub-group shuffles of
``qcom_ext.h`` do not rely on hardware sub-groups there: they exchange values through
local memory among the work-items of a work-group (see their documentation).

>>> half_and_full((8, 16, 32))
(16, 32)
>>> half_and_full(tuple(range(1, 513)))  # pocl: every size; Adreno's largest wave is 128
(64, 128)
>>> import pyopencl as cl, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> prg = qcom_ext.build_program(ctx, "QCOM_REQD_SUB_GROUP_SIZE(full) "
...                              "__kernel void k(__global int *a) { a[0] = 1; }")
>>> size = kernel_sub_group_size(prg.k, ctx.devices[0], (64,))
>>> size >= 1
True
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any

from qcom_ext.binding.lib import C, check, driver, ffi, handle_int
from qcom_ext.device import shared
from qcom_ext.device.caps import LARGEST_ADRENO_WAVE, half_and_full  # one copy, re-exported
from qcom_ext.errors import CLError, ConfigError, EntryPointMissing

__all__ = ["LARGEST_ADRENO_WAVE", "half_and_full", "has_sub_groups", "kernel_sub_group_size"]


def _opencl_version(text: str) -> tuple[int, int]:
    """``(2, 1)`` from ``"OpenCL 2.1 vendor text"``; ``(0, 0)`` when unreadable."""
    match = re.match(r"OpenCL (\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _entry_point(device: Any) -> tuple[Any, str] | None:
    """The clGetKernelSubGroupInfo(KHR) to ask about ``device``; None without sub-groups."""
    from qcom_ext.binding import info as _info
    from qcom_ext.device.probe import probe

    caps = probe(device)
    if _opencl_version(caps.device_version) >= (2, 1):  # core since 2.1 (optional in 3.0)
        try:
            count = _info.device_uint(caps.device_id, C.CL_DEVICE_MAX_NUM_SUB_GROUPS)
        except (CLError, ValueError):
            count = 0
        if count > 0:
            return driver.clGetKernelSubGroupInfo, "clGetKernelSubGroupInfo"
    if "cl_khr_subgroups" in caps.extensions:  # OpenCL 2.0 (Adreno 6xx)
        with contextlib.suppress(EntryPointMissing):
            name = "clGetKernelSubGroupInfoKHR"
            return shared.require(caps, "cl_khr_subgroups", name), name
    return None


def has_sub_groups(device: Any) -> bool:
    """Whether ``device`` has sub-groups the driver can report on (cl_khr_subgroups, or
    OpenCL 2.1+ with ``CL_DEVICE_MAX_NUM_SUB_GROUPS`` > 0)."""
    return _entry_point(device) is not None


def _local_size(local_size: int | Sequence[int]) -> tuple[int, ...]:
    sizes = (local_size,) if isinstance(local_size, int) else tuple(local_size)
    if not 1 <= len(sizes) <= 3 or not all(isinstance(s, int) and s > 0 for s in sizes):
        raise ConfigError(
            f"local_size {local_size!r}: expected 1 to 3 positive integers (the work-group "
            "size the kernel will be enqueued with)"
        )
    return sizes


def kernel_sub_group_size(kernel: Any, device: Any, local_size: int | Sequence[int]) -> int:
    """The sub-group size ``kernel`` runs with on ``device`` for work-groups of
    ``local_size`` (``CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE``); 1 on a device
    without sub-groups. For a kernel built by :func:`~qcom_ext.build_program` whose
    ``qcom_sub_group_shuffle_*`` are emulated, the emulated size the kernel sees
    (``-DQCOM_EXT_EMULATED_SUB_GROUP_SIZE``, default 1).

    ``kernel`` and ``device`` are pyopencl objects or raw handles (a raw device handle
    must be one the enumeration lists; a raw kernel handle cannot be checked and reaches
    the driver as it is).

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> prg = qcom_ext.build_program(ctx, "__kernel void k(__global int *a) { a[0] = 1; }")
    >>> qcom_ext.kernel_sub_group_size(prg.k, ctx.devices[0], 64) >= 1
    True
    """
    sizes = _local_size(local_size)
    emulated = _emulated_size(kernel)
    if emulated is not None:
        return emulated
    found = _entry_point(device)
    if found is None:
        return 1
    function, routine = found
    value = ffi.new("size_t[]", list(sizes))
    result = ffi.new("size_t *")
    status = function(
        ffi.cast("cl_kernel", handle_int(kernel)),
        ffi.cast("cl_device_id", handle_int(device)),
        C.CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
        ffi.sizeof("size_t") * len(sizes),
        value,
        ffi.sizeof("size_t"),
        result,
        ffi.NULL,
    )
    check(status, routine)
    return int(result[0])


_EMULATED = re.compile(r"-DQCOM_EXT_EMULATED_SUB_GROUP_SIZE=(\d+)")


def _emulated_size(kernel: Any) -> int | None:
    """The emulated sub-group size of a build_program kernel whose shuffles are emulated
    (no native or Khronos flag for cl_qcom_subgroup_shuffle among its build options)."""
    import pyopencl as cl

    from qcom_ext._resources import kernels_dir

    if not isinstance(kernel, cl.Kernel):
        return None
    program = kernel.program
    device = program.devices[0]
    try:
        options = program.get_build_info(device, cl.program_build_info.OPTIONS) or ""
    except cl.Error:
        return None
    if str(kernels_dir()) not in options:
        return None  # not built by build_program: the driver's answer stands
    if re.search(r"-DQCOM_EXT_(NATIVE|KHR)_cl_qcom_subgroup_shuffle\b", options):
        return None
    match = _EMULATED.search(options)
    return int(match.group(1)) if match else 1
