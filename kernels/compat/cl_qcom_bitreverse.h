/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_bitreverse (qcom-extensions.md section 16) ----------------------------
 * uint qcom_bitreverse(uint v): bit i of the result is bit 31-i of v.
 * Example from the guide: 0x1248edbf -> 0xfdb71248.
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_bitreverse)
#pragma OPENCL EXTENSION cl_qcom_bitreverse : enable
#elif defined(QCOM_EXT_KHR_cl_qcom_bitreverse)
#pragma OPENCL EXTENSION cl_khr_extended_bit_ops : enable
uint qcom_bitreverse(uint v) { return bit_reverse(v); }
#elif defined(QCOM_EXT_QUIRK_OCLGRIND) || defined(PYOPENCL_USING_OCLGRIND)
/* clang turns the mask-and-shift form below into llvm.bitreverse, which Oclgrind 21.10
 * cannot run ("Undefined external function"); a loop it will not unroll stays plain
 * arithmetic. (qcom_ext passes the first macro for Oclgrind, pyopencl the second.) */
uint qcom_bitreverse(uint v)
{
    uint r = 0;
#pragma nounroll
    for (int i = 0; i < 32; ++i) {
        r = (r << 1) | (v & 1u);
        v >>= 1;
    }
    return r;
}
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
