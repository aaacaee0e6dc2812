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

/* ---- cl_qcom_bitreverse (qcom-extensions.md section 16) ----------------------------
 * uint qcom_bitreverse(uint v): bit i of the result is bit 31-i of v.
 * Example from the guide: 0x1248edbf -> 0xfdb71248.
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_bitreverse)
#pragma OPENCL EXTENSION cl_qcom_bitreverse : enable
#elif defined(QCOM_EXT_KHR_cl_qcom_bitreverse)
#pragma OPENCL EXTENSION cl_khr_extended_bit_ops : enable
uint qcom_bitreverse(uint v) { return bit_reverse(v); }
#else
uint qcom_bitreverse(uint v)
{
    v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
    v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
    v = ((v >> 4) & 0x0F0F0F0Fu) | ((v & 0x0F0F0F0Fu) << 4);
    v = ((v >> 8) & 0x00FF00FFu) | ((v & 0x00FF00FFu) << 8);
    return (v >> 16) | (v << 16);
}
#endif

#endif /* QCOM_EXT_H */
