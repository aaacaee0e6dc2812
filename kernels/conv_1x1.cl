/* 1x1 conv2d on NHWC buffers (guide section 8.3, the MACE design).
 *
 * input   N x H x W x Ci  (store_t)
 * weights [ceil(Ci/4)][COB][4 (input channel)][4 (output channel)] (store_t), packed on the
 *         host, zero beyond Ci and Co; COB = ceil(Co/4) rounded up to a multiple of COV.
 *         For one step of 4 input channels and one block of 4 output channels the 4
 *         vectors w0..w3 (one per input channel, each holding 4 output channels) are
 *         adjacent, and neighbouring blocks are adjacent too (neighbouring work-items).
 * bias    [COB * 4] float, zero-padded
 * output  N x Ho x Wo x Co (store_t), Ho = (H - 1) / stride_h + 1, same for Wo
 *
 * A work-item owns a register tile of PIX output pixels x (4 * COV) output channels
 * (MACE: PIX = 2, COV = 1, a 2 x 4 tile). Per step over Ci by 4 it loads the 4 * COV
 * filter vectors and one input vector (4 input channels) per pixel, then broadcasts each
 * input scalar against its filter vector with mad. Pixels are taken PIX at a time in
 * flattened N * Ho * Wo order, so there is no per-row tail; strides scale the input
 * coordinates. Global size (COB / COV, ceil(N * Ho * Wo / PIX)); dimension 0 walks the
 * output channels, so neighbouring work-items share their input loads and read adjacent
 * filter blocks. Tails: the last step reads only the Ci % 4 channels that exist; pixels
 * past the end are computed from a clamped pixel and not written; channel blocks past Co
 * are skipped and a partial last block writes only its valid channels. No local memory,
 * no barriers: any local size is valid.
 * Compile-time: PIX (1..8), COV (1 or 2), ACTIVATION, STORAGE_HALF, USE_MAD24,
 * IN_ALIGNED (Ci % 4 == 0: whole-vector input loads), OUT_ALIGNED (Co % 4 == 0: whole-
 * vector stores).
 */
#include "conv_common.h"

#ifndef PIX
#define PIX 2
#endif
#ifndef COV
#define COV 1
#endif
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

/* acc[i][v] += the 4 input channels of pixel i times their filter vectors of block v */
#define ACCUMULATE(x, w_at)                                                                \
    for (int v = 0; v < COV; ++v) {                                                        \
        const int at = (w_at) + v * 16;                                                     \
        const float4 w0 = LOAD4A(weights, at), w1 = LOAD4A(weights, at + 4);               \
        const float4 w2 = LOAD4A(weights, at + 8), w3 = LOAD4A(weights, at + 12);          \
        for (int i = 0; i < PIX; ++i) {                                                     \
            float4 a = acc[i][v];                                                           \
            a = mad((float4)((x)[i].s0), w0, a);                                            \
            a = mad((float4)((x)[i].s1), w1, a);                                            \
            a = mad((float4)((x)[i].s2), w2, a);                                            \
            a = mad((float4)((x)[i].s3), w3, a);                                            \
            acc[i][v] = a;                                                                  \
        }                                                                                   \
    }

__kernel void conv2d_1x1(__global const store_t *restrict input,
                         __global const store_t *restrict weights,
                         __global const float *restrict bias, __global store_t *output,
                         int in_h, int in_w, int in_c, int out_c, int out_h, int out_w,
                         int stride_h, int stride_w, int pixels, int co_blocks, float slope)
{
    const int g = get_global_id(0), t = get_global_id(1);
    const int first = IMUL(t, PIX);
    if (g * COV >= co_blocks || first >= pixels) return;

    int in_at[PIX]; /* pixels past the end read a clamped pixel and are not written */
#pragma unroll
    for (int i = 0; i < PIX; ++i)
        in_at[i] = pointwise_input_at(min(first + i, pixels - 1), in_h, in_w, in_c, out_h,
                                      out_w, stride_h, stride_w);

    float4 acc[PIX][COV];
#pragma unroll
    for (int v = 0; v < COV; ++v) {
        const float4 b = ((__global const float4 *)bias)[g * COV + v];
#pragma unroll
        for (int i = 0; i < PIX; ++i) acc[i][v] = b;
    }

    const int steps = in_c >> 2, rest = in_c & 3;
    const int step_stride = co_blocks * 16;
    int w_at = g * COV * 16;
    float4 x[PIX];
    for (int k = 0; k < steps; ++k, w_at += step_stride) {
        const int c0 = k * 4;
#pragma unroll
        for (int i = 0; i < PIX; ++i) x[i] = LOAD_INPUT(input, in_at[i] + c0);
        ACCUMULATE(x, w_at);
    }
    if (rest) {
        const int c0 = steps * 4;
#pragma unroll
        for (int i = 0; i < PIX; ++i) {
            x[i] = (float4)(0.0f);
            x[i].s0 = LOAD1(input, in_at[i] + c0);
            if (rest > 1) x[i].s1 = LOAD1(input, in_at[i] + c0 + 1);
            if (rest > 2) x[i].s2 = LOAD1(input, in_at[i] + c0 + 2);
        }
        ACCUMULATE(x, w_at);
    }

#pragma unroll
    for (int i = 0; i < PIX; ++i) {
        const int p = first + i;
        const int out_at = IMUL(p, out_c);
#pragma unroll
        for (int v = 0; v < COV; ++v) {
            const int c = (g * COV + v) * 4;
            if (p >= pixels || c >= out_c) continue;
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
