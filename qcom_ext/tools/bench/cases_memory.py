"""Memory-object cases: image/buffer hand-offs, layout queries, on-chip scratch.

    python -m qcom_ext.tools.bench.run memory_pair memory_layout memory_onchip --device 0:0

Group ``memory_pair`` (one 1920x1080 RGBA8 image, one hand-off image -> buffer -> image
per run, then ``queue.finish()``):

* ``raw_copy_handoff`` (baseline): ``cl.enqueue_copy`` image -> buffer -> image;
* ``pair_sync_handoff``: ``ImageBuffer.sync_to_buffer`` + ``sync_to_image`` of an
  ``image_with_buffer`` pair on the device's path (copies on the fallback, nothing when
  the views alias: natively or with cl_khr_image2d_from_buffer);
* ``host_staged_handoff``: the hand-off without any of this, through host memory.

Group ``memory_layout`` (the layout of a 1920x1080 RGBA8 image):

* ``image_create_pitch`` (baseline): create the image, read ``CL_IMAGE_ROW_PITCH``;
* ``query_image_info``: ``qcom_ext.query_image_info``, nothing allocated.

Group ``memory_onchip`` (a two-kernel Recording over 1M ints, one replay per run):

* ``global_scratch_replay`` (baseline): the intermediate in an ordinary buffer;
* ``onchip_scratch_replay``: the intermediate in ``qcom_ext.onchip_buffer`` (GMEM on
  Adreno, the same global memory elsewhere: the ratio shows qcom_ext adds nothing).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

import qcom_ext
from qcom_ext._resources import kernels_dir

try:  # the runner's case type (qcom_ext/tools/bench/_case.py); plain dicts without it
    from qcom_ext.tools.bench._case import Case
except ImportError:
    Case = None

WIDTH, HEIGHT = 1920, 1080
ELEMENTS = 1 << 20
RGBA8 = ("RGBA", "UNSIGNED_INT8")
#: Bytes a call reads and writes (the runner's GB/s; ``--summary``'s share of the buffer
#: copy): a hand-off copies the image twice; a replay's two kernels each read and write
#: 1M ints (the intermediate counted as global memory in both cases).
HANDOFF_BYTES = 2 * 2 * WIDTH * HEIGHT * 4
REPLAY_BYTES = 2 * 2 * ELEMENTS * 4


def _queue(caps: qcom_ext.DeviceCaps) -> tuple[cl.Context, cl.CommandQueue]:
    context = cl.Context([caps.device()])
    return context, cl.CommandQueue(context)


def setup_pair(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    context, queue = _queue(caps)
    pair = qcom_ext.image_with_buffer(context, (WIDTH, HEIGHT), RGBA8)
    pixels = np.random.default_rng(0).integers(0, 256, (HEIGHT, WIDTH, 4), dtype=np.uint8)
    cl.enqueue_copy(queue, pair.image, pixels, origin=(0, 0), region=(WIDTH, HEIGHT))
    queue.finish()
    return {
        "context": context,
        "queue": queue,
        "pair": pair,
        "pixels": pixels,
        "host": np.empty_like(pixels),
    }


def setup_raw(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    state = setup_pair(caps)
    size = WIDTH * HEIGHT * 4
    state["buffer"] = cl.Buffer(state["context"], cl.mem_flags.READ_WRITE, size)
    return state


def run_raw_copy(state: dict[str, Any]) -> None:
    queue, image, buffer = state["queue"], state["pair"].image, state["buffer"]
    cl.enqueue_copy(queue, buffer, image, offset=0, origin=(0, 0), region=(WIDTH, HEIGHT))
    cl.enqueue_copy(queue, image, buffer, offset=0, origin=(0, 0), region=(WIDTH, HEIGHT))
    queue.finish()


def run_pair_sync(state: dict[str, Any]) -> None:
    queue, pair = state["queue"], state["pair"]
    pair.sync_to_buffer(queue)
    pair.sync_to_image(queue)
    queue.finish()


def run_host_staged(state: dict[str, Any]) -> None:
    queue, pair, host = state["queue"], state["pair"], state["host"]
    cl.enqueue_copy(queue, host, pair.image, origin=(0, 0), region=(WIDTH, HEIGHT))
    pair.write_buffer(queue, host)
    host = pair.read_buffer(queue)
    cl.enqueue_copy(queue, pair.image, host, origin=(0, 0), region=(WIDTH, HEIGHT))
    queue.finish()


def setup_layout(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    context, _ = _queue(caps)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
    return {"context": context, "device": caps.device(), "format": fmt}


def run_image_create_pitch(state: dict[str, Any]) -> int:
    image = cl.create_image(
        state["context"], cl.mem_flags.READ_ONLY, state["format"], (WIDTH, HEIGHT)
    )
    pitch = image.row_pitch
    image.release()
    return pitch


def run_query_image_info(state: dict[str, Any]) -> int:
    return qcom_ext.query_image_info(state["device"], state["format"], (WIDTH, HEIGHT)).row_pitch


def _setup_onchip(caps: qcom_ext.DeviceCaps, onchip: bool) -> dict[str, Any]:
    context, queue = _queue(caps)
    program = qcom_ext.build_program(context, (kernels_dir() / "onchip.cl").read_text())
    src_host = np.arange(ELEMENTS, dtype=np.int32) % 1000
    mf = cl.mem_flags
    src = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src_host)
    dst = cl.Buffer(context, mf.WRITE_ONLY, src_host.nbytes)
    if onchip:
        staged = qcom_ext.onchip_buffer(context, src_host.nbytes)
    else:
        staged = cl.Buffer(context, mf.READ_WRITE, src_host.nbytes)
    rec = qcom_ext.Recording(queue)
    with rec:
        rec.enqueue(
            cl.Kernel(program, "scale_bias"),
            (ELEMENTS,),
            None,
            src,
            staged,
            np.int32(3),
            np.int32(-5),
        )
        rec.enqueue(
            cl.Kernel(program, "smooth3"), (ELEMENTS,), None, staged, dst, np.int32(ELEMENTS)
        )
    return {"queue": queue, "recording": rec, "dst": dst, "src": src_host, "staged": staged}


def setup_global_scratch(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return _setup_onchip(caps, onchip=False)


def setup_onchip_scratch(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    return _setup_onchip(caps, onchip=True)


def run_scratch_replay(state: dict[str, Any]) -> None:
    state["recording"].replay(state["queue"])
    state["queue"].finish()


_SPECS = [
    {
        "name": "raw_copy_handoff",
        "group": "memory_pair",
        "setup": setup_raw,
        "run": run_raw_copy,
        "baseline": True,
        "note": "enqueue_copy image -> buffer -> image, 1920x1080 RGBA8",
        "work": {"bytes": HANDOFF_BYTES},
    },
    {
        "name": "pair_sync_handoff",
        "group": "memory_pair",
        "setup": setup_pair,
        "run": run_pair_sync,
        "baseline": False,
        "note": "image_with_buffer pair: sync_to_buffer + sync_to_image (device's path)",
    },
    {
        "name": "host_staged_handoff",
        "group": "memory_pair",
        "setup": setup_pair,
        "run": run_host_staged,
        "baseline": False,
        "note": "image -> host -> buffer -> host -> image",
    },
    {
        "name": "image_create_pitch",
        "group": "memory_layout",
        "setup": setup_layout,
        "run": run_image_create_pitch,
        "baseline": True,
        "note": "create a 1920x1080 RGBA8 image, read CL_IMAGE_ROW_PITCH, release",
    },
    {
        "name": "query_image_info",
        "group": "memory_layout",
        "setup": setup_layout,
        "run": run_query_image_info,
        "baseline": False,
        "note": "qcom_ext.query_image_info, nothing allocated (device's path)",
    },
    {
        "name": "global_scratch_replay",
        "group": "memory_onchip",
        "setup": setup_global_scratch,
        "run": run_scratch_replay,
        "baseline": True,
        "note": "2-kernel Recording replay, 1M ints, intermediate in a global buffer",
        "work": {"bytes": REPLAY_BYTES},
    },
    {
        "name": "onchip_scratch_replay",
        "group": "memory_onchip",
        "setup": setup_onchip_scratch,
        "run": run_scratch_replay,
        "baseline": False,
        "note": "the same, intermediate in qcom_ext.onchip_buffer (device's path)",
        "work": {"bytes": REPLAY_BYTES},
    },
]

CASES: list[Any] = [Case(**spec) if Case else spec for spec in _SPECS]
