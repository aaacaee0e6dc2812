"""GPU memory across create/use/drop cycles of every qcom_ext API that builds or caches.

    python tests/gpu_memory_cycles.py [--cycles 50] [--device nvidia] [--plain] [--json out]

Each cycle runs, on a fresh ``pyopencl.Context`` per API, what
``tests/test_context_release.py`` runs (the accelerated image ops, the conv layers, the
matmul layers, samplers, build_program and tune, recordings, PointOps, image-buffer
pairs, hinted contexts and queues), drops everything and collects. After each cycle it
prints the driver's used GPU memory (``nvidia-smi --query-gpu=memory.used``, MiB, the
first GPU) where ``nvidia-smi`` exists, how many of the cycle's contexts were still
referenced after the drop (read through a reference of the script's own, as
``tests/test_context_release.py`` does) and the contexts whose qcom_ext cache entries
are alive. Released contexts keep all three flat; before the per-context cache, NVIDIA's
OpenCL grew by about 524 MiB per cycle. A cycle that hangs for 300 s dumps every
thread's stack and exits.

``--plain`` runs plain pyopencl (a program, a kernel run, an image, a sampler) instead:
the driver's own behaviour, for comparison.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # test_context_release's uses

import pyopencl as cl

import qcom_ext
from qcom_ext import _context_cache
from qcom_ext.binding.lib import driver, ffi


def used_mib() -> int | None:
    """Used memory of the first GPU (MiB) as nvidia-smi reports it, or None."""
    if shutil.which("nvidia-smi") is None:
        return None
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return int(out[0]) if out and out[0].isdigit() else None


def uses(device_caps: Any, plain: bool) -> dict[str, tuple[Any, Any]]:
    """name -> (make a context, use it) for every API the device can run."""
    import test_context_release as release

    device = device_caps.device()
    fresh = lambda: cl.Context([device])  # noqa: E731
    if plain:
        return {"plain_pyopencl": (fresh, release.plain_pyopencl)}
    found = {}
    for name, (use, needs_images) in release.USES.items():
        if needs_images and not device_caps.image_support:
            continue
        make = release.hinted_context(device) if name == "hinted_queues" else fresh
        found[name] = (make, use)
    return found


def cycle(work: dict[str, tuple[Any, Any]], seconds: dict[str, float]) -> int:
    """One create/use/drop round of every API; the contexts still referenced after the
    drop (read through a reference of our own, as tests/test_context_release.py does:
    no destructor callback, which would need the GIL on a driver thread)."""
    import test_context_release as release

    kept = 0
    for name, (make, use) in work.items():
        start = time.perf_counter()
        context = make()
        handle = ffi.cast("cl_context", int(context.int_ptr))
        driver.clRetainContext(handle)  # our own reference, to read the count after the drop
        try:
            use(context)
            del context
            kept += release.settled(int(ffi.cast("intptr_t", handle)), 1) > 1
        finally:
            driver.clReleaseContext(handle)
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
    gc.collect()
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--device", help="as PYOPENCL_CTX: '0:0', 'nvidia', ...")
    parser.add_argument("--plain", action="store_true", help="plain pyopencl only")
    parser.add_argument("--json", help="write the per-cycle rows here")
    args = parser.parse_args()
    if args.device:
        os.environ["PYOPENCL_CTX"] = args.device
    warnings.simplefilter("ignore")
    caps = qcom_ext.probe()
    work = uses(caps, args.plain)
    faulthandler.enable()
    totals: dict[str, float] = {}
    before = used_mib()
    print(f"{caps.label} ({caps.device_name.strip()}), driver {caps.driver_version}")
    print(f"APIs per cycle: {', '.join(work)}; GPU memory used before: {before} MiB")
    print("cycle  seconds  gpu_used_MiB  contexts_made  kept_this_cycle  cached_contexts")
    rows = []
    for i in range(1, args.cycles + 1):
        faulthandler.dump_traceback_later(300, exit=True)  # a hung driver call: every stack
        start = time.perf_counter()
        alive = cycle(work, totals)
        seconds = time.perf_counter() - start
        faulthandler.cancel_dump_traceback_later()
        made = i * len(work)
        row = {
            "cycle": i,
            "seconds": round(seconds, 3),
            "gpu_used_mib": used_mib(),
            "contexts_made": made,
            "contexts_kept": alive,
            "cached_contexts": len(_context_cache.live_handles()),
        }
        rows.append(row)
        print(
            f"{i:5d}  {seconds:7.2f}  {row['gpu_used_mib']!s:>12}  {made:13d}  "
            f"{alive:15d}  {row['cached_contexts']:15d}",
            flush=True,
        )
    print("seconds per API over all cycles:", {k: round(v, 2) for k, v in totals.items()})
    if args.json:
        summary = {"device": caps.label, "before_mib": before, "apis": list(work), "rows": rows}
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
