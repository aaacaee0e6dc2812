/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_filter_bicubic (qcom-extensions.md section 10; guide 9.3.4) -------------
 * On Adreno, bicubic filtering is a property of the sampler: a sampler made with
 * CL_FILTER_BICUBIC_QCOM (host, qcom_ext.create_sampler(..., filter="bicubic")) or the
 * literal CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP | QCOM_CLK_FILTER_BICUBIC makes
 * read_imagef(image2d_t, sampler, float2) return the Catmull-Rom weighted sum of a 4x4
 * block of texels. A kernel cannot ask a sampler for its filter, so elsewhere the kernel
 * says where bicubic reads happen, and in which coordinate space:
 *
 *   float4 qcom_read_imagef_bicubic(read_only image2d_t image, sampler_t sampler,
 *                                   float2 coord)
 *       native: read_imagef(image, sampler, coord) (the sampler is bicubic);
 *       elsewhere: the guide's formula, texels fetched through `sampler` at their centres
 *       (create_sampler's fallback is a nearest sampler with the same addressing, so a
 *       texel outside the image is the border colour with CLK_ADDRESS_CLAMP, as in the
 *       guide). Needs -DQCOM_EXT_BICUBIC_NORMALIZED=1 (coord normalized, as the sampler
 *       of the reference sample) or =0 (texel coordinates) on every path: the fallback
 *       cannot read that from the sampler, and a kernel that builds here builds there.
 *
 *   -DQCOM_EXT_BICUBIC_READ_IMAGEF: for unmodified Adreno kernels. Off Adreno, every
 *       3-argument read_imagef(image, sampler, coord) of the program becomes
 *       qcom_read_imagef_bicubic (so all of them must be image2d_t/float2 bicubic reads);
 *       other read_imagef forms are untouched. Natively it changes nothing.
 *
 * Formula, for (x, y) in texel space (centres at i + 0.5):
 *   x0 = floor(x - 1.5), x1..x3 = x0 + 1..3 (same for y); a = frac(x - 0.5), b = frac(y - 0.5)
 *   w0 = -0.5a + a^2 - 0.5a^3   w1 = 1 - 2.5a^2 + 1.5a^3
 *   w2 = 0.5a + 2a^2 - 1.5a^3   w3 = -0.5a^2 + 0.5a^3          (v weights: the same with b)
 *   out = sum_i wu_i * (sum_j t[x_i][y_j] * wv_j)
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_filter_bicubic)
#pragma OPENCL EXTENSION cl_qcom_filter_bicubic : enable
#define qcom_read_imagef_bicubic(image, sampler, coord) \
    ((void)(QCOM_EXT_BICUBIC_NORMALIZED), read_imagef((image), (sampler), (coord)))
#else
#ifndef QCOM_CLK_FILTER_BICUBIC
/* Literal samplers keep compiling; the filtering itself comes from the read above. */
#define QCOM_CLK_FILTER_BICUBIC CLK_FILTER_NEAREST
#endif

float4 qcom_ext_bicubic_weights(float a)
{
    float a2 = a * a, a3 = a2 * a;
    return (float4)(-0.5f * a + a2 - 0.5f * a3,
                    1.0f - 2.5f * a2 + 1.5f * a3,
                    0.5f * a + 2.0f * a2 - 1.5f * a3,
                    -0.5f * a2 + 0.5f * a3);
}

/* The texel whose centre is (x, y) in texel space, through `sampler`. */
float4 qcom_ext_bicubic_texel(read_only image2d_t image, sampler_t sampler, float x, float y,
                              int normalized, float2 size)
{
    float2 centre = (float2)(x, y);
    return read_imagef(image, sampler, normalized ? centre / size : centre);
}

/* sum_j t[x][y_j] * wv_j for the column x (y_0 = y). */
float4 qcom_ext_bicubic_column(read_only image2d_t image, sampler_t sampler, float x, float y,
                               float4 wv, int normalized, float2 size)
{
    float4 sum = qcom_ext_bicubic_texel(image, sampler, x, y, normalized, size) * wv.s0;
    sum += qcom_ext_bicubic_texel(image, sampler, x, y + 1.0f, normalized, size) * wv.s1;
    sum += qcom_ext_bicubic_texel(image, sampler, x, y + 2.0f, normalized, size) * wv.s2;
    sum += qcom_ext_bicubic_texel(image, sampler, x, y + 3.0f, normalized, size) * wv.s3;
    return sum;
}

float4 qcom_ext_read_imagef_bicubic(read_only image2d_t image, sampler_t sampler, float2 coord,
                                    int normalized)
{
    float2 size = (float2)((float)get_image_width(image), (float)get_image_height(image));
    float2 shifted = (normalized ? coord * size : coord) - 0.5f;
    float2 base = floor(shifted);               /* x1, y1 (x0 = floor(x - 1.5) = x1 - 1) */
    float2 ab = shifted - base;                 /* a = frac(x - 0.5), b = frac(y - 0.5) */
    float4 wu = qcom_ext_bicubic_weights(ab.x), wv = qcom_ext_bicubic_weights(ab.y);
    float2 first = base - 0.5f;                 /* centre of texel (x0, y0) */
    float4 sum = wu.s0 * qcom_ext_bicubic_column(image, sampler, first.x, first.y, wv,
                                                 normalized, size);
    sum += wu.s1 * qcom_ext_bicubic_column(image, sampler, first.x + 1.0f, first.y, wv,
                                           normalized, size);
    sum += wu.s2 * qcom_ext_bicubic_column(image, sampler, first.x + 2.0f, first.y, wv,
                                           normalized, size);
    sum += wu.s3 * qcom_ext_bicubic_column(image, sampler, first.x + 3.0f, first.y, wv,
                                           normalized, size);
    return sum;
}

#define qcom_read_imagef_bicubic(image, sampler, coord) \
    qcom_ext_read_imagef_bicubic((image), (sampler), (coord), (QCOM_EXT_BICUBIC_NORMALIZED))

#ifdef QCOM_EXT_BICUBIC_READ_IMAGEF
/* Pick by argument count: 3 -> bicubic, any other count -> the builtin. The builtin's
 * name inside its own macro's expansion is never expanded again (C99 6.10.3.4). Keep
 * this part last in qcom_ext.h so that no other part's code is redirected. */
#define QCOM_EXT_SEVENTH(_1, _2, _3, _4, _5, _6, name, ...) name
#define read_imagef(...) \
    QCOM_EXT_SEVENTH(__VA_ARGS__, read_imagef, read_imagef, read_imagef, \
                     qcom_read_imagef_bicubic, read_imagef, read_imagef, read_imagef)(__VA_ARGS__)
#endif
#endif
