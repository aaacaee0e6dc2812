/* Whole-image convolution and box filter, method "bands" (portable path of
 * cl_qcom_accelerated_image_ops; qcom_ext.ext.accelerated.plan chooses the -D values).
 * Output pixel (x, y) is, as in kernels/accelerated_image_ops.cl,
 *     qcom_convolve_imagef(src, sampler, (float2)(x, y), weights)
 *     qcom_box_filter_imagef(src, sampler, (float2)(x, y), size)
 * with the same taps, the same reads through the sampler and the same summation order
 * (separable: each input row's horizontal sum, then the rows in order; 2-D: row by row,
 * tap by tap), so the results are those of the "tiled" method.
 *
 * How: a work-group of QE_LX work-items owns a band of QE_LX output columns and walks
 * QE_SEG output rows down it; work-item x owns column x. The input rows go through local
 * memory in chunks of QE_CH rows, double-buffered: while the group computes chunk k from
 * one buffer, each work-item's reads of chunk k + 1 (through the sampler, coalesced along
 * x) are in flight, stored into the other buffer afterwards; one barrier a chunk. Each
 * input row is read from local memory once per work-item (QE_FX pixels) and added into
 * the QE_FY outputs of its column that use it (a ring of QE_FY accumulators, indices
 * known at compile time because QE_CH is a multiple of QE_FY); an output is written as
 * soon as its last row is in. Each pixel is read from the image (QE_LX + QE_FX - 1) /
 * QE_LX * (QE_SEG + QE_FY - 1) / QE_SEG times.
 *
 * -D values (qcom_ext.ext.accelerated.plan chooses them):
 *   QE_FX, QE_FY   taps of the window (for the box, the pixels it can touch)
 *   QE_OX, QE_OY   offset of the first tap from the output pixel (-center for a filter)
 *   QE_LX          work-items of a group = output columns of its band
 *   QE_SEG         output rows a group walks
 *   QE_CM          chunk multiplier: QE_CH = QE_CM * QE_FY input rows a chunk
 *   QE_SEPARABLE   1 when the weight image is separable
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops)
#error "filter_bands.cl is the portable path: natively qcom_ext calls the builtins (accelerated_image_ops.cl)"
#endif
#ifndef QE_FX
#define QE_FX 1
#endif
#ifndef QE_FY
#define QE_FY 1
#endif
#ifndef QE_OX
#define QE_OX 0
#endif
#ifndef QE_OY
#define QE_OY 0
#endif
#ifndef QE_LX
#define QE_LX 64
#endif
#ifndef QE_SEG
#define QE_SEG 32
#endif
#ifndef QE_CM
#define QE_CM 1
#endif
#ifndef QE_SEPARABLE
#define QE_SEPARABLE 0
#endif

#define QE_CH (QE_CM * QE_FY)                          /* input rows a chunk */
#define QE_TW (QE_LX + QE_FX - 1)                      /* input columns of the band */
#define QE_ROWS (QE_SEG + QE_FY - 1)                   /* input rows a group reads */
#define QE_CHUNKS ((QE_ROWS + QE_CH - 1) / QE_CH)
#define QE_PER ((QE_CH * QE_TW + QE_LX - 1) / QE_LX)   /* reads a work-item makes a chunk */

/* "Needed": some output inside the image reads input column x0 + QE_OX + c (or row);
 * the others are never read, so the read set is the builtin's. */
#define QE_NEEDED(origin, c, taps, extent) ((origin) + (c) - ((taps) - 1) < (extent))

/* This work-item's share of chunk k of the band (zeros where not needed). */
QCOM_EXT_ACCELERATED_INLINE
void qe_bands_fetch(__read_only image2d_t src, sampler_t sampler, float4 *pre, int gx0,
                    int gy0, int k, int width, int height)
{
    int lx = (int)get_local_id(0);
#pragma unroll
    for (int n = 0; n < QE_PER; n++) {
        int i = lx + n * QE_LX;
        int c = i % QE_TW, r = k * QE_CH + i / QE_TW;
        bool needed = i < QE_CH * QE_TW && r < QE_ROWS && QE_NEEDED(gx0, c, QE_FX, width) &&
                      QE_NEEDED(gy0, r, QE_FY, height);
        pre[n] = needed ? qcom_ext_accelerated_pixel(src, sampler, gx0 + QE_OX + c,
                                                     gy0 + QE_OY + r)
                        : (float4)(0.0f);
    }
}

QCOM_EXT_ACCELERATED_INLINE
void qe_bands_store(__local float4 *buffer, const float4 *pre)
{
    int lx = (int)get_local_id(0);
#pragma unroll
    for (int n = 0; n < QE_PER; n++)
        if (lx + n * QE_LX < QE_CH * QE_TW)
            buffer[lx + n * QE_LX] = pre[n];
}

/* Row i of a chunk feeds output rows (chunk row) i - j, j = 0..QE_FY-1: accumulator slot
 * (i - j) mod QE_FY. Outputs above the segment or below it collect sums never written;
 * each slot restarts at j = 0. */
#define QE_SLOT(i, j) ((((i) - (j)) % QE_FY + QE_FY) % QE_FY)

/* Output row oy = r - (QE_FY - 1) of the band, complete after input row r: written where
 * it lies inside the segment and the image. */
#define QE_BANDS_WRITE(i, k, divisor)                                                      \
    do {                                                                                   \
        int oy = (k) * QE_CH + (i) - (QE_FY - 1);                                          \
        if (oy >= 0 && oy < QE_SEG && gy0 + oy < height && x < width)                      \
            write_imagef(dst, (int2)(x, gy0 + oy), acc[QE_SLOT(i, QE_FY - 1)] / (divisor)); \
    } while (0)

/* The walk of a separable filter (h horizontal, v vertical taps; `separable` a constant
 * at each call, folded once inlined) or of a 2-D one (w): chunks double-buffered in
 * `ring`, one barrier each. */
QCOM_EXT_ACCELERATED_INLINE
void qe_bands_walk(__read_only image2d_t src, sampler_t sampler, __write_only image2d_t dst,
                   __local float4 *ring, int separable, const float *h, const float *v,
                   float w[QE_FY][QE_FX], float divisor)
{
    int width = get_image_width(dst), height = get_image_height(dst);
    int gx0 = (int)get_group_id(0) * QE_LX, gy0 = (int)get_group_id(1) * QE_SEG;
    int x = gx0 + (int)get_local_id(0);
    float4 pre[QE_PER], acc[QE_FY];
#pragma unroll
    for (int j = 0; j < QE_FY; j++)
        acc[j] = (float4)(0.0f); /* slots of outputs above the segment are summed too */
    qe_bands_fetch(src, sampler, pre, gx0, gy0, 0, width, height);
    qe_bands_store(ring, pre);
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll 1
    for (int k = 0; k < QE_CHUNKS; k++) {
        if (k + 1 < QE_CHUNKS) /* in flight while this chunk is summed */
            qe_bands_fetch(src, sampler, pre, gx0, gy0, k + 1, width, height);
        __local const float4 *chunk = ring + (k & 1) * QE_CH * QE_TW + (int)get_local_id(0);
#pragma unroll
        for (int i = 0; i < QE_CH; i++) {
            float4 row[QE_FX];
#pragma unroll
            for (int c = 0; c < QE_FX; c++)
                row[c] = chunk[i * QE_TW + c];
            if (separable) {
                float4 hs = (float4)(0.0f);
#pragma unroll
                for (int c = 0; c < QE_FX; c++)
                    hs += h[c] * row[c];
#pragma unroll
                for (int j = 0; j < QE_FY; j++) {
                    float4 a = j == 0 ? (float4)(0.0f) : acc[QE_SLOT(i, j)];
                    acc[QE_SLOT(i, j)] = a + v[j] * hs;
                }
            } else {
#pragma unroll
                for (int j = 0; j < QE_FY; j++) {
                    float4 s = j == 0 ? (float4)(0.0f) : acc[QE_SLOT(i, j)];
#pragma unroll
                    for (int c = 0; c < QE_FX; c++)
                        s += w[j][c] * row[c];
                    acc[QE_SLOT(i, j)] = s;
                }
            }
            QE_BANDS_WRITE(i, k, divisor);
        }
        if (k + 1 < QE_CHUNKS)
            qe_bands_store(ring + ((k + 1) & 1) * QE_CH * QE_TW, pre);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

__kernel __attribute__((reqd_work_group_size(QE_LX, 1, 1))) void
qe_convolve_bands(__read_only image2d_t src, sampler_t sampler,
                  __read_only qcom_weight_image_t weights, __write_only image2d_t dst)
{
    __local float4 ring[2 * QE_CH * QE_TW];
    float h[QE_FX], v[QE_FY], w[QE_FY][QE_FX];
#if QE_SEPARABLE
    QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 1, QE_FX, h); /* slice 0: horizontal, then vertical */
    QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 2, QE_FY, v);
#else
#pragma unroll
    for (int j = 0; j < QE_FY; j++)
        QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 1 + j, QE_FX, w[j]);
#endif
    qe_bands_walk(src, sampler, dst, ring, QE_SEPARABLE, h, v, w, 1.0f);
}

__kernel __attribute__((reqd_work_group_size(QE_LX, 1, 1))) void
qe_box_filter_bands(__read_only image2d_t src, sampler_t sampler, const qcom_box_size_t size,
                    __write_only image2d_t dst)
{
    __local float4 ring[2 * QE_CH * QE_TW];
    /* The builtin's weights at an integer coordinate: the box spans [-w/2, w/2]. */
    float2 lo = -0.5f * size, hi = 0.5f * size;
    float h[QE_FX], v[QE_FY], w[QE_FY][QE_FX];
#pragma unroll
    for (int i = 0; i < QE_FX; i++)
        h[i] = qcom_ext_accelerated_cover(QE_OX + i, lo.x, hi.x);
#pragma unroll
    for (int j = 0; j < QE_FY; j++)
        v[j] = qcom_ext_accelerated_cover(QE_OY + j, lo.y, hi.y);
    qe_bands_walk(src, sampler, dst, ring, 1, h, v, w, size.x * size.y);
}
