"""The workload of the accelerated image ops benchmarks (:mod:`.cases_accelerated`): a
``--size`` RGBA float image (and a shifted copy as the block-matching reference), the
operations in OpenCL through qcom_ext, in torch on the same GPU and in OpenCV on the CPU,
and how each is timed (profiling events, a replayed CUDA graph, wall time).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from benchmarks._read_floor import copy_texels
from benchmarks._torch_timing import MIN_BATCH, cuda_seconds
from qcom_ext.ext.accelerated.plan import DEFAULT_METHODS, box_window, filter_plan
from qcom_ext.ext.accelerated.rgba import empty_rgba_image, rgba_image
from qcom_ext.ext.accelerated.support import context_path
from qcom_ext.ext.accelerated.variants import filter_variants
from qcom_ext.ext.accelerated.whole_image import block_match_tuning
from qcom_ext.ops.variant_tuning import choose_variant
from qcom_ext.tools.bench._profiling import copy_image

SIZE_ENV = "QCOM_EXT_BENCH_ACCELERATED_SIZE"
#: the variable's name before the suite was renamed, still read
FORMER_SIZE_ENV = "QCOM_EXT_HOF_SIZE"
DEFAULT_SIZE = (3840, 2160)
BYTES_PER_PIXEL = 16  # RGBA float
RADIUS, BLOCK = 4, (8, 8)


def size_from_environment() -> tuple[int, int]:
    """The image size :data:`SIZE_ENV` (or its former name) asks for, else the default."""
    return parse_size(os.environ.get(SIZE_ENV) or os.environ.get(FORMER_SIZE_ENV))


def parse_size(text: str | None) -> tuple[int, int]:
    """``"WxH"`` -> (W, H); None -> the default 3840x2160."""
    if not text:
        return DEFAULT_SIZE
    width, height = (int(v) for v in text.lower().split("x"))
    if width < 16 or height < 16:
        raise ValueError(f"size {text!r} is too small (at least 16x16)")
    return width, height


_states: dict[tuple[int, tuple[int, int]], dict[str, Any]] = {}


def state_for(caps: qcom_ext.DeviceCaps, size: tuple[int, int] | None = None) -> dict[str, Any]:
    """One context, queue, images and filters per device and size (shared by the cases)."""
    size = size or size_from_environment()
    key = (caps.device_id, size)
    if key not in _states:
        context = cl.Context([caps.device()])
        queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        width, height = size
        rng = np.random.default_rng(0)
        pixels = (rng.integers(0, 256, (height, width, 4)) / 256).astype(np.float32)
        reference = np.roll(pixels, (1, -2), axis=(0, 1))
        _states[key] = {
            "context": context,
            "queue": queue,
            "size": size,
            "pixels": pixels,
            "reference_pixels": reference,
            "src": rgba_image(context, pixels),
            "reference": rgba_image(context, reference),
            "dst": empty_rgba_image(context, width, height),
            "weights": qcom_ext.WeightImage(context, rng.uniform(-1, 1, (5, 5)), center=(2, 2)),
            "box": qcom_ext.box_size(7, 7, device=context),
            "path": context_path(context),
        }
    return _states[key]


def convolve(state: dict[str, Any], **options: Any) -> Any:
    return qcom_ext.convolve_image(
        state["queue"], state["src"], state["weights"], state["dst"], **options
    )


def box(state: dict[str, Any], **options: Any) -> Any:
    return qcom_ext.box_filter_image(
        state["queue"], state["src"], state["box"], state["dst"], **options
    )


def block_match(state: dict[str, Any], **options: Any) -> Any:
    field = qcom_ext.block_match_image(
        state["queue"],
        state["src"],
        state["reference"],
        region=BLOCK,
        radius=RADIUS,
        out=state.get("field"),
        **options,
    )
    state["field"] = field
    return field.event


TUNE_BUDGET_S = 5.0  # seconds qcom_ext.tune may spend on the block search's tiles


def search_tile(state: dict[str, Any], tuned: bool = False) -> tuple[int, int] | None:
    """The block search's tile (blocks a work-group): the default, or (``tuned``) the one
    ``qcom_ext.tune`` picks among :data:`qcom_ext.ext.accelerated.plan.SEARCH_TILES` on
    this device (kept in the tuning cache). None where the search is not tiled (native)."""
    key = "tuned_tile" if tuned else "default_tile"
    if key not in state:
        queue, images = state["queue"], (state["src"], state["reference"])
        tuning = block_match_tuning(queue, *images, region=BLOCK, radius=RADIUS)
        if tuning is None:
            state[key] = None
        elif not tuned:
            state[key] = tuning.plan.tile
        else:
            local = qcom_ext.tune(
                tuning.kernel,
                tuning.global_size,
                tuning.args,
                candidates=tuning.candidates,
                pad_global=True,
                queue=queue,
                budget_s=TUNE_BUDGET_S,
            )
            state[key] = tuning.plan.tile if local is None else tuning.plan.tile_of(local)
    return state[key]


#: (method, block, work-group) of the portable filters that the tuned rows choose among
#: (None: :data:`qcom_ext.ext.accelerated.variants.SPACE`), and the seconds it may take.
TUNE_SPACE: Any = None
TUNE_VARIANTS_BUDGET_S = 60.0
_OPS = {"convolve": convolve, "box_filter": box}


def default_options(state: dict[str, Any], op: str, method: str | None = None) -> dict[str, Any]:
    """The method, block and work-group ``op`` ("convolve" or "box_filter") runs with when
    called with ``method`` (None: its default) and no block or work-group, planned as the
    op plans it on this device (the block halves where the tile would not fit; the group
    shrinks to the device's)."""
    queue = state["queue"]
    if op == "convolve":
        weights = state["weights"]
        cx, cy = weights.center
        taps, offset, separable = weights.filter_size, (-cx, -cy), weights.separable
    else:
        (ox, nx), (oy, ny) = (box_window(float(state["box"][axis])) for axis in "xy")
        taps, offset, separable = (nx, ny), (ox, oy), False
    method = DEFAULT_METHODS[op] if method is None else method
    plan = filter_plan(queue, method, taps, offset, None, None, separable)
    local = plan.sizes(state["size"], queue.device)[1]
    return {"method": method, "block": plan.block, "local_size": tuple(local)}


def tuned_variant(state: dict[str, Any], op: str) -> Any:
    """The variant of ``op`` the one chooser (``choose_variant(..., remember=True)``) picks
    on these images among :data:`TUNE_SPACE`, remembered where ``tuned=True`` calls look
    (chosen once a state and cache directory)."""
    key = ("tuned", op, os.environ.get("QCOM_EXT_CACHE_DIR"))
    if key not in state:
        queue, operand = state["queue"], {"convolve": "weights", "box_filter": "box"}[op]
        variants = filter_variants(
            queue,
            state["src"],
            state["dst"],
            **{"weights" if op == "convolve" else "size": state[operand]},
            space=TUNE_SPACE,
        )
        state[key] = choose_variant(
            variants, queue=queue, budget_s=TUNE_VARIANTS_BUDGET_S, repeats=3, remember=True
        )
    return state[key]


def tuned(state: dict[str, Any], op: str) -> Any:
    """``op`` through its own enqueue with ``tuned=True``, after :func:`tuned_variant`."""
    tuned_variant(state, op)
    return _OPS[op](state, tuned=True)


OPENCL_OPS = {
    "image_copy": lambda s: copy_image(s["queue"], s["dst"], s["src"], s["size"]),
    "convolve_5x5": convolve,
    "convolve_5x5_blocked": lambda s: convolve(s, method="blocked"),
    "convolve_5x5_per_pixel": lambda s: convolve(s, method="per_pixel"),
    "box_7x7": box,
    "box_7x7_blocked": lambda s: box(s, method="blocked"),
    "box_7x7_per_pixel": lambda s: box(s, method="per_pixel"),
    "block_match_8x8": block_match,
    "block_match_8x8_tuned": lambda s: block_match(s, tile=search_tile(s, tuned=True)),
    "convolve_5x5_strips": lambda s: convolve(s, method="strips"),
    "convolve_5x5_tuned": lambda s: tuned(s, "convolve"),
    "box_7x7_tiled": lambda s: box(s, method="tiled"),
    "box_7x7_tuned": lambda s: tuned(s, "box_filter"),
    "image_copy_kernel": lambda s: copy_texels(s["queue"], s["dst"], s["src"], s["size"]),
}


# ---- torch (same GPU) and OpenCV (CPU) ----------------------------------------------


def torch_cuda() -> Any:
    """The torch module when CUDA is usable, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def opencv() -> Any:
    try:
        import cv2
    except ImportError:
        return None
    return cv2


def torch_state(
    torch: Any, pixels: np.ndarray, reference: np.ndarray, device: str = "cuda"
) -> dict[str, Any]:
    to = {"device": device, "dtype": torch.float32}
    nchw = torch.from_numpy(np.ascontiguousarray(pixels.transpose(2, 0, 1)))[None].to(**to)
    ref = torch.from_numpy(np.ascontiguousarray(reference.transpose(2, 0, 1)))[None].to(**to)
    return {
        "torch": torch,
        "x": nchw,
        "ref": ref,
        "weight": torch.rand(1, 1, 5, 5, **to).repeat(4, 1, 1, 1),  # one 5x5, each channel
        "f": torch.nn.functional,
    }


def torch_conv(t: dict[str, Any]) -> Any:
    return t["f"].conv2d(t["x"], t["weight"], padding=2, groups=4)


def torch_box(t: dict[str, Any]) -> Any:
    return t["f"].avg_pool2d(t["x"], 7, stride=1, padding=3, count_include_pad=True)


def torch_sad(t: dict[str, Any]) -> Any:
    """Per 8x8 block, the best of 81 displacements: unfold target and shifted reference
    blocks (zero padding at the border) and sum |t - r| over each block."""
    f, torch, x = t["f"], t["torch"], t["x"]
    height, width = x.shape[2:]
    padded = f.pad(t["ref"], (RADIUS,) * 4)
    target_blocks = f.unfold(x, BLOCK, stride=BLOCK)
    best = torch.full(target_blocks.shape[::2], float("inf"), device=x.device)
    index = torch.zeros_like(best, dtype=torch.int32)
    k = 0
    for dy in range(2 * RADIUS + 1):
        for dx in range(2 * RADIUS + 1):
            shifted = padded[:, :, dy : dy + height, dx : dx + width]
            sad = (target_blocks - f.unfold(shifted, BLOCK, stride=BLOCK)).abs().sum(1)
            better = sad < best
            best = torch.where(better, sad, best)
            index = torch.where(better, torch.full_like(index, k), index)
            k += 1
    return index


TORCH_OPS = {
    "torch_conv2d_depthwise_5x5": torch_conv,
    "torch_avg_pool2d_7x7": torch_box,
    "torch_unfold_sad_8x8": torch_sad,
}


def cv_state(cv2: Any, pixels: np.ndarray, reference: np.ndarray) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    return {
        "cv2": cv2,
        "x": pixels,
        "ref": reference,
        "kernel": rng.uniform(-1, 1, (5, 5)).astype(np.float32),
    }


def cv_conv(c: dict[str, Any]) -> Any:
    cv2 = c["cv2"]
    return cv2.filter2D(c["x"], -1, c["kernel"], borderType=cv2.BORDER_REPLICATE)


def cv_box(c: dict[str, Any]) -> Any:
    cv2 = c["cv2"]
    return cv2.blur(c["x"], (7, 7), borderType=cv2.BORDER_REPLICATE)


def cv_sad(c: dict[str, Any]) -> Any:
    cv2, x = c["cv2"], c["x"]
    height, width = x.shape[:2]
    padded = cv2.copyMakeBorder(c["ref"], *(RADIUS,) * 4, cv2.BORDER_REPLICATE)
    blocks = (width // BLOCK[0], height // BLOCK[1])
    best = np.full(blocks[::-1], np.inf, np.float32)
    for dy in range(2 * RADIUS + 1):
        for dx in range(2 * RADIUS + 1):
            diff = cv2.absdiff(x, padded[dy : dy + height, dx : dx + width])
            summed = cv2.transform(diff, np.ones((1, 4), np.float32))
            area = cv2.resize(
                summed[: blocks[1] * BLOCK[1], : blocks[0] * BLOCK[0]],
                blocks,
                interpolation=cv2.INTER_AREA,
            )
            np.minimum(best, area, out=best)
    return best


CV_OPS = {"opencv_filter2d_5x5": cv_conv, "opencv_blur_7x7": cv_box, "opencv_sad_8x8": cv_sad}


# ---- timers ------------------------------------------------------------------------


def device_seconds(state: dict[str, Any], op: Any, rounds: int) -> float:
    """Median device time of ``op`` from its profiling event (after two warm-up calls)."""
    for _ in range(2):
        op(state).wait()
    times = []
    for _ in range(rounds):
        event = op(state)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-9)
    return statistics.median(times)


def torch_seconds(t: dict[str, Any], op: Any, rounds: int) -> float:
    """GPU seconds per call of ``op(t)`` (``_torch_timing.cuda_seconds``)."""
    return cuda_seconds(t["torch"], lambda _: op(t), rounds, batch=MIN_BATCH)


def wall_seconds(c: dict[str, Any], op: Any, rounds: int) -> float:
    op(c)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        op(c)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
