/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_vector_image_ops (qcom-extensions.md section 11; guide section 2) -----------
 * Reads (component `compid` of four texels, one call):
 *   float4 qcom_read_imagef_2x2 (image2d_t, sampler_t, float2 coord, int compid)
 *   half4  qcom_read_imageh_2x2 (...)    uint4 qcom_read_imageui_2x2(...)
 *   int4   qcom_read_imagei_2x2 (...)    and the same four for _4x1
 * 2x2: the quad is the footprint bilinear filtering would use at `coord`: with u = coord in
 * texel units (pixel centres at i + 0.5), base (x, y) = floor(u - 0.5) is the quad's
 * upper-left texel, and element [0] = (x, y+1) lower-left, [1] = (x+1, y+1) lower-right,
 * [2] = (x+1, y) upper-right, [3] = (x, y) upper-left (counter-clockwise, like GLSL
 * textureGather). The spec's sample coord (2.5, 0.5) and the guide's ideal quad centre
 * (3.0, 1.0) both select the quad whose base is texel (2, 0).
 * 4x1: base (x, y) = floor(u) (the texel nearest filtering picks); element [i] = (x+i, y).
 * Each texel is read through `sampler` at its centre, so the sampler's addressing mode
 * applies per texel (CLK_ADDRESS_CLAMP: border colour outside the image; CLAMP_TO_EDGE:
 * the edge texel; REPEAT / MIRRORED_REPEAT with normalized coordinates). The filter mode
 * does not matter (a centre read is exact with either filter).
 *
 * Fallback limits (documented in docs/kernel_builtins.md):
 * - OpenCL C cannot query a sampler's flags, so the fallback takes `coord` as
 *   unnormalized texel coordinates unless the program is built with
 *   -DQCOM_EXT_VECTOR_IMAGE_NORMALIZED_COORDS (then coord is scaled by the image size).
 * - Single-plane images only (NV12_Y / NV12_UV planes are CL_R / CL_RG images in the
 *   fallback); the Y-centric coordinates of multi-plane YUV images exist only natively.
 * - compid outside [0, 3] selects component 3 (undefined natively).
 * - The h variants exist only where the device has cl_khr_fp16; elsewhere a call is a
 *   compile-time error naming qcom_ext_error_half_variants_need_cl_khr_fp16.
 *
 * Writes qcom_write_image{f,h}v_<pattern>_n8n0{0,1}: the fallback represents the 8-bit
 * NV12 planes (NV12_Y and COMPRESSED_NV12_Y as CL_R/CL_UNORM_INT8, NV12_UV as
 * CL_RG/CL_UNORM_INT8) and writes the documented pixels with write_imagef. The 10/12-bit
 * packed formats (P010, TP10, MIPI) have no portable image format: their writes are a
 * compile-time error naming qcom_ext_error_<FORMAT>_..._only_natively_on_Adreno.
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_vector_image_ops)
/* Adreno compiler builtins; the extension spec lists no pragma. */
#elif defined(__IMAGE_SUPPORT__) || defined(__opencl_c_images)

#if defined(QCOM_EXT_VECTOR_IMAGE_NORMALIZED_COORDS)
#define QCOM_EXT_VIO_SCALE(image) \
    ((float2)((float)get_image_width(image), (float)get_image_height(image)))
#else
#define QCOM_EXT_VIO_SCALE(image) ((float2)(1.0f, 1.0f))
#endif

/* Centres of the four texels, in the caller's coordinates, in element order. */
float8 qcom_ext_vio_centres_2x2(float2 coord, float2 scale)
{
    float2 base = floor(coord * scale - 0.5f) + 0.5f;
    return (float8)((base + (float2)(0.0f, 1.0f)) / scale, (base + (float2)(1.0f, 1.0f)) / scale,
                    (base + (float2)(1.0f, 0.0f)) / scale, base / scale);
}

float8 qcom_ext_vio_centres_4x1(float2 coord, float2 scale)
{
    float2 base = floor(coord * scale) + 0.5f;
    return (float8)(base / scale, (base + (float2)(1.0f, 0.0f)) / scale,
                    (base + (float2)(2.0f, 0.0f)) / scale, (base + (float2)(3.0f, 0.0f)) / scale);
}

/* The four texels (all components), element-major. Declared pure so that the four
 * per-component calls a kernel makes for one quad are merged into one set of reads. */
#define QCOM_EXT_VIO_GATHER(T, read, name, centres)                                       \
    T##16 __attribute__((pure))                                                            \
    name(read_only image2d_t image, sampler_t sampler, float2 coord)                      \
    {                                                                                      \
        float8 c = centres(coord, QCOM_EXT_VIO_SCALE(image));                              \
        return (T##16)(read(image, sampler, c.s01), read(image, sampler, c.s23),          \
                       read(image, sampler, c.s45), read(image, sampler, c.s67));         \
    }
/* Component compid of each of the four texels. */
#define QCOM_EXT_VIO_PICK(T, name)                                                         \
    T##4 name(T##16 texels, int compid)                                                    \
    {                                                                                      \
        return compid == 0 ? texels.s048c                                                  \
             : compid == 1 ? texels.s159d                                                  \
             : compid == 2 ? texels.s26ae                                                  \
                           : texels.s37bf;                                                 \
    }

QCOM_EXT_VIO_GATHER(float, read_imagef, qcom_ext_vio_texels_2x2_f, qcom_ext_vio_centres_2x2)
QCOM_EXT_VIO_GATHER(float, read_imagef, qcom_ext_vio_texels_4x1_f, qcom_ext_vio_centres_4x1)
QCOM_EXT_VIO_GATHER(uint, read_imageui, qcom_ext_vio_texels_2x2_ui, qcom_ext_vio_centres_2x2)
QCOM_EXT_VIO_GATHER(uint, read_imageui, qcom_ext_vio_texels_4x1_ui, qcom_ext_vio_centres_4x1)
QCOM_EXT_VIO_GATHER(int, read_imagei, qcom_ext_vio_texels_2x2_i, qcom_ext_vio_centres_2x2)
QCOM_EXT_VIO_GATHER(int, read_imagei, qcom_ext_vio_texels_4x1_i, qcom_ext_vio_centres_4x1)
QCOM_EXT_VIO_PICK(float, qcom_ext_vio_pick_f)
QCOM_EXT_VIO_PICK(uint, qcom_ext_vio_pick_ui)
QCOM_EXT_VIO_PICK(int, qcom_ext_vio_pick_i)

/* Function-like macros rather than functions: the texel reads of the four component
 * calls for one quad become identical pure calls the compiler merges. Same types as
 * the native builtins; int2 coordinates are a compile error, as natively. */
#define qcom_read_imagef_2x2(image, sampler, coord, compid) \
    qcom_ext_vio_pick_f(qcom_ext_vio_texels_2x2_f((image), (sampler), (coord)), (compid))
#define qcom_read_imagef_4x1(image, sampler, coord, compid) \
    qcom_ext_vio_pick_f(qcom_ext_vio_texels_4x1_f((image), (sampler), (coord)), (compid))
#define qcom_read_imageui_2x2(image, sampler, coord, compid) \
    qcom_ext_vio_pick_ui(qcom_ext_vio_texels_2x2_ui((image), (sampler), (coord)), (compid))
#define qcom_read_imageui_4x1(image, sampler, coord, compid) \
    qcom_ext_vio_pick_ui(qcom_ext_vio_texels_4x1_ui((image), (sampler), (coord)), (compid))
#define qcom_read_imagei_2x2(image, sampler, coord, compid) \
    qcom_ext_vio_pick_i(qcom_ext_vio_texels_2x2_i((image), (sampler), (coord)), (compid))
#define qcom_read_imagei_4x1(image, sampler, coord, compid) \
    qcom_ext_vio_pick_i(qcom_ext_vio_texels_4x1_i((image), (sampler), (coord)), (compid))

/* Vector writes to the 8-bit NV12 planes (write_only image2d_t, int2 coord). 2x1/4x1:
 * element [i] at coord + (i, 0); 2x2: [0] base, [1] (+1, 0), [2] (0, +1), [3] (+1, +1). */
#define QCOM_EXT_VIO_Y(v) ((float4)((v), 0.0f, 0.0f, 1.0f))
#define QCOM_EXT_VIO_UV(v) ((float4)((v).x, (v).y, 0.0f, 1.0f))

void qcom_write_imagefv_2x1_n8n00(write_only image2d_t image, int2 coord, float color[2])
{
    write_imagef(image, coord, QCOM_EXT_VIO_Y(color[0]));
    write_imagef(image, coord + (int2)(1, 0), QCOM_EXT_VIO_Y(color[1]));
}

void qcom_write_imagefv_2x1_n8n01(write_only image2d_t image, int2 coord, float2 color[2])
{
    write_imagef(image, coord, QCOM_EXT_VIO_UV(color[0]));
    write_imagef(image, coord + (int2)(1, 0), QCOM_EXT_VIO_UV(color[1]));
}

void qcom_write_imagefv_4x1_n8n00(write_only image2d_t image, int2 coord, float color[4])
{
    for (int i = 0; i < 4; ++i)
        write_imagef(image, coord + (int2)(i, 0), QCOM_EXT_VIO_Y(color[i]));
}

void qcom_write_imagefv_2x2_n8n00(write_only image2d_t image, int2 coord, float color[4])
{
    for (int i = 0; i < 4; ++i)
        write_imagef(image, coord + (int2)(i & 1, i >> 1), QCOM_EXT_VIO_Y(color[i]));
}

#if defined(cl_khr_fp16)
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
half4 qcom_ext_vio_half4(float4 v) { return convert_half4(v); }
#define qcom_read_imageh_2x2(image, sampler, coord, compid) \
    qcom_ext_vio_half4(qcom_read_imagef_2x2(image, sampler, coord, compid))
#define qcom_read_imageh_4x1(image, sampler, coord, compid) \
    qcom_ext_vio_half4(qcom_read_imagef_4x1(image, sampler, coord, compid))

/* The spec's procedure list gives the UV (n8n01) variant half2 color[2], like the float2
 * of the f variant; its detailed section says half. half2 is the one that holds two UV
 * pixels, and is what is declared here. */
/* Widened with vload_half (core OpenCL C, exact like a cast; Oclgrind 21.10 cannot
 * execute a half-to-float cast). */
void qcom_write_imagehv_2x1_n8n00(write_only image2d_t image, int2 coord, half color[2])
{
    float f[2] = {vload_half(0, color), vload_half(1, color)};
    qcom_write_imagefv_2x1_n8n00(image, coord, f);
}

void qcom_write_imagehv_2x1_n8n01(write_only image2d_t image, int2 coord, half2 color[2])
{
    float4 uv = vload_half4(0, (half *)color); /* u0 v0 u1 v1 */
    float2 f[2] = {uv.s01, uv.s23};
    qcom_write_imagefv_2x1_n8n01(image, coord, f);
}

void qcom_write_imagehv_4x1_n8n00(write_only image2d_t image, int2 coord, half color[4])
{
    float4 v = vload_half4(0, color);
    float f[4] = {v.s0, v.s1, v.s2, v.s3};
    qcom_write_imagefv_4x1_n8n00(image, coord, f);
}

void qcom_write_imagehv_2x2_n8n00(write_only image2d_t image, int2 coord, half color[4])
{
    float4 v = vload_half4(0, color);
    float f[4] = {v.s0, v.s1, v.s2, v.s3};
    qcom_write_imagefv_2x2_n8n00(image, coord, f);
}
#pragma OPENCL EXTENSION cl_khr_fp16 : disable
#else
#define qcom_read_imageh_2x2(image, sampler, coord, compid) \
    qcom_ext_error_half_variants_need_cl_khr_fp16(image, sampler, coord, compid)
#define qcom_read_imageh_4x1(image, sampler, coord, compid) \
    qcom_ext_error_half_variants_need_cl_khr_fp16(image, sampler, coord, compid)
#define qcom_write_imagehv_2x1_n8n00(image, coord, color) \
    qcom_ext_error_half_variants_need_cl_khr_fp16(image, coord, color)
#define qcom_write_imagehv_2x1_n8n01(image, coord, color) \
    qcom_ext_error_half_variants_need_cl_khr_fp16(image, coord, color)
#define qcom_write_imagehv_4x1_n8n00(image, coord, color) \
    qcom_ext_error_half_variants_need_cl_khr_fp16(image, coord, color)
#define qcom_write_imagehv_2x2_n8n00(image, coord, color) \
    qcom_ext_error_half_variants_need_cl_khr_fp16(image, coord, color)
#endif /* cl_khr_fp16 */

/* Formats with no portable image format: a call names the reason in the build log. */
#define QCOM_EXT_VIO_P010(image, coord, color) \
    qcom_ext_error_P010_formats_exist_only_natively_on_Adreno(image, coord, color)
#define QCOM_EXT_VIO_TP10(image, coord, color) \
    qcom_ext_error_TP10_formats_exist_only_natively_on_Adreno(image, coord, color)
#define QCOM_EXT_VIO_MIPI(image, coord, color) \
    qcom_ext_error_MIPI_packed_formats_exist_only_natively_on_Adreno(image, coord, color)
#define qcom_write_imagefv_2x1_n10p00(image, coord, color) QCOM_EXT_VIO_P010(image, coord, color)
#define qcom_write_imagefv_2x1_n10p01(image, coord, color) QCOM_EXT_VIO_P010(image, coord, color)
#define qcom_write_imagefv_4x1_n10p00(image, coord, color) QCOM_EXT_VIO_P010(image, coord, color)
#define qcom_write_imagefv_2x2_n10p00(image, coord, color) QCOM_EXT_VIO_P010(image, coord, color)
#define qcom_write_imagehv_2x1_n10p00(image, coord, color) QCOM_EXT_VIO_P010(image, coord, color)
#define qcom_write_imagehv_2x1_n10p01(image, coord, color) QCOM_EXT_VIO_P010(image, coord, color)
#define qcom_write_imagehv_4x1_n10p00(image, coord, color) QCOM_EXT_VIO_P010(image, coord, color)
#define qcom_write_imagehv_2x2_n10p00(image, coord, color) QCOM_EXT_VIO_P010(image, coord, color)
#define qcom_write_imagefv_3x1_n10t00(image, coord, color) QCOM_EXT_VIO_TP10(image, coord, color)
#define qcom_write_imagefv_3x1_n10t01(image, coord, color) QCOM_EXT_VIO_TP10(image, coord, color)
#define qcom_write_imagehv_3x1_n10t00(image, coord, color) QCOM_EXT_VIO_TP10(image, coord, color)
#define qcom_write_imagehv_3x1_n10t01(image, coord, color) QCOM_EXT_VIO_TP10(image, coord, color)
#define qcom_write_imagefv_4x1_n10m00(image, coord, color) QCOM_EXT_VIO_MIPI(image, coord, color)
#define qcom_write_imagefv_4x1_n12m00(image, coord, color) QCOM_EXT_VIO_MIPI(image, coord, color)
#define qcom_write_imageuiv_4x1_u10m00(image, coord, color) QCOM_EXT_VIO_MIPI(image, coord, color)
#define qcom_write_imageuiv_4x1_u12m00(image, coord, color) QCOM_EXT_VIO_MIPI(image, coord, color)

#endif /* cl_qcom_vector_image_ops */
