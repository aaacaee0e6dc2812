/* Whole-image accelerated image ops (cl_qcom_accelerated_image_ops) for
 * qcom_ext.ext.accelerated.whole_image, the samples and the benchmarks. Build with
 * qcom_ext.build_program (it includes <qcom_ext.h>); qcom_ext/ext/accelerated/plan.py
 * chooses the -D values below.
 *
 * Output pixel (x, y) of qe_convolve_image / qe_box_filter_image is exactly
 *     qcom_convolve_imagef(src, sampler, (float2)(x, y), weights)
 *     qcom_box_filter_imagef(src, sampler, (float2)(x, y), size)
 * (integer coordinates, as in the extension spec's sample kernels, so phase 0 of a
 * multi-phase weight image is the one used). With the native extension (or -DQE_PER_PIXEL)
 * each work-item calls the builtin for its QE_BX x QE_BY pixels. The portable path computes
 * the same sums register-blocked: a work-item reads the (QE_BX + QE_FX - 1) x
 * (QE_BY + QE_FY - 1) input pixels its block needs once, row by row, and accumulates every
 * output that uses each row, with the filter size known at compile time (fully unrolled).
 * It reads exactly the pixels the builtin reads for the outputs inside the image, through
 * the same sampler, so addressing modes behave the same.
 *
 * -D values (all optional; qcom_ext.ext.accelerated.plan chooses them):
 *   QE_FX, QE_FY   taps of the window (filter size; for the box, the pixels it can touch)
 *   QE_OX, QE_OY   offset of the first tap from the output pixel (-center for a filter)
 *   QE_BX, QE_BY   outputs per work-item along x and y
 *   QE_SEPARABLE   1 when the weight image is separable
 */
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
#define QE_BX 4
#endif
#ifndef QE_BY
#define QE_BY 4
#endif
#ifndef QE_SEPARABLE
#define QE_SEPARABLE 0
#endif

#if defined(QCOM_EXT_NATIVE_cl_qcom_accelerated_image_ops) || defined(QE_PER_PIXEL)
#define QE_USE_BUILTIN 1
#endif

#define QE_RX (QE_BX + QE_FX - 1) /* input columns of one work-item's block */
#define QE_RY (QE_BY + QE_FY - 1) /* input rows */

#if defined(QE_TILED) && !defined(QE_USE_BUILTIN)
/* Local-memory variant: the work-group's QE_LX x QE_LY work-items first copy the input
 * their blocks need, QE_TW x QE_TH pixels, into local memory (one image read each), then
 * read the rows from there. */
#define QE_TW (QE_LX * QE_BX + QE_FX - 1)
#define QE_TH (QE_LY * QE_BY + QE_FY - 1)
#define QE_TILE_SIZE (QE_TW * QE_TH)
#define QE_GROUP_SIZE __attribute__((reqd_work_group_size(QE_LX, QE_LY, 1)))
#else
#define QE_TILE_SIZE 1
#define QE_GROUP_SIZE
#endif

/* "Needed": some output inside the image reads input column x0 + QE_OX + c (row likewise);
 * other pixels are never read, so the read set is the builtin's. */
#define QE_NEEDED(origin, c, taps, extent) ((origin) + (c) - ((taps) - 1) < (extent))

#ifndef QE_USE_BUILTIN
#ifdef QE_TILED
/* All work-items of the group must call it (it ends with a barrier). */
QCOM_EXT_ACCELERATED_INLINE
void qe_load_tile(__read_only image2d_t src, sampler_t sampler, __local float4 *tile,
                  int width, int height)
{
    int gx0 = (int)get_group_id(0) * QE_LX * QE_BX, gy0 = (int)get_group_id(1) * QE_LY * QE_BY;
    int lid = (int)get_local_id(1) * QE_LX + (int)get_local_id(0);
    for (int i = lid; i < QE_TILE_SIZE; i += QE_LX * QE_LY) {
        int c = i % QE_TW, r = i / QE_TW;
        bool needed = QE_NEEDED(gx0, c, QE_FX, width) && QE_NEEDED(gy0, r, QE_FY, height);
        tile[i] = needed ? qcom_ext_accelerated_pixel(src, sampler, gx0 + QE_OX + c,
                                                      gy0 + QE_OY + r)
                         : (float4)(0.0f);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

/* Input row r of the work-item's block (from the image, or from the tile). */
QCOM_EXT_ACCELERATED_INLINE
void qe_read_row(__read_only image2d_t src, sampler_t sampler, __local const float4 *tile,
                 int x0, int y0, int r, int width, float4 *row)
{
#ifdef QE_TILED
    __local const float4 *line =
        tile + ((int)get_local_id(1) * QE_BY + r) * QE_TW + (int)get_local_id(0) * QE_BX;
#pragma unroll
    for (int c = 0; c < QE_RX; c++)
        row[c] = line[c];
#else
#pragma unroll
    for (int c = 0; c < QE_RX; c++)
        row[c] = QE_NEEDED(x0, c, QE_FX, width)
                     ? qcom_ext_accelerated_pixel(src, sampler, x0 + QE_OX + c, y0 + QE_OY + r)
                     : (float4)(0.0f);
#endif
}

QCOM_EXT_ACCELERATED_INLINE
void qe_write_block(__write_only image2d_t dst, int x0, int y0, int width, int height,
                    float4 acc[QE_BY][QE_BX], float divisor)
{
#pragma unroll
    for (int oy = 0; oy < QE_BY; oy++)
#pragma unroll
        for (int ox = 0; ox < QE_BX; ox++)
            if (x0 + ox < width && y0 + oy < height)
                write_imagef(dst, (int2)(x0 + ox, y0 + oy), acc[oy][ox] / divisor);
}

/* out = (sum_j v[j] * sum_i h[i] * pixel(x + QE_OX + i, y + QE_OY + j)) / divisor: the
 * summation order of the builtins (each row horizontally, then the rows vertically). */
QCOM_EXT_ACCELERATED_INLINE
void qe_separable_block(__read_only image2d_t src, sampler_t sampler,
                        __local const float4 *tile, __write_only image2d_t dst, int x0,
                        int y0, int width, int height, const float *h, const float *v,
                        float divisor)
{
    float4 acc[QE_BY][QE_BX];
#pragma unroll
    for (int oy = 0; oy < QE_BY; oy++)
#pragma unroll
        for (int ox = 0; ox < QE_BX; ox++)
            acc[oy][ox] = (float4)(0.0f);
#pragma unroll
    for (int r = 0; r < QE_RY; r++) {
        if (!QE_NEEDED(y0, r, QE_FY, height))
            continue; /* rows below only feed outputs below the image */
        float4 row[QE_RX];
        qe_read_row(src, sampler, tile, x0, y0, r, width, row);
        float4 hs[QE_BX];
#pragma unroll
        for (int ox = 0; ox < QE_BX; ox++) {
            float4 s = (float4)(0.0f);
#pragma unroll
            for (int i = 0; i < QE_FX; i++)
                s += h[i] * row[ox + i];
            hs[ox] = s;
        }
#pragma unroll
        for (int oy = 0; oy < QE_BY; oy++) {
            int j = r - oy;
            if (j >= 0 && j < QE_FY) {
#pragma unroll
                for (int ox = 0; ox < QE_BX; ox++)
                    acc[oy][ox] += v[j] * hs[ox];
            }
        }
    }
    qe_write_block(dst, x0, y0, width, height, acc, divisor);
}

/* out = sum_j sum_i w[j][i] * pixel(x + QE_OX + i, y + QE_OY + j), row by row. */
QCOM_EXT_ACCELERATED_INLINE
void qe_filter2d_block(__read_only image2d_t src, sampler_t sampler,
                       __local const float4 *tile, __write_only image2d_t dst, int x0, int y0,
                       int width, int height, float w[QE_FY][QE_FX])
{
    float4 acc[QE_BY][QE_BX];
#pragma unroll
    for (int oy = 0; oy < QE_BY; oy++)
#pragma unroll
        for (int ox = 0; ox < QE_BX; ox++)
            acc[oy][ox] = (float4)(0.0f);
#pragma unroll
    for (int r = 0; r < QE_RY; r++) {
        if (!QE_NEEDED(y0, r, QE_FY, height))
            continue;
        float4 row[QE_RX];
        qe_read_row(src, sampler, tile, x0, y0, r, width, row);
#pragma unroll
        for (int oy = 0; oy < QE_BY; oy++) {
            int j = r - oy;
            if (j >= 0 && j < QE_FY) {
#pragma unroll
                for (int ox = 0; ox < QE_BX; ox++) {
                    float4 s = acc[oy][ox];
#pragma unroll
                    for (int i = 0; i < QE_FX; i++)
                        s += w[j][i] * row[ox + i];
                    acc[oy][ox] = s;
                }
            }
        }
    }
    qe_write_block(dst, x0, y0, width, height, acc, 1.0f);
}

#endif /* !QE_USE_BUILTIN */

/* Where the work-item's QE_BX x QE_BY block of outputs starts, (*x0, *y0); false when it
 * starts outside the image. The tiled variant first loads the group's tile: every
 * work-item takes part, so both kernels call this before any of them returns. */
bool qe_block_origin(__read_only image2d_t src, sampler_t sampler, __local float4 *tile,
                     int width, int height, int *x0, int *y0)
{
    *x0 = (int)get_global_id(0) * QE_BX;
    *y0 = (int)get_global_id(1) * QE_BY;
#if defined(QE_TILED) && !defined(QE_USE_BUILTIN)
    qe_load_tile(src, sampler, tile, width, height);
#endif
    return *x0 < width && *y0 < height;
}

/* The start of both whole-image kernels: the tile (1 unused float4 unless QE_TILED), the
 * image size and the work-item's block origin (x0, y0); a work-item whose block starts
 * outside the image returns once it has helped load the tile. */
#define QE_BEGIN_BLOCK()                                                                   \
    __local float4 tile[QE_TILE_SIZE];                                                     \
    int width = get_image_width(dst), height = get_image_height(dst), x0, y0;              \
    if (!qe_block_origin(src, sampler, tile, width, height, &x0, &y0))                     \
        return

#ifdef QE_USE_BUILTIN
/* Each output (x, y) of the block inside the image = BUILTIN(src, sampler, (x, y), arg). */
#define QE_BUILTIN_BLOCK(BUILTIN, arg)                                                     \
    for (int oy = 0; oy < QE_BY; oy++)                                                     \
        for (int ox = 0; ox < QE_BX; ox++) {                                               \
            int x = x0 + ox, y = y0 + oy;                                                  \
            if (x < width && y < height)                                                   \
                write_imagef(dst, (int2)(x, y),                                            \
                             BUILTIN(src, sampler, (float2)((float)x, (float)y), (arg)));  \
        }
#endif

__kernel QE_GROUP_SIZE void qe_convolve_image(__read_only image2d_t src, sampler_t sampler,
                                              __read_only qcom_weight_image_t weights,
                                              __write_only image2d_t dst)
{
    QE_BEGIN_BLOCK();
#ifdef QE_USE_BUILTIN
    QE_BUILTIN_BLOCK(qcom_convolve_imagef, weights);
#elif QE_SEPARABLE
    float h[QE_FX], v[QE_FY];
    QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 1, QE_FX, h); /* slice 0: horizontal, then vertical */
    QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 2, QE_FY, v);
    qe_separable_block(src, sampler, tile, dst, x0, y0, width, height, h, v, 1.0f);
#else
    float w[QE_FY][QE_FX];
#pragma unroll
    for (int j = 0; j < QE_FY; j++)
        QCOM_EXT_ACCELERATED_WEIGHT_ROW(weights, 1 + j, QE_FX, w[j]);
    qe_filter2d_block(src, sampler, tile, dst, x0, y0, width, height, w);
#endif
}

__kernel QE_GROUP_SIZE void qe_box_filter_image(__read_only image2d_t src, sampler_t sampler,
                                                const qcom_box_size_t size,
                                                __write_only image2d_t dst)
{
    QE_BEGIN_BLOCK();
#ifdef QE_USE_BUILTIN
    QE_BUILTIN_BLOCK(qcom_box_filter_imagef, size);
#else
    /* The builtin's weights at an integer coordinate: the box spans [-w/2, w/2]. */
    float2 lo = -0.5f * size, hi = 0.5f * size;
    float h[QE_FX], v[QE_FY];
#pragma unroll
    for (int i = 0; i < QE_FX; i++)
        h[i] = qcom_ext_accelerated_cover(QE_OX + i, lo.x, hi.x);
#pragma unroll
    for (int j = 0; j < QE_FY; j++)
        v[j] = qcom_ext_accelerated_cover(QE_OY + j, lo.y, hi.y);
    qe_separable_block(src, sampler, tile, dst, x0, y0, width, height, h, v,
                       size.x * size.y);
#endif
}

/* Key of a candidate: cost first (as_uint orders non-negative floats), then |dx| + |dy|,
 * then the candidate's row-major index; the smallest key wins. */
#define QE_NO_CANDIDATE 0xFFFFFFFFFFFFFFFFUL
#define QE_KEY(cost, dx, dy, c)                                                            \
    (((ulong)as_uint(cost) << 32) | ((ulong)(abs(dx) + abs(dy)) << 16) | (ulong)(c))

/* The result of block b: vectors[b] = (dx, dy) of the key's candidate, costs[b] its cost
 * (INFINITY and (0, 0) when no candidate fits). */
void qe_write_match(ulong key, int b, int side, int radius, __global int2 *vectors,
                    __global float *costs)
{
    if (key == QE_NO_CANDIDATE) {
        vectors[b] = (int2)(0, 0);
        costs[b] = INFINITY;
    } else {
        int c = (int)(key & 0xFFFFu);
        vectors[b] = (int2)(c % side - radius, c / side - radius);
        costs[b] = as_float((uint)(key >> 32));
    }
}

/* keys[0] = the smallest of keys[0..lsize-1]; then work-item 0 writes the block's result. */
void qe_finish_search(__local ulong *keys, int lid, int lsize, int side, int radius,
                      __global int2 *vectors, __global float *costs)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    int stride = 1;
    while (stride * 2 < lsize)
        stride *= 2;
    for (; stride > 0; stride >>= 1) {
        if (lid < stride && lid + stride < lsize)
            keys[lid] = min(keys[lid], keys[lid + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        int b = (int)(get_group_id(1) * get_num_groups(0) + get_group_id(0));
        qe_write_match(keys[0], b, side, radius, vectors, costs);
    }
}

/* Exhaustive block-matching search: work-group (bx, by) matches the target block whose
 * top-left pixel is (bx * region.x, by * region.y) against every reference block displaced
 * by (dx, dy), |dx|, |dy| <= radius, that lies inside the reference image, with
 * qcom_block_match_sadf (squared == 0) or _ssdf. Cost = sum of the four channels. The
 * lowest cost wins; ties go to the smaller |dx| + |dy|, then to the first candidate in
 * row-major (dy, dx) order. vectors[b] = (dx, dy), costs[b] = that cost (INFINITY, (0, 0)
 * when no candidate fits). `keys` holds one ulong per work-item; any local size works. */
__kernel void qe_block_match_search(__read_only image2d_t target,
                                    __read_only image2d_t reference, sampler_t sampler,
                                    uint2 region, int radius, int squared,
                                    __global int2 *vectors, __global float *costs,
                                    __local ulong *keys)
{
    int lid = (int)get_local_id(0), lsize = (int)get_local_size(0);
    int bx = (int)get_group_id(0), by = (int)get_group_id(1);
    int side = 2 * radius + 1, count = side * side;
    int tx = bx * (int)region.x, ty = by * (int)region.y;
    int rw = get_image_width(reference), rh = get_image_height(reference);
    float2 target_coord = (float2)((float)tx, (float)ty);
    ulong best = QE_NO_CANDIDATE;
    for (int c = lid; c < count; c += lsize) {
        int dx = c % side - radius, dy = c / side - radius;
        int rx = tx + dx, ry = ty + dy;
        if (rx < 0 || ry < 0 || rx + (int)region.x > rw || ry + (int)region.y > rh)
            continue;
        uint2 reference_coord = (uint2)((uint)rx, (uint)ry);
        float4 m = squared ? qcom_block_match_ssdf(target, sampler, target_coord, region,
                                                   reference, reference_coord)
                           : qcom_block_match_sadf(target, sampler, target_coord, region,
                                                   reference, reference_coord);
        float cost = (m.x + m.y) + (m.z + m.w);
        best = min(best, QE_KEY(cost, dx, dy, c));
    }
    keys[lid] = best;
    qe_finish_search(keys, lid, lsize, side, radius, vectors, costs);
}

#ifndef QE_USE_BUILTIN
/* The same search for the portable path, a tile of blocks per work-group, from local
 * memory (qcom_ext.ext.accelerated.plan chooses the -D values and the tile):
 *   QE_BM_W, QE_BM_H  region; QE_BM_R  radius; QE_BM_SSD  1: squared differences;
 *   QE_BM_CX          candidate columns (dx) one work-item sums at once.
 * The work-group of local size (QE_BM_LANES * tx, ty) searches tx x ty target blocks. It
 * first reads their target pixels and the reference window around them (tile + 2R each
 * way; pixels outside the reference image are not read, no candidate uses them) once
 * through the sampler into local memory. A block has QE_BM_LANES work-items, one per
 * (candidate row dy, run of QE_BM_CX columns dx): each keeps its QE_BM_CX sums in
 * registers and slides along the reference rows, so a pixel loaded from local memory
 * serves up to QE_BM_CX candidates. Every candidate sums |t - r| (or (t - r)^2) in the
 * builtin's order (row by row, left to right), so costs are those of
 * qe_block_match_search; the block's lanes then keep the smallest QE_KEY (the same
 * tie-breaking). Any local size is correct: one whose x is not a multiple of
 * QE_BM_LANES, or whose tiles do not fit `scratch` (`capacity` float4), makes the first
 * work-item of each block search alone through the sampler (what a tuner's "driver's
 * choice" gets). */
#ifndef QE_BM_W
#define QE_BM_W 8
#endif
#ifndef QE_BM_H
#define QE_BM_H 8
#endif
#ifndef QE_BM_R
#define QE_BM_R 4
#endif
#define QE_BM_SIDE (2 * QE_BM_R + 1)
#ifndef QE_BM_CX
#define QE_BM_CX QE_BM_SIDE
#endif
#ifndef QE_BM_SSD
#define QE_BM_SSD 0
#endif
#define QE_BM_CHUNKS ((QE_BM_SIDE + QE_BM_CX - 1) / QE_BM_CX)
#define QE_BM_LANES (QE_BM_SIDE * QE_BM_CHUNKS)
/* columns the last run reads past the window (its candidates past dx = R are dropped) */
#define QE_BM_PAD (QE_BM_CHUNKS * QE_BM_CX - QE_BM_SIDE)
#define QE_BM_IC (QE_BM_W < 8 ? QE_BM_W : 8) /* target columns held in registers at once */
#if QE_BM_SSD
#define QE_BM_COST(d) ((d) * (d))
#else
#define QE_BM_COST(d) fabs(d)
#endif

/* acc[k] = the cost of candidate column k of a run, summed row by row: t is the block's
 * first pixel in the target tile (row stride ts), r the first pixel of the run's first
 * candidate in the window (row stride ws). */
QCOM_EXT_ACCELERATED_INLINE
void qe_bm_sums(__local const float4 *t, int ts, __local const float4 *r, int ws,
                float4 acc[QE_BM_CX])
{
#pragma OPENCL FP_CONTRACT OFF /* (t - r)^2 rounded, then added: no fused multiply-add */
#pragma unroll
    for (int k = 0; k < QE_BM_CX; k++)
        acc[k] = (float4)(0.0f);
    for (int j = 0; j < QE_BM_H; j++) {
#pragma unroll
        for (int i0 = 0; i0 < QE_BM_W; i0 += QE_BM_IC) {
            float4 tv[QE_BM_IC];
#pragma unroll
            for (int i = 0; i < QE_BM_IC; i++)
                tv[i] = i0 + i < QE_BM_W ? t[j * ts + i0 + i] : (float4)(0.0f);
#pragma unroll
            for (int c = 0; c < QE_BM_IC + QE_BM_CX - 1; c++) {
                if (i0 + c < QE_BM_W + QE_BM_CX - 1) { /* (known once unrolled) */
                    float4 rv = r[j * ws + i0 + c];
#pragma unroll
                    for (int k = 0; k < QE_BM_CX; k++) {
                        int i = c - k; /* the target column this reference pixel meets */
                        if (i >= 0 && i < QE_BM_IC && i0 + i < QE_BM_W) {
                            float4 d = tv[i] - rv;
                            acc[k] += QE_BM_COST(d);
                        }
                    }
                }
            }
        }
    }
}

/* The best key of block (bx, by), searched by one work-item through the sampler. */
QCOM_EXT_ACCELERATED_INLINE
ulong qe_bm_alone(__read_only image2d_t target, __read_only image2d_t reference,
                  sampler_t sampler, int bx, int by, int rw, int rh)
{
    uint2 region = (uint2)(QE_BM_W, QE_BM_H);
    float2 target_coord = (float2)((float)(bx * QE_BM_W), (float)(by * QE_BM_H));
    ulong best = QE_NO_CANDIDATE;
    for (int c = 0; c < QE_BM_SIDE * QE_BM_SIDE; c++) {
        int dx = c % QE_BM_SIDE - QE_BM_R, dy = c / QE_BM_SIDE - QE_BM_R;
        int rx = bx * QE_BM_W + dx, ry = by * QE_BM_H + dy;
        if (rx < 0 || ry < 0 || rx + QE_BM_W > rw || ry + QE_BM_H > rh)
            continue;
        float4 m = qcom_ext_block_match(target, sampler, target_coord, region, reference,
                                        (uint2)((uint)rx, (uint)ry), QE_BM_SSD);
        best = min(best, QE_KEY((m.x + m.y) + (m.z + m.w), dx, dy, c));
    }
    return best;
}

/* Copies the tile's target pixels (tw x th at target pixel (x0, y0); pixels of no full
 * block are 0) and the reference window ((tw + 2R + QE_BM_PAD) x (th + 2R) from
 * (x0 - R, y0 - R), row stride ws; 0 outside the reference) into local memory. */
QCOM_EXT_ACCELERATED_INLINE
void qe_bm_load(__read_only image2d_t target, __read_only image2d_t reference,
                sampler_t sampler, int x0, int y0, int tw, int th, int ws,
                __local float4 *block, __local float4 *window)
{
    int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    int lsx = (int)get_local_size(0), lsy = (int)get_local_size(1);
    int full_w = get_image_width(target) / QE_BM_W * QE_BM_W;
    int full_h = get_image_height(target) / QE_BM_H * QE_BM_H;
    int rw = get_image_width(reference), rh = get_image_height(reference);
    for (int y = ly; y < th; y += lsy)
        for (int x = lx; x < tw; x += lsx)
            block[y * tw + x] = x0 + x < full_w && y0 + y < full_h
                                    ? qcom_ext_accelerated_pixel(target, sampler, x0 + x, y0 + y)
                                    : (float4)(0.0f);
    int ww = tw + 2 * QE_BM_R + QE_BM_PAD, wh = th + 2 * QE_BM_R;
    for (int y = ly; y < wh; y += lsy) {
        for (int x = lx; x < ww; x += lsx) {
            int gx = x0 - QE_BM_R + x, gy = y0 - QE_BM_R + y;
            bool inside = x < tw + 2 * QE_BM_R && gx >= 0 && gy >= 0 && gx < rw && gy < rh;
            window[y * ws + x] =
                inside ? qcom_ext_accelerated_pixel(reference, sampler, gx, gy) : (float4)(0.0f);
        }
    }
}

/* The best key of a run: candidates (dyi - R, dx0 + k - R) of block (bx, by). */
QCOM_EXT_ACCELERATED_INLINE
ulong qe_bm_run_key(float4 acc[QE_BM_CX], int bx, int by, int dyi, int dx0, int rw, int rh)
{
    ulong best = QE_NO_CANDIDATE;
    int ry = by * QE_BM_H + dyi - QE_BM_R;
    if (ry < 0 || ry + QE_BM_H > rh)
        return best;
#pragma unroll
    for (int k = 0; k < QE_BM_CX; k++) {
        int dxi = dx0 + k, rx = bx * QE_BM_W + dxi - QE_BM_R;
        if (dxi < QE_BM_SIDE && rx >= 0 && rx + QE_BM_W <= rw) {
            float cost = (acc[k].x + acc[k].y) + (acc[k].z + acc[k].w);
            best = min(best, QE_KEY(cost, dxi - QE_BM_R, dyi - QE_BM_R,
                                    dyi * QE_BM_SIDE + dxi));
        }
    }
    return best;
}

__kernel void qe_block_match_tiles(__read_only image2d_t target,
                                   __read_only image2d_t reference, sampler_t sampler,
                                   __global int2 *vectors, __global float *costs,
                                   __local float4 *scratch, int capacity)
{
    int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    int lsx = (int)get_local_size(0), lsy = (int)get_local_size(1);
    int nbx = get_image_width(target) / QE_BM_W, nby = get_image_height(target) / QE_BM_H;
    int rw = get_image_width(reference), rh = get_image_height(reference);
    int tw = lsx / QE_BM_LANES * QE_BM_W, th = lsy * QE_BM_H;
    int ws = (tw + 2 * QE_BM_R + QE_BM_PAD) | 1; /* odd: rows start in other banks */
    int key_slots = (lsx * lsy + 1) / 2;
    /* The same for the whole group; the barriers below are reached either way. */
    bool tiled = lsx % QE_BM_LANES == 0 &&
                 key_slots + tw * th + ws * (th + 2 * QE_BM_R) <= capacity;
    __local ulong *keys = (__local ulong *)scratch;
    __local float4 *block = scratch + key_slots, *window = block + tw * th;
    int x0 = (int)get_group_id(0) * tw, y0 = (int)get_group_id(1) * th;
    if (tiled)
        qe_bm_load(target, reference, sampler, x0, y0, tw, th, ws, block, window);
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the work-item's block (bx, by), its lane: a candidate row and run of columns */
    int b = lx / QE_BM_LANES, lane = lx % QE_BM_LANES;
    int bx = x0 / QE_BM_W + b, by = y0 / QE_BM_H + ly;
    if (tiled && bx < nbx && by < nby) {
        int dyi = lane / QE_BM_CHUNKS, dx0 = lane % QE_BM_CHUNKS * QE_BM_CX;
        float4 acc[QE_BM_CX];
        qe_bm_sums(block + ly * QE_BM_H * tw + b * QE_BM_W, tw,
                   window + (ly * QE_BM_H + dyi) * ws + b * QE_BM_W + dx0, ws, acc);
        keys[ly * lsx + lx] = qe_bm_run_key(acc, bx, by, dyi, dx0, rw, rh);
    } else if (!tiled) {
        int gx = (int)get_global_id(0), gy = (int)get_global_id(1);
        if (gx % QE_BM_LANES == 0 && gx / QE_BM_LANES < nbx && gy < nby) {
            ulong key = qe_bm_alone(target, reference, sampler, gx / QE_BM_LANES, gy, rw, rh);
            qe_write_match(key, gy * nbx + gx / QE_BM_LANES, QE_BM_SIDE, QE_BM_R, vectors,
                           costs);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tiled && lane == 0 && bx < nbx && by < nby) {
        ulong key = keys[ly * lsx + lx];
        for (int l = 1; l < QE_BM_LANES; l++)
            key = min(key, keys[ly * lsx + lx + l]);
        qe_write_match(key, by * nbx + bx, QE_BM_SIDE, QE_BM_R, vectors, costs);
    }
}
#endif
