/*
 * nv12_to_rgba.cl -- NV12 (4:2:0, 8-bit) to RGBA8 with the BT.601 matrix.
 *
 * Reads the frame through qcom_ext_read_nv12f (kernels/compat/cl_qcom_other_image.h), so
 * the same kernel takes the native plane children of a CL_QCOM_NV12 image or qcom_ext's
 * portable plane images: pass Nv12Image.kernel_args for (y_plane, uv_plane).
 *
 * BT.601: Kr = 0.299, Kb = 0.114 (Kg = 0.587).
 *   full range  (JPEG):  Y, U, V in 0..255, chroma centred on 128;
 *   limited range (video, full_range = 0): Y in 16..235, U, V in 16..240.
 *   R = Y' + 2(1-Kr) V'          = Y' + 1.402 V'
 *   G = Y' - 2Kb(1-Kb)/Kg U' - 2Kr(1-Kr)/Kg V'
 *   B = Y' + 2(1-Kb) U'          = Y' + 1.772 U'
 * with Y' = Y (full) or (Y - 16) * 255/219, U' = (U - 128) * (1 or 255/224), likewise V'.
 * Output: one uchar4 per pixel, row-major, rounded to nearest and saturated; alpha 255.
 */
__kernel void nv12_to_rgba(read_only image2d_t y_plane, read_only image2d_t uv_plane,
                           __global uchar4 *rgba, int width, int height, int full_range)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    const float4 yuv = qcom_ext_read_nv12f(y_plane, uv_plane, (int2)(x, y)) * 255.0f;
    const float luma_scale = full_range ? 1.0f : 255.0f / 219.0f;
    const float chroma_scale = full_range ? 1.0f : 255.0f / 224.0f;
    const float l = (yuv.x - (full_range ? 0.0f : 16.0f)) * luma_scale;
    const float u = (yuv.y - 128.0f) * chroma_scale;
    const float v = (yuv.z - 128.0f) * chroma_scale;
    const float kr = 0.299f, kb = 0.114f, kg = 1.0f - kr - kb;
    const float r = l + 2.0f * (1.0f - kr) * v;
    const float g = l - 2.0f * kb * (1.0f - kb) / kg * u - 2.0f * kr * (1.0f - kr) / kg * v;
    const float b = l + 2.0f * (1.0f - kb) * u;
    rgba[y * width + x] = convert_uchar4_sat_rte((float4)(r, g, b, 255.0f));
}
