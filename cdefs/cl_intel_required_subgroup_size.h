/*
 * cl_intel_required_subgroup_size
 * What: Intel's kernel attribute intel_reqd_sub_group_size(N) and its host queries
 *       (portable stand-in for Qualcomm's kernel-only cl_qcom_reqd_sub_group_size).
 * Reference: portable-interop.md §2.6 (Khronos cl_ext.h @ 15b536b7; extension version 0.0.0 in the header)
 * Sources: Khronos CL/cl_ext.h, OpenCL-Docs extensions/cl_intel_required_subgroup_size.asciidoc
 */

/* cl_device_info -- §2.6; result: size_t[] */
#define CL_DEVICE_SUB_GROUP_SIZES_INTEL              0x4108

/* cl_kernel_work_group_info -- §2.6; result: cl_ulong */
#define CL_KERNEL_SPILL_MEM_SIZE_INTEL               0x4109

/* cl_kernel_sub_group_info -- §2.6; result: size_t */
#define CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL       0x410A
