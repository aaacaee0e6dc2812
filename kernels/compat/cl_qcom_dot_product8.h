/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_dot_product8 (qcom-extensions.md section 15; guide section 3) ---------------
 * int qcom_udot8_acc(uint p0, uint p1, int acc)  p0, p1: four unsigned 8-bit lanes each
 * int qcom_dot8_acc (uint p0, uint p1, int acc)  p0: four signed 8-bit lanes, p1: unsigned
 *
 * Result: acc + (p0.lane0*p1.lane0 + ... + p0.lane3*p1.lane3). The four products are summed
 * exactly (|sum| <= 4*255*255 = 260100 fits an int), then added to acc ONCE with signed
 * 32-bit saturation (the reference implementation's saturated_add(sum, acc), clamped to
 * INT_MIN/INT_MAX); there is no per-lane saturation. Lanes pair byte-for-byte, so the
 * result does not depend on how the bytes were packed. Guide examples (p = a<<24|b<<16|c<<8|d):
 *   qcom_udot8_acc((11,22,33,44), (55,66,77,88), 9) = 8479
 *   qcom_dot8_acc((-11,22,-33,44), (55,66,77,88), 9) = 2187
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_dot_product8)
/* Some Adreno OpenCL 3.0 front-ends accept this pragma only with -cl-std=CL1.2. */
#pragma OPENCL EXTENSION cl_qcom_dot_product8 : enable
#elif defined(QCOM_EXT_KHR_cl_qcom_dot_product8) \
    && defined(__opencl_c_integer_dot_product_input_4x8bit_packed)
/* cl_khr_integer_dot_product has no "uu with a signed accumulator" builtin
 * (dot_acc_sat_4x8packed_uu_uint saturates an unsigned acc), so the unsigned form is two
 * calls: the exact unsigned dot product, then the signed saturating add. The mixed form
 * dot_acc_sat_4x8packed_su_int(signed a, unsigned b, int acc) is add_sat(dot(a, b), acc),
 * exactly qcom_dot8_acc. */
int qcom_udot8_acc(uint p0, uint p1, int acc)
{
    return add_sat(acc, (int)dot_4x8packed_uu_uint(p0, p1));
}
int qcom_dot8_acc(uint p0, uint p1, int acc) { return dot_acc_sat_4x8packed_su_int(p0, p1, acc); }
#elif defined(QCOM_EXT_KHR_cl_qcom_dot_product8) \
    && defined(__opencl_c_integer_dot_product_input_4x8bit)
/* Only the vector form of cl_khr_integer_dot_product: the same operations on char4/uchar4. */
int qcom_udot8_acc(uint p0, uint p1, int acc)
{
    return add_sat(acc, (int)dot(as_uchar4(p0), as_uchar4(p1)));
}
int qcom_dot8_acc(uint p0, uint p1, int acc)
{
    return dot_acc_sat(as_char4(p0), as_uchar4(p1), acc);
}
#elif defined(__NVPTX__) && defined(QCOM_EXT_NV_SM) && QCOM_EXT_NV_SM >= 61
/* The portable path on NVIDIA GPUs of compute capability 6.1 and later (QCOM_EXT_NV_SM:
 * DeviceCaps.compiler_options, from cl_nv_device_attribute_query), whose OpenCL has no
 * integer dot product: PTX dp4a (NVIDIA's OpenCL compiler takes inline PTX). dp4a wraps
 * its accumulator around, so it sums the four products into 0 (exact: |sum| <= 260100)
 * and the add to acc saturates, as everywhere. ".s32.u32": the first operand's lanes
 * signed, the second's unsigned. */
int qcom_udot8_acc(uint p0, uint p1, int acc)
{
    uint sum;
    asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(sum) : "r"(p0), "r"(p1), "r"(0u));
    return add_sat(acc, (int)sum);
}
int qcom_dot8_acc(uint p0, uint p1, int acc)
{
    int sum;
    asm("dp4a.s32.u32 %0, %1, %2, %3;" : "=r"(sum) : "r"(p0), "r"(p1), "r"(0));
    return add_sat(acc, sum);
}
#else
/* Portable OpenCL C 1.2 (also taken when a Khronos tier was chosen but the compiler does
 * not define the cl_khr_integer_dot_product feature macros). */
int qcom_udot8_acc(uint p0, uint p1, int acc)
{
    int4 products = convert_int4(as_uchar4(p0)) * convert_int4(as_uchar4(p1));
    return add_sat(acc, products.s0 + products.s1 + products.s2 + products.s3);
}
int qcom_dot8_acc(uint p0, uint p1, int acc)
{
    int4 products = convert_int4(as_char4(p0)) * convert_int4(as_uchar4(p1));
    return add_sat(acc, products.s0 + products.s1 + products.s2 + products.s3);
}
#endif
