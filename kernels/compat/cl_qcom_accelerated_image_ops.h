/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_accelerated_image_ops (qcom-extensions.md section 10; extension spec
 * cl_qcom_accelerated_image_ops Version 8) ------------------------------------------
 *
 *   float4 qcom_convolve_imagef(image2d_t image, sampler_t sampler, float2 coord,
 *                               qcom_weight_image_t weight_image);
 *   float4 qcom_box_filter_imagef(image2d_t image, sampler_t sampler, float2 coord,
 *                                 const qcom_box_size_t box_size);
 *   float4 qcom_block_match_sadf(image2d_t target_image, sampler_t sampler,
 *                                float2 target_coord, uint2 region,
 *                                image2d_t reference_image, uint2 reference_coord);
 *   float4 qcom_block_match_ssdf(... the same arguments ...);
 *
 * Kernel arguments: `__read_only qcom_weight_image_t w` (a qcom_ext.WeightImage's .image)
 * and `qcom_box_size_t size` (qcom_ext.box_size(w, h): two floats, width then height).
 *
 * Natively (QCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops) the Adreno compiler provides
 * the builtins and both types; the spec lists no pragma. Elsewhere this part defines them
 * in OpenCL C 1.2 with the conventions of docs/accelerated_image_ops.md:
 *
 * - One pixel convention for all three (the spec's worked examples: the 4x3 filter centred
 *   at (4, 2) and the 2x2 box at (1, 1)): pixel (i, j) is the unit square centred on the
 *   integer point (i, j), [i - 0.5, i + 0.5) x [j - 0.5, j + 0.5). A coordinate lies in
 *   pixel qcom_ext_accelerated_nearest(c) = floor(c + 0.5) per axis (computed exactly).
 *   At x = 2.7: a 1x1 convolution and a 1x1 block match give pixel 3, a 1x1 box gives
 *   0.3 * p2 + 0.7 * p3 (the box weighs the same squares by the area it covers).
 * - Pixel (i, j) is read with read_imagef(image, sampler, (float2)(i + 0.5f, j + 0.5f)),
 *   so the sampler's addressing mode decides what reads outside the image return, exactly
 *   as read_imagef would. The sampler must use unnormalized coordinates
 *   (CLK_NORMALIZED_COORDS_FALSE); CLK_FILTER_NEAREST is the intended filter.
 * - Convolution: the filter's centre (cx, cy) lands on the pixel (bx, by) the coordinate
 *   lies in, so filter tap (i, j) multiplies pixel (bx - cx + i, by - cy + j) (a
 *   correlation: the spec's 4x3 filter, centre (1, 1), at (4, 2) covers x 3..6, y 1..3).
 *   Phases: the offset d = c - b (in [-0.5, 0.5)) from that pixel's centre, in 1/P steps
 *   modulo P: p = floor(d * P) mod P, so phase 0 is the centre and phase P - 1 the step
 *   just before it (equal to min(floor(frac(c) * P), P - 1)). A 2-D weight image holds
 *   P*P slices, slice index py * P + px; a separable one holds P slices, the horizontal
 *   row of slice px and the vertical row of slice py are used. Separable = the
 *   horizontal 1-D sum of each row, then the vertical 1-D sum of those.
 * - Box filter: the box of size (w, h) is centred on coord; each pixel square is weighted
 *   by the area of it the box covers, and the sum is divided by w * h.
 * - Block matching: the target block's top-left pixel is the one target_coord lies in,
 *   the reference block's is reference_coord; per channel SAD = sum |t - r|,
 *   SSD = sum (t - r)^2.
 *
 * Loop bounds are clamped to the fallback limits below, so a bad header or size can give a
 * wrong result but never an endless or out-of-bounds loop.
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops)
/* The Adreno compiler declares the builtins and qcom_weight_image_t / qcom_box_size_t. */
#else

/* Limits of the portable implementation (qcom_ext.ext.accelerated.support.FALLBACK_LIMITS;
 * the device's CL_DEVICE_HOF_*_QCOM and CL_DEVICE_BLOCK_MATCHING_*_QCOM natively). */
#define QCOM_EXT_ACCELERATED_MAX_FILTER_SIZE 16
#define QCOM_EXT_ACCELERATED_MAX_NUM_PHASES 64
#define QCOM_EXT_BLOCK_MATCH_MAX_REGION 32

/* The fallback weight image is an RGBA float image2d_t (layout:
 * qcom_ext/ext/accelerated/weights.py): texel (0, 0) = (filter_x, filter_y, center_x, center_y), texel (1, 0) = (num_phases,
 * separable, phases per axis, 1); weight row r of slice s is image row 1 + s * rows + r,
 * four taps per texel. A macro (not a typedef) so `__read_only qcom_weight_image_t` reads
 * as `__read_only image2d_t` on every compiler. */
#define qcom_weight_image_t image2d_t

/* Inlined where the compiler allows it: fewer calls, and Oclgrind's --uninitialized check
 * (which loses track of float4 values returned by calls) sees through them. */
#if defined(__clang__) || defined(__GNUC__)
#define QCOM_EXT_ACCELERATED_INLINE __attribute__((always_inline))
#else
#define QCOM_EXT_ACCELERATED_INLINE
#endif
typedef float2 qcom_box_size_t; /* (box_filter_width, box_filter_height) */

QCOM_EXT_ACCELERATED_INLINE
float4 qcom_ext_accelerated_pixel(__read_only image2d_t image, sampler_t sampler, int x, int y)
{
    return read_imagef(image, sampler, (float2)((float)x + 0.5f, (float)y + 0.5f));
}

QCOM_EXT_ACCELERATED_INLINE
float4 qcom_ext_accelerated_weights4(__read_only image2d_t weight_image, int row, int tap4)
{
    const sampler_t exact = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                            CLK_FILTER_NEAREST;
    return read_imagef(weight_image, exact, (int2)(tap4, row));
}

/* Weight-image row `row` (phase 0 lives in rows 1..) into out[0..n-1]: one texel read per
 * four taps, compile-time n so that `out` stays in registers (the portable filters). */
#define QCOM_EXT_ACCELERATED_WEIGHT_ROW(weight_image, row, n, out)                            \
    do {                                                                                   \
        _Pragma("unroll") for (int i4_ = 0; i4_ < (n); i4_ += 4)                           \
        {                                                                                  \
            float4 w4_ = qcom_ext_accelerated_weights4((weight_image), (row), i4_ >> 2);   \
            (out)[i4_] = w4_.x;                                                            \
            if (i4_ + 1 < (n))                                                             \
                (out)[i4_ + 1] = w4_.y;                                                    \
            if (i4_ + 2 < (n))                                                             \
                (out)[i4_ + 2] = w4_.z;                                                    \
            if (i4_ + 3 < (n))                                                             \
                (out)[i4_ + 3] = w4_.w;                                                    \
        }                                                                                  \
    } while (0)

/* Lane `lane` (0..3) of v, chosen by its two bits with selects. Not a `?:` chain on
 * lane == k: LLVM 14 turns that into a switch on the lane truncated to i2, which Oclgrind
 * 21.10 runs as if the truncation kept the high bits (vertical taps 4 and 5 of a separable
 * filter read .w: issue 15 finding 11a). Not a private array either: with one, Oclgrind's
 * uninitialized-value check reports the kernel's image reads as uninitialized. */
QCOM_EXT_ACCELERATED_INLINE
float qcom_ext_accelerated_lane(float4 v, int lane)
{
    float even = (lane & 2) ? v.z : v.x, odd = (lane & 2) ? v.w : v.y;
    return (lane & 1) ? odd : even;
}

/* The pixel coordinate c lies in, floor(c + 0.5), without rounding c + 0.5 (exact for
 * |c| < 2^23: c - floor(c) is exact). */
QCOM_EXT_ACCELERATED_INLINE
float qcom_ext_accelerated_nearest(float c)
{
    float f = floor(c);
    return (c - f >= 0.5f) ? f + 1.0f : f;
}

/* Phase index along one axis: floor((c - nearest) * P) mod P, computed from the fraction
 * of c past the pixel centre at or before it (the same index, without negative offsets). */
QCOM_EXT_ACCELERATED_INLINE
int qcom_ext_accelerated_phase(float c, int per_axis)
{
    return min((int)((c - floor(c)) * (float)per_axis), per_axis - 1);
}

QCOM_EXT_ACCELERATED_INLINE
float4 qcom_convolve_imagef(__read_only image2d_t image, sampler_t sampler, float2 coord,
                            __read_only image2d_t weight_image)
{
    float4 h0 = qcom_ext_accelerated_weights4(weight_image, 0, 0);
    float4 h1 = qcom_ext_accelerated_weights4(weight_image, 0, 1);
    int fx = clamp((int)h0.x, 1, QCOM_EXT_ACCELERATED_MAX_FILTER_SIZE);
    int fy = clamp((int)h0.y, 1, QCOM_EXT_ACCELERATED_MAX_FILTER_SIZE);
    int cx = clamp((int)h0.z, 0, fx - 1), cy = clamp((int)h0.w, 0, fy - 1);
    int per_axis = clamp((int)h1.z, 1, QCOM_EXT_ACCELERATED_MAX_NUM_PHASES);
    float2 base = (float2)(qcom_ext_accelerated_nearest(coord.x),
                           qcom_ext_accelerated_nearest(coord.y));
    int px = qcom_ext_accelerated_phase(coord.x, per_axis);
    int py = qcom_ext_accelerated_phase(coord.y, per_axis);
    int x0 = (int)base.x - cx, y0 = (int)base.y - cy;
    float4 sum = (float4)(0.0f);
    if (h1.y != 0.0f) { /* separable: slice rows (horizontal, vertical) */
        int hrow = 1 + 2 * px, vrow = 2 + 2 * py;
        for (int j = 0; j < fy; j++) {
            float4 row = (float4)(0.0f);
            for (int i4 = 0; i4 < fx; i4 += 4) {
                float4 w = qcom_ext_accelerated_weights4(weight_image, hrow, i4 >> 2);
                for (int lane = 0; lane < 4 && i4 + lane < fx; lane++)
                    row += qcom_ext_accelerated_lane(w, lane) *
                           qcom_ext_accelerated_pixel(image, sampler, x0 + i4 + lane, y0 + j);
            }
            float4 v = qcom_ext_accelerated_weights4(weight_image, vrow, j >> 2);
            sum += qcom_ext_accelerated_lane(v, j & 3) * row;
        }
    } else {
        int row0 = 1 + (py * per_axis + px) * fy;
        for (int j = 0; j < fy; j++) {
            for (int i4 = 0; i4 < fx; i4 += 4) {
                float4 w = qcom_ext_accelerated_weights4(weight_image, row0 + j, i4 >> 2);
                for (int lane = 0; lane < 4 && i4 + lane < fx; lane++)
                    sum += qcom_ext_accelerated_lane(w, lane) *
                           qcom_ext_accelerated_pixel(image, sampler, x0 + i4 + lane, y0 + j);
            }
        }
    }
    return sum;
}

/* Coverage of pixel k (spanning [k - 0.5, k + 0.5]) by [lo, hi]; 0 when disjoint. */
QCOM_EXT_ACCELERATED_INLINE
float qcom_ext_accelerated_cover(int k, float lo, float hi)
{
    return max(min((float)k + 0.5f, hi) - max((float)k - 0.5f, lo), 0.0f);
}

QCOM_EXT_ACCELERATED_INLINE
float4 qcom_box_filter_imagef(__read_only image2d_t image, sampler_t sampler, float2 coord,
                              const qcom_box_size_t box_size)
{
    /* Edges relative to the base pixel: exact for any coordinate below 2^23. */
    float2 base = floor(coord);
    float2 lo = (coord - base) - 0.5f * box_size, hi = (coord - base) + 0.5f * box_size;
    const int reach = QCOM_EXT_ACCELERATED_MAX_FILTER_SIZE / 2 + 2;
    int i0 = clamp((int)floor(lo.x - 0.5f) + 1, -reach, reach);
    int i1 = clamp((int)ceil(hi.x + 0.5f) - 1, -reach, reach);
    int j0 = clamp((int)floor(lo.y - 0.5f) + 1, -reach, reach);
    int j1 = clamp((int)ceil(hi.y + 0.5f) - 1, -reach, reach);
    int bx = (int)base.x, by = (int)base.y;
    float4 sum = (float4)(0.0f);
    for (int j = j0; j <= j1; j++) {
        float4 row = (float4)(0.0f);
        for (int i = i0; i <= i1; i++)
            row += qcom_ext_accelerated_cover(i, lo.x, hi.x) *
                   qcom_ext_accelerated_pixel(image, sampler, bx + i, by + j);
        sum += qcom_ext_accelerated_cover(j, lo.y, hi.y) * row;
    }
    return sum / (box_size.x * box_size.y);
}

QCOM_EXT_ACCELERATED_INLINE
float4 qcom_ext_block_match(__read_only image2d_t target_image, sampler_t sampler,
                            float2 target_coord, uint2 region,
                            __read_only image2d_t reference_image, uint2 reference_coord,
                            int squared)
{
    int w = (int)min(region.x, (uint)QCOM_EXT_BLOCK_MATCH_MAX_REGION);
    int h = (int)min(region.y, (uint)QCOM_EXT_BLOCK_MATCH_MAX_REGION);
    int tx = (int)qcom_ext_accelerated_nearest(target_coord.x);
    int ty = (int)qcom_ext_accelerated_nearest(target_coord.y);
    int rx = (int)reference_coord.x, ry = (int)reference_coord.y;
    float4 sum = (float4)(0.0f);
    for (int j = 0; j < h; j++) {
        for (int i = 0; i < w; i++) {
            float4 d = qcom_ext_accelerated_pixel(target_image, sampler, tx + i, ty + j) -
                       qcom_ext_accelerated_pixel(reference_image, sampler, rx + i, ry + j);
            sum += squared ? d * d : fabs(d);
        }
    }
    return sum;
}

QCOM_EXT_ACCELERATED_INLINE
float4 qcom_block_match_sadf(__read_only image2d_t target_image, sampler_t sampler,
                             float2 target_coord, uint2 region,
                             __read_only image2d_t reference_image, uint2 reference_coord)
{
    return qcom_ext_block_match(target_image, sampler, target_coord, region, reference_image,
                                reference_coord, 0);
}

QCOM_EXT_ACCELERATED_INLINE
float4 qcom_block_match_ssdf(__read_only image2d_t target_image, sampler_t sampler,
                             float2 target_coord, uint2 region,
                             __read_only image2d_t reference_image, uint2 reference_coord)
{
    return qcom_ext_block_match(target_image, sampler, target_coord, region, reference_image,
                                reference_coord, 1);
}

#endif /* cl_qcom_accelerated_image_ops */
