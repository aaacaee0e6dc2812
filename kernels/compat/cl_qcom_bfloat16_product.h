/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_bfloat16_product (qcom-extensions.md section 18) -------------------------
 * float qcom_mad32_bf16(ushort a, ushort b, float acc): a and b are bfloat16 bit patterns
 * (the upper 16 bits of a float32); the result is a * b + acc in float32. Observed on an
 * Adreno device: qcom_mad32_bf16(0x3f80, 0x4000, 3.0f) == 5.0f (1 * 2 + 3).
 * Portable code: widen each bf16 to float (exact: shift into the upper half) and take
 * fma(), a single rounding. The product of two bf16 values is exact in float32 unless it
 * overflows or underflows, so fma and a multiply-then-add differ only there.
 * NaN, infinities and subnormal bf16 values pass through as their float32 equivalents;
 * a device without CL_FP_DENORM may flush subnormals to zero, as for any float maths.
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_bfloat16_product)
#pragma OPENCL EXTENSION cl_qcom_bfloat16_product : enable
#else
float qcom_mad32_bf16(ushort a, ushort b, float acc)
{
    return fma(as_float((uint)a << 16), as_float((uint)b << 16), acc);
}
#endif
