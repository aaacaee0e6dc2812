"""qcom_ext: Qualcomm Adreno OpenCL vendor extensions from Python, portable everywhere.

>>> import qcom_ext
>>> caps = qcom_ext.probe()
>>> caps.path("cl_qcom_protected_context") in ("native", "unavailable")  # never a fallback
True
>>> {s.tier for s in caps.statuses.values()} <= {"native", "khr", "fallback", "unavailable"}
True
"""

from . import ops
from .caps import DeviceCaps, Limits
from .context import ContextInfo, context_info, create_context, create_queue, set_perf_hint
from .errors import (
    BuildError,
    CLError,
    ConfigError,
    ExtensionUnavailable,
    LibraryNotFound,
    NoPlatformError,
    OpenCLUnavailable,
    QcomExtError,
    QcomExtWarning,
)
from .extensions import REGISTRY, ExtensionStatus
from .probe import probe, probe_all
from .program import build_program
from .recording import Recording
from .tuning import tune

__version__ = "0.1.0"

__all__ = [
    "REGISTRY",
    "BuildError",
    "CLError",
    "ConfigError",
    "ContextInfo",
    "DeviceCaps",
    "ExtensionStatus",
    "ExtensionUnavailable",
    "LibraryNotFound",
    "Limits",
    "NoPlatformError",
    "OpenCLUnavailable",
    "QcomExtError",
    "QcomExtWarning",
    "Recording",
    "__version__",
    "build_program",
    "context_info",
    "create_context",
    "create_queue",
    "ops",
    "probe",
    "probe_all",
    "set_perf_hint",
    "tune",
]
