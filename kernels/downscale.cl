/* 2x downscale of an RGBA image by a 2x2 box average, for samples/vector_image_gather.py
 * and benchmarks/cases_gather.py. Output pixel (x, y) is the mean of input texels
 * (2x .. 2x+1, 2y .. 2y+1); one work-item per output pixel, x fastest (coalesced).
 *
 * downscale2x_gather reads each quad with qcom_read_imagef_2x2, one call per component
 * (cl_qcom_vector_image_ops: native on Adreno, kernels/qcom_ext.h elsewhere).
 * downscale2x_read is the same average from four read_imagef calls: the hand-written
 * baseline the gather fallback is compared with. */
#include <qcom_ext.h>

__constant sampler_t downscale_sampler =
    CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;

__kernel void downscale2x_gather(__read_only image2d_t src, __write_only image2d_t dst)
{
    int2 out = (int2)(get_global_id(0), get_global_id(1));
    if (out.x >= get_image_width(dst) || out.y >= get_image_height(dst))
        return;
    /* The quad's centre: texels (2x, 2y) .. (2x+1, 2y+1) have centres 2x+0.5 .. 2x+1.5. */
    float2 centre = (float2)(2 * out.x + 1, 2 * out.y + 1);
    float4 r = qcom_read_imagef_2x2(src, downscale_sampler, centre, 0);
    float4 g = qcom_read_imagef_2x2(src, downscale_sampler, centre, 1);
    float4 b = qcom_read_imagef_2x2(src, downscale_sampler, centre, 2);
    float4 a = qcom_read_imagef_2x2(src, downscale_sampler, centre, 3);
    /* (e0 + e1) + (e2 + e3) per component, the order of the numpy reference */
    float4 sum = (float4)(r.s0 + r.s1, g.s0 + g.s1, b.s0 + b.s1, a.s0 + a.s1)
               + (float4)(r.s2 + r.s3, g.s2 + g.s3, b.s2 + b.s3, a.s2 + a.s3);
    write_imagef(dst, out, sum * 0.25f);
}

__kernel void downscale2x_read(__read_only image2d_t src, __write_only image2d_t dst)
{
    int2 out = (int2)(get_global_id(0), get_global_id(1));
    if (out.x >= get_image_width(dst) || out.y >= get_image_height(dst))
        return;
    int2 base = 2 * out;
    float4 lower_left = read_imagef(src, downscale_sampler, base + (int2)(0, 1));
    float4 lower_right = read_imagef(src, downscale_sampler, base + (int2)(1, 1));
    float4 upper_right = read_imagef(src, downscale_sampler, base + (int2)(1, 0));
    float4 upper_left = read_imagef(src, downscale_sampler, base);
    write_imagef(dst, out, ((lower_left + lower_right) + (upper_right + upper_left)) * 0.25f);
}
