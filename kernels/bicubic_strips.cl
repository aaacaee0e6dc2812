/* 2x bicubic upscale, method "strips" (qcom_ext.upscale2x_image launches it): the same
 * result as kernels/bicubic.cl upscale2x_blocks, bit for bit, with each source texel read
 * about once instead of 25 times.
 *
 * Source texel (X, Y) owns the 2x2 outputs (2X..2X+1, 2Y..2Y+1). An even output sits at
 * texel-space X + 0.25 (Catmull-Rom weights at a = 0.75 over texels X-2..X+1), an odd one
 * at X + 0.75 (a = 0.25 over X-1..X+2); the same along y. The guide's order: for each of
 * the four columns the vertical sum c = t0 * wv0 + t1 * wv1 + t2 * wv2 + t3 * wv3, then
 * sum_i wu_i * c_i. Texels outside the image are the border colour (CLK_ADDRESS_CLAMP).
 *
 * A work-item takes QE_BX adjacent source columns and walks down QE_BY source rows. It
 * keeps the five source rows Y-2..Y+2 of its QE_BX + 4 columns in registers and reads one
 * new row a step: (QE_BX + 4) / (4 * QE_BX) reads an output instead of 25 / 4. Per row it
 * forms the even and odd vertical sums of each column once and shares them between the
 * outputs that use them.
 *
 * Launch: global size (ceil(width / QE_BX), ceil(height / QE_BY)) (padded to the local
 * size), width and height of the source as arguments (Oclgrind 21.10 reports branches on
 * image-size queries as depending on uninitialized values).
 */
#ifndef QE_BX
#define QE_BX 2
#endif
#ifndef QE_BY
#define QE_BY 8
#endif
#define QE_CX (QE_BX + 4) /* source columns one work-item reads */

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

__kernel void upscale2x_strips(read_only image2d_t src, write_only image2d_t dst, int width,
                               int height)
{
    const sampler_t texels = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
    int x0 = (int)get_global_id(0) * QE_BX, y0 = (int)get_global_id(1) * QE_BY;
    if (x0 >= width || y0 >= height)
        return;
    float4 even = QE_BICUBIC_EVEN, odd = QE_BICUBIC_ODD;
    float4 win[5][QE_CX]; /* win[k][c]: texel (x0 - 2 + c, y - 2 + k) at source row y */
#pragma unroll
    for (int k = 1; k < 5; k++)
#pragma unroll
        for (int c = 0; c < QE_CX; c++)
            win[k][c] = read_imagef(src, texels, (int2)(x0 - 2 + c, y0 - 3 + k));
#pragma unroll
    for (int s = 0; s < QE_BY; s++) {
        int y = y0 + s;
        if (y >= height)
            break;
#pragma unroll
        for (int c = 0; c < QE_CX; c++) {
#pragma unroll
            for (int k = 0; k < 4; k++)
                win[k][c] = win[k + 1][c];
            win[4][c] = read_imagef(src, texels, (int2)(x0 - 2 + c, y + 2));
        }
        float4 ce[QE_CX], co[QE_CX]; /* vertical sums for output rows 2y and 2y + 1 */
#pragma unroll
        for (int c = 0; c < QE_CX; c++) {
            ce[c] = qe_bicubic_column(win[0][c], win[1][c], win[2][c], win[3][c], even);
            co[c] = qe_bicubic_column(win[1][c], win[2][c], win[3][c], win[4][c], odd);
        }
#pragma unroll
        for (int b = 0; b < QE_BX; b++) {
            int x = x0 + b;
            if (x < width) {
                write_imagef(dst, (int2)(2 * x, 2 * y), qe_bicubic_row(ce + b, even));
                write_imagef(dst, (int2)(2 * x + 1, 2 * y), qe_bicubic_row(ce + b + 1, odd));
                write_imagef(dst, (int2)(2 * x, 2 * y + 1), qe_bicubic_row(co + b, even));
                write_imagef(dst, (int2)(2 * x + 1, 2 * y + 1), qe_bicubic_row(co + b + 1, odd));
            }
        }
    }
}
