"""The gather group's torch row: ``torch.nn.functional.avg_pool2d(x, 2)`` of a
(1, 4, H, W) channels-last float32 CUDA tensor, the same bytes as the wheel's
``gather_downscale`` (:mod:`qcom_ext.tools.bench.cases_gather`), only where torch with
CUDA imports.

    python -m benchmarks gather --device nvidia
"""

from __future__ import annotations

import importlib.util
from typing import Any

import qcom_ext
from qcom_ext.tools.bench import cases_gather as gather
from qcom_ext.tools.bench._case import Case

__all__ = ["CASES", "run_torch", "setup_torch", "torch_cuda_available"]

NAME = "torch_avg_pool2d"


def torch_cuda_available() -> bool:
    """torch imports and sees a CUDA device (torch is imported only if installed)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def setup_torch(caps: qcom_ext.DeviceCaps) -> dict[str, Any]:
    import torch

    width, height = gather.image_size()
    data = torch.from_numpy(gather.source_image(width, height)).permute(2, 0, 1).unsqueeze(0)
    x = data.to("cuda").contiguous(memory_format=torch.channels_last)
    torch.cuda.synchronize()
    return {"torch": torch, "x": x, "pool": torch.nn.functional.avg_pool2d}


def run_torch(state: dict[str, Any]) -> None:
    pool, x = state["pool"], state["x"]
    for _ in range(gather.REPEATS):
        state["y"] = pool(x, 2)
    state["torch"].cuda.synchronize()


def _work(state: Any) -> dict[str, int]:
    return {"bytes": gather.bytes_moved(NAME, *gather.image_size()) * gather.REPEATS}


CASES = (
    [
        Case(
            NAME,
            "gather",
            setup_torch,
            run_torch,
            note=f"{gather.REPEATS} x torch avg_pool2d(x, 2), (1, 4, H, W) "
            "channels-last float32 on CUDA: 20 B per input pixel",
            work=_work,
        )
    ]
    if torch_cuda_available()
    else []
)
