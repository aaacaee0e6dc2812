"""The matmul kernels' variants and launch shapes: which family runs (GEMV up to
:data:`GEMV_MAX_ROWS` rows of x, tiled GEMM above), their ``-D`` defines, the GEMM tile
and the GEMV local sizes (tuned through :mod:`qcom_ext.ops.tuning`).

>>> rows_per_item(1, 'q4_0'), rows_per_item(8, 'q4_0'), rows_per_item(1, 'f32')
(2, 2, 1)
>>> gemv_candidates(nb=128, row_groups=1024, limit=256, split=32)[:3]
[(8, 1), (8, 2), (8, 4)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from qcom_ext.errors import ConfigError
from qcom_ext.ops._matmul_layout import FORMATS
from qcom_ext.ops._programs import Launcher, kernel_for

__all__ = [
    "GEMM_TILES",
    "GEMV_KINDS",
    "GEMV_MAX_ROWS",
    "Gemm",
    "Gemv",
    "blocks_per_round",
    "gemv_candidates",
    "gemv_local",
    "q8_stage_blocks",
    "rows_per_item",
]

#: The most rows of x the GEMV family takes (one decode step of up to 8 sequences).
#: Above it the tiled GEMM runs: both read each weight byte once per call (GEMM once per
#: tile row of ``TM`` rows of x), and the GEMV's registers grow with the rows.
GEMV_MAX_ROWS = 8
#: GEMM tiles (TM, TN, RM, RN): rows and columns of y a work-group computes, and a
#: work-item. "small" for CPUs, "medium" for GPUs, "large" for GPUs with 48 KiB of
#: local memory or more (32 KiB of tiles, 64 accumulators a work-item).
GEMM_TILES = {
    "small": (32, 32, 4, 4),
    "medium": (64, 64, 4, 4),
    "large": (128, 128, 8, 8),
}
#: The largest GEMV work-group (and its local-memory slots per partial sum).
GEMV_ITEMS = 256
#: The GEMV kernels: "float" (x in float, kernels/matmul_gemv.cl), "fused" (x quantized
#: to q8_0 in the same launch and integer dot products, kernels/matmul_gemv_q8.cl) and
#: "launches" (x quantized by kernels/matmul_quantize.cl first, then matmul_gemv.cl with
#: ACT_Q8 on its output: the integer path above GEMV_MAX_ROWS rows).
GEMV_KINDS = ("float", "fused", "launches")
#: Local-memory bytes of one quantized block of a row of x in the fused GEMV: 32 int8
#: quants, a half scale and the int sum of the quants.
Q8_BLOCK_BYTES = 38


def rows_per_item(rows: int, fmt: str) -> int:
    """Rows of W a GEMV work-item takes for ``rows`` rows of x: 1 for f32 (8 words of 16
    bytes a block), 2 for the others, at most 16 partial sums (MR x RPW). (On the H200,
    2 rows beat 4 for q8_0 and q4_0 by 5-15%: more work-items on K hide more latency.)"""
    return max(1, min(2, 8 // FORMATS[fmt][1], 16 // rows))


def blocks_per_round(fmt: str) -> int:
    """Blocks of a row a GEMV work-item reads at once (``UNROLL``, each read coalesced
    across the row group): 4 for q4_0, whose block is one 16-byte word, so that a
    work-item has as many bytes in flight as with the other formats; 1 otherwise.

    >>> blocks_per_round("q4_0"), blocks_per_round("f16")
    (4, 1)
    """
    return 4 if FORMATS[fmt][1] == 1 else 1


def _pow2_ceil(value: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, value))))


def gemv_candidates(nb: int, row_groups: int, limit: int, split: int) -> list[tuple[int, int]]:
    """GEMV local sizes (work-items splitting K, row groups): dimension 0 a power of two
    from 8 (fewer when the row has fewer blocks) up to the row's blocks and ``split``,
    dimension 1 up to the row groups, at most ``limit`` work-items."""
    sizes = []
    top = min(_pow2_ceil(nb), limit, split)
    l0 = min(8, top)
    while l0 <= top:
        l1 = 1
        while l0 * l1 <= limit and l1 <= _pow2_ceil(row_groups):
            sizes.append((l0, l1))
            l1 *= 2
        l0 *= 2
    return sizes


def gemv_local(
    nb: int, row_groups: int, limit: int, split: int, wide: int = 64, items: int = 128
) -> tuple[int, int]:
    """The GEMV local size used untuned: ``wide`` work-items on K (fewer for short rows
    or a smaller ``split``), row groups up to ``items`` work-items (and ``limit``)."""
    l0 = min(wide, _pow2_ceil(nb), limit, split)
    return l0, max(1, min(items // l0, _pow2_ceil(row_groups), limit // l0))


def gemm_tile(device: Any, rows: int, requested: str | None) -> str:
    """The GEMM tile for ``rows`` rows of x (``requested``: one of :data:`GEMM_TILES`)."""
    if requested is not None:
        if requested not in GEMM_TILES:
            raise ConfigError(f"gemm_tile {requested!r}: expected one of {tuple(GEMM_TILES)}")
        return requested
    import pyopencl as cl

    if not device.type & cl.device_type.GPU:
        return "small"
    big = device.local_mem_size >= 48 * 1024 and device.max_work_group_size >= 256
    return "large" if big and rows >= 128 else "medium"


def _common(fmt: str, path: str, x_half: bool, k: int) -> dict[str, Any]:
    return {
        "WFMT": FORMATS[fmt][0],
        "USE_IMAGE": int(path == "image"),
        "X_HALF": int(x_half),
        "K_TAIL": int(k % 32 != 0),
        "X_ALIGNED": int(k % 4 == 0),
    }


@dataclass
class Gemv:
    """The GEMV kernel of one kind (:data:`GEMV_KINDS`) for ``rows`` rows of x (and the
    q8_0 quantizer for "launches")."""

    launcher: Launcher
    quantizer: Launcher | None
    rows: int
    rpw: int
    items: int  # the largest work-group it takes
    split: int  # the most work-items worth putting on K (CB / UNROLL: a round fits a chunk)
    kind: str = "float"

    @property
    def default_local(self) -> tuple[int, int]:
        """(work-items on K, work-items) of the untuned local size (:func:`gemv_local`):
        the fused GEMV takes more row groups a work-group, so that each quantization of
        x serves more rows of W: 32 x 8 for one or two rows of x, 16 x 16 for more (on an
        H100, 16 x 16 was 10-20 % faster at 4 and 8 rows, within 10 % either way at 1:
        docs/BENCHMARKS.md, "Matmul")."""
        if self.kind == "fused":
            return (32 if self.rows <= 2 else 16, 256)
        return (64, 128)

    @classmethod
    def build(
        cls, queue: Any, fmt: str, path: str, x_half: bool, k: int, rows: int, kind: str
    ) -> Gemv:
        device = queue.device
        local_bytes = int(device.local_mem_size)
        rpw = rows_per_item(rows, fmt)
        nb = -(-k // 32)
        defines: dict[str, Any] = {**_common(fmt, path, x_half, k), "MR": rows, "RPW": rpw}
        if kind == "fused":
            chunk = q8_stage_blocks(rows, nb, local_bytes)
            staged, split = rows * chunk * Q8_BLOCK_BYTES, chunk
            defines.update(CB=chunk, NB=nb)
        else:
            unroll = 1 if kind == "launches" else blocks_per_round(fmt)
            chunk = 32 if kind == "launches" else stage_blocks(rows, nb, local_bytes)
            staged = 0 if kind == "launches" else rows * 8 * (chunk + 1) * 16
            split = 0 if kind == "launches" else chunk // unroll
            defines.update(ACT_Q8=int(kind == "launches"), CB=chunk, UNROLL=unroll)
        items = _gemv_items(device, rows * rpw, local_bytes - staged)
        defines["RED_ITEMS"] = items
        file = "matmul_gemv_q8.cl" if kind == "fused" else "matmul_gemv.cl"
        name = file.removesuffix(".cl")
        launcher = kernel_for(queue, device, file, name, defines)
        quantizer = None
        if kind == "launches":
            quantizer = kernel_for(
                queue, device, "matmul_quantize.cl", "matmul_quantize_q8", {"X_HALF": int(x_half)}
            )
        import pyopencl as cl

        group = launcher.kernel.get_work_group_info(
            cl.kernel_work_group_info.WORK_GROUP_SIZE, device
        )
        items = min(items, int(group))
        return cls(launcher, quantizer, rows, rpw, items, split or items, kind)


def q8_stage_blocks(rows: int, nb: int, local_bytes: int) -> int:
    """Blocks of x the fused integer GEMV quantizes into local memory at a time: the
    largest power of two up to 128 and up to the row's ``nb`` blocks whose ``rows`` rows
    (:data:`Q8_BLOCK_BYTES` a block) take at most half the device's local memory; 8 at
    least.

    >>> [q8_stage_blocks(rows, nb, 32768) for rows, nb in ((1, 128), (8, 128), (1, 3))]
    [128, 32, 8]
    """
    chunk = 128
    while chunk > 8 and (chunk >= 2 * nb or rows * chunk * Q8_BLOCK_BYTES > local_bytes // 2):
        chunk //= 2
    return chunk


def stage_blocks(rows: int, nb: int, local_bytes: int) -> int:
    """Blocks of x the float GEMV stages in local memory at a time (its most work-items
    on K): the largest power of two up to 128 and up to the row's ``nb`` blocks whose
    ``rows`` rows (8 float4 a block, plus a padding column) take at most half the
    device's local memory; 8 at least."""
    chunk = 128
    while chunk > 8 and (chunk >= 2 * nb or rows * 8 * (chunk + 1) * 16 > local_bytes // 2):
        chunk //= 2
    return chunk


def _gemv_items(device: Any, sums: int, local_bytes: int) -> int:
    """GEMV_ITEMS, or fewer (a power of two) where the device's work-groups or the local
    memory left (one float per partial sum and work-item) are smaller."""
    items = min(GEMV_ITEMS, int(device.max_work_group_size))
    items = min(items, max(1, local_bytes // (4 * sums)))
    return 1 << (items.bit_length() - 1)


@dataclass
class Gemm:
    """The tiled GEMM kernel of one tile."""

    launcher: Launcher
    tile: tuple[int, int, int, int]

    @classmethod
    def build(cls, queue: Any, fmt: str, path: str, x_half: bool, k: int, tile: str) -> Gemm:
        tm, tn, rm, rn = GEMM_TILES[tile]
        defines = {**_common(fmt, path, x_half, k), "TM": tm, "TN": tn, "RM": rm, "RN": rn}
        launcher = kernel_for(queue, queue.device, "matmul_gemm.cl", "matmul_gemm", defines)
        return cls(launcher, (tm, tn, rm, rn))

    def sizes(self, rows: int, n: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """(global size, local size) for ``rows`` x ``n`` outputs."""
        tm, tn, rm, rn = self.tile
        local = (tn // rn, tm // rm)
        return (-(-n // tn) * local[0], -(-rows // tm) * local[1]), local
