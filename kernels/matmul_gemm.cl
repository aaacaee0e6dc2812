/* Matrix-matrix products for a prefill: y[m][n] = sum_k x[m][k] * W[n][k] + bias[n], W in
 * any format of matmul_weights.h, tiled.
 *
 * A work-group of (TN / RN) x (TM / RM) work-items computes a TM x TN tile of y. K goes by
 * blocks of 32 (one quant block): the block's TM x 32 activations and TN x 32 weights
 * (dequantized: scale times value) are stored in local memory k-major, and each
 * work-item accumulates an RM x RN register tile from them: rows ty*4 + g*(TM/RM*4) and
 * columns tx*4 + g*(TN/RN*4) (groups g of four), so the float4 reads of a k are
 * consecutive across the work-items (no bank conflicts). The next block's global reads
 * are issued into registers before the current block is computed (latency hidden by the
 * arithmetic); each weight byte is read once per tile row of y.
 *
 * Defines: WFMT, USE_IMAGE, X_HALF, K_TAIL (matmul_weights.h), TM, TN, RM, RN (RM and
 * RN multiples of 4; TM * 8 a multiple of the work-group size).
 */
#include "matmul_weights.h"

#define WG_X (TN / RN)
#define WG_Y (TM / RM)
#define WGI (WG_X * WG_Y)
#define MQ (RM / 4)
#define NQ (RN / 4)
#define AQ (TM * 8 / WGI)                  /* activation quads per work-item and block */
#define WU ((TN * WPB + WGI - 1) / WGI)    /* weight words per work-item and block */
#define WEPW (32 / WPB)                    /* weights in a word */

#if (TM * 8) % WGI != 0 || RM % 4 != 0 || RN % 4 != 0
#error "TM * 8 must be a multiple of the work-group size, RM and RN of 4"
#endif

/* What a work-item reads for one block before it is stored in local memory. */
typedef struct {
    float4 x[AQ];
#if WFMT == 0
    float4 w[WU];
#elif WFMT == 1
    float4 w[WU], w_hi[WU];
#else
    uint4 w[WU];
    float d[WU];
#endif
} staged_t;

void stage(WEIGHT_PARAMS, __global const XT *x, int ldx, int k_end, int nb, int b, int m0,
           int m_rows, int n0, int n_rows, uint t, staged_t *s)
{
    #pragma unroll
    for (int i = 0; i < AQ; ++i) {
        const uint q = t + i * WGI;
        const int row = min(m0 + (int)(q >> 3), m_rows - 1);
        s->x[i] = x_quad(x + row * ldx, b * 32 + (int)(q & 7) * 4, k_end);
    }
    #pragma unroll
    for (int i = 0; i < WU; ++i) {
        const uint u = min(t + i * WGI, (uint)(TN * WPB - 1));
        const int n = min(n0 + (int)(u % TN), n_rows - 1);
        const int word = (n * WPB + (int)(u / TN)) * nb + b;
#if WFMT == 0
        s->w[i] = WORD_F4(word);
#elif WFMT == 1
        s->w[i] = WORD_H_LO(word);
        s->w_hi[i] = WORD_H_HI(word);
#else
        s->w[i] = WORD_U(word);
        s->d[i] = SCALE(n * nb + b);
#endif
    }
}

#define PUT4(k, col, v)                                                                   \
    do {                                                                                  \
        wt[(k) * TN + (col)] = (v).x;                                                     \
        wt[((k) + 1) * TN + (col)] = (v).y;                                               \
        wt[((k) + 2) * TN + (col)] = (v).z;                                               \
        wt[((k) + 3) * TN + (col)] = (v).w;                                               \
    } while (0)

/* The staged block into local memory: as[k][m] (TM a row), wt[k][n] (TN a row). */
void store(const staged_t *s, uint t, __local float *as, __local float *wt)
{
    #pragma unroll
    for (int i = 0; i < AQ; ++i) {
        const uint q = t + i * WGI, mm = q >> 3, k = (q & 7) * 4;
        as[k * TM + mm] = s->x[i].x;
        as[(k + 1) * TM + mm] = s->x[i].y;
        as[(k + 2) * TM + mm] = s->x[i].z;
        as[(k + 3) * TM + mm] = s->x[i].w;
    }
    #pragma unroll
    for (int i = 0; i < WU; ++i) {
        const uint u = t + i * WGI;
        if (u >= TN * WPB)
            break;
        const uint col = u % TN, k = (u / TN) * WEPW;
#if WFMT == 0
        PUT4(k, col, s->w[i]);
#elif WFMT == 1
        PUT4(k, col, s->w[i]);
        PUT4(k + 4, col, s->w_hi[i]);
#elif WFMT == 2
        const float d = s->d[i];
        PUT4(k, col, d * I8X4(s->w[i].x));
        PUT4(k + 4, col, d * I8X4(s->w[i].y));
        PUT4(k + 8, col, d * I8X4(s->w[i].z));
        PUT4(k + 12, col, d * I8X4(s->w[i].w));
#else
        const float d = s->d[i];
        const uint4 q = s->w[i];
        PUT4(0, col, d * Q4LO(q.x));
        PUT4(4, col, d * Q4LO(q.y));
        PUT4(8, col, d * Q4LO(q.z));
        PUT4(12, col, d * Q4LO(q.w));
        PUT4(16, col, d * Q4HI(q.x));
        PUT4(20, col, d * Q4HI(q.y));
        PUT4(24, col, d * Q4HI(q.z));
        PUT4(28, col, d * Q4HI(q.w));
#endif
    }
}

__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void matmul_gemm(WEIGHT_PARAMS, __global const XT *x, int ldx, int k_end, int nb, int m_rows,
                 int n_rows, __global const float *bias, __global float *y, int ldy)
{
    /* float4 arrays, so that the reads of the inner loop are 16-byte (aligned) loads */
    __local float4 as4[8 * TM];
    __local float4 wt4[8 * TN];
    __local float *as = (__local float *)as4, *wt = (__local float *)wt4;
    const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
    const uint t = (uint)(ty * WG_X + tx);
    const int n0 = (int)get_group_id(0) * TN, m0 = (int)get_group_id(1) * TM;

    float4 acc[RM][NQ];
    #pragma unroll
    for (int i = 0; i < RM; ++i)
        #pragma unroll
        for (int g = 0; g < NQ; ++g)
            acc[i][g] = (float4)(0.0f);

    staged_t s;
    stage(WEIGHT_ARGS, x, ldx, k_end, nb, 0, m0, m_rows, n0, n_rows, t, &s);
    for (int b = 0; b < nb; ++b) {
        if (b > 0)
            barrier(CLK_LOCAL_MEM_FENCE); /* every work-item is done with the last block */
        store(&s, t, as, wt);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (b + 1 < nb)
            stage(WEIGHT_ARGS, x, ldx, k_end, nb, b + 1, m0, m_rows, n0, n_rows, t, &s);
        #pragma unroll
        for (int k = 0; k < 32; ++k) {
            float4 a[MQ], w[NQ];
            #pragma unroll
            for (int g = 0; g < MQ; ++g)
                a[g] = as4[k * (TM / 4) + g * WG_Y + ty];
            #pragma unroll
            for (int g = 0; g < NQ; ++g)
                w[g] = wt4[k * (TN / 4) + g * WG_X + tx];
            #pragma unroll
            for (int g = 0; g < MQ; ++g)
                #pragma unroll
                for (int c = 0; c < NQ; ++c) {
                    acc[g * 4][c] = fma((float4)(a[g].x), w[c], acc[g * 4][c]);
                    acc[g * 4 + 1][c] = fma((float4)(a[g].y), w[c], acc[g * 4 + 1][c]);
                    acc[g * 4 + 2][c] = fma((float4)(a[g].z), w[c], acc[g * 4 + 2][c]);
                    acc[g * 4 + 3][c] = fma((float4)(a[g].w), w[c], acc[g * 4 + 3][c]);
                }
        }
    }

    #pragma unroll
    for (int i = 0; i < RM; ++i) {
        const int m = m0 + (i / 4) * WG_Y * 4 + ty * 4 + i % 4;
        if (m >= m_rows)
            continue;
        #pragma unroll
        for (int g = 0; g < NQ; ++g) {
            const int n = n0 + g * WG_X * 4 + tx * 4;
            const float4 v = acc[i][g];
            if (n < n_rows) y[m * ldy + n] = v.x + bias[n];
            if (n + 1 < n_rows) y[m * ldy + n + 1] = v.y + bias[n + 1];
            if (n + 2 < n_rows) y[m * ldy + n + 2] = v.z + bias[n + 2];
            if (n + 3 < n_rows) y[m * ldy + n + 3] = v.w + bias[n + 3];
        }
    }
}
