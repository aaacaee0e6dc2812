/* Depthwise conv2d on the RGBA image layout (guide section 8.2, the MNN design).
 *
 * input   image (IW * CB, IH * N)     the N x C x IH x IW tensor, CB = ceil(C/4)
 * weights image (KW * CB, KH)         the C x 1 x KH x KW filter as a 1 x C x KH x KW tensor:
 *                                     texel (cb * KW + kx, ky) = taps (ky, kx) of block cb
 * bias    image (CB, 1)               the bias as a 1 x C x 1 x 1 tensor (zeros for none)
 * output  image (OW * CB, OH * N)
 *
 * Global size (ceil(OW/4) * CB, OH * N). A work-item computes 4 consecutive output pixels
 * of one channel block: 4 accumulators start at the bias; for each kernel row, with
 * stride 1 and no dilation it reads 3 input texels, then per kernel column reads one
 * more and multiply-adds the window of 4 with that column's weight texel (reuse 3, read
 * 1); otherwise it reads the 4 texels each tap needs. Input coordinates outside the
 * tensor (padding) become -1, where the CLK_ADDRESS_CLAMP sampler returns 0. Only the
 * valid outputs of the last block of a row are written when OW is not a multiple of 4.
 * Compile-time: KH KW SH SW DH DW, ACTIVATION, STORAGE_HALF (images: no code change).
 */
#include "conv_common.h"

#ifndef KH
#error "define KH, KW, SH, SW, DH, DW"
#endif

#define READ_INPUT(x) read_imagef(input, CONV_SAMPLER, (int2)(column(x, cb, in_w), row))

int column(int x, int cb, int in_w)
{
    return (x >= 0 && x < in_w) ? IMAD(cb, in_w, x) : -1;
}

__kernel void depthwise_conv2d(__read_only image2d_t input, __read_only image2d_t weights,
                               __read_only image2d_t bias, __write_only image2d_t output,
                               int in_w, int in_h, int out_w, int out_h, int pad_w,
                               int pad_h, int blocks, int out_w_blocks, int batch,
                               float slope)
{
    const int gx = get_global_id(0), gy = get_global_id(1);
    if (gx >= IMUL(out_w_blocks, blocks) || gy >= IMUL(out_h, batch)) return;
    const int cb = gx / out_w_blocks, owb = gx - IMUL(cb, out_w_blocks);
    const int n = gy / out_h, oh = gy - IMUL(n, out_h);
    const int ow0 = owb * 4;

    const float4 b = read_imagef(bias, CONV_SAMPLER, (int2)(cb, 0));
    float4 o0 = b, o1 = b, o2 = b, o3 = b;
    const int ix0 = IMAD(ow0, SW, -pad_w);
    const int iy0 = IMAD(oh, SH, -pad_h);

    for (int ky = 0; ky < KH; ++ky) {
        const int iy = iy0 + ky * DH;
        const int row = (iy >= 0 && iy < in_h) ? IMAD(n, in_h, iy) : -1;
#if SW == 1 && DW == 1
        float4 a0 = READ_INPUT(ix0), a1 = READ_INPUT(ix0 + 1), a2 = READ_INPUT(ix0 + 2);
        for (int kx = 0; kx < KW; ++kx) {
            const float4 a3 = READ_INPUT(ix0 + kx + 3);
            const float4 w = read_imagef(weights, CONV_SAMPLER, (int2)(IMAD(cb, KW, kx), ky));
            o0 = mad(a0, w, o0);
            o1 = mad(a1, w, o1);
            o2 = mad(a2, w, o2);
            o3 = mad(a3, w, o3);
            a0 = a1;
            a1 = a2;
            a2 = a3;
        }
#else
        for (int kx = 0; kx < KW; ++kx) {
            const int x = ix0 + kx * DW;
            const float4 w = read_imagef(weights, CONV_SAMPLER, (int2)(IMAD(cb, KW, kx), ky));
            o0 = mad(READ_INPUT(x), w, o0);
            o1 = mad(READ_INPUT(x + SW), w, o1);
            o2 = mad(READ_INPUT(x + 2 * SW), w, o2);
            o3 = mad(READ_INPUT(x + 3 * SW), w, o3);
        }
#endif
    }

    const int out_x = IMAD(cb, out_w, ow0);
    const int valid = out_w - ow0;
    write_imagef(output, (int2)(out_x, gy), ACTIVATE(o0, slope));
    if (valid > 1) write_imagef(output, (int2)(out_x + 1, gy), ACTIVATE(o1, slope));
    if (valid > 2) write_imagef(output, (int2)(out_x + 2, gy), ACTIVATE(o2, slope));
    if (valid > 3) write_imagef(output, (int2)(out_x + 3, gy), ACTIVATE(o3, slope));
}
