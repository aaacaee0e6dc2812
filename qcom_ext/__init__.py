"""qcom_ext: Qualcomm Adreno OpenCL vendor extensions from Python, portable everywhere.

>>> import qcom_ext
>>> caps = qcom_ext.probe()
>>> caps.path("cl_qcom_protected_context") in ("native", "unavailable")  # never a fallback
True
>>> {s.tier for s in caps.statuses.values()} <= {"native", "khr", "fallback", "unavailable"}
True
"""

from .accelerated import HofLimits, WeightImage, box_size, hof_limits
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
from .image_ops import MotionField, block_match_image, box_filter_image, convolve_image
from .probe import probe, probe_all
from .program import build_program
from .recording import Recording

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
    "HofLimits",
    "LibraryNotFound",
    "Limits",
    "MotionField",
    "NoPlatformError",
    "OpenCLUnavailable",
    "QcomExtError",
    "QcomExtWarning",
    "Recording",
    "WeightImage",
    "__version__",
    "block_match_image",
    "box_filter_image",
    "box_size",
    "build_program",
    "context_info",
    "convolve_image",
    "create_context",
    "create_queue",
    "hof_limits",
    "probe",
    "probe_all",
    "set_perf_hint",
]
