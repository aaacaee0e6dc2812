"""qcom_ext: Qualcomm Adreno OpenCL vendor extensions from Python, portable everywhere.

>>> import qcom_ext
>>> caps = qcom_ext.probe()
>>> caps.path("cl_qcom_protected_context") in ("native", "unavailable")  # never a fallback
True
>>> {s.tier for s in caps.statuses.values()} <= {"native", "khr", "fallback", "unavailable"}
True
"""

from . import ops
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
from .host_ptr import (
    CACHE_POLICIES,
    ExternalMemory,
    aligned_empty,
    host_buffer,
    import_ahardwarebuffer,
    import_android_native_buffer,
    import_dmabuf,
    import_ion,
    import_memory,
)
from .image_buffer import ImageBuffer, buffer_from_image, image_with_buffer
from .image_info import ImageInfo, query_image_info
from .image_ops import MotionField, block_match_image, box_filter_image, convolve_image
from .images import QcomImage, create_image, parse_image_format, supported_image_formats
from .onchip import onchip_buffer, scrub_onchip
from .planar import Nv12Image, PlanarImage, nv12_image, planar_image
from .probe import probe, probe_all
from .program import build_program
from .recording import Recording
from .sampler import create_sampler
from .subgroups import kernel_sub_group_size
from .tuning import tune

__version__ = "0.1.0"

__all__ = [
    "CACHE_POLICIES",
    "REGISTRY",
    "BuildError",
    "CLError",
    "ConfigError",
    "ContextInfo",
    "DeviceCaps",
    "ExtensionStatus",
    "ExtensionUnavailable",
    "ExternalMemory",
    "HofLimits",
    "ImageBuffer",
    "ImageInfo",
    "LibraryNotFound",
    "Limits",
    "MotionField",
    "NoPlatformError",
    "Nv12Image",
    "OpenCLUnavailable",
    "PlanarImage",
    "QcomExtError",
    "QcomExtWarning",
    "QcomImage",
    "Recording",
    "WeightImage",
    "__version__",
    "aligned_empty",
    "block_match_image",
    "box_filter_image",
    "box_size",
    "buffer_from_image",
    "build_program",
    "context_info",
    "convolve_image",
    "create_context",
    "create_image",
    "create_queue",
    "create_sampler",
    "hof_limits",
    "host_buffer",
    "image_with_buffer",
    "import_ahardwarebuffer",
    "import_android_native_buffer",
    "import_dmabuf",
    "import_ion",
    "import_memory",
    "kernel_sub_group_size",
    "nv12_image",
    "onchip_buffer",
    "ops",
    "parse_image_format",
    "planar_image",
    "probe",
    "probe_all",
    "query_image_info",
    "scrub_onchip",
    "set_perf_hint",
    "supported_image_formats",
    "tune",
]
