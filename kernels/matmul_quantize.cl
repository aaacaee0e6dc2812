/* Activations quantized to q8_0 on the fly, for the integer GEMV (matmul_gemv.cl with
 * ACT_Q8) where it is not fused (more than 8 rows of x, or asked for): one work-item per
 * block of 32 values of a row of x (global size (nb, M)), quantized by q8_quantize_block
 * (matmul_q8.h: ggml's quantize_row_q8_0_ref; NaN and inf give the scale NaN).
 *
 * Out: xq (M rows of nb * 8 uints: four int8 q a uint, in order), xd (M x nb halves),
 * xsum (M x nb ints: the sum of the block's 32 q, for the zero points of the GEMV).
 * Defines: X_HALF (matmul_weights.h); K is nb * 32 (q8_0 and q4_0 need that).
 */
#define WFMT 2
#define USE_IMAGE 0
#define K_TAIL 0
#define X_ALIGNED 1 /* K = nb * 32 */
#include "matmul_weights.h"
#include "matmul_q8.h"

__kernel void matmul_quantize_q8(__global const XT *x, int ldx, int nb, __global uint *xq,
                                 __global half *xd, __global int *xsum)
{
    const int b = (int)get_global_id(0), m = (int)get_global_id(1);
    if (b >= nb)
        return;
    __global const XT *block = x + m * ldx + b * 32;
    float4 v[8];
    for (int i = 0; i < 8; ++i)
        v[i] = XLOAD4(block + i * 4);
    uint q[8];
    int sum;
    const float d = q8_quantize_block(v, q, &sum);
    __global uint *out = xq + (m * nb + b) * 8;
    for (int i = 0; i < 8; ++i)
        out[i] = q[i];
    vstore_half(d, m * nb + b, xd);
    xsum[m * nb + b] = sum;
}
