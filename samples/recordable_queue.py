"""An image pipeline recorded once and replayed per frame (cl_qcom_recordable_queues).

    python samples/recordable_queue.py [--device 0:0] [--frames 12] [--size 640x480]
                                       [--png last.png]

Four kernels of ``kernels/image_pipeline.cl`` (brightness/contrast, 3x3 blur,
threshold, highlight) run on a generated grey image. They are recorded once with
``qcom_ext.Recording``; each frame is one ``replay`` with that frame's brightness,
threshold level and output buffer (two buffers, alternating) as updates. Prints the
path taken (native on Adreno, cl_khr_command_buffer where present, else the replay
loop) and the host time of each replay call, labelled with how that replay ran
(``Recording.last_path``): ``(native)`` the driver replayed the recording;
``(khr_command_buffer)`` the command-buffer was enqueued as recorded; ``(replay)`` the
dispatches were enqueued one by one from the recording, their arguments resolved once.
On the Khronos path every frame here says ``(replay)``: each frame changes arguments,
and changing a recorded command-buffer needs ``cl_khr_command_buffer_mutable_dispatch``,
which no device here has (a replay without changes runs the command-buffer). The first
frame's time includes the driver's first launch of each kernel. The last frame is
checked against numpy, exit status 1 on mismatch. ``--png`` writes the last frame if
Pillow is installed.
"""

from __future__ import annotations

import statistics
import time

import _common
import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir

#: What each ``Recording.last_path`` a frame prints means.
HOW_IT_RAN = {
    "native": "the driver replayed the recording (cl_qcom_recordable_queues)",
    "khr_command_buffer": "the cl_khr_command_buffer was enqueued as recorded",
    "replay": "the dispatches were enqueued one by one from the recording (arguments "
    "resolved once)",
}


def generated_image(width: int, height: int) -> np.ndarray:
    """A gradient with a checkerboard and a bright disc: edges for the blur to soften."""
    y, x = np.mgrid[0:height, 0:width]
    image = (x * 160 // max(width - 1, 1) + y * 60 // max(height - 1, 1)).astype(np.int32)
    image += ((x // 16 + y // 16) % 2) * 30
    disc = (x - width // 2) ** 2 + (y - height // 2) ** 2 < (min(width, height) // 4) ** 2
    image[disc] += 50
    return np.clip(image, 0, 255).astype(np.uint8)


def frame_parameters(frame: int, frames: int) -> tuple[int, int]:
    """(bias, threshold level) of a frame: a brightness fade and a moving threshold."""
    t = frame / max(frames - 1, 1)
    return int(-60 + 120 * t), int(100 + 80 * t)


def reference(image: np.ndarray, gain_q8: int, bias: int, level: int) -> np.ndarray:
    """The pipeline in numpy, with the kernels' integer arithmetic."""
    v = (image.astype(np.int32) * gain_q8 + 128) >> 8
    bright = np.clip(v + bias, 0, 255)
    padded = np.pad(bright, 1, mode="edge")
    h, w = image.shape
    total = sum(padded[dy : dy + h, dx : dx + w] for dy in range(3) for dx in range(3))
    blurred = (total + 4) // 9
    mask = blurred > level
    return np.where(mask, blurred, blurred >> 2).astype(np.uint8)


def main() -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT, multiples of 16x8")
    parser.add_argument("--png", help="write the last frame here (needs Pillow)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    if width % 16 or height % 8 or args.frames < 1:
        parser.error("--size must be multiples of 16x8 and --frames at least 1")

    caps = _common.probe_device(args)
    status = _common.report(caps, "cl_qcom_recordable_queues")
    ctx = cl.Context([caps.device()])
    queue = cl.CommandQueue(ctx)
    program = cl.Program(ctx, (kernels_dir() / "image_pipeline.cl").read_text()).build()
    k = {
        name: cl.Kernel(program, name)
        for name in ("brightness_contrast", "box_blur3", "threshold", "highlight")
    }

    image = generated_image(width, height)
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=image)
    bright, blurred, mask = (cl.Buffer(ctx, mf.READ_WRITE, image.nbytes) for _ in range(3))
    outputs = [cl.Buffer(ctx, mf.WRITE_ONLY, image.nbytes) for _ in range(2)]
    n, gain_q8 = width * height, 307  # contrast 1.2 in 8.8 fixed point

    with qcom_ext.Recording(queue) as rec:
        rec.enqueue(
            k["brightness_contrast"], (n,), (64,), src, bright, np.int32(gain_q8), np.int32(0)
        )
        rec.enqueue(
            k["box_blur3"],
            (width, height),
            (16, 8),
            bright,
            blurred,
            np.int32(width),
            np.int32(height),
        )
        rec.enqueue(k["threshold"], (n,), (64,), blurred, mask, np.uint8(128))
        rec.enqueue(k["highlight"], (n,), (64,), blurred, mask, outputs[0])
    print(f"Recording path {rec.path} ({status.reason}); {len(rec)} dispatches")

    host_us, ran_as = [], set()
    for frame in range(args.frames):
        bias, level = frame_parameters(frame, args.frames)
        start = time.perf_counter()
        event = rec.replay(queue, args={(0, 3): bias, (2, 2): level, (3, 2): outputs[frame % 2]})
        host = time.perf_counter() - start
        event.wait()
        done = time.perf_counter() - start
        host_us.append(host * 1e6)
        ran_as.add(rec.last_path)
        print(
            f"frame {frame:3d}: bias {bias:+4d} level {level:3d}  replay call "
            f"{host * 1e6:7.1f} µs ({rec.last_path}), frame done {done * 1e3:7.2f} ms"
        )
    for how in sorted(ran_as):
        print(f"({how}): {HOW_IT_RAN[how]}")
    if rec.path == "khr_command_buffer" and "replay" in ran_as:
        print(
            "  each frame changes arguments, which a recorded command-buffer takes only "
            "through cl_khr_command_buffer_mutable_dispatch (absent here)"
        )
    median = statistics.median(host_us)
    print(
        f"median replay call {median:.1f} µs per frame ({median / len(rec):.1f} µs per dispatch)"
    )

    last = np.empty_like(image)
    cl.enqueue_copy(queue, last, outputs[(args.frames - 1) % 2])
    expected = reference(image, gain_q8, *frame_parameters(args.frames - 1, args.frames))
    ok = np.array_equal(last, expected)
    rec.release()
    if args.png:
        try:
            from PIL import Image
        except ImportError:
            print("Pillow is not installed: no PNG written")
        else:
            Image.fromarray(last).save(args.png)
            print(f"wrote {args.png}")
    print("OK" if ok else f"MISMATCH in {np.count_nonzero(last != expected)} pixels")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
