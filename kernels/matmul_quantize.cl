/* Activations quantized to q8_0 on the fly, for the integer GEMV (matmul_gemv.cl with
 * ACT_Q8): one work-item per block of 32 values of a row of x (global size (nb, M)).
 *
 * ggml's quantize_row_q8_0_ref: d = amax / 127, id = d ? 1 / d : 0, q = roundf(x * id)
 * (halves away from zero), d stored as half (round to nearest even). The two float
 * divisions are corrected with one fma step each, so that they round as IEEE division
 * does also where the device's `/` is less exact (OpenCL allows 2.5 ulp).
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

float divided(float a, float b)
{
    const float q = a / b;
    return fma(fma(-q, b, a), 1.0f / b, q);
}

__kernel void matmul_quantize_q8(__global const XT *x, int ldx, int nb, __global uint *xq,
                                 __global half *xd, __global int *xsum)
{
    const int b = (int)get_global_id(0), m = (int)get_global_id(1);
    if (b >= nb)
        return;
    __global const XT *block = x + m * ldx + b * 32;
    float4 v[8];
    float amax = 0.0f;
    for (int i = 0; i < 8; ++i) {
        v[i] = XLOAD4(block + i * 4);
        const float4 a = fabs(v[i]);
        amax = fmax(amax, fmax(fmax(a.x, a.y), fmax(a.z, a.w)));
    }
    const float d = divided(amax, 127.0f);
    const float id = d != 0.0f ? divided(1.0f, d) : 0.0f;
    int sum = 0;
    __global uint *out = xq + (m * nb + b) * 8;
    for (int i = 0; i < 8; ++i) {
        const int4 q = convert_int4(round(v[i] * id));
        sum += q.x + q.y + q.z + q.w;
        out[i] = as_uint(convert_char4(q));
    }
    vstore_half(d, m * nb + b, xd);
    xsum[m * nb + b] = sum;
}
