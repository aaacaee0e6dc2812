/* matmul_q8.h -- the integer arithmetic of q8_0 activations, shared by the quantizer
 * launch (matmul_quantize.cl), the GEMV that reads its output (matmul_gemv.cl, ACT_Q8)
 * and the one-launch integer GEMV (matmul_gemv_q8.cl), so that all of them quantize and
 * multiply exactly alike.
 *
 * q8_quantize_block: one block of 32 activations as ggml's quantize_row_q8_0_ref:
 * d = amax / 127, id = d ? 1 / d : 0, q = roundf(x * id) (halves away from zero), d then
 * stored as half (round to nearest even, by the caller's vstore_half). The two float
 * divisions are corrected with one fma step each, so that they round as IEEE division
 * does also where the device's `/` is less exact (OpenCL allows 2.5 ulp). A block
 * holding a NaN or an inf gets the scale NaN and quants 0, so that every output its row
 * reaches is NaN, as NaN and inf are data (the float path gives NaN or +-inf there);
 * fmax would skip a NaN and NaN to int is undefined. amax and that test are one integer
 * max of the values' sign-cleared bits (exponent all ones: NaN or inf), which no
 * fast-math option takes away; the quants' sum is qcom_dot8_acc against four ones.
 *
 * q8_load and q8_block_products (need matmul_weights.h and the kernel's MR and RPW):
 * a block of RPW rows of W read, then its integer dot products through qcom_dot8_acc (cl_qcom_dot_product8:
 * native on Adreno, cl_khr_integer_dot_product, PTX dp4a on NVIDIA or portable code
 * elsewhere; kernels/qcom_ext.h), whose first operand is signed and second unsigned:
 * the q4_0 nibbles are unsigned bytes (two masks and a shift, no float conversion), so
 * the block's sum is dot - 8 * sum(qx); q8_0 weights are made unsigned by flipping their
 * sign bit (q + 128, so the sum is dot - 128 * sum(qx)). Every sum is exact (|dot| <=
 * 32 * 127 * 255, far from saturation); the block's float term is then
 * weight scale * activation scale * (float)(integer sum), added to acc.
 */
#ifndef MATMUL_Q8_H
#define MATMUL_Q8_H

float q8_divided(float a, float b)
{
    const float q = a / b;
    return fma(fma(-q, b, a), 1.0f / b, q);
}

/* The 32 values `v` (8 quads, in order) quantized: q[i] holds quants 4i .. 4i+3 (int8,
 * in order), *sum their sum; returns d (float: the caller rounds it to half). */
float q8_quantize_block(const float4 *v, uint *q, int *sum)
{
    /* amax through the bits: the sign-cleared bits of floats that are not NaN order as
     * their magnitudes, so their integer max is amax's bits, and NaN and inf are the
     * largest (exponent all ones) */
    uint4 top = (uint4)(0u);
    for (int i = 0; i < 8; ++i)
        top = max(top, as_uint4(v[i]) & (uint4)(0x7FFFFFFFu));
    const uint bits = max(max(top.x, top.y), max(top.z, top.w));
    const int finite = bits < 0x7F800000u;
    const float d = finite ? q8_divided(as_float(bits), 127.0f) : as_float(0x7FC00000u);
    const float id = finite && d != 0.0f ? q8_divided(1.0f, d) : 0.0f;
    int total = 0;
    for (int i = 0; i < 8; ++i) {
        const int4 qi = finite ? convert_int4(round(v[i] * id)) : (int4)(0);
        q[i] = as_uint(convert_char4(qi));
        total = qcom_dot8_acc(q[i], 0x01010101u, total); /* the four quants' sum */
    }
    *sum = total;
    return d;
}

#ifdef MR
/* One block of the work-item's RPW rows of W: its words and scales (a struct, not an
 * array of structs: see block_t in matmul_gemv.cl). */
typedef struct {
    uint4 w[RPW][WPB];
    float d[RPW];
} q8_weights_t;

/* blk <- block b of the rows (`rows`: the first word of each row's block 0) */
void q8_load(WEIGHT_PARAMS, int nb, int b, const int *rows, q8_weights_t *blk)
{
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
#pragma unroll
        for (int j = 0; j < WPB; ++j)
            blk->w[r][j] = WORD_U(rows[r] + j * nb + b);
        blk->d[r] = SCALE(rows[r] / WPB + b);
    }
}

/* acc[m][r] += the integer dot product of the block `blk` of row r of W with the
 * block's quants of row m of x (xw[m]: its 8 words, dx[m] its scale, xs[m] the sum of
 * its quants), times both scales. */
void q8_block_products(const q8_weights_t *blk, const uint4 xw[MR][2], const float *dx,
                       const int *xs, float acc[MR][RPW])
{
    int isum[MR][RPW];
#pragma unroll
    for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int r = 0; r < RPW; ++r)
            isum[m][r] = 0;
#if WFMT == 2
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int m = 0; m < MR; ++m) {
            const uint4 xv = xw[m][j];
#pragma unroll
            for (int r = 0; r < RPW; ++r) {
                const uint4 u = blk->w[r][j] ^ (uint4)(0x80808080u);
                isum[m][r] = qcom_dot8_acc(xv.x, u.x, isum[m][r]);
                isum[m][r] = qcom_dot8_acc(xv.y, u.y, isum[m][r]);
                isum[m][r] = qcom_dot8_acc(xv.z, u.z, isum[m][r]);
                isum[m][r] = qcom_dot8_acc(xv.w, u.w, isum[m][r]);
            }
        }
#define Q8_ZERO_POINT 128
#elif WFMT == 3
#pragma unroll
    for (int m = 0; m < MR; ++m) {
        const uint4 lo = xw[m][0], hi = xw[m][1];
#pragma unroll
        for (int r = 0; r < RPW; ++r) {
            const uint4 u = blk->w[r][0];
            const uint4 l = u & (uint4)(0x0F0F0F0Fu), h = (u >> 4) & (uint4)(0x0F0F0F0Fu);
            int s = isum[m][r];
            s = qcom_dot8_acc(lo.x, l.x, s);
            s = qcom_dot8_acc(lo.y, l.y, s);
            s = qcom_dot8_acc(lo.z, l.z, s);
            s = qcom_dot8_acc(lo.w, l.w, s);
            s = qcom_dot8_acc(hi.x, h.x, s);
            s = qcom_dot8_acc(hi.y, h.y, s);
            s = qcom_dot8_acc(hi.z, h.z, s);
            isum[m][r] = qcom_dot8_acc(hi.w, h.w, s);
        }
    }
#define Q8_ZERO_POINT 8
#else
#error "q8_0 activations need q8_0 or q4_0 weights (WFMT 2 or 3)"
#endif
#pragma unroll
    for (int m = 0; m < MR; ++m) {
        const int offset = Q8_ZERO_POINT * xs[m];
#pragma unroll
        for (int r = 0; r < RPW; ++r)
            acc[m][r] += blk->d[r] * dx[m] * (float)(isum[m][r] - offset);
    }
#undef Q8_ZERO_POINT
}
#endif /* MR */

#endif /* MATMUL_Q8_H */
