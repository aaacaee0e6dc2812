"""The registry: every ``cl_qcom_*`` extension qcom_ext knows, and what each needs.

One :class:`Extension` per extension: its section of the reference, which side it lives
on, its Khronos equivalents (in order of preference), what its portable fallback does
(or why it has none), the device limits its paths depend on (:class:`LimitQuery`),
from which :class:`~qcom_ext.device.caps.Limits` and the probe's queries are derived,
and the names of its host API that ``qcom_ext`` makes public (:func:`public_names`).
The rule that picks a path from these facts is :func:`qcom_ext.device.extensions.resolve`.

>>> REGISTRY["cl_qcom_onchip_global_memory"].limits[0].field
'onchip_global_mem_size'
>>> REGISTRY["cl_qcom_reqd_sub_group_size"].limits[0].needs  # a Khronos tier's limit
'cl_intel_required_subgroup_size'
>>> TIER_BASES[REGISTRY["cl_qcom_dmabuf_host_ptr"].khronos[0]]  # a tier needing its base
'cl_khr_external_memory'
>>> public_names()["onchip_buffer"]  # qcom_ext.onchip_buffer: its entry's public name
'qcom_ext.ext.memory.onchip'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = [
    "READERS",
    "REGISTRY",
    "TIER_BASES",
    "Extension",
    "LimitQuery",
    "khronos_names",
    "public_names",
]

#: How the probe reads a limit: one ``cl_uint``/``size_t`` per token (a tuple when there
#: are several), a ``size_t`` list, or the CLML interface query (no token).
READERS = ("uint", "sizes", "clml")


@dataclass(frozen=True)
class LimitQuery:
    """A device limit a path depends on: the ``Limits`` field it fills, the
    ``clGetDeviceInfo`` tokens the probe asks, and when it asks.

    ``needs`` is what the device must have for the query to be made: an extension it
    advertises (``""``, the default, means the extension declaring the query; a Khronos
    tier's limits name the tier), ``"images"`` (``CL_DEVICE_IMAGE_SUPPORT``) or None
    (every device). A failing query of an advertised extension is reported in
    ``DeviceCaps.problems``; ``reader`` is one of :data:`READERS`.
    """

    field: str
    tokens: tuple[str, ...] = ()
    needs: str | None = ""
    reader: str = "uint"

    def __post_init__(self) -> None:
        if self.reader not in READERS or (self.reader != "clml" and not self.tokens):
            raise ValueError(f"limit {self.field}: reader {self.reader!r} with {self.tokens}")


@dataclass(frozen=True)
class Extension:
    """What qcom_ext knows about one Qualcomm extension."""

    name: str
    section: str  # in ../shared/reference/qcom-extensions.md
    side: str  # "host", "kernel" or "host+kernel"
    summary: str
    khronos: tuple[str, ...] = ()  # equivalents, in order of preference
    fallback: str | None = None  # what the portable path does; None: no fallback
    no_fallback_reason: str = ""
    needs_images: bool = False
    needs_posix: bool = False
    limits: tuple[LimitQuery, ...] = ()  # the device limits its paths depend on
    # its host API made public as qcom_ext.<name>: "<module>.<name>", <module> in qcom_ext.ext
    public: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for path in self.public:
            module, _, name = path.rpartition(".")
            if not (module and name.isidentifier()):
                raise ValueError(f"{self.name}: public name {path!r} is not '<module>.<name>'")
        own = tuple(
            dataclasses.replace(q, needs=self.name) if q.needs == "" else q for q in self.limits
        )
        object.__setattr__(self, "limits", own)


_NO_OP = "recorded no-op: the hint is kept on the context and never reaches the driver"
_VENDOR_ONLY = "only the Qualcomm driver can import {what}; no portable object exists"

REGISTRY: dict[str, Extension] = {
    e.name: e
    for e in (
        Extension(
            "cl_qcom_perf_hint",
            "1",
            "host",
            "context performance (clock) hint",
            khronos=("cl_khr_throttle_hints",),
            fallback=_NO_OP,
        ),
        Extension(
            "cl_qcom_priority_hint",
            "2",
            "host",
            "context scheduling priority",
            khronos=("cl_khr_priority_hints",),
            fallback=_NO_OP,
        ),
        Extension(
            "cl_qcom_recordable_queues",
            "3",
            "host",
            "record NDRange sequences once, replay with cheap updates",
            khronos=("cl_khr_command_buffer",),
            fallback="host-side replay of pre-resolved dispatches",
            limits=(
                LimitQuery("recordable_queue_max_size", ("CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE",)),
                LimitQuery(
                    "command_buffer_capabilities",
                    ("CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR",),
                    needs="cl_khr_command_buffer",
                ),
            ),
            public=("recording.Recording",),
        ),
        Extension(
            "cl_qcom_protected_context",
            "4",
            "host",
            "contexts whose memory is hardware content-protected",
            no_fallback_reason="protected contexts never fall back: a fallback "
            "would silently drop the hardware protection",
        ),
        Extension(
            "cl_qcom_create_buffer_from_image",
            "5",
            "host",
            "a buffer aliasing an image's storage",
            khronos=("cl_khr_image2d_from_buffer",),
            fallback="separate buffer kept in sync by explicit copies",
            needs_images=True,
            limits=(  # the Khronos tier needs a pitch alignment
                LimitQuery(
                    "image_pitch_alignment", ("CL_DEVICE_IMAGE_PITCH_ALIGNMENT",), needs="images"
                ),
                LimitQuery(
                    "image_base_address_alignment",
                    ("CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT",),
                    needs="images",
                ),
            ),
            public=(
                "images.image_buffer.ImageBuffer",
                "images.image_buffer.buffer_from_image",
                "images.image_buffer.image_with_buffer",
            ),
        ),
        Extension(
            "cl_qcom_onchip_global_memory",
            "6",
            "host",
            "buffers in on-chip (GMEM) memory",
            fallback="ordinary global memory (same lifetime rules enforced)",
            limits=(
                LimitQuery("onchip_global_mem_size", ("CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM",)),
            ),
            public=("memory.onchip.onchip_buffer", "memory.onchip.scrub_onchip"),
        ),
        Extension(
            "cl_qcom_extended_query_image_info",
            "7",
            "host",
            "image pitch/size/alignment without creating the image",
            khronos=("cl_ext_image_requirements_info",),
            fallback="computed from the standard image rules and pitch alignment",
            needs_images=True,
            public=("images.info.ImageInfo", "images.info.query_image_info"),
        ),
        Extension(
            "cl_qcom_reqd_sub_group_size",
            "8",
            "kernel",
            'kernel attribute qcom_reqd_sub_group_size("half"|"full")',
            khronos=("cl_intel_required_subgroup_size",),
            fallback="attribute dropped; the device's own sub-group size is used",
            limits=(
                LimitQuery(
                    "sub_group_sizes",
                    ("CL_DEVICE_SUB_GROUP_SIZES_INTEL",),
                    needs="cl_intel_required_subgroup_size",
                    reader="sizes",
                ),
            ),
        ),
        Extension(
            "cl_qcom_subgroup_shuffle",
            "9",
            "kernel",
            "qcom_sub_group_shuffle_{up,down,rotate_up,rotate_down,xor}",
            khronos=("cl_khr_subgroup_shuffle",),
            fallback="shuffles emulated in portable OpenCL C",
        ),
        Extension(
            "cl_qcom_accelerated_image_ops",
            "10",
            "host+kernel",
            "weight-image convolution, box filter, block matching",
            fallback="the same operations in portable OpenCL C",
            needs_images=True,
            limits=(
                LimitQuery(
                    "hof_max_filter_size",
                    (
                        "CL_DEVICE_HOF_MAX_FILTER_SIZE_X_QCOM",
                        "CL_DEVICE_HOF_MAX_FILTER_SIZE_Y_QCOM",
                    ),
                ),
                LimitQuery("hof_max_num_phases", ("CL_DEVICE_HOF_MAX_NUM_PHASES_QCOM",)),
                LimitQuery(
                    "block_matching_max_region",
                    (
                        "CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_X_QCOM",
                        "CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_Y_QCOM",
                    ),
                ),
            ),
            public=(  # HofLimits, hof_limits: former names of the limits, kept
                "accelerated.support.AcceleratedLimits",
                "accelerated.support.HofLimits",
                "accelerated.support.accelerated_limits",
                "accelerated.support.hof_limits",
                "accelerated.weights.WeightImage",
                "accelerated.weights.box_size",
                "accelerated.whole_image.MotionField",
                "accelerated.whole_image.block_match_image",
                "accelerated.whole_image.box_filter_image",
                "accelerated.whole_image.convolve_image",
            ),
        ),
        Extension(
            "cl_qcom_filter_bicubic",
            "10",
            "host+kernel",
            "bicubic sampler filter (CL_FILTER_BICUBIC_QCOM)",
            fallback="4x4 bicubic weights computed in the kernel",
            needs_images=True,
            public=("images.sampler.create_sampler", "images.upscale.upscale2x_image"),
        ),
        Extension(
            "cl_qcom_vector_image_ops",
            "11",
            "kernel",
            "2x2/4x1 vector image reads and vector writes",
            fallback="composed from read_image/write_image",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_compressed_image",
            "12",
            "host",
            "UBWC-compressed images",
            fallback="uncompressed images (same kernel semantics)",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_compressed_yuv_image_read",
            "12",
            "host",
            "reads of compressed planar YUV images",
            fallback="uncompressed plane images",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_other_image",
            "13",
            "host",
            "planar YUV, Bayer and MIPI-packed image formats",
            fallback="one single-plane image per plane",
            needs_images=True,
            public=(
                "images.planar.Nv12Image",
                "images.planar.PlanarImage",
                "images.planar.nv12_image",
                "images.planar.planar_image",
            ),
        ),
        Extension(
            "cl_qcom_extract_image_plane",
            "13",
            "host",
            "single-plane child images of a planar image",
            fallback="the plane images of the portable planar layout",
            needs_images=True,
        ),
        Extension(
            "cl_qcom_ext_host_ptr",
            "14.1",
            "host",
            "import external memory (base of the host-pointer family)",
            fallback="page-aligned host memory through CL_MEM_USE_HOST_PTR",
            limits=(
                LimitQuery("page_size", ("CL_DEVICE_PAGE_SIZE_QCOM",)),
                LimitQuery("ext_mem_padding", ("CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM",)),
            ),
        ),
        Extension(
            "cl_qcom_ext_host_ptr_iocoherent",
            "14.2",
            "host",
            "I/O-coherent cache policy for imported memory",
            fallback="write-back memory made coherent by map/unmap",
        ),
        Extension(
            "cl_qcom_ion_host_ptr",
            "14.3",
            "host",
            "import ION allocations",
            no_fallback_reason=_VENDOR_ONLY.format(what="an ION buffer")
            + " (ION is gone since Android 12: use dma-buf heaps)",
        ),
        Extension(
            "cl_qcom_android_native_buffer_host_ptr",
            "14.4",
            "host",
            "import ANativeWindowBuffer (gralloc) buffers",
            no_fallback_reason=_VENDOR_ONLY.format(what="an ANativeWindowBuffer"),
        ),
        Extension(
            "cl_qcom_android_ahardwarebuffer_host_ptr",
            "14.5",
            "host",
            "import AHardwareBuffer objects",
            khronos=("cl_khr_external_memory_android_hardware_buffer",),
            no_fallback_reason=_VENDOR_ONLY.format(
                what="an AHardwareBuffer natively, and only Android drivers through its "
                "Khronos tier"
            ),
        ),
        Extension(
            "cl_qcom_ahardwarebuffer_direct_import",
            "14.5",
            "host",
            "direct AHardwareBuffer import (no public specification)",
            no_fallback_reason="no public specification or tokens exist",
        ),
        Extension(
            "cl_qcom_dmabuf_host_ptr",
            "14.6",
            "host",
            "import dma-buf file descriptors",
            khronos=("cl_khr_external_memory_dma_buf",),
            fallback="mmap the dma-buf and wrap it with CL_MEM_USE_HOST_PTR",
            needs_posix=True,
        ),
        Extension(
            "cl_qcom_dot_product8",
            "15",
            "kernel",
            "qcom_udot8_acc / qcom_dot8_acc packed 8-bit dot products",
            khronos=("cl_khr_integer_dot_product",),
            fallback="byte-lane arithmetic in portable OpenCL C",
            limits=(
                LimitQuery(
                    "integer_dot_product_capabilities",
                    ("CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR",),
                    needs="cl_khr_integer_dot_product",
                ),
            ),
        ),
        Extension(
            "cl_qcom_bitreverse",
            "16",
            "kernel",
            "qcom_bitreverse(uint)",
            khronos=("cl_khr_extended_bit_ops",),
            fallback="bit swaps in portable OpenCL C",
        ),
        Extension(
            "cl_qcom_ml_ops",
            "17",
            "host",
            "CLML machine-learning operators",
            fallback="qcom_ext's own convolution kernels (no CLML interface)",
            limits=(LimitQuery("ml_interface_versions", reader="clml"),),
        ),
        Extension(
            "cl_qcom_bfloat16_product",
            "18",
            "kernel",
            "qcom_mad32_bf16",
            fallback="bf16 widened to float, fused multiply-add",
        ),
        Extension(
            "cl_qcom_limited_printf",
            "19",
            "kernel",
            "printf with a bounded buffer",
            fallback="standard OpenCL C printf",
            limits=(LimitQuery("printf_buffer_size", ("CL_DEVICE_PRINTF_BUFFER_SIZE_QCOM",)),),
        ),
        Extension(
            "cl_qcom_extended_images",
            "19",
            "host",
            "larger image dimensions",
            fallback="the standard image size limits",
            limits=(
                LimitQuery(
                    "extended_image2d_max_size",
                    (
                        "CL_DEVICE_EXTENDED_IMAGE2D_MAX_WIDTH_QCOM",
                        "CL_DEVICE_EXTENDED_IMAGE2D_MAX_HEIGHT_QCOM",
                    ),
                ),
                LimitQuery(
                    "extended_image3d_max_size",
                    (
                        "CL_DEVICE_EXTENDED_IMAGE3D_MAX_WIDTH_QCOM",
                        "CL_DEVICE_EXTENDED_IMAGE3D_MAX_HEIGHT_QCOM",
                        "CL_DEVICE_EXTENDED_IMAGE3D_MAX_DEPTH_QCOM",
                    ),
                ),
            ),
        ),
        Extension(
            "cl_qcom_large_buffer",
            "19",
            "host",
            "buffers larger than CL_DEVICE_MAX_MEM_ALLOC_SIZE",
            fallback="one buffer up to CL_DEVICE_MAX_MEM_ALLOC_SIZE, larger ones refused "
            "(BufferTooLargeError) or split by allocate_chunked",
            limits=(
                # natively no buffer exceeds the global memory; no public bound is tighter
                LimitQuery("max_large_buffer_size", ("CL_DEVICE_GLOBAL_MEM_SIZE",)),
                # the fallback's chunks start on this alignment (bits, as the query says)
                LimitQuery("mem_base_addr_align", ("CL_DEVICE_MEM_BASE_ADDR_ALIGN",), needs=None),
            ),
            public=(
                "memory.large_buffer.allocate_chunked",
                "memory.large_buffer.create_large_buffer",
                "memory.large_buffer.large_buffer_limit",
            ),
        ),
    )
}


#: Khronos tiers usable only on top of a base extension the device must advertise too
#: (the handle type extends the base's cl_mem_properties and acquire/release commands).
TIER_BASES: dict[str, str] = {
    "cl_khr_external_memory_dma_buf": "cl_khr_external_memory",
    "cl_khr_external_memory_android_hardware_buffer": "cl_khr_external_memory",
}


def public_names() -> dict[str, str]:
    """The extensions' public names (``qcom_ext.<name>``) -> the module defining each.

    ``qcom_ext`` reads it for a name its own table lacks, so an extension's host API
    becomes public with its registry entry; a name claimed twice is an error.
    """
    names: dict[str, str] = {}
    for extension in REGISTRY.values():
        for path in extension.public:
            module, _, name = f"qcom_ext.ext.{path}".rpartition(".")
            if names.setdefault(name, module) != module:
                raise ValueError(f"{extension.name}: public name {name!r} is {names[name]}'s")
    return names


def khronos_names() -> frozenset[str]:
    """Every Khronos/Intel extension used as a tier."""
    return frozenset(k for e in REGISTRY.values() for k in e.khronos)
