"""Motion vectors between two frames with qcom_block_match_sadf (block matching).

    python samples/block_match.py [--device 0:0] [--size 320x240] [--radius 4]
                                  [--png motion.png]

Generates two frames of a scene: a textured background panning by (1, 0) and a
textured square moving by (3, -2). qcom_ext.block_match_image compares every 8x8 block
of the second frame with the first frame at all displacements up to --radius, with the
SAD builtin (natively on Adreno, the portable kernels elsewhere), and keeps the best.
The motion field is checked against an exhaustive numpy search (pixel values are k/256,
so sums are exact and the vectors must be identical) and against the known motions;
exit status 1 on mismatch. ``--png`` writes frame 2 with an arrow per block (twice
the motion, ending at the block centre), and the
field as a colour map (hue = direction, brightness = length), side by side (needs Pillow).
"""

from __future__ import annotations

import colorsys

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext.ext.accelerated.whole_image import rgba_image
from qcom_ext.reference import accelerated as accelerated_reference

BLOCK = (8, 8)
BACKGROUND, OBJECT = (1, 0), (3, -2)
ARROW_SCALE = 2  # arrows are drawn at twice the motion, ending (yellow) at the block centre


def texture(height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """Blocky random texture in steps of 1/256 (sums stay exact in float32)."""
    coarse = rng.integers(0, 256, (height // 4 + 2, width // 4 + 2))
    fine = rng.integers(0, 64, (height, width))
    base = np.kron(coarse, np.ones((4, 4), int))[:height, :width]
    return ((base * 3 + fine) // 4) / 256


def frames(width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(frame 1, frame 2, object mask of frame 2): frame 2 pixel p shows frame-1 content
    from p - motion, so the best match for a block of frame 2 is at displacement -motion."""
    rng = np.random.default_rng(1)
    background = texture(height + 16, width + 16, rng)
    sprite = 1 - texture(height // 3, height // 3, rng) / 2
    side = sprite.shape[0]

    def render(t: int) -> tuple[np.ndarray, np.ndarray]:
        bx, by = BACKGROUND[0] * t, BACKGROUND[1] * t
        grey = background[8 - by : 8 - by + height, 8 - bx : 8 - bx + width].copy()
        ox, oy = width // 3 + OBJECT[0] * t, height // 3 + OBJECT[1] * t
        grey[oy : oy + side, ox : ox + side] = sprite
        mask = np.zeros((height, width), bool)
        mask[oy : oy + side, ox : ox + side] = True
        return grey, mask

    (first, _), (second, mask) = render(0), render(1)
    rgba = [np.stack([g, g, g, np.ones_like(g)], -1).astype(np.float32) for g in (first, second)]
    return rgba[0], rgba[1], mask


def colour_map(vectors: np.ndarray, radius: int) -> np.ndarray:
    """Hue = direction, value = length / radius, one block per vector."""
    out = np.zeros((*vectors.shape[:2], 3))
    for by in range(vectors.shape[0]):
        for bx in range(vectors.shape[1]):
            dx, dy = vectors[by, bx]
            hue = (np.arctan2(dy, dx) / (2 * np.pi)) % 1.0
            out[by, bx] = colorsys.hsv_to_rgb(hue, 1.0, min(1.0, np.hypot(dx, dy) / radius))
    return out


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--size", default="320x240", help="WIDTHxHEIGHT (multiples of 8)")
    parser.add_argument("--radius", type=int, default=4, help="search radius in pixels")
    parser.add_argument("--png", help="write arrows | colour map here (needs Pillow)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    if width % 8 or height % 8 or width < 64 or height < 48 or args.radius < 3:
        parser.error("--size must be multiples of 8, at least 64x48; --radius at least 3")
    caps = _common.probe_device(args)
    _common.report(caps, "cl_qcom_accelerated_image_ops")

    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    first, second, mask = frames(width, height)

    def search():
        field = qcom_ext.block_match_image(
            queue,
            rgba_image(ctx, second),
            rgba_image(ctx, first),
            region=BLOCK,
            radius=args.radius,
        )
        return field.get(queue)

    timing, (vectors, costs) = _common.timed(search)
    expected, expected_costs = accelerated_reference.block_match_search(
        second, first, BLOCK, args.radius
    )
    same = np.array_equal(vectors, expected) and np.array_equal(costs, expected_costs)
    # Blocks wholly inside the object, or wholly background and away from the border,
    # must show their motion (as the displacement back to frame 1).
    block_mask = mask.reshape(height // 8, 8, width // 8, 8).transpose(0, 2, 1, 3)
    inside = block_mask.all(axis=(2, 3))
    outside = ~block_mask.any(axis=(2, 3))
    outside[[0, -1], :] = outside[:, [0, -1]] = False
    on_object = (vectors[inside] == (-OBJECT[0], -OBJECT[1])).all(axis=-1).mean()
    on_background = (vectors[outside] == (-BACKGROUND[0], -BACKGROUND[1])).all(axis=-1).mean()
    print(
        f"{vectors.shape[1]}x{vectors.shape[0]} blocks of 8x8, radius {args.radius}: "
        f"{timing}; identical to numpy: {same}"
    )
    print(
        f"object blocks moving {OBJECT}: {on_object:.0%}; background blocks moving "
        f"{BACKGROUND}: {on_background:.0%}"
    )
    ok = same and on_object == 1.0 and on_background >= 0.95
    if args.png:
        try:
            from PIL import Image, ImageDraw
        except ImportError:
            print("Pillow is not installed: no PNG written")
        else:
            grey = (second[..., 0] * 100).astype(np.uint8)  # dimmed: the arrows stand out
            arrows = Image.fromarray(grey).convert("RGB")
            draw = ImageDraw.Draw(arrows)
            for by in range(vectors.shape[0]):
                for bx in range(vectors.shape[1]):
                    dx, dy = -ARROW_SCALE * vectors[by, bx]  # the motion, frame 1 -> 2
                    cx, cy = bx * 8 + 4, by * 8 + 4
                    draw.line([(cx - dx, cy - dy), (cx, cy)], fill=(255, 60, 60))
                    draw.rectangle([(cx - 1, cy - 1), (cx, cy)], fill=(255, 255, 0))
            colours = colour_map(-vectors, args.radius)
            big = np.kron(colours, np.ones((8, 8, 1)))
            chart = Image.fromarray((big * 255).astype(np.uint8))
            panel = Image.new("RGB", (width * 2, height))
            panel.paste(arrows, (0, 0))
            panel.paste(chart, (width, 0))
            panel.save(args.png)
            print(f"wrote {args.png}")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
