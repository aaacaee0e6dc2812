/* 8-bit integer matrix multiply with the cl_qcom_dot_product8 builtins.
 *
 *   C[m][n] = sum_k A[m][k] * B[k][n], accumulated in int with signed saturation
 *
 * A (M x K) is stored row-major with four consecutive k packed per uint (a_packed[m][k/4]);
 * B is stored transposed the same way (bt_packed[n][k/4]), so both operands of one
 * qcom_*dot8_acc call hold the same four k. K is zero-padded to a multiple of 4 on the host
 * (zero lanes add nothing). Each work-item computes a 1 x 4 tile of C: one packed word of
 * A is reused against four columns of B. Runs natively on Adreno, through
 * cl_khr_integer_dot_product or portable code elsewhere (kernels/qcom_ext.h).
 *
 * matmul_s8u8: A signed int8, B unsigned (qcom_dot8_acc); matmul_u8u8: both unsigned
 * (qcom_udot8_acc). Global size (ceil(N/4), M).
 */
#include <qcom_ext.h>

#define DOT8_MATMUL(name, dot)                                                              \
__kernel void name(__global const uint *a_packed, __global const uint *bt_packed,           \
                   __global int *c, int m_rows, int n_cols, int k_words)                    \
{                                                                                           \
    const int n0 = (int)get_global_id(0) * 4;                                               \
    const int m = (int)get_global_id(1);                                                    \
    if (m >= m_rows || n0 >= n_cols) return;                                                \
    const int cols = min(4, n_cols - n0);                                                   \
    __global const uint *a_row = a_packed + m * k_words;                                    \
    /* columns past the end re-read column n0 (in bounds) and are not written */            \
    __global const uint *b0 = bt_packed + (n0 + 0) * k_words;                               \
    __global const uint *b1 = bt_packed + (n0 + (cols > 1 ? 1 : 0)) * k_words;              \
    __global const uint *b2 = bt_packed + (n0 + (cols > 2 ? 2 : 0)) * k_words;              \
    __global const uint *b3 = bt_packed + (n0 + (cols > 3 ? 3 : 0)) * k_words;              \
    int4 acc = (int4)(0);                                                                   \
    for (int k = 0; k < k_words; ++k) {                                                     \
        const uint a = a_row[k];                                                            \
        acc.s0 = dot(a, b0[k], acc.s0);                                                     \
        acc.s1 = dot(a, b1[k], acc.s1);                                                     \
        acc.s2 = dot(a, b2[k], acc.s2);                                                     \
        acc.s3 = dot(a, b3[k], acc.s3);                                                     \
    }                                                                                       \
    __global int *out = c + m * n_cols + n0;                                                \
    out[0] = acc.s0;                                                                        \
    if (cols > 1) out[1] = acc.s1;                                                          \
    if (cols > 2) out[2] = acc.s2;                                                          \
    if (cols > 3) out[3] = acc.s3;                                                          \
}

DOT8_MATMUL(matmul_s8u8, qcom_dot8_acc)
DOT8_MATMUL(matmul_u8u8, qcom_udot8_acc)
