/* matmul_weights.h -- how the matmul kernels (matmul_gemv.cl, matmul_gemm.cl) read the
 * weight matrix W (N rows of K) and the activations x (M rows of K).
 *
 * Device layout (docs/ops.md, "Matmul"): K is cut into NB blocks of 32 weights (K padded
 * with zeros to a multiple of 32 for the float formats). Each block of each row is WPB
 * 16-byte words; word j of block b of row n is word (n * WPB + j) * NB + b of the quants
 * buffer, so the words j of consecutive blocks of a row are consecutive (work-items that
 * take consecutive blocks read consecutive words: coalesced).
 *
 *   WFMT 0  f32   WPB 8  word j: weights 4j .. 4j+3 (float4)
 *   WFMT 1  f16   WPB 4  word j: weights 8j .. 8j+7 (8 halves)
 *   WFMT 2  q8_0  WPB 2  word j: int8 q of weights 16j .. 16j+15; one scale per block
 *   WFMT 3  q4_0  WPB 1  ggml's 16 bytes: byte i low nibble = weight i, high = i + 16
 *
 * Scales (q8_0, q4_0): one half per block, scale n * NB + b of the scales buffer (padded
 * to a multiple of 4 halves). USE_IMAGE 1 reads both through image1d_buffer_t views of
 * the buffers (RGBA UNSIGNED_INT32 texels = one word; f32: RGBA FLOAT; f16: RGBA HALF,
 * two texels a word; scales: RGBA HALF, four scales a texel), USE_IMAGE 0 through
 * pointers. Half data goes through vload_half / read_imagef: no cl_khr_fp16 needed.
 *
 * Activations: X_HALF 1 for half storage, 0 for float (X_ALIGNED 1 where K is a multiple
 * of 4, so float quads load as float4); the kernels compute in float.
 */
#ifndef MATMUL_WEIGHTS_H
#define MATMUL_WEIGHTS_H

#if !defined(WFMT) || WFMT < 0 || WFMT > 3
#error "build with -DWFMT=0 (f32), 1 (f16), 2 (q8_0) or 3 (q4_0)"
#endif

#define WPB (WFMT == 0 ? 8 : WFMT == 1 ? 4 : WFMT == 2 ? 2 : 1)
#define QUANTIZED (WFMT >= 2)

/* ---- weights ---------------------------------------------------------------------------- */
#if USE_IMAGE
#define WEIGHT_PARAMS __read_only image1d_buffer_t wq, __read_only image1d_buffer_t ws
#define WEIGHT_ARGS wq, ws
/* one word as uint4 (q8_0, q4_0) */
#define WORD_U(i) read_imageui(wq, (int)(i))
/* one f32 word */
#define WORD_F4(i) read_imagef(wq, (int)(i))
/* one f16 word as two float4 / one float8 */
#define WORD_H_LO(i) read_imagef(wq, (int)(i) * 2)
#define WORD_H_HI(i) read_imagef(wq, (int)(i) * 2 + 1)
#define WORD_H8(i) ((float8)(WORD_H_LO(i), WORD_H_HI(i)))

float block_scale(__read_only image1d_buffer_t ws, int i)
{
    float4 four = read_imagef(ws, i >> 2);
    return (i & 2) ? ((i & 1) ? four.w : four.z) : ((i & 1) ? four.y : four.x);
}
#define SCALE(i) block_scale(ws, (int)(i))

#else
#define WEIGHT_PARAMS __global const uint4 *wq, __global const half *ws
#define WEIGHT_ARGS wq, ws
#define WORD_U(i) wq[i]
#define WORD_F4(i) as_float4(wq[i])
#define WORD_H_LO(i) vload_half4((i) * 2, (__global const half *)wq)
#define WORD_H_HI(i) vload_half4((i) * 2 + 1, (__global const half *)wq)
#define WORD_H8(i) vload_half8((i), (__global const half *)wq)
#define SCALE(i) vload_half((i), ws)
#endif

/* The four bytes of a uint as a float4 of their values minus `bias`, without int-to-float
 * conversions (a quarter-rate instruction on many GPUs): each byte becomes the low
 * mantissa bits of 2^23 (exact), and 2^23 + bias is subtracted (exact). */
#define MAGIC_BITS 0x4B000000u
float4 bytes_minus(uint u, float bias)
{
    return (float4)(as_float(MAGIC_BITS | (u & 0xFFu)), as_float(MAGIC_BITS | ((u >> 8) & 0xFFu)),
                    as_float(MAGIC_BITS | ((u >> 16) & 0xFFu)), as_float(MAGIC_BITS | (u >> 24)))
           - (8388608.0f + bias);
}
/* q8_0: the int8 lanes of a uint (sign bit flipped: value + 128 as unsigned) */
#define I8X4(u) bytes_minus((u) ^ 0x80808080u, 128.0f)
/* q4_0: the weights (nibble - 8) of the low / high nibbles of a uint's four bytes */
#define Q4LO(u) bytes_minus((u) & 0x0F0F0F0Fu, 8.0f)
#define Q4HI(u) bytes_minus(((u) >> 4) & 0x0F0F0F0Fu, 8.0f)

/* ---- activations ------------------------------------------------------------------------ */
#if X_HALF
#define XT half
#define XLOAD4(p) vload_half4(0, (p))
#define XLOAD1(p) vload_half(0, (p))
#elif X_ALIGNED /* K a multiple of 4: every quad the kernels read is 16-byte aligned */
#define XT float
#define XLOAD4(p) (*(__global const float4 *)(p))
#define XLOAD1(p) (*(p))
#else
#define XT float
#define XLOAD4(p) vload4(0, (p))
#define XLOAD1(p) (*(p))
#endif

/* Four activations x[k .. k+3] of a row starting at `row`; those at or past `k_end` read
 * as 0 (the zero-padded tail of the last block of a float matrix). */
float4 x_quad(__global const XT *row, int k, int k_end)
{
#if K_TAIL
    if (k + 4 > k_end) {
        float4 v = (float4)(0.0f);
        if (k < k_end) v.x = XLOAD1(row + k);
        if (k + 1 < k_end) v.y = XLOAD1(row + k + 1);
        if (k + 2 < k_end) v.z = XLOAD1(row + k + 2);
        return v;
    }
#endif
    return XLOAD4(row + k);
}

#endif /* MATMUL_WEIGHTS_H */
