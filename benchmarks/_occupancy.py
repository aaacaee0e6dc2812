"""Theoretical occupancy of a kernel on an NVIDIA GPU: resident work-groups per SM as
registers, local (shared) memory, threads and the block slots allow, and the active warps
that gives (:func:`occupancy`).

The rules are those of ``cuda_occupancy.h`` (CUDA toolkit; the CUDA Occupancy
Calculator's), with the per-SM limits of the CUDA C++ Programming Guide's table
"Technical Specifications per Compute Capability" (:data:`SM_LIMITS`):

* registers: a warp's registers are ``registers per thread x 32`` rounded up to the
  allocation unit (256); the register file (64K) is split between 4 SM sub-partitions,
  so the warps that fit are ``floor(64K / 4 / per-warp) x 4``; a work-group whose
  registers pass the per-block limit (CL_DEVICE_REGISTERS_PER_BLOCK_NV) cannot launch;
* local memory: per work-group, its bytes plus the 1 KiB the system reserves per block
  (compute capability 8.0 and later), rounded up to 128 bytes, against the SM's shared
  memory (228 KiB on 9.0: the largest carve-out, what the driver picks for a kernel that
  needs it);
* threads: the SM's resident threads (2048 on 9.0) over the work-group's warps x 32;
* block slots: at most 32 resident work-groups on 9.0.

The hand-worked case: 64 registers x 256 work-items on 9.0 -> a warp takes 2048
registers, 8 warps per sub-partition, 32 per SM, 4 work-groups of 8 warps: 1024
threads, 32 of 64 warps, 50 %.

>>> o = occupancy((9, 0), threads=256, registers=64, local_mem_bytes=0)
>>> o.blocks_per_sm, o.limited_by, o.active_warps, o.fraction
(4, 'registers', 32, 0.5)
>>> occupancy((1, 0), threads=256, registers=64, local_mem_bytes=0) is None  # unknown
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["SM_LIMITS", "Occupancy", "SmLimits", "nv_attributes", "occupancy"]


@dataclass(frozen=True)
class SmLimits:
    """What one SM of a compute capability holds (CUDA C++ Programming Guide)."""

    max_threads: int
    max_blocks: int
    shared_bytes: int  # the largest shared-memory carve-out per SM
    reserved_shared_bytes: int  # per block, for the system (cc >= 8.0)
    registers: int = 65536
    sub_partitions: int = 4
    register_unit: int = 256  # registers, per warp
    shared_unit: int = 128  # bytes


#: Per compute capability: only those the guide's table gives; others are unknown (None).
SM_LIMITS = {
    (7, 0): SmLimits(2048, 32, 96 * 1024, 0),
    (7, 5): SmLimits(1024, 16, 64 * 1024, 0),
    (8, 0): SmLimits(2048, 32, 164 * 1024, 1024),
    (8, 6): SmLimits(1536, 16, 100 * 1024, 1024),
    (8, 9): SmLimits(1536, 24, 100 * 1024, 1024),
    (9, 0): SmLimits(2048, 32, 228 * 1024, 1024),
}


@dataclass(frozen=True)
class Occupancy:
    """Resident work-groups per SM under each limit, the least of them and what set it,
    and the active warps (of the SM's maximum) that gives."""

    by_registers: int
    by_local_memory: int
    by_threads: int
    by_blocks: int
    blocks_per_sm: int
    limited_by: str
    active_warps: int
    max_warps: int
    fraction: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _by_registers(sm: SmLimits, registers: int, warps: int, warp_size: int, per_block: int) -> int:
    if registers <= 0:
        return sm.max_blocks
    per_warp = _round_up(registers * warp_size, sm.register_unit)
    if per_warp * warps > per_block:
        return 0
    per_partition = sm.registers // sm.sub_partitions // per_warp
    return per_partition * sm.sub_partitions // warps


def occupancy(
    compute_capability: tuple[int, int],
    *,
    threads: int,
    registers: int,
    local_mem_bytes: int,
    warp_size: int = 32,
    registers_per_block: int | None = None,
) -> Occupancy | None:
    """The theoretical occupancy of work-groups of ``threads`` work-items using
    ``registers`` each and ``local_mem_bytes`` of local memory; None for a compute
    capability :data:`SM_LIMITS` does not know (never guessed)."""
    sm = SM_LIMITS.get(tuple(compute_capability))
    if sm is None or threads < 1:
        return None
    warps = -(-threads // warp_size)
    per_block = registers_per_block or sm.registers
    shared = _round_up(local_mem_bytes + sm.reserved_shared_bytes, sm.shared_unit)
    limits = {
        "registers": _by_registers(sm, registers, warps, warp_size, per_block),
        "local memory": sm.shared_bytes // shared if shared else sm.max_blocks,
        "threads": sm.max_threads // (warps * warp_size),
        "blocks": sm.max_blocks,
    }
    limited_by = min(limits, key=lambda k: limits[k])
    blocks = limits[limited_by]
    max_warps = sm.max_threads // warp_size
    return Occupancy(
        limits["registers"],
        limits["local memory"],
        limits["threads"],
        limits["blocks"],
        blocks,
        limited_by,
        blocks * warps,
        max_warps,
        blocks * warps / max_warps,
    )


def nv_attributes(device: Any) -> dict[str, Any] | None:
    """cl_nv_device_attribute_query's answers: compute capability (0x4000 / 0x4001),
    registers per block (0x4002) and warp size (0x4003); None on other devices."""
    if "cl_nv_device_attribute_query" not in device.extensions.split():
        return None
    import pyopencl as cl

    info = cl.device_info
    return {
        "compute_capability": (
            int(device.get_info(info.COMPUTE_CAPABILITY_MAJOR_NV)),
            int(device.get_info(info.COMPUTE_CAPABILITY_MINOR_NV)),
        ),
        "registers_per_block": int(device.get_info(info.REGISTERS_PER_BLOCK_NV)),
        "warp_size": int(device.get_info(info.WARP_SIZE_NV)),
    }
