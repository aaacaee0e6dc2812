/*
 * cl_qcom_reqd_sub_group_size
 * What: kernel attribute __attribute__((qcom_reqd_sub_group_size("half"|"full"))).
 *       Kernel-side only: no host tokens exist in any Qualcomm header or sample.
 * Reference: qcom-extensions.md §8
 * Sources: [S7] §9.2.1, [S8] qcom_reqd_sub_group_size.cpp, [S11] llama.cpp kernels;
 *          for the token below: [S12] MNN OpenCLRuntime.hpp, MACE opencl_extension.h.
 * Query the resulting sub-group size with clGetKernelSubGroupInfo
 * (CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, cl_core.h).
 */

/* ---- cl_kernel_work_group_info -- §8 / §19 ----
 * Third-party only (MNN, MACE); not in any Qualcomm header found. Result read as 64-bit. */
#define CL_KERNEL_WAVE_SIZE_QCOM                 0xAA02
