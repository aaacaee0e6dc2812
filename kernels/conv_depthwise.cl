/* Depthwise conv2d on the RGBA image layout (guide section 8.2, the MNN design, with
 * vertical strips).
 *
 * input   image (IW * CB, IH * N)     the N x C x IH x IW tensor, CB = ceil(C/4)
 * weights image (KW * CB, KH)         the C x 1 x KH x KW filter as a 1 x C x KH x KW tensor:
 *                                     texel (cb * KW + kx, ky) = taps (ky, kx) of block cb
 *                                     (WEIGHTS_BUFFER=1: a float4 buffer [CB][KH][KW])
 * bias    image (CB, 1)               the bias as a 1 x C x 1 x 1 tensor (zeros for none)
 *                                     (WEIGHTS_BUFFER=1: a float4 buffer [CB])
 * output  image (OW * CB, OH * N)
 *
 * Global size (ceil(OW/PIXELS) * CB, ceil(OH/ROWS) * N). A work-item computes PIXELS
 * consecutive output pixels in each of ROWS output rows of one channel block: 4 x 1 is
 * the MNN design; a strip of ROWS = 8 rows is the sliding window, where each input row
 * is read once for all the output rows that use it. The work-item keeps the block's
 * KH x KW weight texels in registers and starts its accumulators at the bias; then it
 * walks the ROW_SPAN input rows of its strip top to bottom, reads the span of texels
 * its outputs need from each row once, (PIXELS - 1) * SW + (KW - 1) * DW + 1 of them,
 * and multiply-adds it into every output row that uses it (at most ceil(KH * DH / SH)
 * rows are open at a time). An output row is written as soon as its last input row is
 * in, so only the open rows hold registers: input texels read per output
 * ROW_SPAN * SPAN / (ROWS * PIXELS), 30 / 8 for 8 x 1 and 60 / 32 for 4 x 8 (3 x 3,
 * stride 1), against 9 for one output a work-item. Every loop has compile-time bounds
 * and unrolls. Input coordinates outside the tensor (padding) become -1, where the
 * CLK_ADDRESS_CLAMP sampler returns 0. Only valid outputs are written when OW or OH is
 * not a multiple of PIXELS or ROWS.
 * Compile-time: KH KW SH SW DH DW, PIXELS (1, 2, 4, 8), ROWS (1, 2, 4, 8; with STRIP=1
 * the kernel below, 4, 8, 16, 32), WEIGHTS_BUFFER (below), ACTIVATION, STORAGE_HALF
 * (images: no code change), USE_MAD24; TILED=1: the local-memory tile at the end.
 */
#include "conv_common.h"

#ifndef KH
#error "define KH, KW, SH, SW, DH, DW"
#endif

#ifndef PIXELS
#define PIXELS 4
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef STRIP
#define STRIP 0
#endif
#ifndef TILED
#define TILED 0
#endif
#if PIXELS != 1 && PIXELS != 2 && PIXELS != 4 && PIXELS != 8
#error "PIXELS must be 1, 2, 4 or 8"
#endif
#if STRIP && ROWS != 4 && ROWS != 8 && ROWS != 16 && ROWS != 32
#error "ROWS must be 4, 8, 16 or 32 (the strip)"
#elif TILED && ROWS != 4 && ROWS != 8 && ROWS != 16
#error "ROWS must be 4, 8 or 16 (the tile)"
#elif !STRIP && !TILED && ROWS != 1 && ROWS != 2 && ROWS != 4 && ROWS != 8
#error "ROWS must be 1, 2, 4 or 8"
#endif
/* Input columns and rows one work-item reads. */
#define SPAN ((PIXELS - 1) * SW + (KW - 1) * DW + 1)
#define ROW_SPAN ((ROWS - 1) * SH + (KH - 1) * DH + 1)
/* The first output row of a strip that input row j of it can feed (r * SH + ky * DH == j
 * needs r * SH >= j - (KH - 1) * DH). */
#define FIRST_USER(j) (max((j) - (KH - 1) * DH + SH - 1, 0) / SH)

/* The weights and the bias: images (the MNN design: texel (cb * KW + kx, ky), texel
 * (cb, 0)), or with WEIGHTS_BUFFER=1 float4 buffers, [CB][KH][KW] and [CB] (float even
 * for half storage), read through the data cache rather than the texture path. */
#ifndef WEIGHTS_BUFFER
#define WEIGHTS_BUFFER 0
#endif
#if WEIGHTS_BUFFER
#define WEIGHT_ARGS __global const float4 *restrict weights, __global const float4 *restrict bias
#define WEIGHT(cb, ky, kx) weights[IMAD(cb, KH * KW, (ky) * KW + (kx))]
#define BIAS(cb) bias[cb]
#else
#define WEIGHT_ARGS __read_only image2d_t weights, __read_only image2d_t bias
#define WEIGHT(cb, ky, kx) read_imagef(weights, CONV_SAMPLER, (int2)(IMAD(cb, KW, kx), ky))
#define BIAS(cb) read_imagef(bias, CONV_SAMPLER, (int2)(cb, 0))
#endif

int column(int x, int cb, int in_w)
{
    return (x >= 0 && x < in_w) ? IMAD(cb, in_w, x) : -1;
}

#if !STRIP && !TILED
__kernel void depthwise_conv2d(__read_only image2d_t input, WEIGHT_ARGS,
                               __write_only image2d_t output,
                               int in_w, int in_h, int out_w, int out_h, int pad_w,
                               int pad_h, int blocks, int out_w_blocks, int batch,
                               float slope)
{
    const int out_h_blocks = (out_h + ROWS - 1) / ROWS;
    const int gx = get_global_id(0), gy = get_global_id(1);
    if (gx >= IMUL(out_w_blocks, blocks) || gy >= IMUL(out_h_blocks, batch)) return;
    const int cb = gx / out_w_blocks, owb = gx - IMUL(cb, out_w_blocks);
    const int n = gy / out_h_blocks, oh0 = (gy - IMUL(n, out_h_blocks)) * ROWS;
    const int ow0 = owb * PIXELS;

    float4 w[KH][KW];
#pragma unroll
    for (int ky = 0; ky < KH; ++ky)
#pragma unroll
        for (int kx = 0; kx < KW; ++kx)
            w[ky][kx] = WEIGHT(cb, ky, kx);
    const float4 b = BIAS(cb);
    float4 o[ROWS][PIXELS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int p = 0; p < PIXELS; ++p) o[r][p] = b;
    const int ix0 = IMAD(ow0, SW, -pad_w);
    const int iy0 = IMAD(oh0, SH, -pad_h);

    const int out_x = IMAD(cb, out_w, ow0);
    const int valid = out_w - ow0;
    const int out_y = IMAD(n, out_h, oh0);

    /* Each input row j of the strip is read once and feeds every (output row r, kernel
     * row ky) with r * SH + ky * DH == j; output row r is complete after row
     * r * SH + (KH - 1) * DH and is written there. The conditions are compile-time after
     * unrolling, and the reads no output needs are dropped. */
#pragma unroll
    for (int j = 0; j < ROW_SPAN; ++j) {
        /* rows >= FIRST_USER(j) are the only outputs row j (and every later one) feeds:
         * a strip past the end of the tensor stops reading there */
        if (oh0 + FIRST_USER(j) >= out_h) break;
        const int iy = iy0 + j;
        const int row = (iy >= 0 && iy < in_h) ? IMAD(n, in_h, iy) : -1;
        float4 span[SPAN];
#pragma unroll
        for (int i = 0; i < SPAN; ++i)
            span[i] = read_imagef(input, CONV_SAMPLER, (int2)(column(ix0 + i, cb, in_w), row));
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
#pragma unroll
            for (int ky = 0; ky < KH; ++ky) {
                if (r * SH + ky * DH != j) continue;
#pragma unroll
                for (int kx = 0; kx < KW; ++kx)
#pragma unroll
                    for (int p = 0; p < PIXELS; ++p)
                        o[r][p] = mad(span[p * SW + kx * DW], w[ky][kx], o[r][p]);
            }
            if (r * SH + (KH - 1) * DH != j || oh0 + r >= out_h) continue;
#pragma unroll
            for (int p = 0; p < PIXELS; ++p)
                if (p < valid)
                    write_imagef(output, (int2)(out_x + p, out_y + r), ACTIVATE(o[r][p], slope));
        }
    }
}
#endif /* !STRIP && !TILED */

/* The sliding-window strip (-DSTRIP=1): the same work-item tiles and arguments as above with ROWS
 * (4, 8, 16, 32) output rows a strip, computed in a loop that is not unrolled, so the
 * registers stay bounded whatever the strip's length. The window is WH = (KH - 1) * DH
 * + 1 input rows tall and slides SH rows an output row; OPEN = ceil(WH / SH) output rows
 * take contributions at a time: acc[0] the row finishing, acc[d] the row d below it.
 * Iteration t (output row r = oh0 - OPEN + 1 + t) reads the SH input rows
 * r * SH + WH - SH + s (s < SH), each once, adds each into every open row d whose window
 * holds it at a kernel row ((WH - SH + s - d * SH) / DH, when whole and in range: all
 * compile-time), writes acc[0] when r is a row of the strip and shifts the rows up.
 * The first OPEN - 1 iterations fill the rows above the strip's first (never written).
 * Input texels read per output: SH * SPAN * (ROWS + OPEN - 1) / (ROWS * PIXELS), 108 / 64
 * = 1.69 for 4 x 16 (3 x 3, stride 1), against 30 / 8 = 3.75 for 8 x 1 above.
 */
#if STRIP
#define WH ((KH - 1) * DH + 1)
#define OPEN ((WH + SH - 1) / SH)

__kernel void depthwise_conv2d_strip(__read_only image2d_t input, WEIGHT_ARGS,
                                     __write_only image2d_t output,
                                     int in_w, int in_h, int out_w, int out_h, int pad_w,
                                     int pad_h, int blocks, int out_w_blocks, int batch,
                                     float slope)
{
    const int out_h_blocks = (out_h + ROWS - 1) / ROWS;
    const int gx = get_global_id(0), gy = get_global_id(1);
    if (gx >= IMUL(out_w_blocks, blocks) || gy >= IMUL(out_h_blocks, batch)) return;
    const int cb = gx / out_w_blocks, owb = gx - IMUL(cb, out_w_blocks);
    const int n = gy / out_h_blocks, oh0 = (gy - IMUL(n, out_h_blocks)) * ROWS;
    const int ow0 = owb * PIXELS;

    float4 w[KH][KW];
#pragma unroll
    for (int ky = 0; ky < KH; ++ky)
#pragma unroll
        for (int kx = 0; kx < KW; ++kx)
            w[ky][kx] = WEIGHT(cb, ky, kx);
    const float4 b = BIAS(cb);
    float4 acc[OPEN][PIXELS];
#pragma unroll
    for (int d = 0; d < OPEN; ++d)
#pragma unroll
        for (int p = 0; p < PIXELS; ++p) acc[d][p] = b;

    const int ix0 = IMAD(ow0, SW, -pad_w);
    const int out_x = IMAD(cb, out_w, ow0);
    const int valid = out_w - ow0;
    const int last = min(oh0 + ROWS, out_h); /* one past the strip's last row */
    int r = oh0 - (OPEN - 1);
    int iy = IMAD(r, SH, WH - SH - pad_h); /* the first input row iteration r reads */
#pragma unroll 1
    for (; r < last; ++r, iy += SH) {
#pragma unroll
        for (int s = 0; s < SH; ++s) {
            const int y = iy + s;
            const int row = (y >= 0 && y < in_h) ? IMAD(n, in_h, y) : -1;
            float4 span[SPAN];
#pragma unroll
            for (int i = 0; i < SPAN; ++i)
                span[i] = read_imagef(input, CONV_SAMPLER, (int2)(column(ix0 + i, cb, in_w), row));
#pragma unroll
            for (int d = 0; d < OPEN; ++d) {
                const int offset = WH - SH + s - d * SH; /* in row r + d's window */
                if (offset < 0 || offset >= WH || offset % DH) continue;
#pragma unroll
                for (int kx = 0; kx < KW; ++kx)
#pragma unroll
                    for (int p = 0; p < PIXELS; ++p)
                        acc[d][p] = mad(span[p * SW + kx * DW], w[offset / DH][kx], acc[d][p]);
            }
        }
        if (r >= oh0) {
            const int out_y = IMAD(n, out_h, r);
#pragma unroll
            for (int p = 0; p < PIXELS; ++p)
                if (p < valid)
                    write_imagef(output, (int2)(out_x + p, out_y), ACTIVATE(acc[0][p], slope));
        }
#pragma unroll
        for (int d = 0; d + 1 < OPEN; ++d)
#pragma unroll
            for (int p = 0; p < PIXELS; ++p) acc[d][p] = acc[d + 1][p];
#pragma unroll
        for (int p = 0; p < PIXELS; ++p) acc[OPEN - 1][p] = b;
    }
}
#endif /* STRIP */

/* The local-memory tile (-DTILED=1): a work-group of TILE_W x ROWS work-items computes a
 * TW x ROWS tile of one channel block (TW = TILE_W * PIXELS), each work-item PIXELS
 * outputs of one row. The group first copies the tile's input region, RH x RW texels,
 * from the image into local memory, each texel read once (the strip above reads each
 * once too, but in a serial loop; here every work-item of the group reads its share at
 * once), then every work-item reads its KH rows of SPAN texels from local memory.
 * Texture reads per output: RH * RW / (TW * ROWS), 34 * 10 / 256 = 1.33 for 4 x 8 work-
 * items of 4 pixels (3 x 3, stride 1). The local size must be (TILE_W, ROWS) (required),
 * the global size (CB * tiles_w * TILE_W, N * ceil(OH / ROWS) * ROWS), tiles_w =
 * ceil(OW / TW) (the kernel's out_w_blocks argument).
 */
#if TILED
#ifndef TILE_W
#define TILE_W 8
#endif
#define TW (TILE_W * PIXELS)
#define RW ((TW - 1) * SW + (KW - 1) * DW + 1)
#define RH ((ROWS - 1) * SH + (KH - 1) * DH + 1)

__kernel __attribute__((reqd_work_group_size(TILE_W, ROWS, 1))) void
depthwise_conv2d_tiled(__read_only image2d_t input, WEIGHT_ARGS, __write_only image2d_t output,
                       int in_w, int in_h, int out_w, int out_h, int pad_w, int pad_h,
                       int blocks, int tiles_w, int batch, float slope)
{
    __local float4 region[RH * RW];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int tiles_h = (out_h + ROWS - 1) / ROWS;
    const int gx = get_group_id(0), gy = get_group_id(1);
    const int cb = gx / tiles_w, tx = gx - IMUL(cb, tiles_w);
    const int n = gy / tiles_h, ty = gy - IMUL(n, tiles_h);
    const int ox0 = tx * TW, oy0 = ty * ROWS;
    const int ix0 = IMAD(ox0, SW, -pad_w), iy0 = IMAD(oy0, SH, -pad_h);

    for (int i = IMAD(ly, TILE_W, lx); i < RH * RW; i += TILE_W * ROWS) {
        const int r = i / RW, y = iy0 + r;
        const int row = (y >= 0 && y < in_h) ? IMAD(n, in_h, y) : -1;
        const int x = column(ix0 + i - r * RW, cb, in_w);
        region[i] = read_imagef(input, CONV_SAMPLER, (int2)(x, row));
    }
    float4 w[KH][KW];
#pragma unroll
    for (int ky = 0; ky < KH; ++ky)
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) w[ky][kx] = WEIGHT(cb, ky, kx);
    const float4 b = BIAS(cb);
    barrier(CLK_LOCAL_MEM_FENCE);

    const int oy = oy0 + ly, ox = ox0 + lx * PIXELS;
    if (oy >= out_h || ox >= out_w) return;
    float4 o[PIXELS];
#pragma unroll
    for (int p = 0; p < PIXELS; ++p) o[p] = b;
#pragma unroll
    for (int ky = 0; ky < KH; ++ky) {
        const __local float4 *line = region + (ly * SH + ky * DH) * RW + lx * PIXELS * SW;
        float4 span[SPAN];
#pragma unroll
        for (int i = 0; i < SPAN; ++i) span[i] = line[i];
#pragma unroll
        for (int kx = 0; kx < KW; ++kx)
#pragma unroll
            for (int p = 0; p < PIXELS; ++p) o[p] = mad(span[p * SW + kx * DW], w[ky][kx], o[p]);
    }
    const int out_x = IMAD(cb, out_w, ox), out_y = IMAD(n, out_h, oy);
#pragma unroll
    for (int p = 0; p < PIXELS; ++p)
        if (p < out_w - ox) write_imagef(output, (int2)(out_x + p, out_y), ACTIVATE(o[p], slope));
}
#endif /* TILED */
