"""What each sample's ``--png`` must show, for tests/test_samples.py: computed here with
numpy from the sample's own input generator, by a formulation of the sample's operation
written here (correlation with edge padding, box coverage, 2x2 means, the JFIF colour
equations, the known motions), not with the reference the sample checks itself against,
except where that reference is the sample's own plain numpy (the image pipeline, the
inverted pattern, the bicubic formula). Pillow is required (the ``test`` extra has it).
"""

from __future__ import annotations

import colorsys
import importlib
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
from PIL import Image

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def sample(name: str) -> ModuleType:
    """samples/<name>.py as a module (for its input generator and constants)."""
    if str(SAMPLES) not in sys.path:
        sys.path.insert(0, str(SAMPLES))
    return importlib.import_module(name)


def to_bytes(values: np.ndarray) -> np.ndarray:
    """[0, 1] floats as the samples store them: clipped, x 255, rounded half up."""
    return (np.clip(values, 0, 1) * 255 + 0.5).astype(np.uint8)


def assert_png(path: Path, mode: str, expected: np.ndarray, tolerance: int = 1) -> np.ndarray:
    """The PNG at ``path`` has ``mode``, ``expected``'s size and, value for value, is
    within ``tolerance`` of it; returns its pixels."""
    with Image.open(path) as image:
        assert image.mode == mode, f"{path.name}: mode {image.mode}, expected {mode}"
        pixels = np.asarray(image)
    assert pixels.shape == expected.shape, f"{path.name}: {pixels.shape} != {expected.shape}"
    difference = np.abs(pixels.astype(np.int16) - expected.astype(np.int16))
    wrong = np.argwhere(difference > tolerance)
    assert not wrong.size, (
        f"{path.name}: {len(wrong)} values differ from the numpy picture by more than "
        f"{tolerance} (up to {difference.max()}), first at (row, column, ...) "
        f"{tuple(wrong[0])}: {pixels[tuple(wrong[0])]} vs {expected[tuple(wrong[0])]}"
    )
    return pixels


def correlate(image: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """Correlation with a centred (2r+1)-square filter, edge pixels repeated outside."""
    r = taps.shape[0] // 2
    height, width = image.shape
    padded = np.pad(image.astype(np.float64), r, mode="edge")
    return sum(
        taps[j, i] * padded[j : j + height, i : i + width]
        for j in range(taps.shape[0])
        for i in range(taps.shape[1])
    )


def convolve_png(width: int, height: int) -> np.ndarray:
    """samples/convolve.py: input | Sobel magnitude (2-D) | the same (separable), scaled
    by the largest magnitude."""
    grey = sample("convolve").scene(width, height)[..., 0].astype(np.float64)
    sobel_x = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])
    edges = np.hypot(correlate(grey, sobel_x), correlate(grey, sobel_x.T))
    edges /= max(edges.max(), 1e-6)
    return to_bytes(np.concatenate([grey, edges, edges], axis=1))


def box_weights(w: float) -> np.ndarray:
    """Per axis, the part of pixels -r..r that a box of width ``w`` centred on pixel 0
    covers (pixel k spans [k - 0.5, k + 0.5])."""
    r = int(np.ceil(w / 2 - 0.5))
    k = np.arange(-r, r + 1)
    return np.clip(np.minimum(k + 0.5, w / 2) - np.maximum(k - 0.5, -w / 2), 0, None)


def box_png(width: int, height: int, boxes: list[float]) -> np.ndarray:
    """samples/box_filter.py: input | each w x w box blur (RGB)."""
    pixels = sample("box_filter").scene(width, height)[..., :3].astype(np.float64)
    panels = [pixels]
    for w in boxes:
        weights = box_weights(w)
        r = len(weights) // 2
        padded = np.pad(pixels, ((r, r), (r, r), (0, 0)), mode="edge")
        blurred = sum(
            weights[j] * weights[i] * padded[j : j + height, i : i + width]
            for j in range(len(weights))
            for i in range(len(weights))
        )
        panels.append(blurred / (w * w))
    return to_bytes(np.concatenate(panels, axis=1))


def check_motion_png(path: Path, width: int, height: int, radius: int) -> None:
    """samples/block_match.py: the right half's colour per 8x8 block is the motion found;
    blocks wholly on the object must show its motion, 95% of the background blocks off
    the border the background's (hue = direction, value = length / radius)."""
    block_match = sample("block_match")
    _, _, mask = block_match.frames(width, height)
    with Image.open(path) as image:
        assert (image.mode, image.size) == ("RGB", (2 * width, height))
        chart = np.asarray(image)[:, width:].astype(np.int16)
    blocks = mask.reshape(height // 8, 8, width // 8, 8).transpose(0, 2, 1, 3)
    colours = chart.reshape(height // 8, 8, width // 8, 8, 3).transpose(0, 2, 1, 3, 4)
    assert (colours == colours[:, :, :1, :1]).all(), "a block of the colour map is not flat"
    colours = colours[:, :, 0, 0]
    inside, outside = blocks.all(axis=(2, 3)), ~blocks.any(axis=(2, 3))
    outside[[0, -1], :] = outside[:, [0, -1]] = False
    for name, where, share in (("OBJECT", inside, 1.0), ("BACKGROUND", outside, 0.95)):
        dx, dy = getattr(block_match, name)
        hue = (np.arctan2(dy, dx) / (2 * np.pi)) % 1.0
        rgb = colorsys.hsv_to_rgb(hue, 1.0, min(1.0, np.hypot(dx, dy) / radius))
        right = (np.abs(colours[where] - np.array(rgb) * 255) <= 1).all(axis=-1)
        assert where.any() and right.mean() >= share, f"{name.lower()} motion {right.mean():.0%}"


def gather_png(width: int, height: int) -> np.ndarray:
    """samples/vector_image_gather.py: the mean of each 2x2 quad (RGBA)."""
    pixels = sample("vector_image_gather").generated_image(width, height).astype(np.float64)
    quads = pixels[: height // 2 * 2, : width // 2 * 2]
    means = quads.reshape(height // 2, 2, width // 2, 2, 4).mean(axis=(1, 3))
    return np.clip(np.rint(means * 255), 0, 255).astype(np.uint8)


def nv12_png(width: int, height: int) -> np.ndarray:
    """samples/nv12_to_rgba.py --range full: the JFIF (full-range BT.601) equations on
    the NV12 frame of the test card, chroma shared by each 2x2 block; alpha 255."""
    from qcom_ext.ext.images import yuv

    frame = yuv.rgb_to_nv12(yuv.test_pattern(width, height), full_range=True).astype(float)
    luma = frame[:height]
    chroma = frame[height:].reshape(height // 2, width // 2, 2) - 128
    u, v = (np.repeat(np.repeat(chroma[..., i], 2, 0), 2, 1) for i in (0, 1))
    rgb = [luma + 1.402 * v, luma - 0.344136 * u - 0.714136 * v, luma + 1.772 * u]
    channels = [np.clip(np.rint(c), 0, 255) for c in rgb] + [np.full_like(luma, 255)]
    return np.stack(channels, -1).astype(np.uint8)


def pipeline_png(width: int, height: int, frames: int) -> np.ndarray:
    """samples/recordable_queue.py: the last frame, by the sample's numpy pipeline."""
    pipeline = sample("recordable_queue")
    image = pipeline.generated_image(width, height)
    gain_q8 = 307  # the sample's contrast 1.2 in 8.8 fixed point
    return pipeline.reference(image, gain_q8, *pipeline.frame_parameters(frames - 1, frames))


def pair_png(width: int, height: int) -> np.ndarray:
    """samples/buffer_from_image.py: the painted pattern, inverted through the buffer."""
    pair = sample("buffer_from_image")
    return pair.inverted(pair.pattern(width, height))


def bicubic_png(width: int, height: int) -> np.ndarray:
    """samples/bicubic.py: the 2x Catmull-Rom upscale of its test image."""
    from qcom_ext.reference.bicubic import upscale2x

    pixels = sample("bicubic").test_image(width, height)
    return np.round(np.clip(upscale2x(pixels), 0, 1) * 255).astype(np.uint8)
