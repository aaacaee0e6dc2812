/* The one-launch integer GEMV: y[m][n] = sum_k q8_0(x)[m][k] * W[n][k] + bias[n] for MR
 * (1..8) rows of float or half x and q8_0 or q4_0 W (matmul_weights.h), x quantized to
 * q8_0 per block of 32 inside the kernel: no quantizer launch, no global scratch.
 *
 * Work as matmul_gemv.cl: a work-group is get_local_size(1) row groups of
 * get_local_size(0) = L0 work-items; a row group takes RPW consecutive rows of W (global
 * id 1) and its work-items split K, work-item `lid` taking blocks lid, lid + L0, ... (so
 * that a row's words are read coalesced, each byte once); the partial sums are added
 * across the row group at the end (matmul_gemv_reduce.h). Any local size with L0 a power
 * of two of at most RED_ITEMS works.
 *
 * x goes through local memory in chunks of CB blocks: the work-group's work-items
 * quantize the chunk's MR x CB blocks, one block each (q8_quantize_block, matmul_q8.h:
 * bit for bit ggml's quantize_row_q8_0_ref and the quantizer launch,
 * matmul_quantize.cl), into local memory word-major (word i of row m of block `bl` at
 * (m * 8 + i) * CB + bl: consecutive work-items write and later read consecutive words,
 * no bank conflicts), with the scale as half and the sum of the quants; after a barrier
 * each work-item takes its blocks of the chunk (its weights read one block ahead, the
 * first before the quantization) through q8_block_products (matmul_q8.h:
 * qcom_dot8_acc on packed 4-byte groups, the q4_0 nibbles made bytes with a mask and a
 * shift, the float scales once per block). Every row group of the work-group shares the
 * quantized chunk, so more row groups a work-group (a larger L1) quantize x fewer times.
 * With L0 <= CB every block is taken by work-item b mod L0 in the order of matmul_gemv.cl
 * with ACT_Q8 (which reads the quantizer's output): the two give the same bits.
 *
 * Defines: WFMT (2 or 3), USE_IMAGE, X_HALF (matmul_weights.h; K_TAIL 0, X_ALIGNED 1: K
 * is NB * 32), MR, RPW, RED_ITEMS (the largest work-group), CB (blocks of x a chunk), NB
 * (blocks of a row of W: the shape's K, a constant of the build). The arguments are
 * matmul_gemv's (k_end and nb are K and NB here, unused).
 */
#include "matmul_weights.h"
#include "matmul_gemv_reduce.h"
#include "matmul_q8.h"

#if !QUANTIZED || K_TAIL || !X_ALIGNED
#error "the integer GEMV takes q8_0 or q4_0 weights and K a multiple of 32"
#endif
#if !defined(NB) || !defined(CB)
#error "build with -DNB=<blocks of a row> -DCB=<blocks of a chunk>"
#endif

QCOM_REQD_SUB_GROUP_SIZE(full)
__kernel void matmul_gemv_q8(WEIGHT_PARAMS, __global const XT *x, int ldx, int k_end, int nb,
                             int n_rows, __global const float *bias, __global float *y,
                             int ldy, int row0)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    __local float red[V * RED_ITEMS];
    __local uint xq[MR * 8 * CB]; /* the chunk's quants, word-major (see above) */
    __local ushort xd[MR * CB];   /* its scales (half bits), [m][bl] */
    __local int xs[MR * CB];      /* the sums of its quants, [m][bl] */
    const uint lid = get_local_id(0), l0 = get_local_size(0);
    const uint lin = get_local_id(1) * l0 + lid, items = l0 * get_local_size(1);
    const int first = (int)get_global_id(1) * RPW;

    int rows[RPW]; /* word index of each row's block 0, word 0 (rows past the end: clamped) */
#pragma unroll
    for (int r = 0; r < RPW; ++r)
        rows[r] = min(first + r, n_rows - 1) * WPB * NB;
    x += row0 * ldx;

    float acc[MR][RPW];
#pragma unroll
    for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int r = 0; r < RPW; ++r)
            acc[m][r] = 0.0f;

    /* each work-item's weights are read one block ahead: the reads of its first block
     * overlap the first chunk's quantization, those of the next its arithmetic */
    q8_weights_t current;
    if ((int)lid < min(NB, CB))
        q8_load(WEIGHT_ARGS, NB, (int)lid, rows, &current);
    for (int c0 = 0; c0 < NB; c0 += CB) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the last chunk's blocks are read */
        for (uint t = lin; t < MR * CB; t += items) {
            const int m = (int)(t / CB), bl = (int)(t % CB), b = c0 + bl;
            if (b < NB) {
                __global const XT *src = x + m * ldx + b * 32;
                float4 v[8];
#pragma unroll
                for (int i = 0; i < 8; ++i)
                    v[i] = XLOAD4(src + i * 4);
                uint q[8];
                int sum;
                const float d = q8_quantize_block(v, q, &sum);
#pragma unroll
                for (int i = 0; i < 8; ++i)
                    xq[(m * 8 + i) * CB + bl] = q[i];
                vstore_half(d, m * CB + bl, (__local half *)xd);
                xs[m * CB + bl] = sum;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int bl = (int)lid; bl < CB && c0 + bl < NB; bl += (int)l0) {
            /* the work-item's next block: in this chunk, else in the next */
            const int ahead = bl + (int)l0;
            const int after = ahead < CB ? c0 + ahead : c0 + CB + (int)lid;
            q8_weights_t next;
            if (after < NB)
                q8_load(WEIGHT_ARGS, NB, after, rows, &next);
            uint4 xw[MR][2];
            float dx[MR];
            int sums[MR];
#pragma unroll
            for (int m = 0; m < MR; ++m) {
                __local const uint *w = xq + m * 8 * CB + bl;
                xw[m][0] = (uint4)(w[0], w[CB], w[2 * CB], w[3 * CB]);
                xw[m][1] = (uint4)(w[4 * CB], w[5 * CB], w[6 * CB], w[7 * CB]);
                dx[m] = vload_half(m * CB + bl, (__local const half *)xd);
                sums[m] = xs[m * CB + bl];
            }
            q8_block_products(&current, xw, dx, sums, acc);
            if (after < NB)
                current = next;
        }
    }

    /* (Not needed by OpenCL; without it pocl 3.1 ran the last block's products twice in
     * work-item 0 where L0 is 1 and L1 is 4 or more. One barrier a work-group.) */
    barrier(CLK_LOCAL_MEM_FENCE);
    gemv_reduce_store(acc, red, first, n_rows, bias, y, ldy, row0,
                      QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG);
}
