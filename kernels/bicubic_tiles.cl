/* 2x bicubic upscale, method "tiles" (qcom_ext.upscale2x_image launches it): the result of
 * kernels/bicubic.cl upscale2x_blocks, bit for bit, with each source texel read from the
 * image about once instead of 25 times.
 *
 * Source texel (X, Y) owns the 2x2 outputs (2X..2X+1, 2Y..2Y+1). An even output sits at
 * texel-space X + 0.25 (Catmull-Rom weights at a = 0.75 over texels X-2..X+1), an odd one
 * at X + 0.75 (a = 0.25 over X-1..X+2); the same along y. The guide's order: for each of
 * the four columns the vertical sum c = t0 * wv0 + t1 * wv1 + t2 * wv2 + t3 * wv3, then
 * sum_i wu_i * c_i. Texels outside the image are the border colour (CLK_ADDRESS_CLAMP).
 *
 * A work-group of QE_LX x QE_LY work-items first copies the source texels its outputs need
 * into local memory, (QE_LX * QE_BX + 4) x (QE_LY * QE_BY + 4), one image read each. Then
 * each work-item takes QE_BX adjacent source columns and walks down QE_BY source rows,
 * keeping five rows of its QE_BX + 4 columns in registers (one new row from local memory a
 * step), and forms each column's even and odd vertical sums once for the outputs that
 * share them. With QE_STAGE (the default) the outputs go to local memory and the group
 * then writes them one pixel a work-item a round, 16 x 2 adjacent pixels a sub-group of
 * 32 (qe_tiles_flush): on an H100 a work-item writing its 2x2 block directly ran at a
 * third of the speed of one write a work-item.
 *
 * Launch: global size (ceil(width / QE_BX), ceil(height / QE_BY)) padded to the local
 * size (QE_LX, QE_LY), the source's width and height as arguments (Oclgrind 21.10 reports
 * branches on image-size queries as depending on uninitialized values).
 */
#ifndef QE_BX
#define QE_BX 1
#endif
#ifndef QE_BY
#define QE_BY 4
#endif
#ifndef QE_LX
#define QE_LX 32
#endif
#ifndef QE_LY
#define QE_LY 8
#endif
#ifndef QE_FLUSH_W /* pixels across of the block 32 work-items write a round: 8, 16 or 32 */
#define QE_FLUSH_W 16
#endif
#ifndef QE_STAGE
#define QE_STAGE 1
#endif
#ifndef QE_DIRECT
#define QE_DIRECT 0
#endif
#define QE_CX (QE_BX + 4)                /* source columns one work-item reads */
#define QE_TW (QE_LX * QE_BX + 4)        /* the work-group's tile */
#define QE_TH (QE_LY * QE_BY + 4)
#define QE_OW (2 * QE_LX * QE_BX)        /* the work-group's outputs */
#define QE_OH (2 * QE_LY * QE_BY)
#define QE_GROUP (QE_LX * QE_LY)

#if QE_STAGE
/* Output (x, y) of the group's tile into local memory; written out by qe_tiles_flush. */
#define QE_PUT(x, y, value) staged[((y) - 2 * gy0) * QE_OW + (x) - 2 * gx0] = (value)
#else
#define QE_PUT(x, y, value) write_imagef(dst, (int2)(x, y), value)
#endif

#if QE_STAGE
/* The group's outputs from local memory to the image, one pixel a work-item a round. Where
 * the shapes allow, the 32 work-items of a sub-group write 16 x 2 adjacent pixels a round
 * (image writes are fastest in such compact blocks: on an H100, one 2x2 block a
 * work-item wrote a third as fast as one pixel a work-item); else rows in order. */
void qe_tiles_flush(__write_only image2d_t dst, __local const float4 *staged, int gx0, int gy0,
                    int width, int height)
{
    int tid = (int)get_local_id(1) * QE_LX + (int)get_local_id(0);
#pragma unroll
    for (int p = tid; p < QE_OW * QE_OH; p += QE_GROUP) {
#if QE_OW % QE_FLUSH_W == 0 && QE_OH % (32 / QE_FLUSH_W) == 0 && QE_GROUP % 32 == 0
        int w = p / 32, lane = p % 32;
        int x = (w % (QE_OW / QE_FLUSH_W)) * QE_FLUSH_W + lane % QE_FLUSH_W;
        int y = (w / (QE_OW / QE_FLUSH_W)) * (32 / QE_FLUSH_W) + lane / QE_FLUSH_W;
#else
        int x = p % QE_OW, y = p / QE_OW;
#endif
        if (2 * gx0 + x < 2 * width && 2 * gy0 + y < 2 * height)
            write_imagef(dst, (int2)(2 * gx0 + x, 2 * gy0 + y), staged[y * QE_OW + x]);
    }
}
#endif

__constant float4 QE_BICUBIC_EVEN = (float4)(-0.0234375f, 0.2265625f, 0.8671875f, -0.0703125f);
__constant float4 QE_BICUBIC_ODD = (float4)(-0.0703125f, 0.8671875f, 0.2265625f, -0.0234375f);

/* sum_i w_i * c[i], i = 0..3, from zero in the guide's order (upscale2x_blocks's
 * block_output). */
float4 qe_bicubic_row(const float4 *c, float4 w)
{
    float4 sum = (float4)(0.0f);
    sum += w.s0 * c[0];
    sum += w.s1 * c[1];
    sum += w.s2 * c[2];
    sum += w.s3 * c[3];
    return sum;
}

/* The vertical sum of one column over four rows, t0 * w0 + t1 * w1 + t2 * w2 + t3 * w3. */
float4 qe_bicubic_column(float4 t0, float4 t1, float4 t2, float4 t3, float4 w)
{
    float4 c = t0 * w.s0;
    c += t1 * w.s1;
    c += t2 * w.s2;
    c += t3 * w.s3;
    return c;
}

__kernel __attribute__((reqd_work_group_size(QE_LX, QE_LY, 1))) void
upscale2x_tiles(read_only image2d_t src, write_only image2d_t dst, int width, int height)
{
    const sampler_t texels = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
#if QE_DIRECT /* texels straight from the image (each read by up to 25 work-items) */
#define QE_TEXEL(r, c) read_imagef(src, texels, (int2)(x0 - 2 + (c), y0 - 2 + (r)))
#else
#define QE_TEXEL(r, c) origin[(r) * QE_TW + (c)]
    __local float4 tile[QE_TW * QE_TH]; /* texel (gx0 - 2 + c, gy0 - 2 + r) at r * QE_TW + c */
#endif
#if QE_STAGE
    __local float4 staged[QE_OW * QE_OH];
#endif
    int gx0 = (int)get_group_id(0) * QE_LX * QE_BX, gy0 = (int)get_group_id(1) * QE_LY * QE_BY;
    int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    int x0 = gx0 + lx * QE_BX, y0 = gy0 + ly * QE_BY;
#if !QE_DIRECT
    for (int i = ly * QE_LX + lx; i < QE_TW * QE_TH; i += QE_LX * QE_LY)
        tile[i] = read_imagef(src, texels, (int2)(gx0 - 2 + i % QE_TW, gy0 - 2 + i / QE_TW));
    barrier(CLK_LOCAL_MEM_FENCE);
    __local const float4 *origin = tile + ly * QE_BY * QE_TW + lx * QE_BX; /* (x0-2, y0-2) */
#endif
    float4 even = QE_BICUBIC_EVEN, odd = QE_BICUBIC_ODD;
    float4 win[5][QE_CX]; /* win[k][c]: texel (x0 - 2 + c, y - 2 + k) at source row y */
#pragma unroll
    for (int k = 1; k < 5; k++)
#pragma unroll
        for (int c = 0; c < QE_CX; c++)
            win[k][c] = QE_TEXEL(k - 1, c);
#pragma unroll
    for (int s = 0; s < QE_BY; s++) {
        int y = y0 + s; /* below the image: computed, never written */
        float4 ce[QE_CX], co[QE_CX]; /* vertical sums for output rows 2y and 2y + 1 */
#pragma unroll
        for (int c = 0; c < QE_CX; c++) {
#pragma unroll
            for (int k = 0; k < 4; k++)
                win[k][c] = win[k + 1][c];
            win[4][c] = QE_TEXEL(s + 4, c);
            ce[c] = qe_bicubic_column(win[0][c], win[1][c], win[2][c], win[3][c], even);
            co[c] = qe_bicubic_column(win[1][c], win[2][c], win[3][c], win[4][c], odd);
        }
#pragma unroll
        for (int b = 0; b < QE_BX; b++) {
            int x = x0 + b;
            if (QE_STAGE || (x < width && y < height)) {
                QE_PUT(2 * x, 2 * y, qe_bicubic_row(ce + b, even));
                QE_PUT(2 * x + 1, 2 * y, qe_bicubic_row(ce + b + 1, odd));
                QE_PUT(2 * x, 2 * y + 1, qe_bicubic_row(co + b, even));
                QE_PUT(2 * x + 1, 2 * y + 1, qe_bicubic_row(co + b + 1, odd));
            }
        }
    }
#if QE_STAGE
    barrier(CLK_LOCAL_MEM_FENCE);
    qe_tiles_flush(dst, staged, gx0, gy0, width, height);
#endif
}
