"""NV12 frames and BT.601 colour conversion in numpy: references for kernels, test patterns.

An NV12 frame of ``width x height`` (both even) is one ``uint8`` array of shape
``(height * 3 // 2, width)``: ``height`` rows of luma, then ``height // 2`` rows of
interleaved U, V bytes (one pair per 2x2 pixel block).

>>> rgb = np.full((4, 8, 3), (200, 40, 90), np.uint8)
>>> frame = rgb_to_nv12(rgb)
>>> frame.shape, nv12_planes(frame)[1].shape
((6, 8), (2, 4, 2))
>>> int(nv12_planes(frame)[0][0, 0]), nv12_planes(frame)[1][0, 0].tolist()  # video range
(96, [126, 195])
>>> nv12_to_rgb(frame)[0, 0].tolist()
[200, 39, 89]
"""

from __future__ import annotations

import numpy as np

from qcom_ext.errors import ConfigError

__all__ = ["nv12_frame", "nv12_planes", "nv12_to_rgb", "rgb_to_nv12", "test_pattern"]

KR, KB = 0.299, 0.114  # BT.601
KG = 1.0 - KR - KB


def check_nv12_shape(width: int, height: int) -> None:
    """ConfigError unless ``width x height`` is a valid NV12 frame size."""
    if not all(isinstance(v, (int, np.integer)) and v > 0 for v in (width, height)):
        raise ConfigError(f"NV12 frame {width}x{height}: width and height must be positive ints")
    if width % 2 or height % 2:
        raise ConfigError(
            f"NV12 frame {width}x{height}: width and height must be even (4:2:0 chroma has "
            "one U,V pair per 2x2 pixel block)"
        )


def nv12_planes(frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Views ``(y, uv)`` of an NV12 frame: ``(H, W)`` luma and ``(H/2, W/2, 2)`` chroma."""
    if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8 or frame.ndim != 2:
        raise ConfigError("an NV12 frame is a 2-D uint8 array of shape (height * 3 // 2, width)")
    rows, width = frame.shape
    height = rows * 2 // 3
    if rows != height * 3 // 2 or rows % 3:
        raise ConfigError(f"NV12 frame shape {frame.shape}: rows must be height * 3 // 2")
    check_nv12_shape(width, height)
    return frame[:height], frame[height:].reshape(height // 2, width // 2, 2)


def nv12_frame(y: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """One NV12 frame from a ``(H, W)`` luma plane and ``(H/2, W/2, 2)`` (or ``(H/2, W)``)
    chroma plane."""
    y, uv = np.asarray(y), np.asarray(uv)
    if y.ndim != 2 or y.dtype != np.uint8 or uv.dtype != np.uint8:
        raise ConfigError("NV12 planes are uint8: y (height, width), uv (height/2, width/2, 2)")
    height, width = y.shape
    check_nv12_shape(width, height)
    if uv.size != width * height // 2 or uv.shape[0] != height // 2:
        raise ConfigError(
            f"uv plane shape {uv.shape} does not match a {width}x{height} frame: "
            f"expected ({height // 2}, {width // 2}, 2)"
        )
    return np.concatenate([y, uv.reshape(height // 2, width)])


def _offsets(full_range: bool) -> tuple[float, float, float]:
    """(luma offset, luma scale, chroma scale) from 8-bit code values to [0, 255] RGB units."""
    return (0.0, 1.0, 1.0) if full_range else (16.0, 255.0 / 219.0, 255.0 / 224.0)


def nv12_to_rgb(frame: np.ndarray, *, full_range: bool = False) -> np.ndarray:
    """``(H, W, 3)`` uint8 RGB of an NV12 frame (BT.601, chroma of each 2x2 block, rounded
    to nearest even and saturated): the reference for ``kernels/nv12_to_rgba.cl``."""
    y, uv = nv12_planes(frame)
    offset, luma_scale, chroma_scale = _offsets(full_range)
    chroma = np.repeat(np.repeat(uv, 2, axis=0), 2, axis=1).astype(np.float64)
    luma = (y.astype(np.float64) - offset) * luma_scale
    u = (chroma[..., 0] - 128.0) * chroma_scale
    v = (chroma[..., 1] - 128.0) * chroma_scale
    r = luma + 2 * (1 - KR) * v
    g = luma - 2 * KB * (1 - KB) / KG * u - 2 * KR * (1 - KR) / KG * v
    b = luma + 2 * (1 - KB) * u
    return np.clip(np.rint(np.stack([r, g, b], axis=-1)), 0, 255).astype(np.uint8)


def rgb_to_nv12(rgb: np.ndarray, *, full_range: bool = False) -> np.ndarray:
    """The NV12 frame of an ``(H, W, 3)`` uint8 image (BT.601; chroma averaged per 2x2 block)."""
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ConfigError(f"expected an (height, width, 3) RGB array, got shape {rgb.shape}")
    height, width = rgb.shape[:2]
    check_nv12_shape(width, height)
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    luma = KR * r + KG * g + KB * b
    u = (b - luma) / (2 * (1 - KB))
    v = (r - luma) / (2 * (1 - KR))
    offset, luma_scale, chroma_scale = _offsets(full_range)
    y = luma / luma_scale + offset
    blocks = np.stack([u, v], axis=-1).reshape(height // 2, 2, width // 2, 2, 2).mean(axis=(1, 3))
    uv = blocks / chroma_scale + 128.0
    y8 = np.clip(np.rint(y), 0, 255).astype(np.uint8)
    return nv12_frame(y8, np.clip(np.rint(uv), 0, 255).astype(np.uint8))


def test_pattern(width: int, height: int) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 RGB test card: eight colour bars over a grey ramp, with a disc."""
    y, x = np.mgrid[0:height, 0:width]
    bars = np.array(
        [
            [255, 255, 255],
            [255, 255, 0],
            [0, 255, 255],
            [0, 255, 0],
            [255, 0, 255],
            [255, 0, 0],
            [0, 0, 255],
            [0, 0, 0],
        ],
        np.float64,
    )
    image = bars[np.minimum(x * 8 // max(width, 1), 7)] * 0.75
    lower = y >= (2 * height) // 3
    image[lower] = (x[lower] * 255 // max(width - 1, 1))[:, None]
    disc = (x - width / 2) ** 2 + (y - height / 2) ** 2 < (min(width, height) / 5) ** 2
    image[disc] = [32, 160, 224]
    return image.astype(np.uint8)


test_pattern.__test__ = False  # not a pytest test when imported into test modules
