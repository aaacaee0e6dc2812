/* Activations quantized to q8_0 on the fly, for the integer GEMV (matmul_gemv.cl with
 * ACT_Q8): one work-item per block of 32 values of a row of x (global size (nb, M)).
 *
 * ggml's quantize_row_q8_0_ref: d = amax / 127, id = d ? 1 / d : 0, q = roundf(x * id)
 * (halves away from zero), d stored as half (round to nearest even). The two float
 * divisions are corrected with one fma step each, so that they round as IEEE division
 * does also where the device's `/` is less exact (OpenCL allows 2.5 ulp).
 *
 * A block holding a NaN or an inf gets the scale NaN and quants 0, so that every
 * output its row reaches is NaN, as NaN and inf are data (the float path gives NaN or
 * +-inf there); fmax would skip a NaN and NaN to int is undefined. The test is on the
 * bits (exponent all ones), which no fast-math option takes away.
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
    int4 special = (int4)(0); /* -1 where a value is NaN or inf */
    for (int i = 0; i < 8; ++i) {
        v[i] = XLOAD4(block + i * 4);
        const float4 a = fabs(v[i]);
        amax = fmax(amax, fmax(fmax(a.x, a.y), fmax(a.z, a.w)));
        special |= as_int4(a) >= (int4)(0x7F800000);
    }
    const int finite = !any(special);
    const float d = finite ? divided(amax, 127.0f) : as_float(0x7FC00000u); /* NaN */
    const float id = finite && d != 0.0f ? divided(1.0f, d) : 0.0f;
    int sum = 0;
    __global uint *out = xq + (m * nb + b) * 8;
    for (int i = 0; i < 8; ++i) {
        const int4 q = finite ? convert_int4(round(v[i] * id)) : (int4)(0);
        sum += q.x + q.y + q.z + q.w;
        out[i] = as_uint(convert_char4(q));
    }
    vstore_half(d, m * nb + b, xd);
    xsum[m * nb + b] = sum;
}
