/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_other_image + cl_qcom_extract_image_plane (qcom-extensions.md section 13) ---
 * float4 qcom_ext_read_nv12f(read_only image2d_t y_plane, read_only image2d_t uv_plane,
 *                            int2 coord)
 *   (Y, U, V, 1.0f) of the NV12 pixel at `coord` (luma coordinates), normalized as
 *   read_imagef returns UNORM_INT8 channels: Y/255, U/255, V/255. Chroma is the 2x2
 *   block's sample (nearest: uv at coord / 2). `coord` must lie inside the frame.
 *
 * One kernel source reads both layouts qcom_ext.Nv12Image makes; pass its .kernel_args
 * (its .y and .uv images) for the two parameters:
 *   native   the single-plane children of a CL_QCOM_NV12 image (cl_qcom_extract_image_plane):
 *            y = CL_QCOM_NV12_Y, uv = CL_QCOM_NV12_UV. read_imagef on the Y child returns
 *            Y in .x; on the UV child, addressed in chroma coordinates, (U, V) in .xy.
 *   portable two ordinary images with the NV12 memory layout: y = CL_R/UNORM_INT8 (W x H);
 *            uv = CL_RG/UNORM_INT8 (W/2 x H/2), or, on devices without CL_RG images (pocl),
 *            CL_R/UNORM_INT8 (W x H/2) holding the interleaved U,V bytes.
 * The layout is told apart at run time (get_image_channel_order is CLK_R only for the
 * interleaved one), so no -D flag is needed and one build serves every frame. The
 * native planar parent itself (read_imagef(nv12, sampler, coord) = (Y, U, V, _)) is an
 * Adreno-only kernel argument; qcom_ext kernels take the planes.
 * Compiled only where the device has images (__IMAGE_SUPPORT__).
 */
#if defined(__IMAGE_SUPPORT__)
__constant sampler_t qcom_ext_nv12_sampler =
    CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;

float4 qcom_ext_read_nv12f(read_only image2d_t y_plane, read_only image2d_t uv_plane, int2 coord)
{
    float luma = read_imagef(y_plane, qcom_ext_nv12_sampler, coord).x;
    int2 chroma = (int2)(coord.x >> 1, coord.y >> 1);
    float2 uv;
    if (get_image_channel_order(uv_plane) == CLK_R) {   /* interleaved U,V bytes */
        uv.x = read_imagef(uv_plane, qcom_ext_nv12_sampler, (int2)(2 * chroma.x, chroma.y)).x;
        uv.y = read_imagef(uv_plane, qcom_ext_nv12_sampler,
                           (int2)(2 * chroma.x + 1, chroma.y)).x;
    } else {                                             /* CL_RG or CL_QCOM_NV12_UV */
        uv = read_imagef(uv_plane, qcom_ext_nv12_sampler, chroma).xy;
    }
    return (float4)(luma, uv.x, uv.y, 1.0f);
}
#endif
