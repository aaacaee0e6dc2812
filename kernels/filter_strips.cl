/* Whole-image convolution and box filter, method "strips" (portable path of
 * cl_qcom_accelerated_image_ops; qcom_ext.ext.accelerated.strips chooses the -D values and
 * launches them). Output pixel (x, y) is, as in kernels/accelerated_image_ops.cl,
 *     qcom_convolve_imagef(src, sampler, (float2)(x, y), weights)
 *     qcom_box_filter_imagef(src, sampler, (float2)(x, y), size)
 * with the same taps, the same reads through the sampler and the same summation order
 * (separable: each input row's horizontal sum, then the rows in order; 2-D: row by row,
 * tap by tap), so the results are those of the "tiled" method.
 *
 * How: a work-group of QE_LX x QE_LY work-items first copies the input its outputs need,
 * QE_TW x QE_TH pixels, into local memory (one image read each, coalesced along x), then
 * each work-item walks down a strip of QE_BY rows of QE_BX adjacent outputs: it reads each
 * input row of the strip once from local memory (QE_BX + QE_FX - 1 pixels), adds it into
 * the (at most QE_FY) outputs that use it, and writes each output as soon as its last row
 * is in. Live state: a ring of QE_FY x QE_BX accumulators, not QE_BY x QE_BX, so long
 * strips (few halo rows per output) fit in registers.
 *
 * -D values (qcom_ext.ext.accelerated.strips chooses them):
 *   QE_FX, QE_FY   taps of the window (for the box, the pixels it can touch)
 *   QE_OX, QE_OY   offset of the first tap from the output pixel (-center for a filter)
 *   QE_BX, QE_BY   outputs per work-item along x and y (QE_BY: the strip's length)
 *   QE_LX, QE_LY   the work-group size the kernels are compiled for
 *   QE_SEPARABLE   1 when the weight image is separable
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops)
#error "filter_strips.cl is the portable path: natively qcom_ext calls the builtins (accelerated_image_ops.cl)"
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
#ifndef QE_BX
#define QE_BX 1
#endif
#ifndef QE_BY
#define QE_BY 16
#endif
#ifndef QE_LX
#define QE_LX 32
#endif
#ifndef QE_LY
#define QE_LY 4
#endif
#ifndef QE_SEPARABLE
#define QE_SEPARABLE 0
#endif

#ifndef QE_FLUSH_W /* pixels across of the block 32 work-items write a round: 8, 16 or 32 */
#define QE_FLUSH_W 16
#endif
#ifndef QE_STAGE
#define QE_STAGE 0
#endif
#define QE_RX (QE_BX + QE_FX - 1)             /* input pixels of one strip row */
#define QE_OW (QE_LX * QE_BX)                 /* the work-group's outputs */
#define QE_OH (QE_LY * QE_BY)
#define QE_GROUP (QE_LX * QE_LY)
#define QE_TW (QE_LX * QE_BX + QE_FX - 1)     /* the work-group's input tile */
#define QE_TH (QE_LY * QE_BY + QE_FY - 1)
#define QE_ROWS (QE_BY + QE_FY - 1)           /* input rows one strip reads */

/* "Needed": some output inside the image reads input column x0 + QE_OX + c (or row);
 * the others are never read, so the read set is the builtin's. */
#define QE_NEEDED(origin, c, taps, extent) ((origin) + (c) - ((taps) - 1) < (extent))

/* The group's tile, from (gx0 + QE_OX, gy0 + QE_OY); every work-item takes part and the
 * function ends with a barrier. */
QCOM_EXT_ACCELERATED_INLINE
void qe_strips_load(__read_only image2d_t src, sampler_t sampler, __local float4 *tile,
                    int gx0, int gy0, int width, int height)
{
    int lid = (int)get_local_id(1) * QE_LX + (int)get_local_id(0);
    for (int i = lid; i < QE_TW * QE_TH; i += QE_LX * QE_LY) {
        int c = i % QE_TW, r = i / QE_TW;
        bool needed = QE_NEEDED(gx0, c, QE_FX, width) && QE_NEEDED(gy0, r, QE_FY, height);
        tile[i] = needed ? qcom_ext_accelerated_pixel(src, sampler, gx0 + QE_OX + c,
                                                      gy0 + QE_OY + r)
                         : (float4)(0.0f);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

#if QE_STAGE
/* With QE_STAGE the outputs go to local memory first (`staged`, the group's QE_OW x QE_OH
 * outputs) and qe_strips_flush writes them, one pixel a work-item a round. */
__local float4 *qe_staged(__local float4 *staged, int x, int y)
{
    return staged + (y - (int)get_group_id(1) * QE_OH) * QE_OW + x -
           (int)get_group_id(0) * QE_OW;
}

/* Where the shapes allow, the 32 work-items of a sub-group write 16 x 2 adjacent pixels a
 * round; else rows in order. */
QCOM_EXT_ACCELERATED_INLINE
void qe_strips_flush(__write_only image2d_t dst, __local const float4 *staged, int width,
                     int height)
{
    int gx0 = (int)get_group_id(0) * QE_OW, gy0 = (int)get_group_id(1) * QE_OH;
    int tid = (int)get_local_id(1) * QE_LX + (int)get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = tid; p < QE_OW * QE_OH; p += QE_GROUP) {
#if QE_OW % QE_FLUSH_W == 0 && QE_OH % (32 / QE_FLUSH_W) == 0 && QE_GROUP % 32 == 0
        int w = p / 32, lane = p % 32;
        int x = (w % (QE_OW / QE_FLUSH_W)) * QE_FLUSH_W + lane % QE_FLUSH_W;
        int y = (w / (QE_OW / QE_FLUSH_W)) * (32 / QE_FLUSH_W) + lane / QE_FLUSH_W;
#else
        int x = p % QE_OW, y = p / QE_OW;
#endif
        if (gx0 + x < width && gy0 + y < height)
            write_imagef(dst, (int2)(gx0 + x, gy0 + y), staged[y * QE_OW + x]);
    }
}
#endif

/* Output row oy of the strip, written when inside the image: acc / divisor. */
QCOM_EXT_ACCELERATED_INLINE
void qe_strips_write(__write_only image2d_t dst, __local float4 *staged, int x0, int y,
                     int width, const float4 *acc, float divisor)
{
#pragma unroll
    for (int ox = 0; ox < QE_BX; ox++)
#if QE_STAGE
        *qe_staged(staged, x0 + ox, y) = acc[ox] / divisor;
#else
        if (x0 + ox < width)
            write_imagef(dst, (int2)(x0 + ox, y), acc[ox] / divisor);
#endif
}

/* The strip of a separable filter: for each input row r, hs = sum_i h[i] * row[ox + i],
 * then acc[oy] += v[r - oy] * hs for the outputs oy the row feeds (the builtin's order). */
QCOM_EXT_ACCELERATED_INLINE
void qe_strips_separable(__local const float4 *strip, __write_only image2d_t dst,
                         __local float4 *staged, int x0, int y0, int width, int height,
                         const float *h, const float *v, float divisor)
{
    float4 acc[QE_FY][QE_BX]; /* output oy accumulates in acc[oy % QE_FY] */
#pragma unroll
    for (int r = 0; r < QE_ROWS; r++) {
        if (!QE_NEEDED(y0, r, QE_FY, height))
            break; /* rows below only feed outputs below the image */
        float4 row[QE_RX], hs[QE_BX];
#pragma unroll
        for (int c = 0; c < QE_RX; c++)
            row[c] = strip[r * QE_TW + c];
#pragma unroll
        for (int ox = 0; ox < QE_BX; ox++) {
            float4 s = (float4)(0.0f);
#pragma unroll
            for (int i = 0; i < QE_FX; i++)
                s += h[i] * row[ox + i];
            hs[ox] = s;
        }
#pragma unroll
        for (int j = 0; j < QE_FY; j++) {
            int oy = r - j;
            if (oy >= 0 && oy < QE_BY) {
#pragma unroll
                for (int ox = 0; ox < QE_BX; ox++) {
                    float4 a = j == 0 ? (float4)(0.0f) : acc[oy % QE_FY][ox];
                    acc[oy % QE_FY][ox] = a + v[j] * hs[ox];
                }
            }
        }
        int done = r - (QE_FY - 1); /* the output whose last row this was */
        if (done >= 0 && done < QE_BY && y0 + done < height)
            qe_strips_write(dst, staged, x0, y0 + done, width, acc[done % QE_FY], divisor);
    }
}

/* The strip of a 2-D filter: acc[oy] += sum_i w[r - oy][i] * row[ox + i], tap by tap. */
QCOM_EXT_ACCELERATED_INLINE
void qe_strips_filter2d(__local const float4 *strip, __write_only image2d_t dst,
                        __local float4 *staged, int x0, int y0, int width, int height,
                        float w[QE_FY][QE_FX])
{
    float4 acc[QE_FY][QE_BX];
#pragma unroll
    for (int r = 0; r < QE_ROWS; r++) {
        if (!QE_NEEDED(y0, r, QE_FY, height))
            break;
        float4 row[QE_RX];
#pragma unroll
        for (int c = 0; c < QE_RX; c++)
            row[c] = strip[r * QE_TW + c];
#pragma unroll
        for (int j = 0; j < QE_FY; j++) {
            int oy = r - j;
            if (oy >= 0 && oy < QE_BY) {
#pragma unroll
                for (int ox = 0; ox < QE_BX; ox++) {
                    float4 s = j == 0 ? (float4)(0.0f) : acc[oy % QE_FY][ox];
#pragma unroll
                    for (int i = 0; i < QE_FX; i++)
                        s += w[j][i] * row[ox + i];
                    acc[oy % QE_FY][ox] = s;
                }
            }
        }
        int done = r - (QE_FY - 1);
        if (done >= 0 && done < QE_BY && y0 + done < height)
            qe_strips_write(dst, staged, x0, y0 + done, width, acc[done % QE_FY], 1.0f);
    }
}

/* The start of both kernels: image size, the tile loaded, and the work-item's strip
 * origin (x0, y0); a work-item whose strip starts outside the image returns once it has
 * helped load the tile. */
#if QE_STAGE
#define QE_STAGED_TILE __local float4 staged[QE_OW * QE_OH]
#define QE_STRIPS_END() qe_strips_flush(dst, staged, width, height)
#define QE_OUTSIDE_RETURNS 0 /* every work-item reaches the flush's barrier */
#else
#define QE_STAGED_TILE __local float4 *staged = 0
#define QE_STRIPS_END()
#define QE_OUTSIDE_RETURNS 1
#endif

#define QE_STRIPS_BEGIN()                                                                  \
    __local float4 tile[QE_TW * QE_TH];                                                    \
    QE_STAGED_TILE;                                                                        \
    int width = get_image_width(dst), height = get_image_height(dst);                      \
    int gx0 = (int)get_group_id(0) * QE_LX * QE_BX;                                        \
    int gy0 = (int)get_group_id(1) * QE_LY * QE_BY;                                        \
    qe_strips_load(src, sampler, tile, gx0, gy0, width, height);                           \
    int x0 = gx0 + (int)get_local_id(0) * QE_BX, y0 = gy0 + (int)get_local_id(1) * QE_BY; \
    if (QE_OUTSIDE_RETURNS && (x0 >= width || y0 >= height))                               \
        return;                                                                            \
    __local const float4 *strip =                                                          \
        tile + (int)get_local_id(1) * QE_BY * QE_TW + (int)get_local_id(0) * QE_BX

__kernel __attribute__((reqd_work_group_size(QE_LX, QE_LY, 1))) void
qe_convolve_strips(__read_only image2d_t src, sampler_t sampler,
                   __read_only qcom_weight_image_t weights, __write_only image2d_t dst)
{
    QE_STRIPS_BEGIN();
#if QE_SEPARABLE
    float h[QE_FX], v[QE_FY];
    QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 1, QE_FX, h); /* slice 0: horizontal, then vertical */
    QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 2, QE_FY, v);
    qe_strips_separable(strip, dst, staged, x0, y0, width, height, h, v, 1.0f);
#else
    float w[QE_FY][QE_FX];
#pragma unroll
    for (int j = 0; j < QE_FY; j++)
        QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 1 + j, QE_FX, w[j]);
    qe_strips_filter2d(strip, dst, staged, x0, y0, width, height, w);
#endif
    QE_STRIPS_END();
}

__kernel __attribute__((reqd_work_group_size(QE_LX, QE_LY, 1))) void
qe_box_filter_strips(__read_only image2d_t src, sampler_t sampler, const qcom_box_size_t size,
                     __write_only image2d_t dst)
{
    QE_STRIPS_BEGIN();
    /* The builtin's weights at an integer coordinate: the box spans [-w/2, w/2]. */
    float2 lo = -0.5f * size, hi = 0.5f * size;
    float h[QE_FX], v[QE_FY];
#pragma unroll
    for (int i = 0; i < QE_FX; i++)
        h[i] = qcom_ext_accelerated_cover(QE_OX + i, lo.x, hi.x);
#pragma unroll
    for (int j = 0; j < QE_FY; j++)
        v[j] = qcom_ext_accelerated_cover(QE_OY + j, lo.y, hi.y);
    qe_strips_separable(strip, dst, staged, x0, y0, width, height, h, v, size.x * size.y);
    QE_STRIPS_END();
}
