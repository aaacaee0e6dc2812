/*
 * qcom_ext.h -- Qualcomm cl_qcom_* kernel builtins on every OpenCL device.
 *
 * Include it (#include <qcom_ext.h>, with qcom_ext's kernels/ directory on the -I path)
 * and call the qcom_* builtins as on Adreno. The host decides, per extension, which
 * implementation is compiled by passing the flags of DeviceCaps.compiler_options():
 *
 *   -DQCOM_EXT_NATIVE_<extension>  the device has the Qualcomm builtin: enable it
 *   -DQCOM_EXT_KHR_<extension>     a Khronos extension provides the same operation
 *   (neither)                      portable OpenCL C 1.2 with the same semantics
 *
 * Kernels are never edited to change path; QCOM_EXT_DISABLE on the host forces the
 * portable code. Reference: ../shared/reference/qcom-extensions.md (section per block).
 */
#ifndef QCOM_EXT_H
#define QCOM_EXT_H

/* One part per extension, in kernels/compat/ (quoted includes resolve next to this file). */
#include "compat/cl_qcom_bitreverse.h"
#include "compat/cl_qcom_dot_product8.h"

#endif /* QCOM_EXT_H */
