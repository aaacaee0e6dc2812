"""qcom_ext: Qualcomm Adreno OpenCL vendor extensions from Python, portable everywhere.

>>> import qcom_ext
>>> caps = qcom_ext.probe()
>>> caps.path("cl_qcom_protected_context") in ("native", "unavailable")  # never a fallback
True
>>> {s.tier for s in caps.statuses.values()} <= {"native", "khr", "fallback", "unavailable"}
True
"""

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
from .image_buffer import ImageBuffer, buffer_from_image, image_with_buffer
from .image_info import ImageInfo, query_image_info
from .onchip import onchip_buffer, scrub_onchip
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
    "ImageBuffer",
    "ImageInfo",
    "LibraryNotFound",
    "Limits",
    "NoPlatformError",
    "OpenCLUnavailable",
    "QcomExtError",
    "QcomExtWarning",
    "Recording",
    "__version__",
    "buffer_from_image",
    "build_program",
    "context_info",
    "create_context",
    "create_queue",
    "image_with_buffer",
    "onchip_buffer",
    "probe",
    "probe_all",
    "query_image_info",
    "scrub_onchip",
    "set_perf_hint",
]
