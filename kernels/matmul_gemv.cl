/* Matrix-vector products for a decode step: y[m][n] = sum_k x[m][k] * W[n][k] + bias[n]
 * for MR (1..8) rows of x, W in any format of matmul_weights.h (struct of arrays).
 *
 * Work: a work-group is get_local_size(1) row groups of get_local_size(0) work-items; a
 * row group takes RPW consecutive rows of W (global id 1), and its work-items split K:
 * work-item `lid` takes blocks lid, lid + L0, lid + 2*L0, ... (L0 = get_local_size(0)),
 * so a row's words are read by consecutive work-items (coalesced; each byte read once,
 * one block ahead of its use), every x value a work-item reads (from local memory, see
 * the kernel) serves its RPW rows, and the MR x RPW partial sums are then added across
 * the row group (matmul_gemv_reduce.h). The global size is (1, ceil(N / RPW)), padded to
 * the local size: any local size whose dimension 0 is a power of two of at most
 * RED_ITEMS works (the host tunes it; the driver's own choice has dimension 0 of 1).
 *
 * ACT_Q8 1 (q8_0 and q4_0 weights): x comes quantized to q8_0 per block of 32
 * (matmul_quantize.cl: int8 words, a half scale and the sum of the 32 q per block) and
 * each block is an integer dot product through qcom_dot8_acc (q8_block_products,
 * matmul_q8.h). Used for more than 8 rows of x; up to 8, matmul_gemv_q8.cl quantizes x
 * itself in the same launch.
 *
 * Defines: WFMT, USE_IMAGE, X_HALF, K_TAIL (matmul_weights.h), MR, RPW, RED_ITEMS (the
 * largest work-group), ACT_Q8, CB (blocks of x staged in local memory at a time; the
 * host keeps L0 <= CB).
 */
#include "matmul_weights.h"
#include "matmul_gemv_reduce.h"

#ifndef UNROLL
#define UNROLL 1 /* blocks a work-item reads at once (l0 apart: each read coalesced) */
#endif

#if ACT_Q8
#if !QUANTIZED
#error "ACT_Q8 needs q8_0 or q4_0 weights"
#endif
#include "matmul_q8.h"
#define X_PARAMS __global const uint *xq, __global const half *xd, __global const int *xsum
#else
#define X_PARAMS __global const XT *x
#endif

#if ACT_Q8
/* Block b against the MR rows of quantized x (read from the quantizer's buffers). */
void q8_block(WEIGHT_PARAMS, X_PARAMS, int nb, int b, const int *rows, float acc[MR][RPW])
{
    uint4 xw[MR][2];
    float dx[MR];
    int xs[MR];
#pragma unroll
    for (int m = 0; m < MR; ++m) {
        xw[m][0] = vload4(0, xq + (m * nb + b) * 8);
        xw[m][1] = vload4(1, xq + (m * nb + b) * 8);
        dx[m] = vload_half(m * nb + b, xd);
        xs[m] = xsum[m * nb + b];
    }
    q8_weights_t blk;
    q8_load(WEIGHT_ARGS, nb, b, rows, &blk);
    q8_block_products(&blk, xw, dx, xs, acc);
}

#else
/* The words (and scales) of UNROLL blocks of the work-item's RPW rows (slot u: its
 * u-th block of a round), loaded one round ahead of their use (see the kernel). One
 * struct, not an array of them: the NVIDIA 580 compiler returned NaNs for arrays of
 * these structs. */
typedef struct {
#if WFMT == 0
    float4 w[UNROLL][RPW][8];
#elif WFMT == 1
    float8 w[UNROLL][RPW][4];
#else
    uint4 w[UNROLL][RPW][WPB];
    float d[UNROLL][RPW];
#endif
} block_t;

/* slot u of blk <- block b of the rows */
void load_block(WEIGHT_PARAMS, int nb, int b, const int *rows, block_t *blk, int u)
{
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
#pragma unroll
        for (int j = 0; j < WPB; ++j) {
#if WFMT == 0
            blk->w[u][r][j] = WORD_F4(rows[r] + j * nb + b);
#elif WFMT == 1
            blk->w[u][r][j] = WORD_H8(rows[r] + j * nb + b);
#else
            blk->w[u][r][j] = WORD_U(rows[r] + j * nb + b);
#endif
        }
#if QUANTIZED
        blk->d[u][r] = SCALE(rows[r] / WPB + b);
#endif
    }
}

/* slot u of to <- slot u of from */
void copy_slot(block_t *to, const block_t *from, int u)
{
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
#pragma unroll
        for (int j = 0; j < WPB; ++j)
            to->w[u][r][j] = from->w[u][r][j];
#if QUANTIZED
        to->d[u][r] = from->d[u][r];
#endif
    }
}

/* quad q of row m of the block's activations in the staged chunk (see the kernel) */
#define XQ(m, q) xl[((m) * 8 + (q)) * (CB + 1)]

/* acc[m][r] += the block's weights of row r times its activations of row m. */
void block_products(const block_t *blk, int u, __local const float4 *xl, float acc[MR][RPW])
{
#if WFMT == 0
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int m = 0; m < MR; ++m) {
            const float4 xv = XQ(m, j);
#pragma unroll
            for (int r = 0; r < RPW; ++r)
                acc[m][r] += dot(xv, blk->w[u][r][j]);
        }
#elif WFMT == 1
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int m = 0; m < MR; ++m) {
            const float4 lo = XQ(m, 2 * j), hi = XQ(m, 2 * j + 1);
#pragma unroll
            for (int r = 0; r < RPW; ++r)
                acc[m][r] += dot(lo, blk->w[u][r][j].lo) + dot(hi, blk->w[u][r][j].hi);
        }
#else
    float part[MR][RPW];
#pragma unroll
    for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int r = 0; r < RPW; ++r)
            part[m][r] = 0.0f;
#pragma unroll
    for (int j = 0; j < WPB; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int m = 0; m < MR; ++m) {
#if WFMT == 2
                const float4 xv = XQ(m, j * 4 + i);
#else
                const float4 lo = XQ(m, i), hi = XQ(m, 4 + i);
#endif
#pragma unroll
                for (int r = 0; r < RPW; ++r) {
                    const uint4 v = blk->w[u][r][j];
                    const uint word = i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
#if WFMT == 2
                    part[m][r] += dot(xv, I8X4(word));
#else
                    part[m][r] += dot(lo, Q4LO(word)) + dot(hi, Q4HI(word));
#endif
                }
            }
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
        for (int m = 0; m < MR; ++m)
            acc[m][r] += blk->d[u][r] * part[m][r];
#endif
}
#endif

QCOM_REQD_SUB_GROUP_SIZE(full)
__kernel void matmul_gemv(WEIGHT_PARAMS, X_PARAMS, int ldx, int k_end, int nb, int n_rows,
                          __global const float *bias, __global float *y, int ldy, int row0)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    __local float red[V * RED_ITEMS];
    const uint lid = get_local_id(0), l0 = get_local_size(0);
    const int first = (int)get_global_id(1) * RPW;

    int rows[RPW]; /* word index of each row's block 0, word 0 (rows past the end: clamped) */
    #pragma unroll
    for (int r = 0; r < RPW; ++r)
        rows[r] = min(first + r, n_rows - 1) * WPB * nb;
#if ACT_Q8
    xq += row0 * nb * 8;
    xd += row0 * nb;
    xsum += row0 * nb;
#else
    x += row0 * ldx;
#endif

    float acc[MR][RPW];
    #pragma unroll
    for (int m = 0; m < MR; ++m)
        #pragma unroll
        for (int r = 0; r < RPW; ++r)
            acc[m][r] = 0.0f;
#if ACT_Q8
    for (int b = (int)lid; b < nb; b += (int)l0)
        q8_block(WEIGHT_ARGS, xq, xd, xsum, nb, b, rows, acc);
#else
    /* x goes through local memory in chunks of CB blocks, read from global memory
     * coalesced (consecutive work-items, consecutive quads of a row) and stored quad-major
     * ([m][quad][block], rows of CB + 1: no bank conflicts), so that the work-items, one
     * block each, read it consecutively too; the row groups of the work-group share it */
    __local float4 stage[MR * 8 * (CB + 1)];
    const uint lin = get_local_id(1) * l0 + lid, items = l0 * get_local_size(1);
    /* each work-item's weights are read one block ahead: the reads of the next block
     * (across the next chunk's barriers and staging) overlap this block's arithmetic */
    block_t current, next;
    const int per_round = (int)l0 * UNROLL; /* the host keeps it <= CB */
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        if ((int)lid + u * (int)l0 < min(nb, CB))
            load_block(WEIGHT_ARGS, nb, (int)lid + u * (int)l0, rows, &current, u);
    for (int c0 = 0; c0 < nb; c0 += CB) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint t0 = lin; t0 < MR * CB * 8; t0 += 4 * items) {
            float4 v[4]; /* four loads in flight before the first store */
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const uint t = t0 + i * items, m = t / (CB * 8), q = t & 7;
                const int b = c0 + (int)((t >> 3) % CB);
                v[i] = t < MR * CB * 8 && b < nb ? x_quad(x + m * ldx, b * 32 + q * 4, k_end)
                                                 : (float4)(0.0f);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const uint t = t0 + i * items;
                if (t < MR * CB * 8)
                    stage[(t / (CB * 8) * 8 + (t & 7)) * (CB + 1) + (t >> 3) % CB] = v[i];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int blk = (int)lid; blk < CB && c0 + blk < nb; blk += per_round) {
            /* the work-item's UNROLL blocks of the next round: in this chunk, else in
             * the next; all their reads are issued before this round's arithmetic */
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int ahead = blk + per_round + u * (int)l0;
                const int after = ahead < CB ? c0 + ahead : c0 + CB + (int)lid + u * (int)l0;
                if (after < nb)
                    load_block(WEIGHT_ARGS, nb, after, rows, &next, u);
                else
                    copy_slot(&next, &current, u);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int own = blk + u * (int)l0;
                if (own < CB && c0 + own < nb)
                    block_products(&current, u, stage + own, acc);
            }
            current = next;
        }
    }
#endif

    gemv_reduce_store(acc, red, first, n_rows, bias, y, ldy, row0,
                      QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG);
}
