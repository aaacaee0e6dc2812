"""Check the cffi declarations against the reference documents, value by value.

The tables in this module (TOKENS, OPTIONAL_TOKENS, STRUCTS, ENTRY_POINTS) are an
independent transcription of the research notes, made without reading ``cdefs/``:

* ``reference/qcom-extensions.md`` sections 1-19: every host-side ``cl_qcom_*`` token,
  struct layout (LP64) and entry-point prototype;
* ``reference/portable-interop.md`` sections 2.1-2.3, 2.5 and 2.6: the Khronos tokens of
  ``cl_khr_command_buffer`` (+ mutable dispatch), ``cl_khr_priority_hints`` /
  ``cl_khr_throttle_hints``, ``cl_khr_integer_dot_product``, ``cl_khr_image2d_from_buffer``
  and ``cl_intel_required_subgroup_size``, and the current command-buffer prototypes.

The C declarations in ``cdefs/*.h`` were written separately from the same reference, so a
mismatch here means one of the two transcriptions is wrong; the failure message names the
section to re-read. Where the sources disagree, the expected value is the one in the 2022
Qualcomm header (``cl_ext_qcom.h``, [S1] in the reference); the other value is noted in a
comment. Values the reference marks NOT FOUND are left out.
"""

import sys
from collections import Counter
from struct import pack as struct_pack

import pytest
from cffi import CDefError, FFIError

from qcom_ext.binding.lib import C, ffi

QX = "qcom-extensions"
PI = "portable-interop"

# --------------------------------------------------------------------------------------------
# Tokens: (name, value, source)
# --------------------------------------------------------------------------------------------

TOKENS = [
    # §1 cl_qcom_perf_hint
    ("CL_CONTEXT_PERF_HINT_QCOM", 0x40C2, f"{QX} §1"),
    ("CL_PERF_HINT_HIGH_QCOM", 0x40C3, f"{QX} §1"),
    ("CL_PERF_HINT_NORMAL_QCOM", 0x40C4, f"{QX} §1"),
    ("CL_PERF_HINT_LOW_QCOM", 0x40C5, f"{QX} §1"),
    # §2 cl_qcom_priority_hint
    ("CL_CONTEXT_PRIORITY_HINT_QCOM", 0x40C9, f"{QX} §2"),
    ("CL_PRIORITY_HINT_HIGH_QCOM", 0x40CA, f"{QX} §2"),
    ("CL_PRIORITY_HINT_NORMAL_QCOM", 0x40CB, f"{QX} §2"),
    ("CL_PRIORITY_HINT_LOW_QCOM", 0x40CC, f"{QX} §2"),
    ("CL_PRIORITY_HINT_NONE_QCOM", 0, f"{QX} §2 (header only)"),
    # §3 cl_qcom_recordable_queues
    ("CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE", 0x41DE, f"{QX} §3"),
    ("CL_QUEUE_RECORDABLE_QCOM", 1 << 30, f"{QX} §3"),
    # §4 cl_qcom_protected_context
    ("CL_CONTEXT_PROTECTED_QCOM", 0x40C7, f"{QX} §4"),
    ("CL_MEM_ION_HOST_PTR_PROTECTED_QCOM", 0x40C8, f"{QX} §4"),
    ("CL_CONTEXT_PROTECTED_PMEM_QCOM", 0x4117, f"{QX} §4"),
    ("CL_MEM_PMEM_HOST_PTR_PROTECTED_QCOM", 0x4118, f"{QX} §4"),
    ("CL_MEM_DMABUF_HOST_PTR_PROTECTED_QCOM", 0x411E, f"{QX} §4, §14.6"),
    ("CL_MEM_ION_HOST_PTR_PROTECTED_COMPRESSED_YUV_QCOM", 0x40CE, f"{QX} §4, §12"),
    # §5 cl_qcom_create_buffer_from_image
    ("CL_BUFFER_FROM_IMAGE_ROW_PITCH_QCOM", 0x40C0, f"{QX} §5"),
    ("CL_BUFFER_FROM_IMAGE_SLICE_PITCH_QCOM", 0x40C1, f"{QX} §5"),
    # §6 cl_qcom_onchip_global_memory
    ("CL_MEM_ONCHIP_GLOBAL_QCOM", 0x41A2, f"{QX} §6"),
    ("CL_MEM_ONCHIP_GLOBAL_OFFSET_QCOM", 0x41A3, f"{QX} §6"),
    # S1 value; one third-party project uses 0x40CB (collides with CL_PRIORITY_HINT_NORMAL_QCOM)
    ("CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM", 0x41A4, f"{QX} §6"),
    # §7 cl_qcom_extended_query_image_info (CL_IMAGE_HEIGHT_ALIGNMENT_QCOM: NOT FOUND, skipped)
    ("CL_IMAGE_SIZE_QCOM", 0x411B, f"{QX} §7"),
    ("CL_IMAGE_BASE_ADDRESS_ALIGNMENT_QCOM", 0x411F, f"{QX} §7"),
    # §8 cl_qcom_reqd_sub_group_size (kernel-side); related third-party token, also in §19
    ("CL_KERNEL_WAVE_SIZE_QCOM", 0xAA02, f"{QX} §8, §19 (MNN, MACE only)"),
    # §10 accelerated image ops / bicubic (QCOM_CLK_FILTER_BICUBIC: kernel-side, NOT FOUND)
    ("CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM", 0x4110, f"{QX} §10"),
    ("CL_DEVICE_HOF_MAX_NUM_PHASES_QCOM", 0x4111, f"{QX} §10"),
    ("CL_DEVICE_HOF_MAX_FILTER_SIZE_X_QCOM", 0x4112, f"{QX} §10"),
    ("CL_DEVICE_HOF_MAX_FILTER_SIZE_Y_QCOM", 0x4113, f"{QX} §10"),
    ("CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_X_QCOM", 0x4114, f"{QX} §10"),
    ("CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_Y_QCOM", 0x4115, f"{QX} §10"),
    ("CL_WEIGHT_IMAGE_SEPARABLE_QCOM", 1 << 0, f"{QX} §10"),
    ("CL_FILTER_BICUBIC_QCOM", 0x411C, f"{QX} §10"),
    # §12 cl_qcom_compressed_image (+ cl_qcom_compressed_yuv_image_read)
    ("CL_MEM_COMPRESSED_IMAGE_QCOM", 1 << 38, f"{QX} §12 (S1)"),  # S3 2017 / 2014: 1 << 27
    ("CL_QCOM_COMPRESSED_RGBA", 0x4130, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_RGBx", 0x4131, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_NV12_Y", 0x413A, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_NV12_UV", 0x413B, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_P010", 0x4142, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_P010_Y", 0x4143, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_P010_UV", 0x4144, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_TP10", 0x414B, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_TP10_Y", 0x414C, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_TP10_UV", 0x414D, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_NV12_4R", 0x414F, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_NV12_4R_Y", 0x4150, f"{QX} §12"),
    ("CL_QCOM_COMPRESSED_NV12_4R_UV", 0x4151, f"{QX} §12"),
    ("CL_MEM_COMPRESSED_YUV_IMAGE_QCOM", 1 << 39, f"{QX} §12 (S1)"),  # S3 2017 / 2014: 1 << 28
    ("CL_QCOM_COMPRESSED_NV12", 0x4139, f"{QX} §12 (S1)"),  # S3 2017 / 2014 header: 0x10C4
    ("CL_MEM_ION_HOST_PTR_COMPRESSED_YUV_QCOM", 0x40CD, f"{QX} §12"),
    # §13 cl_qcom_other_image (+ cl_qcom_extract_image_plane)
    ("CL_MEM_OTHER_IMAGE_QCOM", 1 << 37, f"{QX} §13 (S1)"),  # S3 / 2014 header: 1 << 25
    # §13 cl_channel_type
    ("CL_QCOM_UNORM_MIPI10", 0x4159, f"{QX} §13"),
    ("CL_QCOM_UNORM_MIPI12", 0x415A, f"{QX} §13"),
    ("CL_QCOM_UNSIGNED_MIPI10", 0x415B, f"{QX} §13"),
    ("CL_QCOM_UNSIGNED_MIPI12", 0x415C, f"{QX} §13"),
    ("CL_QCOM_UNORM_INT10", 0x415D, f"{QX} §13"),
    ("CL_QCOM_UNORM_INT12", 0x415E, f"{QX} §13"),
    ("CL_QCOM_UNSIGNED_INT16", 0x415F, f"{QX} §13"),
    # §13 cl_channel_order
    ("CL_QCOM_BAYER", 0x414E, f"{QX} §13"),
    ("CL_QCOM_NV12", 0x4133, f"{QX} §13"),
    ("CL_QCOM_NV12_Y", 0x4134, f"{QX} §13"),
    ("CL_QCOM_NV12_UV", 0x4135, f"{QX} §13"),
    ("CL_QCOM_TILED_NV12", 0x4136, f"{QX} §13"),
    ("CL_QCOM_TILED_NV12_Y", 0x4137, f"{QX} §13"),
    ("CL_QCOM_TILED_NV12_UV", 0x4138, f"{QX} §13"),
    ("CL_QCOM_P010", 0x413C, f"{QX} §13"),
    ("CL_QCOM_P010_Y", 0x413D, f"{QX} §13"),
    ("CL_QCOM_P010_UV", 0x413E, f"{QX} §13"),
    ("CL_QCOM_TILED_P010", 0x413F, f"{QX} §13"),
    ("CL_QCOM_TILED_P010_Y", 0x4140, f"{QX} §13"),
    ("CL_QCOM_TILED_P010_UV", 0x4141, f"{QX} §13"),
    ("CL_QCOM_TP10", 0x4145, f"{QX} §13"),
    ("CL_QCOM_TP10_Y", 0x4146, f"{QX} §13"),
    ("CL_QCOM_TP10_UV", 0x4147, f"{QX} §13"),
    ("CL_QCOM_TILED_TP10", 0x4148, f"{QX} §13"),
    ("CL_QCOM_TILED_TP10_Y", 0x4149, f"{QX} §13"),
    ("CL_QCOM_TILED_TP10_UV", 0x414A, f"{QX} §13"),
    ("CL_QCOM_NV12_512", 0x4152, f"{QX} §13 (S1 only)"),
    ("CL_QCOM_NV12_512_Y", 0x4153, f"{QX} §13 (S1 only)"),
    ("CL_QCOM_NV12_512_UV", 0x4154, f"{QX} §13 (S1 only)"),
    # §14.1 cl_qcom_ext_host_ptr
    ("CL_MEM_EXT_HOST_PTR_QCOM", 1 << 29, f"{QX} §14.1"),
    ("CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM", 0x40A0, f"{QX} §14.1"),
    ("CL_DEVICE_PAGE_SIZE_QCOM", 0x40A1, f"{QX} §14.1"),
    ("CL_IMAGE_ROW_ALIGNMENT_QCOM", 0x40A2, f"{QX} §14.1, §7"),
    ("CL_IMAGE_SLICE_ALIGNMENT_QCOM", 0x40A3, f"{QX} §14.1, §7"),
    # S4/S5/S6 value; a third-party Rust snippet uses 0x40A6 (which is WRITETHROUGH)
    ("CL_MEM_HOST_UNCACHED_QCOM", 0x40A4, f"{QX} §14.1"),
    ("CL_MEM_HOST_WRITEBACK_QCOM", 0x40A5, f"{QX} §14.1"),
    ("CL_MEM_HOST_WRITETHROUGH_QCOM", 0x40A6, f"{QX} §14.1"),
    ("CL_MEM_HOST_WRITE_COMBINING_QCOM", 0x40A7, f"{QX} §14.1"),
    # §14.2 - §14.7
    ("CL_MEM_HOST_IOCOHERENT_QCOM", 0x40A9, f"{QX} §14.2"),
    ("CL_MEM_ION_HOST_PTR_QCOM", 0x40A8, f"{QX} §14.3"),
    ("CL_MEM_ANDROID_NATIVE_BUFFER_HOST_PTR_QCOM", 0x40C6, f"{QX} §14.4"),
    ("CL_MEM_ANDROID_AHARDWAREBUFFER_HOST_PTR_QCOM", 0x4119, f"{QX} §14.5 (S2)"),
    ("CL_MEM_DMABUF_HOST_PTR_QCOM", 0x411D, f"{QX} §14.6"),
    ("CL_MEM_PMEM_HOST_PTR_QCOM", 0x4116, f"{QX} §14.7"),
    # §19 other QCOM tokens (CL_KERNEL_WAVE_SIZE_QCOM is listed above under §8)
    ("CL_DEVICE_PRINTF_BUFFER_SIZE_QCOM", 0x1049, f"{QX} §19"),
    ("CL_CONTEXT_ENABLE_EXTENDED_IMAGES_QCOM", 0x40AA, f"{QX} §19"),
    ("CL_DEVICE_EXTENDED_IMAGE2D_MAX_WIDTH_QCOM", 0x40AB, f"{QX} §19"),
    ("CL_DEVICE_EXTENDED_IMAGE2D_MAX_HEIGHT_QCOM", 0x40AC, f"{QX} §19"),
    ("CL_DEVICE_EXTENDED_IMAGE3D_MAX_WIDTH_QCOM", 0x40AD, f"{QX} §19"),
    ("CL_DEVICE_EXTENDED_IMAGE3D_MAX_HEIGHT_QCOM", 0x40AE, f"{QX} §19"),
    ("CL_DEVICE_EXTENDED_IMAGE3D_MAX_DEPTH_QCOM", 0x40AF, f"{QX} §19"),
    ("CL_LARGE_BUFFER_QCOM", 0x41A6, f"{QX} §19 (llama.cpp only)"),
    # portable-interop §2.1 cl_khr_command_buffer (current header)
    ("CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR", 0x12A9, f"{PI} §2.1"),
    ("CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR", 0x129A, f"{PI} §2.1"),
    ("CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR", 0x12AA, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR", 1 << 0, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_CAPABILITY_DEVICE_SIDE_ENQUEUE_KHR", 1 << 1, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_FLAGS_KHR", 0x1293, f"{PI} §2.1"),
    ("CL_INVALID_COMMAND_BUFFER_KHR", -1138, f"{PI} §2.1"),
    ("CL_INVALID_SYNC_POINT_WAIT_LIST_KHR", -1139, f"{PI} §2.1"),
    ("CL_INCOMPATIBLE_COMMAND_QUEUE_KHR", -1140, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_QUEUES_KHR", 0x1294, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_NUM_QUEUES_KHR", 0x1295, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR", 0x1296, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_STATE_KHR", 0x1297, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_PROPERTIES_ARRAY_KHR", 0x1298, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_CONTEXT_KHR", 0x1299, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_STATE_RECORDING_KHR", 0, f"{PI} §2.1"),
    ("CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR", 1, f"{PI} §2.1"),
    ("CL_COMMAND_COMMAND_BUFFER_KHR", 0x12A8, f"{PI} §2.1"),
    # portable-interop §2.1 cl_khr_command_buffer_mutable_dispatch (current header)
    ("CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR", 1 << 0, f"{PI} §2.1 mutable dispatch"),
    ("CL_COMMAND_BUFFER_MUTABLE_KHR", 1 << 1, f"{PI} §2.1 mutable dispatch"),
    ("CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR", 1 << 2, f"{PI} §2.1 mutable dispatch"),
    ("CL_INVALID_MUTABLE_COMMAND_KHR", -1141, f"{PI} §2.1 mutable dispatch"),
    ("CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR", 0x12B0, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR", 0x12B1, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR", 1 << 0, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR", 1 << 1, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR", 1 << 2, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_ARGUMENTS_KHR", 1 << 3, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_EXEC_INFO_KHR", 1 << 4, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_COMMAND_COMMAND_QUEUE_KHR", 0x12A0, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_COMMAND_COMMAND_BUFFER_KHR", 0x12A1, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_COMMAND_COMMAND_TYPE_KHR", 0x12AD, f"{PI} §2.1 mutable dispatch"),
    # renamed from CL_MUTABLE_DISPATCH_PROPERTIES_ARRAY_KHR in mutable dispatch 0.9.3
    ("CL_MUTABLE_COMMAND_PROPERTIES_ARRAY_KHR", 0x12A2, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_KERNEL_KHR", 0x12A3, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_DIMENSIONS_KHR", 0x12A4, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_GLOBAL_WORK_OFFSET_KHR", 0x12A5, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_GLOBAL_WORK_SIZE_KHR", 0x12A6, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_LOCAL_WORK_SIZE_KHR", 0x12A7, f"{PI} §2.1 mutable dispatch"),
    # current value; was 1 before mutable dispatch 0.9.2 (0 was then ..._BASE_CONFIG_KHR)
    ("CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR", 0, f"{PI} §2.1 mutable dispatch"),
    ("CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR", 0x12B7, f"{PI} §2.1 mutable dispatch"),
    ("CL_MUTABLE_DISPATCH_ASSERTS_KHR", 0x12B8, f"{PI} §2.1 mutable dispatch"),
    (
        "CL_MUTABLE_DISPATCH_ASSERT_NO_ADDITIONAL_WORK_GROUPS_KHR",
        1 << 0,
        f"{PI} §2.1 mutable dispatch",
    ),
    # current value; CL_COMMAND_BUFFER_STATE_PENDING_KHR had 2 in cmdbuf < 0.9.8
    ("CL_COMMAND_BUFFER_STATE_FINALIZED_KHR", 2, f"{PI} §2.1 mutable dispatch"),
    # portable-interop §2.2 cl_khr_priority_hints / cl_khr_throttle_hints
    ("CL_QUEUE_PRIORITY_KHR", 0x1096, f"{PI} §2.2"),
    ("CL_QUEUE_PRIORITY_HIGH_KHR", 1 << 0, f"{PI} §2.2"),
    ("CL_QUEUE_PRIORITY_MED_KHR", 1 << 1, f"{PI} §2.2"),
    ("CL_QUEUE_PRIORITY_LOW_KHR", 1 << 2, f"{PI} §2.2"),
    ("CL_QUEUE_THROTTLE_KHR", 0x1097, f"{PI} §2.2"),
    ("CL_QUEUE_THROTTLE_HIGH_KHR", 1 << 0, f"{PI} §2.2"),
    ("CL_QUEUE_THROTTLE_MED_KHR", 1 << 1, f"{PI} §2.2"),
    ("CL_QUEUE_THROTTLE_LOW_KHR", 1 << 2, f"{PI} §2.2"),
    # portable-interop §2.3 cl_khr_integer_dot_product
    ("CL_DEVICE_INTEGER_DOT_PRODUCT_INPUT_4x8BIT_PACKED_KHR", 1 << 0, f"{PI} §2.3"),
    ("CL_DEVICE_INTEGER_DOT_PRODUCT_INPUT_4x8BIT_KHR", 1 << 1, f"{PI} §2.3"),
    ("CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR", 0x1073, f"{PI} §2.3"),
    ("CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_8BIT_KHR", 0x1074, f"{PI} §2.3"),
    (
        "CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_4x8BIT_PACKED_KHR",
        0x1075,
        f"{PI} §2.3",
    ),
    # portable-interop §2.5 cl_khr_image2d_from_buffer (core name and _KHR name)
    ("CL_DEVICE_IMAGE_PITCH_ALIGNMENT", 0x104A, f"{PI} §2.5"),
    ("CL_DEVICE_IMAGE_PITCH_ALIGNMENT_KHR", 0x104A, f"{PI} §2.5"),
    ("CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT", 0x104B, f"{PI} §2.5"),
    ("CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT_KHR", 0x104B, f"{PI} §2.5"),
    # portable-interop §2.6 cl_intel_required_subgroup_size
    ("CL_DEVICE_SUB_GROUP_SIZES_INTEL", 0x4108, f"{PI} §2.6"),
    ("CL_KERNEL_SPILL_MEM_SIZE_INTEL", 0x4109, f"{PI} §2.6"),
    ("CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL", 0x410A, f"{PI} §2.6"),
]


def _cl_make_version(major, minor, patch):
    """CL_MAKE_VERSION of cl.h: 10 bits major, 10 bits minor, 12 bits patch."""
    return (major << 22) | (minor << 12) | patch


# Values the reference gives, but which a vendor-extension binding need not declare: core
# cl.h tokens named as parameters of the QCOM queries, and header/extension version macros.
# Checked only when the binding does declare them.
OPTIONAL_TOKENS = [
    ("CL_IMAGE_ELEMENT_SIZE", 0x1111, f"{QX} §7 (core cl.h token)"),
    ("CL_IMAGE_ROW_PITCH", 0x1112, f"{QX} §7, §14.1 (core cl.h token)"),
    ("CL_IMAGE_SLICE_PITCH", 0x1113, f"{QX} §7, §14.1 (core cl.h token)"),
    ("CL_QCOM_ML_OPS_H_MAJOR_VERSION", 3, f"{QX} §17 (S9 header version)"),
    ("CL_QCOM_ML_OPS_H_MINOR_VERSION", 0, f"{QX} §17 (S9 header version)"),
    ("CL_DEVICE_EXTENSIONS_WITH_VERSION", 0x1060, f"{PI} §2.1 (core cl.h token)"),
    (
        "CL_KHR_COMMAND_BUFFER_EXTENSION_VERSION",
        _cl_make_version(0, 9, 8),
        f"{PI} §2.1",
    ),
    (
        "CL_KHR_COMMAND_BUFFER_MUTABLE_DISPATCH_EXTENSION_VERSION",
        _cl_make_version(0, 9, 5),
        f"{PI} §2.1",
    ),
]

# --------------------------------------------------------------------------------------------
# Structs: (struct_name, lp64_size, {field: offset}, source)
# --------------------------------------------------------------------------------------------

_BOX_FILTER_FIELDS = {"box_filter_width": 0, "box_filter_height": 4}

STRUCTS = [
    (
        "cl_array_arg_qcom",
        24,
        {"dispatch_index": 0, "arg_index": 4, "arg_size": 8, "arg_value": 16},
        f"{QX} §3",
    ),
    (
        "cl_array_kernel_exec_info_qcom",
        24,
        {"dispatch_index": 0, "param_name": 4, "param_value_size": 8, "param_value": 16},
        f"{QX} §3",
    ),
    ("cl_workgroup_qcom", 16, {"dispatch_index": 0, "workgroup_size": 8}, f"{QX} §3"),
    ("cl_offset_qcom", 32, {"dispatch_index": 0, "offsets": 8}, f"{QX} §3"),
    (
        "cl_weight_desc_qcom",
        24,
        {"center_coord_x": 0, "center_coord_y": 8, "flags": 16},
        f"{QX} §10",
    ),
    ("cl_weight_image_desc_qcom", 96, {"image_desc": 0, "weight_desc": 72}, f"{QX} §10"),
    ("cl_box_filter_size_qcom", 8, _BOX_FILTER_FIELDS, f"{QX} §10 (S1 header name)"),
    ("cl_box_size_qcom", 8, _BOX_FILTER_FIELDS, f"{QX} §10 (S3 spec-text name)"),
    (
        "cl_mem_ext_host_ptr",
        8,
        {"allocation_type": 0, "host_cache_policy": 4},
        f"{QX} §14.1",
    ),
    (
        "cl_mem_ion_host_ptr",
        24,
        {"ext_host_ptr": 0, "ion_filedesc": 8, "ion_hostptr": 16},
        f"{QX} §14.3",
    ),
    (
        "cl_mem_android_native_buffer_host_ptr",
        16,
        {"ext_host_ptr": 0, "anb_ptr": 8},
        f"{QX} §14.4",
    ),
    (
        "cl_mem_ahardwarebuffer_host_ptr",
        16,
        {"ext_host_ptr": 0, "ahb_ptr": 8},
        f"{QX} §14.5 (S2)",
    ),
    (
        "cl_mem_dmabuf_host_ptr",
        24,
        {"ext_host_ptr": 0, "dmabuf_filedesc": 8, "dmabuf_hostptr": 16},
        f"{QX} §14.6",
    ),
    (
        "cl_mem_pmem_host_ptr",
        24,
        {"ext_host_ptr": 0, "pmem_handle": 8, "pmem_hostptr": 16},
        f"{QX} §14.7",
    ),
    (
        "cl_image_desc",
        72,
        {
            "image_type": 0,
            "image_width": 8,
            "image_height": 16,
            "image_depth": 24,
            "image_array_size": 32,
            "image_row_pitch": 40,
            "image_slice_pitch": 48,
            "num_mip_levels": 56,
            "num_samples": 60,
            "buffer": 64,  # anonymous union { buffer; mem_object; }
            "mem_object": 64,
        },
        f"{QX} §10 (cl_weight_image_desc_qcom: 72 bytes), core cl.h",
    ),
    (
        "cl_image_format",
        8,
        {"image_channel_order": 0, "image_channel_data_type": 4},
        "core cl.h",
    ),
]

# --------------------------------------------------------------------------------------------
# Entry points: (function_name, number_of_parameters, source)
# --------------------------------------------------------------------------------------------

ENTRY_POINTS = [
    ("clSetPerfHintQCOM", 2, f"{QX} §1"),
    ("clNewRecordingQCOM", 2, f"{QX} §3"),
    ("clEndRecordingQCOM", 1, f"{QX} §3"),
    ("clReleaseRecordingQCOM", 1, f"{QX} §3"),
    ("clRetainRecordingQCOM", 1, f"{QX} §3"),
    ("clEnqueueRecordingQCOM", 13, f"{QX} §3"),
    ("clEnqueueRecordingSVMQCOM", 17, f"{QX} §3"),
    ("clCreateBufferFromImageQCOM", 3, f"{QX} §5"),
    ("clQueryImageInfoQCOM", 8, f"{QX} §7"),
    ("clGetDeviceImageInfoQCOM", 8, f"{QX} §14.1"),
    ("clQueryMLInterfaceVersionsQCOM", 4, f"{QX} §17"),
    ("clGetMLInterfaceQCOM", 3, f"{QX} §17"),
    ("clCreateFromEGLImageIMG", 5, f"{QX} §19"),
    # cl_khr_command_buffer, current (>= 0.9.5) signatures
    ("clCreateCommandBufferKHR", 4, f"{PI} §2.1"),
    ("clFinalizeCommandBufferKHR", 1, f"{PI} §2.1"),
    ("clRetainCommandBufferKHR", 1, f"{PI} §2.1"),
    ("clReleaseCommandBufferKHR", 1, f"{PI} §2.1"),
    ("clEnqueueCommandBufferKHR", 6, f"{PI} §2.1"),
    ("clCommandBarrierWithWaitListKHR", 7, f"{PI} §2.1"),
    ("clCommandCopyBufferKHR", 12, f"{PI} §2.1"),
    ("clCommandCopyBufferRectKHR", 16, f"{PI} §2.1"),
    ("clCommandCopyBufferToImageKHR", 12, f"{PI} §2.1"),
    ("clCommandCopyImageKHR", 12, f"{PI} §2.1"),
    ("clCommandCopyImageToBufferKHR", 12, f"{PI} §2.1"),
    ("clCommandFillBufferKHR", 12, f"{PI} §2.1"),
    ("clCommandFillImageKHR", 11, f"{PI} §2.1"),
    ("clCommandNDRangeKernelKHR", 12, f"{PI} §2.1"),
    ("clGetCommandBufferInfoKHR", 5, f"{PI} §2.1"),
    ("clCommandSVMMemcpyKHR", 10, f"{PI} §2.1 (>= 0.9.4)"),
    ("clCommandSVMMemFillKHR", 11, f"{PI} §2.1 (>= 0.9.4)"),
    # cl_khr_command_buffer_mutable_dispatch, current (>= 0.9.2) signatures
    ("clUpdateMutableCommandsKHR", 4, f"{PI} §2.1 mutable dispatch"),
    ("clGetMutableCommandInfoKHR", 5, f"{PI} §2.1 mutable dispatch"),
]

# Every entry point returns cl_int except these.
RETURN_TYPES = {
    "clNewRecordingQCOM": "cl_recording_qcom",
    "clCreateBufferFromImageQCOM": "cl_mem",
    "clCreateFromEGLImageIMG": "cl_mem",
    "clCreateCommandBufferKHR": "cl_command_buffer_khr",
}

LP64 = ffi.sizeof("void *") == 8
needs_lp64 = pytest.mark.skipif(
    not LP64, reason="reference struct layouts are LP64 (x86_64 / arm64-v8a) only"
)


def _params(table):
    return [pytest.param(*row, id=row[0]) for row in table]


def _typeof(cdecl, source):
    """ffi.typeof, failing (not erroring) with the citation when the type is not declared."""
    try:
        return ffi.typeof(cdecl)
    except (CDefError, FFIError) as exc:
        pytest.fail(f"{cdecl} is not declared (reference: {source}): {exc}")


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["TOKENS+OPTIONAL_TOKENS", "STRUCTS", "ENTRY_POINTS"])
def test_table_names_are_unique(table):
    rows = {
        "TOKENS+OPTIONAL_TOKENS": TOKENS + OPTIONAL_TOKENS,
        "STRUCTS": STRUCTS,
        "ENTRY_POINTS": ENTRY_POINTS,
    }[table]
    duplicates = [name for name, n in Counter(row[0] for row in rows).items() if n > 1]
    assert not duplicates, f"duplicate rows in {table}: {duplicates}"


@pytest.mark.parametrize(("name", "value", "source"), _params(TOKENS))
def test_token_value(name, value, source):
    assert hasattr(C, name), f"{name} is not declared (reference: {source})"
    got = getattr(C, name)
    assert got == value, f"{name} = {got:#x}, reference says {value:#x} ({source})"


@pytest.mark.parametrize(("name", "value", "source"), _params(OPTIONAL_TOKENS))
def test_optional_token_value(name, value, source):
    # "Optional" in the reference's sense; the binding declares every one of them, so a
    # missing one is a regression, not a skip.
    assert hasattr(C, name), f"{name} is no longer declared by cdefs/ ({source})"
    got = getattr(C, name)
    assert got == value, f"{name} = {got:#x}, reference says {value:#x} ({source})"


@needs_lp64
@pytest.mark.parametrize(("struct", "size", "offsets", "source"), _params(STRUCTS))
def test_struct_layout(struct, size, offsets, source):
    got_size = ffi.sizeof(_typeof(struct, source))
    assert got_size == size, f"sizeof({struct}) = {got_size}, reference says {size} ({source})"
    for field, off in offsets.items():
        try:
            got = ffi.offsetof(struct, field)
        except KeyError:
            pytest.fail(f"{struct} has no field {field!r} (reference: {source})")
        assert got == off, f"offsetof({struct}, {field}) = {got}, reference says {off} ({source})"


@pytest.mark.parametrize(("name", "nparams", "source"), _params(ENTRY_POINTS))
def test_entry_point_signature(name, nparams, source):
    t = _typeof(name + "_fn", source)
    # cffi has no separate "pointer to function" ctype: a function-pointer typedef such as
    # `typedef cl_int (*X_fn)(...)` (or `typedef X_t *X_fn`) is a ctype of kind "function".
    # A bare function type cannot be passed to ffi.typeof at all, and kind "pointer" would
    # mean a pointer to a function pointer.
    assert t.kind == "function", f"{name}_fn is a {t.kind} ctype, not a function pointer"
    assert not t.ellipsis, f"{name}_fn is variadic ({source})"
    assert len(t.args) == nparams, (
        f"{name} takes {len(t.args)} parameters, reference says {nparams} ({source})"
    )
    expected = RETURN_TYPES.get(name, "cl_int")
    assert t.result == ffi.typeof(expected), (
        f"{name} returns {t.result.cname}, reference says {expected} ({source})"
    )


def test_disagreements_resolved_in_favour_of_2022_header():
    # qcom-extensions §12, §13: bits 25/27/28 now belong to Intel/IMG; S1 moved to 37/38/39.
    assert C.CL_MEM_OTHER_IMAGE_QCOM == 1 << 37, "S1 value, not 1 << 25 (§13)"
    assert C.CL_MEM_COMPRESSED_IMAGE_QCOM == 1 << 38, "S1 value, not 1 << 27 (§12)"
    assert C.CL_MEM_COMPRESSED_YUV_IMAGE_QCOM == 1 << 39, "S1 value, not 1 << 28 (§12)"
    assert C.CL_QCOM_COMPRESSED_NV12 == 0x4139, "S1 value, not 0x10C4 (§12)"
    # §6: 0x40CB is CL_PRIORITY_HINT_NORMAL_QCOM
    assert C.CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM == 0x41A4, "S1 value, not 0x40CB (§6)"
    assert C.CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM != C.CL_PRIORITY_HINT_NORMAL_QCOM
    # §14.1: 0x40A6 is CL_MEM_HOST_WRITETHROUGH_QCOM
    assert C.CL_MEM_HOST_UNCACHED_QCOM == 0x40A4, "S4/S5/S6 value, not 0x40A6 (§14.1)"
    assert C.CL_MEM_HOST_UNCACHED_QCOM != C.CL_MEM_HOST_WRITETHROUGH_QCOM
    # §3: cl_offset_qcom holds an inline size_t[3], not a pointer
    fields = dict(ffi.typeof("cl_offset_qcom").fields)
    offsets = fields["offsets"].type
    assert offsets.kind == "array", f"cl_offset_qcom.offsets is a {offsets.kind} (§3)"
    assert offsets.length == 3, f"cl_offset_qcom.offsets has {offsets.length} elements (§3)"
    assert offsets.item == ffi.typeof("size_t"), f"element type {offsets.item.cname} (§3)"


@needs_lp64
@pytest.mark.skipif(sys.byteorder != "little", reason="expected bytes are little-endian")
def test_array_arg_round_trips_through_bytes():
    value = ffi.new("int *", 7)
    p = ffi.new(
        "cl_array_arg_qcom *",
        {"dispatch_index": 1, "arg_index": 2, "arg_size": 4, "arg_value": value},
    )
    address = int(ffi.cast("uintptr_t", value))
    expected = struct_pack("<IIQQ", 1, 2, 4, address)
    assert bytes(ffi.buffer(p)) == expected
    # and back: the fields read from the struct are the ones written
    assert (p.dispatch_index, p.arg_index, p.arg_size) == (1, 2, 4)
    assert ffi.cast("int *", p.arg_value)[0] == 7
