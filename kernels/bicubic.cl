/* 2x bicubic upscale (cl_qcom_filter_bicubic). The sampler decides the filter on Adreno
 * (CL_FILTER_BICUBIC_QCOM, from qcom_ext.create_sampler(..., filter="bicubic")); elsewhere
 * qcom_read_imagef_bicubic computes the guide's 4x4 formula from a nearest sampler.
 * Build with -DQCOM_EXT_BICUBIC_NORMALIZED=1: the coordinates below are normalized. */
#include <qcom_ext.h>

/* Output pixel (X, Y) samples the source at texel-space ((X + 0.5) / 2, (Y + 0.5) / 2):
 * the centre of the output pixel, in normalized coordinates of either image.
 * Launch with the global size = the output size (no bounds check: Oclgrind 21.10 reports
 * branches on image-size queries as depending on uninitialized values). */
__kernel void upscale2x(read_only image2d_t src, sampler_t sampler, write_only image2d_t dst)
{
    int2 pos = (int2)((int)get_global_id(0), (int)get_global_id(1));
    int2 size = get_image_dim(dst);
    float2 coord = ((float2)((float)pos.x, (float)pos.y) + 0.5f)
                   / (float2)((float)size.x, (float)size.y);
    write_imagef(dst, pos, qcom_read_imagef_bicubic(src, sampler, coord));
}

/* The same 2x upscale, specialised: each work-item writes the 2x2 output block
 * (2X..2X+1, 2Y..2Y+1) of source texel (X, Y). An even output sits at texel-space
 * X + 0.25 (a = 0.75: texels X-2..X+1), an odd one at X + 0.75 (a = 0.25: X-1..X+2), so
 * the block needs the 5x5 texels X-2..X+2, read once instead of 4 x 16 times. The weights
 * are the guide's Catmull-Rom weights at a = 0.75 and 0.25 (exact in float), the sum is in
 * the guide's order, and texels outside the image are the border colour (CLK_ADDRESS_CLAMP).
 * Portable OpenCL C 1.2 on every device: on Adreno the sampler-based upscale2x above uses
 * the hardware filter instead. Launch with the global size = the source size. */
__constant float4 BICUBIC_W_EVEN = (float4)(-0.0234375f, 0.2265625f, 0.8671875f, -0.0703125f);
__constant float4 BICUBIC_W_ODD = (float4)(-0.0703125f, 0.8671875f, 0.2265625f, -0.0234375f);

float4 block_output(const float4 *t, int i0, int j0, float4 wu, float4 wv)
{
    float4 sum = (float4)(0.0f);
    for (int i = 0; i < 4; ++i) {
        const float4 *column = t + (i0 + i) * 5 + j0;
        float4 c = column[0] * wv.s0;
        c += column[1] * wv.s1;
        c += column[2] * wv.s2;
        c += column[3] * wv.s3;
        sum += (i == 0 ? wu.s0 : i == 1 ? wu.s1 : i == 2 ? wu.s2 : wu.s3) * c;
    }
    return sum;
}

__kernel void upscale2x_blocks(read_only image2d_t src, write_only image2d_t dst)
{
    const sampler_t texels = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
    int x = (int)get_global_id(0), y = (int)get_global_id(1);
    float4 t[25]; /* t[i * 5 + j]: texel (x - 2 + i, y - 2 + j) */
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j)
            t[i * 5 + j] = read_imagef(src, texels, (int2)(x - 2 + i, y - 2 + j));
    float4 even = BICUBIC_W_EVEN, odd = BICUBIC_W_ODD;
    write_imagef(dst, (int2)(2 * x, 2 * y), block_output(t, 0, 0, even, even));
    write_imagef(dst, (int2)(2 * x + 1, 2 * y), block_output(t, 1, 0, odd, even));
    write_imagef(dst, (int2)(2 * x, 2 * y + 1), block_output(t, 0, 1, even, odd));
    write_imagef(dst, (int2)(2 * x + 1, 2 * y + 1), block_output(t, 1, 1, odd, odd));
}
