"""``qcom-ext selftest``: every extension's computation, on every path a device can take.

For each extension of :data:`qcom_ext.device.extensions.REGISTRY` the selftest runs small
computations (the samples' and tests', see ``checks_*.py``) on the chosen device, on
each path the device can take (native, the Khronos tier, the portable fallback: each
forced with ``probe(device, disabled=...)``), compares every result with a numpy reference and
the paths with each other, and reports errors, times, the paths that could not run and
why. Extensions with no path on the device are listed with the reason (where the
library must refuse, such as a protected context, the refusal itself is checked).

>>> report = run_selftest(only=["bitreverse"], seed=1)
>>> item = report.extension("cl_qcom_bitreverse")
>>> report.ok, item.outcome, [run.path for run in item.runs][-1:]
(True, 'pass', ['fallback'])
"""

from __future__ import annotations

from qcom_ext.tools.selftest import (  # noqa: F401  (each registers its checks)
    checks_accelerated,
    checks_builtins,
    checks_host,
    checks_images,
    checks_matmul,
    checks_memory,
)
from qcom_ext.tools.selftest._registry import Outcome, Skip, coverage
from qcom_ext.tools.selftest._report import (
    CaseResult,
    Comparison,
    DeviceStrings,
    ExtensionReport,
    PathRun,
    SelftestReport,
)
from qcom_ext.tools.selftest._runner import run_selftest, selected

__all__ = [
    "CaseResult",
    "Comparison",
    "DeviceStrings",
    "ExtensionReport",
    "Outcome",
    "PathRun",
    "SelftestReport",
    "Skip",
    "coverage",
    "run_selftest",
    "selected",
]
