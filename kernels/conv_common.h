/* conv_common.h -- what the convolution kernels (layout.cl, conv_*.cl) share.
 *
 * Storage: -DSTORAGE_HALF stores tensors, weights and images as 16-bit floats and computes
 * in float. Buffers are read and written with vload_half / vstore_half*_rte and images
 * with read_imagef / write_imagef on CL_HALF_FLOAT images; both are core OpenCL C 1.2, so
 * half storage needs no cl_khr_fp16. Without it, everything is float.
 *
 * Activation (-DACTIVATION=n): 0 none, 1 ReLU, 2 ReLU6, 3 LeakyReLU(slope).
 * -DUSE_MAD24: index arithmetic through mad24/mul24 (fast on Adreno, where the host sets
 * it; emulated and slower on NVIDIA, so plain integer arithmetic elsewhere).
 *
 * Image layout of an N x C x H x W tensor (guide section 8.1): a 2D RGBA image of width
 * W * ceil(C/4) and height H * N; texel (cb * W + w, n * H + h) holds channels
 * 4cb..4cb+3 of pixel (h, w) of batch n, channels past C are zero.
 */
#ifndef QCOM_EXT_CONV_COMMON_H
#define QCOM_EXT_CONV_COMMON_H

/* LOAD4/STORE4 take any element offset; LOAD4A/STORE4A need an offset that is a multiple
 * of 4 elements (then whole-vector accesses: one 16-byte load instead of four on
 * compilers that cannot prove the alignment of vload4). */
#ifdef STORAGE_HALF
typedef half store_t;
#define LOAD1(p, i) vload_half((i), (p))
#define LOAD4(p, i) vload_half4(0, (p) + (i))
#define LOAD4A(p, i) vloada_half4(0, (p) + (i))
#define STORE1(v, p, i) vstore_half_rte((v), (i), (p))
#define STORE4(v, p, i) vstore_half4_rte((v), 0, (p) + (i))
#define STORE4A(v, p, i) vstorea_half4_rte((v), 0, (p) + (i))
#else
typedef float store_t;
#define LOAD1(p, i) ((p)[(i)])
#define LOAD4(p, i) vload4(0, (p) + (i))
#define LOAD4A(p, i) (*(__global const float4 *)((p) + (i)))
#define STORE1(v, p, i) ((p)[(i)] = (v))
#define STORE4(v, p, i) vstore4((v), 0, (p) + (i))
#define STORE4A(v, p, i) (*(__global float4 *)((p) + (i)) = (v))
#endif

#ifdef USE_MAD24
#define IMAD(a, b, c) mad24((a), (b), (c))
#define IMUL(a, b) mul24((a), (b))
#else
#define IMAD(a, b, c) ((a) * (b) + (c))
#define IMUL(a, b) ((a) * (b))
#endif

/* The element offset of the input pixel that output pixel p (flattened N * Ho * Wo
 * order) of a strided 1x1 conv reads, in an N x H x W x C (NHWC) tensor. */
int pointwise_input_at(int p, int in_h, int in_w, int in_c, int out_h, int out_w,
                       int stride_h, int stride_w)
{
    const int q = p / out_w, ow = p - IMUL(q, out_w);
    const int n = q / out_h, oh = q - IMUL(n, out_h);
    return IMUL(IMAD(IMAD(n, in_h, IMUL(oh, stride_h)), in_w, IMUL(ow, stride_w)), in_c);
}

#ifndef ACTIVATION
#define ACTIVATION 0
#endif
#if ACTIVATION == 0
#define ACTIVATE(v, slope) (v)
#elif ACTIVATION == 1
#define ACTIVATE(v, slope) fmax((v), 0.0f)
#elif ACTIVATION == 2
#define ACTIVATE(v, slope) clamp((v), 0.0f, 6.0f)
#elif ACTIVATION == 3
#define ACTIVATE(v, slope) (fmax((v), 0.0f) + (slope) * fmin((v), 0.0f))
#else
#error "ACTIVATION must be 0 (none), 1 (ReLU), 2 (ReLU6) or 3 (LeakyReLU)"
#endif

#ifdef __IMAGE_SUPPORT__
/* Unnormalized integer coordinates; reads outside the image return the border colour
 * (0, 0, 0, 0). Kernels map out-of-tensor coordinates to -1 to read that zero. (Only
 * where the device has images, so that the buffer kernels build everywhere.) */
__constant sampler_t CONV_SAMPLER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP
                                    | CLK_FILTER_NEAREST;
#endif

#endif /* QCOM_EXT_CONV_COMMON_H */
