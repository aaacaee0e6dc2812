/* General KxK conv2d on the RGBA image layout (guide section 8.5, GLES/Vulkan practice).
 *
 * input   image (IW * CIB, IH * N)      CIB = ceil(Ci/4) input channel blocks
 * weights [COB][CIB][KH][KW][4 (output channel)][4 (input channel)] store_t, packed on the
 *         host (zero beyond Co and Ci): for one tap and one input block, the 4 vectors
 *         w0..w3, one per output channel of the block, are adjacent
 * bias    [COB * 4] float, zero-padded
 * output  image (OW * COB, OH * N)
 *
 * Global size (ceil(OW/PIX) * COB, OH * N). A work-item computes 4 output channels (one
 * block) of PIX consecutive output pixels. For each input channel block and kernel tap
 * it reads the 4 weight vectors once and, per pixel, one input texel (4 channels), and
 * accumulates out.r += dot(in, w0) ... out.a += dot(in, w3): a 4x4 multiply-add per
 * texel. Input coordinates outside the tensor become -1 (the sampler returns zero).
 * Neighbouring work-items share the channel block, so they read the same weights.
 * Compile-time: KH KW SH SW DH DW, PIX (default 4), ACTIVATION, STORAGE_HALF.
 */
#include "conv_common.h"

#ifndef KH
#error "define KH, KW, SH, SW, DH, DW"
#endif
#ifndef PIX
#define PIX 4
#endif

__kernel void conv2d_image(__read_only image2d_t input, __global const store_t *restrict weights,
                           __global const float *restrict bias, __write_only image2d_t output,
                           int in_w, int in_h, int in_blocks, int out_w, int out_h,
                           int out_blocks, int out_w_blocks, int batch, int pad_w, int pad_h,
                           float slope)
{
    const int gx = get_global_id(0), gy = get_global_id(1);
    if (gx >= IMUL(out_w_blocks, out_blocks) || gy >= IMUL(out_h, batch)) return;
    const int cob = gx / out_w_blocks, owb = gx - IMUL(cob, out_w_blocks);
    const int n = gy / out_h, oh = gy - IMUL(n, out_h);
    const int ow0 = IMUL(owb, PIX);

    float4 acc[PIX];
    const float4 b = ((__global const float4 *)bias)[cob];
#pragma unroll
    for (int i = 0; i < PIX; ++i) acc[i] = b;

    const int ix0 = IMAD(ow0, SW, -pad_w);
    const int iy0 = IMAD(oh, SH, -pad_h);
    int w_at = IMUL(cob, in_blocks) * (KH * KW * 16);
    for (int cb = 0; cb < in_blocks; ++cb) {
        const int col0 = IMUL(cb, in_w);
        for (int ky = 0; ky < KH; ++ky) {
            const int iy = iy0 + ky * DH;
            const int row = (iy >= 0 && iy < in_h) ? IMAD(n, in_h, iy) : -1;
            for (int kx = 0; kx < KW; ++kx, w_at += 16) {
                const float4 w0 = LOAD4A(weights, w_at), w1 = LOAD4A(weights, w_at + 4);
                const float4 w2 = LOAD4A(weights, w_at + 8), w3 = LOAD4A(weights, w_at + 12);
#pragma unroll
                for (int i = 0; i < PIX; ++i) {
                    const int x = ix0 + i * SW + kx * DW;
                    const int col = (x >= 0 && x < in_w) ? col0 + x : -1;
                    const float4 v = read_imagef(input, CONV_SAMPLER, (int2)(col, row));
                    acc[i] += (float4)(dot(v, w0), dot(v, w1), dot(v, w2), dot(v, w3));
                }
            }
        }
    }

    const int out_x = IMAD(cob, out_w, ow0);
#pragma unroll
    for (int i = 0; i < PIX; ++i) {
        if (ow0 + i < out_w) write_imagef(output, (int2)(out_x + i, gy), ACTIVATE(acc[i], slope));
    }
}
