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
#include "compat/cl_qcom_other_image.h"
#include "compat/cl_qcom_reqd_sub_group_size.h"
#include "compat/cl_qcom_bfloat16_product.h"
#include "compat/cl_qcom_subgroup_shuffle.h"
#include "compat/cl_qcom_vector_image_ops.h"
#include "compat/cl_qcom_dot_product8.h"
#include "compat/cl_qcom_accelerated_image_ops.h"
/* Keep cl_qcom_filter_bicubic last: with -DQCOM_EXT_BICUBIC_READ_IMAGEF it redefines
 * read_imagef, which must not reach the parts above. */
#include "compat/cl_qcom_filter_bicubic.h"

#endif /* QCOM_EXT_H */
