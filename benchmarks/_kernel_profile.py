"""A static profile of the kernels an op's default path launches (``python -m benchmarks
profile-suite``, :mod:`.cases_profile`): per kernel, the work-group size it ran with,
:func:`~qcom_ext.kernel_info`'s fields, the op's bytes per output and arithmetic
intensity, and on NVIDIA the ptxas registers and spills, the PTX instruction mix
(:mod:`._ptx`) and the theoretical occupancy (:mod:`._occupancy`).

:func:`captured_launches` records what ``pyopencl.enqueue_nd_range_kernel`` is asked to
run while an op is called; :func:`profile_launch` turns one launch into a row. NVIDIA's
fields come from a rebuild of the kernel's program with ``-cl-nv-verbose``
(cl_nv_compiler_options) from its source (``CL_PROGRAM_SOURCE``; a program loaded from
cached binaries has none: then from its binary, whose build log may lack ptxas's lines).
On other devices those fields are None, never guessed.

>>> work = OpWork(outputs=100, bytes=3200.0, flops=19600.0)
>>> work.bytes_per_output, work.intensity
(32.0, 6.125)
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks._occupancy import nv_attributes, occupancy
from benchmarks._ptx import CATEGORIES, instruction_mix, is_ptx, ptxas_info
from qcom_ext.ext.program.kernel_info import kernel_info

__all__ = [
    "NV_VERBOSE",
    "Launch",
    "OpWork",
    "captured_launches",
    "markdown",
    "nvidia_fields",
    "profile_launch",
]

#: cl_nv_compiler_options' flag that puts ptxas's verbose report in the build log.
NV_VERBOSE = "-cl-nv-verbose"


@dataclass(frozen=True)
class OpWork:
    """What an op must do, from its definition: ``outputs`` elements (pixels, blocks,
    values), the least ``bytes`` it moves (inputs read once, outputs written once) and
    its ``flops``."""

    outputs: int
    bytes: float
    flops: float

    @property
    def bytes_per_output(self) -> float:
        return self.bytes / self.outputs

    @property
    def intensity(self) -> float:
        """FLOP per byte moved."""
        return self.flops / self.bytes


@dataclass(frozen=True)
class Launch:
    """One ``enqueue_nd_range_kernel`` call: the kernel, its global and local sizes."""

    kernel: Any
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None


@contextlib.contextmanager
def captured_launches() -> Iterator[list[Launch]]:
    """The launches ``pyopencl.enqueue_nd_range_kernel`` makes inside the block (they
    still run). Ops that enqueue through cffi (recordings) are not seen."""
    import pyopencl as cl

    launches: list[Launch] = []
    original = cl.enqueue_nd_range_kernel

    def recording(queue: Any, kernel: Any, global_size: Any, local_size: Any, *a, **k):
        local = None if local_size is None else tuple(int(v) for v in local_size)
        launches.append(Launch(kernel, tuple(int(v) for v in global_size), local))
        return original(queue, kernel, global_size, local_size, *a, **k)

    cl.enqueue_nd_range_kernel = recording
    try:
        yield launches
    finally:
        cl.enqueue_nd_range_kernel = original


def _program_text(program: Any) -> str:
    import pyopencl as cl

    try:
        return program.get_info(cl.program_info.SOURCE) or ""
    except cl.Error:
        return ""


def _verbose_build(kernel: Any, device: Any) -> tuple[str, str]:
    """(build log, PTX) of the kernel's program rebuilt with :data:`NV_VERBOSE`."""
    import pyopencl as cl

    program = kernel.get_info(cl.kernel_info.PROGRAM)
    context = program.get_info(cl.program_info.CONTEXT)
    options = program.get_build_info(device, cl.program_build_info.OPTIONS) or ""
    options_list = [*shlex.split(options), NV_VERBOSE]
    source = _program_text(program)
    if source:
        rebuilt = cl.Program(context, source)
    else:
        index = program.get_info(cl.program_info.DEVICES).index(device)
        binary = program.get_info(cl.program_info.BINARIES)[index]
        rebuilt = cl.Program(context, [device], [binary])
    rebuilt.build(options=options_list, devices=[device])
    log = rebuilt.get_build_info(device, cl.program_build_info.LOG) or ""
    index = rebuilt.get_info(cl.program_info.DEVICES).index(device)
    binary = bytes(rebuilt.get_info(cl.program_info.BINARIES)[index])
    ptx = binary.rstrip(b"\0").decode("utf-8", "replace") if is_ptx(binary) else ""
    return log, ptx


def nvidia_fields(
    name: str, log: str, ptx: str, attributes: dict[str, Any], launch: Launch, local_mem: int
) -> dict[str, Any]:
    """The NVIDIA-only fields of kernel ``name`` from its verbose build ``log``, its
    ``ptx`` and the device's ``attributes`` (:func:`._occupancy.nv_attributes`)."""
    info = ptxas_info(log).get(name)
    mix = instruction_mix(ptx).get(name) if ptx else None
    fields: dict[str, Any] = {
        "registers": None if info is None else info.registers,
        "spill_store_bytes": None if info is None else info.spill_store_bytes,
        "spill_load_bytes": None if info is None else info.spill_load_bytes,
        "stack_frame_bytes": None if info is None else info.stack_frame_bytes,
        "arch": None if info is None else info.arch,
        "instruction_mix": None if mix is None else mix.to_dict(),
        "occupancy": None,
        **attributes,
    }
    if info is not None and launch.local_size is not None:
        threads = 1
        for v in launch.local_size:
            threads *= v
        found = occupancy(
            attributes["compute_capability"],
            threads=threads,
            registers=info.registers,
            local_mem_bytes=max(local_mem, info.smem_bytes),
            warp_size=attributes["warp_size"],
            registers_per_block=attributes["registers_per_block"],
        )
        fields["occupancy"] = None if found is None else found.to_dict()
    return fields


_NV_KEYS = (
    "registers",
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_frame_bytes",
    "arch",
    "instruction_mix",
    "occupancy",
)


def profile_launch(op: str, launch: Launch, device: Any, work: OpWork) -> dict[str, Any]:
    """One row of the profile: ``op``'s kernel of ``launch`` on ``device``."""
    info = kernel_info(launch.kernel, device)
    row: dict[str, Any] = {
        "op": op,
        "kernel": info.kernel,
        "global_size": list(launch.global_size),
        "local_size": None if launch.local_size is None else list(launch.local_size),
        "wave_size": info.wave_size,
        "wave_size_from": info.wave_size_from,
        "max_work_group_size": info.max_work_group_size,
        "private_mem_size": info.private_mem_size,
        "local_mem_size": info.local_mem_size,
        "spills": info.spills,
        "outputs": work.outputs,
        "bytes": work.bytes,
        "flops": work.flops,
        "bytes_per_output": work.bytes_per_output,
        "intensity": work.intensity,
        "nvidia_note": None,
    }
    row.update(dict.fromkeys(_NV_KEYS))
    attributes = nv_attributes(device)
    if attributes is None or "cl_nv_compiler_options" not in device.extensions.split():
        return row
    import pyopencl as cl

    try:
        log, ptx = _verbose_build(launch.kernel, device)
    except cl.Error as exc:  # the row keeps its generic fields
        row["nvidia_note"] = f"the {NV_VERBOSE} rebuild failed: {exc}"
        return row
    row.update(nvidia_fields(info.kernel, log, ptx, attributes, launch, info.local_mem_size))
    if row["registers"] is None:
        row["nvidia_note"] = "no ptxas lines in the -cl-nv-verbose build log"
    return row


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return "x".join(map(str, value))
    return str(value)


def _occupancy_cell(row: dict[str, Any]) -> str:
    o = row.get("occupancy")
    if not o:
        return "–"
    return f"{o['fraction']:.0%} ({o['blocks_per_sm']} WG/SM, {o['limited_by']})"


def _mix_cell(row: dict[str, Any]) -> str:
    mix = row.get("instruction_mix")
    if not mix:
        return "–"
    counts = {k: v for k, v in mix["counts"].items() if v}
    loads = ", ".join(f"{k}:{v}" for k, v in mix["global_loads"].items())
    parts = [f"{k} {counts[k]}" for k in CATEGORIES if k in counts]
    return "; ".join(parts) + (f" (ld.global {loads})" if loads else "")


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """Two tables: the generic fields of every kernel, then NVIDIA's instruction mix."""
    head = (
        "| op | kernel | global | work-group | wave | private B | local B | spills "
        "| B/output | FLOP/B | regs | spill st/ld B | occupancy |"
    )
    lines = [head, "|---|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|---|"]
    for r in rows:
        spill_bytes = (
            "–"
            if r["spill_store_bytes"] is None
            else f"{r['spill_store_bytes']}/{r['spill_load_bytes']}"
        )
        local = "driver" if r["local_size"] is None else _cell(r["local_size"])
        cells = [
            r["op"],
            f"`{r['kernel']}`",
            _cell(r["global_size"]),
            local,
            _cell(r["wave_size"]),
            _cell(r["private_mem_size"]),
            _cell(r["local_mem_size"]),
            "yes" if r["spills"] else "no",
            _cell(r["bytes_per_output"]),
            _cell(r["intensity"]),
            _cell(r["registers"]),
            spill_bytes,
            _occupancy_cell(r),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    mixes = [r for r in rows if r.get("instruction_mix")]
    if mixes:
        lines += ["", "Static PTX instruction mix (each instruction counted once):", ""]
        lines += ["| op | kernel | total | mix |", "|---|---|--:|---|"]
        for r in mixes:
            mix = r["instruction_mix"]
            lines.append(f"| {r['op']} | `{r['kernel']}` | {mix['total']} | {_mix_cell(r)} |")
    notes = [f"* {r['op']} `{r['kernel']}`: {r['nvidia_note']}" for r in rows if r["nvidia_note"]]
    return "\n".join(lines + (["", *notes] if notes else [])) + "\n"
