"""qcom_ext: Qualcomm Adreno OpenCL vendor extensions from Python, portable everywhere.

>>> import qcom_ext
>>> caps = qcom_ext.probe()
>>> caps.path("cl_qcom_protected_context") in ("native", "unavailable")  # never a fallback
True
>>> {s.tier for s in caps.statuses.values()} <= {"native", "khr", "fallback", "unavailable"}
True

The names below are loaded when first used (PEP 562), so ``import qcom_ext`` costs
almost nothing; ``docs/ARCHITECTURE.md`` maps the layers they come from.
"""

# Only public names here, and private ones: no ``from __future__ import annotations``
# (it binds ``annotations``), modules and typing names under a private alias.
import typing as _typing
from importlib import import_module as _import_module

from qcom_ext import _public_modules, _trials
from qcom_ext._version import __version__

_public_modules.install()


def _run_trials(caps: _typing.Any) -> _typing.Any:
    """``probe(verify=True)``'s trials: the tools layer runs them, loaded on first use."""
    from qcom_ext.tools.verify.runner import verify

    return verify(caps)


_trials.install(_run_trials)

#: public name -> the module that defines it; an extension's host API is named by its
#: registry entry instead (``Extension.public``), read when a name is not found here
_EXPORTS: dict[str, str] = {
    # device layer
    "DeviceCaps": "qcom_ext.device.caps",
    "Limits": "qcom_ext.device.caps",
    "REGISTRY": "qcom_ext.device.extensions",
    "ExtensionStatus": "qcom_ext.device.extensions",
    "probe": "qcom_ext.device.probe",
    "probe_all": "qcom_ext.device.probe",
    "doctor": "qcom_ext.device.doctor",
    "DoctorReport": "qcom_ext.device.doctor",
    "CompilerVersion": "qcom_ext.device.compiler_version",
    "Quirk": "qcom_ext.device.quirks",
    # errors
    **dict.fromkeys(
        (
            "BufferTooLargeError",
            "BuildError",
            "CLError",
            "CompilerCrashError",
            "ConfigError",
            "DriverCrashError",
            "DriverTimeoutError",
            "ExtensionUnavailable",
            "LibraryMismatch",
            "LibraryNotFound",
            "NoPlatformError",
            "OpenCLUnavailable",
            "QcomExtError",
            "QcomExtWarning",
            "RegisterSpillWarning",
        ),
        "qcom_ext.errors",
    ),
    # context and hints
    **dict.fromkeys(
        ("ContextInfo", "context_info", "create_context", "create_queue", "set_perf_hint"),
        "qcom_ext.ext.context",
    ),
    # memory objects
    **dict.fromkeys(
        (
            "CACHE_POLICIES",
            "ExternalMemory",
            "aligned_empty",
            "host_buffer",
            "import_ahardwarebuffer",
            "import_android_native_buffer",
            "import_dmabuf",
            "import_ion",
            "import_memory",
        ),
        "qcom_ext.ext.memory.host_ptr",
    ),
    "acquire_external": "qcom_ext.ext.memory.khr_external",
    "release_external": "qcom_ext.ext.memory.khr_external",
    # images
    **dict.fromkeys(
        ("QcomImage", "create_image", "parse_image_format", "supported_image_formats"),
        "qcom_ext.ext.images.image",
    ),
    # programs
    "build_program": "qcom_ext.ext.program.build",
    "kernel_sub_group_size": "qcom_ext.ext.program.subgroups",
    "KernelInfo": "qcom_ext.ext.program.kernel_info",
    "kernel_info": "qcom_ext.ext.program.kernel_info",
    # ops
    "tune": "qcom_ext.ops.tuning",
}
_SUBMODULES = {"ops": "qcom_ext.ops"}


def _public_names() -> dict[str, str]:
    """Every public name -> its module: ``_EXPORTS`` and the registry's (which it loads)."""
    registry = _import_module("qcom_ext.device.registry")
    return {**_EXPORTS, **registry.public_names()}


def __getattr__(name: str) -> _typing.Any:
    """Load a public name from its module on first use, then keep it here.

    ``__all__`` and the extensions' names read the registry, so ``import qcom_ext``
    does not.
    """
    if name == "__all__":
        value: _typing.Any = sorted([*_public_names(), *_SUBMODULES, "__version__"])
    elif name in _SUBMODULES:
        value = _import_module(_SUBMODULES[name])
    else:
        module = _EXPORTS.get(name)
        if module is None and not name.startswith("__"):
            module = _public_names().get(name)
        if module is None:
            raise AttributeError(f"module 'qcom_ext' has no attribute {name!r}")
        value = getattr(_import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only (``__all__``): what was loaded or is private is not API."""
    return list(globals().get("__all__") or __getattr__("__all__"))


if _typing.TYPE_CHECKING:  # static checkers and IDEs see the eager imports
    from qcom_ext import ops
    from qcom_ext.device.caps import DeviceCaps, Limits
    from qcom_ext.device.compiler_version import CompilerVersion
    from qcom_ext.device.doctor import DoctorReport, doctor
    from qcom_ext.device.extensions import REGISTRY, ExtensionStatus
    from qcom_ext.device.probe import probe, probe_all
    from qcom_ext.device.quirks import Quirk
    from qcom_ext.errors import (
        BufferTooLargeError,
        BuildError,
        CLError,
        CompilerCrashError,
        ConfigError,
        DriverCrashError,
        DriverTimeoutError,
        ExtensionUnavailable,
        LibraryMismatch,
        LibraryNotFound,
        NoPlatformError,
        OpenCLUnavailable,
        QcomExtError,
        QcomExtWarning,
        RegisterSpillWarning,
    )
    from qcom_ext.ext.accelerated.support import (
        AcceleratedLimits,
        HofLimits,
        accelerated_limits,
        hof_limits,
    )
    from qcom_ext.ext.accelerated.weights import WeightImage, box_size
    from qcom_ext.ext.accelerated.whole_image import (
        MotionField,
        block_match_image,
        box_filter_image,
        convolve_image,
    )
    from qcom_ext.ext.context import (
        ContextInfo,
        context_info,
        create_context,
        create_queue,
        set_perf_hint,
    )
    from qcom_ext.ext.images.image import (
        QcomImage,
        create_image,
        parse_image_format,
        supported_image_formats,
    )
    from qcom_ext.ext.images.image_buffer import ImageBuffer, buffer_from_image, image_with_buffer
    from qcom_ext.ext.images.info import ImageInfo, query_image_info
    from qcom_ext.ext.images.planar import Nv12Image, PlanarImage, nv12_image, planar_image
    from qcom_ext.ext.images.sampler import create_sampler
    from qcom_ext.ext.images.upscale import upscale2x_image
    from qcom_ext.ext.memory.host_ptr import (
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
    from qcom_ext.ext.memory.khr_external import acquire_external, release_external
    from qcom_ext.ext.memory.large_buffer import (
        allocate_chunked,
        create_large_buffer,
        large_buffer_limit,
    )
    from qcom_ext.ext.memory.onchip import onchip_buffer, scrub_onchip
    from qcom_ext.ext.program.build import build_program
    from qcom_ext.ext.program.kernel_info import KernelInfo, kernel_info
    from qcom_ext.ext.program.subgroups import kernel_sub_group_size
    from qcom_ext.ext.recording import Recording
    from qcom_ext.ops.tuning import tune
