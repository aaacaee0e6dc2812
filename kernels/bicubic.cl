/* 2x bicubic upscale (cl_qcom_filter_bicubic). The sampler decides the filter on Adreno
 * (CL_FILTER_BICUBIC_QCOM, from qcom_ext.create_sampler(..., filter="bicubic")); elsewhere
 * qcom_read_imagef_bicubic computes the guide's 4x4 formula from a nearest sampler.
 * Build with -DQCOM_EXT_BICUBIC_NORMALIZED=1: the coordinates below are normalized. */
#include <qcom_ext.h>

/* Output pixel (X, Y) samples the source at texel-space ((X + 0.5) / 2, (Y + 0.5) / 2):
 * the centre of the output pixel, in normalized coordinates of either image. */
__kernel void upscale2x(read_only image2d_t src, sampler_t sampler, write_only image2d_t dst)
{
    int2 pos = (int2)((int)get_global_id(0), (int)get_global_id(1));
    int2 size = get_image_dim(dst);
    if (pos.x >= size.x || pos.y >= size.y)
        return;
    float2 coord = ((float2)((float)pos.x, (float)pos.y) + 0.5f)
                   / (float2)((float)size.x, (float)size.y);
    write_imagef(dst, pos, qcom_read_imagef_bicubic(src, sampler, coord));
}
