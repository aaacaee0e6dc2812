/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_reqd_sub_group_size (qcom-extensions.md section 8; guide 9.2) -----------
 * Adreno runs a kernel in half-wave or full-wave mode; the attribute
 *     __attribute__((qcom_reqd_sub_group_size("half")))   or   ("full")
 * overrides the compiler's choice. Portable spelling, on every device:
 *     QCOM_REQD_SUB_GROUP_SIZE(half) __kernel void k(...) { ... }
 *     QCOM_REQD_SUB_GROUP_SIZE(full) __kernel void k(...) { ... }
 * expands to
 *   native:                           __attribute__((qcom_reqd_sub_group_size("half")))
 *   cl_intel_required_subgroup_size:  __attribute__((intel_reqd_sub_group_size(n))), n being
 *                                     QCOM_EXT_SUB_GROUP_SIZE_HALF / _FULL, which the host
 *                                     derives from CL_DEVICE_SUB_GROUP_SIZES_INTEL
 *                                     (qcom_ext.ext.program.subgroups.half_and_full)
 *   elsewhere:                        nothing (the device's own sub-group size is used).
 * The Adreno spelling __attribute__((qcom_reqd_sub_group_size("half"))) also builds
 * everywhere: off Adreno it is dropped (a string cannot select an integer in the
 * preprocessor, so it is not mapped to the Intel attribute; use the macro for that).
 * Query the size a kernel runs with: qcom_ext.kernel_sub_group_size(kernel, device, lws).
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_reqd_sub_group_size)
#pragma OPENCL EXTENSION cl_qcom_reqd_sub_group_size : enable
#define QCOM_REQD_SUB_GROUP_SIZE(mode) __attribute__((qcom_reqd_sub_group_size(#mode)))
#elif defined(QCOM_EXT_KHR_cl_qcom_reqd_sub_group_size)
#if !defined(QCOM_EXT_SUB_GROUP_SIZE_HALF) || !defined(QCOM_EXT_SUB_GROUP_SIZE_FULL)
#error "QCOM_EXT_KHR_cl_qcom_reqd_sub_group_size needs -DQCOM_EXT_SUB_GROUP_SIZE_HALF=n and -DQCOM_EXT_SUB_GROUP_SIZE_FULL=m (build with qcom_ext.build_program)"
#endif
#define QCOM_EXT_SUB_GROUP_SIZE_half QCOM_EXT_SUB_GROUP_SIZE_HALF
#define QCOM_EXT_SUB_GROUP_SIZE_full QCOM_EXT_SUB_GROUP_SIZE_FULL
#define QCOM_REQD_SUB_GROUP_SIZE(mode) \
    __attribute__((intel_reqd_sub_group_size(QCOM_EXT_SUB_GROUP_SIZE_##mode)))
#define qcom_reqd_sub_group_size(mode)
#else
/* Nothing, but a mode other than half/full is a compile error here too. */
#define QCOM_EXT_REQD_SUB_GROUP_MODE_half
#define QCOM_EXT_REQD_SUB_GROUP_MODE_full
#define QCOM_REQD_SUB_GROUP_SIZE(mode) QCOM_EXT_REQD_SUB_GROUP_MODE_##mode
#define qcom_reqd_sub_group_size(mode)
#endif
