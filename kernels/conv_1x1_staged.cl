/* 1x1 conv2d on NHWC buffers as a GEMM with local-memory staging: [P, Ci] x [Ci, Co].
 *
 * input   N x H x W x Ci  (store_t), P = N * Ho * Wo output pixels (strides scale the
 *         input coordinates: conv_common.h pointwise_input_at)
 * weights [KP][CP] (store_t), packed on the host: row k holds the Co filter values of
 *         input channel k, zero beyond Ci and Co; KP = Ci rounded up to DEPTH, CP = Co
 *         rounded up to TN
 * bias    [CP] float, zero-padded
 * output  N x Ho x Wo x Co (store_t)
 *
 * A work-group of GROUP_X x GROUP_Y work-items computes a TM x TN tile of the output
 * (TM = GROUP_Y * PIX pixels, TN = GROUP_X * 4 * COV channels); work-item (x, y) owns
 * a PIX x (4 * COV) register tile: pixels y * PIX + i and channel blocks x + v * GROUP_X
 * of the group's tile, so that neighbouring work-items store neighbouring float4s and
 * read neighbouring float4s of the weight tile. The K loop walks Ci in steps of DEPTH:
 * the group copies the TM x DEPTH input tile (float4 loads along the contiguous
 * channels; stored transposed, As[k][m], rows padded by a float4) and the DEPTH x TN
 * weight tile (float4 loads) into local memory, then every work-item runs DEPTH rank-1
 * updates of its tile from there: per k, PIX / 4 (PIX >= 4) or PIX (PIX < 4) local reads
 * of its pixels and COV float4 reads of weights for 4 * PIX * COV multiply-adds. The
 * next step's tiles are loaded into registers before this step's updates, so global
 * loads overlap the arithmetic.
 * Bytes from global memory per multiply-add: 1 / TN of an input float and 1 / TM of a
 * weight (the input is read Co / TN times, the weights P / TM times, mostly from cache).
 *
 * Tails: input channels past Ci load as 0 (the weights there are 0 too); pixels past P
 * load a clamped pixel and are not stored; channels past Co are computed from zero
 * weights and not stored. The local size must be (GROUP_X, GROUP_Y) (required), the
 * global size (CP / TN * GROUP_X, ceil(P / TM) * GROUP_Y).
 * Compile-time: GROUP_X, GROUP_Y, PIX (1..8), COV (1, 2), DEPTH (4, 8, 16), ACTIVATION,
 * STORAGE_HALF, USE_MAD24, IN_ALIGNED (Ci % 4 == 0: whole-vector input loads),
 * OUT_ALIGNED (Co % 4 == 0: whole-vector stores).
 */
#include "conv_common.h"

#ifndef GROUP_X
#define GROUP_X 16
#endif
#ifndef GROUP_Y
#define GROUP_Y 16
#endif
#ifndef PIX
#define PIX 4
#endif
#ifndef COV
#define COV 1
#endif
#ifndef DEPTH
#define DEPTH 16
#endif
#if DEPTH % 4
#error "DEPTH must be a multiple of 4"
#endif

#define THREADS (GROUP_X * GROUP_Y)
#define TM (GROUP_Y * PIX)
#define TN4 (GROUP_X * COV) /* float4 columns of the tile */
#define A_QUADS (TM * DEPTH / 4)
#define B_QUADS (DEPTH * TN4)
#define A_SLOTS ((A_QUADS + THREADS - 1) / THREADS)
#define B_SLOTS ((B_QUADS + THREADS - 1) / THREADS)
#define A_STRIDE4 ((TM + 3) / 4 + 1) /* float4s in a row of the input tile */
#define A_STRIDE (A_STRIDE4 * 4)

#if IN_ALIGNED
#define LOAD_INPUT LOAD4A
#else
#define LOAD_INPUT LOAD4
#endif
#if OUT_ALIGNED
#define STORE_OUTPUT STORE4A
#else
#define STORE_OUTPUT STORE4
#endif

/* The 4 input channels c..c+3 at element offset at, zero past in_c. */
float4 input_quad(__global const store_t *restrict input, int at, int c, int in_c)
{
#if IN_ALIGNED
    return c < in_c ? LOAD_INPUT(input, at + c) : (float4)(0.0f);
#else
    if (c + 4 <= in_c) return LOAD_INPUT(input, at + c);
    float4 x = (float4)(0.0f);
    if (c < in_c) x.s0 = LOAD1(input, at + c);
    if (c + 1 < in_c) x.s1 = LOAD1(input, at + c + 1);
    if (c + 2 < in_c) x.s2 = LOAD1(input, at + c + 2);
    return x;
#endif
}

__kernel __attribute__((reqd_work_group_size(GROUP_X, GROUP_Y, 1))) void
conv2d_1x1_staged(__global const store_t *restrict input,
                  __global const store_t *restrict weights,
                  __global const float *restrict bias, __global store_t *output, int in_h,
                  int in_w, int in_c, int out_c, int out_h, int out_w, int stride_h,
                  int stride_w, int pixels, int co_padded, float slope)
{
    __local float4 a_tile4[DEPTH * A_STRIDE4];
    __local float *a_tile = (__local float *)a_tile4;
    __local float4 b_tile[DEPTH * TN4];
    const int x = get_local_id(0), y = get_local_id(1);
    const int l = IMAD(y, GROUP_X, x);
    const int n4 = get_group_id(0) * TN4; /* first float4 column of the group's tile */
    const int m0 = get_group_id(1) * TM;  /* first pixel */
    const int row4 = co_padded >> 2;      /* float4s in a weight row */

    /* This work-item's share of each tile copy: slot s is quad l + s * THREADS, for A
     * pixel q / (DEPTH / 4) and channels 4 * (q % (DEPTH / 4)) + 0..3 of the step, for
     * B row q / TN4 and float4 column q % TN4. */
    int a_at[A_SLOTS], a_m[A_SLOTS], a_c[A_SLOTS];
#pragma unroll
    for (int s = 0; s < A_SLOTS; ++s) {
        const int q = min(l + s * THREADS, A_QUADS - 1);
        a_m[s] = q / (DEPTH / 4);
        a_c[s] = (q - a_m[s] * (DEPTH / 4)) * 4;
        a_at[s] = pointwise_input_at(min(m0 + a_m[s], pixels - 1), in_h, in_w, in_c, out_h,
                                     out_w, stride_h, stride_w);
    }
    int b_at[B_SLOTS];
#pragma unroll
    for (int s = 0; s < B_SLOTS; ++s) {
        const int q = min(l + s * THREADS, B_QUADS - 1);
        const int k = q / TN4;
        b_at[s] = IMAD(k, co_padded, (n4 + q - k * TN4) * 4);
    }

    float4 acc[PIX][COV];
#pragma unroll
    for (int v = 0; v < COV; ++v) {
        const float4 b = ((__global const float4 *)bias)[n4 + x + v * GROUP_X];
#pragma unroll
        for (int i = 0; i < PIX; ++i) acc[i][v] = b;
    }

    float4 a_next[A_SLOTS], b_next[B_SLOTS];
#pragma unroll
    for (int s = 0; s < A_SLOTS; ++s) a_next[s] = input_quad(input, a_at[s], a_c[s], in_c);
#pragma unroll
    for (int s = 0; s < B_SLOTS; ++s) b_next[s] = LOAD4A(weights, b_at[s]);

    for (int k0 = 0; k0 < in_c; k0 += DEPTH) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous step's reads are done */
#pragma unroll
        for (int s = 0; s < A_SLOTS; ++s) {
            if (A_QUADS % THREADS && l + s * THREADS >= A_QUADS) continue;
            __local float *at = a_tile + IMAD(a_c[s], A_STRIDE, a_m[s]);
            at[0] = a_next[s].s0;
            at[A_STRIDE] = a_next[s].s1;
            at[2 * A_STRIDE] = a_next[s].s2;
            at[3 * A_STRIDE] = a_next[s].s3;
        }
#pragma unroll
        for (int s = 0; s < B_SLOTS; ++s) {
            const int q = l + s * THREADS;
            if (B_QUADS % THREADS && q >= B_QUADS) continue;
            b_tile[q] = b_next[s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + DEPTH < in_c) { /* the next step's tiles, while this one computes */
#pragma unroll
            for (int s = 0; s < A_SLOTS; ++s)
                a_next[s] = input_quad(input, a_at[s], k0 + DEPTH + a_c[s], in_c);
#pragma unroll
            for (int s = 0; s < B_SLOTS; ++s)
                b_next[s] = LOAD4A(weights, b_at[s] + (k0 + DEPTH) * co_padded);
        }
#pragma unroll
        for (int k = 0; k < DEPTH; ++k) {
            float4 b[COV];
#pragma unroll
            for (int v = 0; v < COV; ++v) b[v] = b_tile[k * TN4 + x + v * GROUP_X];
            float a[PIX];
#if PIX % 4 == 0
#pragma unroll
            for (int i = 0; i < PIX; i += 4) {
                const float4 q = a_tile4[k * A_STRIDE4 + (y * PIX + i) / 4];
                a[i] = q.s0;
                a[i + 1] = q.s1;
                a[i + 2] = q.s2;
                a[i + 3] = q.s3;
            }
#else
#pragma unroll
            for (int i = 0; i < PIX; ++i) a[i] = a_tile[k * A_STRIDE + y * PIX + i];
#endif
#pragma unroll
            for (int i = 0; i < PIX; ++i)
#pragma unroll
                for (int v = 0; v < COV; ++v) acc[i][v] = mad((float4)(a[i]), b[v], acc[i][v]);
        }
    }

#pragma unroll
    for (int i = 0; i < PIX; ++i) {
        const int p = m0 + y * PIX + i;
        if (p >= pixels) continue;
        const int out_at = IMUL(p, out_c);
#pragma unroll
        for (int v = 0; v < COV; ++v) {
            const int c = (n4 + x + v * GROUP_X) * 4;
            if (c >= out_c) continue;
            const float4 r = ACTIVATE(acc[i][v], slope);
            if (c + 4 <= out_c) {
                STORE_OUTPUT(r, output, out_at + c);
            } else {
                STORE1(r.s0, output, out_at + c);
                if (c + 1 < out_c) STORE1(r.s1, output, out_at + c + 1);
                if (c + 2 < out_c) STORE1(r.s2, output, out_at + c + 2);
            }
        }
    }
}
