/* int8 1x1 conv2d on NHWC buffers with the cl_qcom_dot_product8 builtins (qcom_ext.h:
 * native on Adreno, cl_khr_integer_dot_product or portable code elsewhere), per-tensor
 * requantisation.
 *
 * input   N x H x W x Ci uchar: asymmetric uint8, real = s_x * (q - z_x)
 * weights [ceil(Ci/4)][COB][4 (output channel)] uint: the word for (step k, block cob,
 *         lane j) holds the bytes of input channels 4k..4k+3 of output channel 4cob+j in
 *         memory order, the order in which the input bytes are read, so the lanes pair up;
 *         zero beyond Ci and Co. WEIGHTS_SIGNED=1: int8, real = s_w * q, multiplied with
 *         qcom_dot8_acc (signed weights x unsigned inputs). WEIGHTS_SIGNED=0: uint8 with
 *         zero point z_w, qcom_udot8_acc, and the kernel also sums each pixel's input
 *         bytes (qcom_udot8_acc against 0x01010101) for the z_w correction.
 * offset  [COB * 4] int: -z_x * sum(w[co]) + Ci * z_x * z_w, from the host
 * bias    [COB * 4] float, in real units
 * output  N x Ho x Wo x Co: real = s_x * s_w * (acc - z_w * sum_x + offset) + bias, the
 *         activation, then OUT_KIND 0: float real; 1: int8 and 2: uint8, both
 *         saturate(round_to_nearest_even(real / s_y) + z_y).
 *
 * A work-item computes PIX output pixels (flattened N * Ho * Wo order) x 4 output
 * channels, four input channels per builtin call. Global size (COB, ceil(N*Ho*Wo / PIX)).
 * Accumulation saturates at the int32 limits, as the builtins do (only reachable with
 * Ci above 33,000). Compile-time: PIX, WEIGHTS_SIGNED, OUT_KIND, ACTIVATION, USE_MAD24,
 * IN_ALIGNED (Ci % 4 == 0: one aligned 32-bit load per four input channels).
 */
#include "conv_common.h"

#ifndef PIX
#define PIX 2
#endif
#if WEIGHTS_SIGNED
#define DOT8 qcom_dot8_acc
#else
#define DOT8 qcom_udot8_acc
#endif
#if OUT_KIND == 0
typedef float out_t;
#elif OUT_KIND == 1
typedef char out_t;
#elif OUT_KIND == 2
typedef uchar out_t;
#else
#error "OUT_KIND must be 0 (float), 1 (int8) or 2 (uint8)"
#endif

float4 requantise(int4 acc, int4 offset, int sum_x, int weight_zero_point, float4 bias,
                  float acc_scale, float slope)
{
    const int4 centred = acc - weight_zero_point * sum_x + offset;
    const float4 real = convert_float4(centred) * acc_scale + bias;
    return ACTIVATE(real, slope);
}

__kernel void conv2d_1x1_int8(__global const uchar *restrict input,
                              __global const uint *restrict weights,
                              __global const int *restrict offset,
                              __global const float *restrict bias, __global out_t *output,
                              int in_h, int in_w, int in_c, int out_c, int out_h, int out_w,
                              int stride_h, int stride_w, int pixels, int co_blocks,
                              float acc_scale, int weight_zero_point, float inv_out_scale,
                              int out_zero_point, float slope)
{
    const int cob = get_global_id(0), t = get_global_id(1);
    const int first = IMUL(t, PIX);
    if (cob >= co_blocks || first >= pixels) return;

    int in_at[PIX];
    int4 acc[PIX];
    int sum_x[PIX];
#pragma unroll
    for (int i = 0; i < PIX; ++i) {
        in_at[i] = pointwise_input_at(min(first + i, pixels - 1), in_h, in_w, in_c, out_h,
                                      out_w, stride_h, stride_w);
        acc[i] = (int4)(0);
        sum_x[i] = 0;
    }

    const int steps = (in_c + 3) >> 2, full = in_c >> 2;
    for (int k = 0; k < steps; ++k) {
        const uint4 w = ((__global const uint4 *)weights)[IMAD(k, co_blocks, cob)];
        const int c0 = k * 4;
#pragma unroll
        for (int i = 0; i < PIX; ++i) {
            uint x;
            if (k < full) {
#if IN_ALIGNED
                x = *(__global const uint *)(input + in_at[i] + c0);
#else
                x = as_uint(vload4(0, input + in_at[i] + c0));
#endif
            } else { /* the last Ci % 4 channels; the missing lanes are zero */
                uchar4 part = (uchar4)(input[in_at[i] + c0], 0, 0, 0);
                if (c0 + 1 < in_c) part.s1 = input[in_at[i] + c0 + 1];
                if (c0 + 2 < in_c) part.s2 = input[in_at[i] + c0 + 2];
                x = as_uint(part);
            }
            acc[i].s0 = DOT8(w.s0, x, acc[i].s0);
            acc[i].s1 = DOT8(w.s1, x, acc[i].s1);
            acc[i].s2 = DOT8(w.s2, x, acc[i].s2);
            acc[i].s3 = DOT8(w.s3, x, acc[i].s3);
#if !WEIGHTS_SIGNED
            sum_x[i] = qcom_udot8_acc(x, 0x01010101u, sum_x[i]);
#endif
        }
    }

    const int c = cob * 4;
    const int4 offsets = ((__global const int4 *)offset)[cob];
    const float4 b = ((__global const float4 *)bias)[cob];
#pragma unroll
    for (int i = 0; i < PIX; ++i) {
        const int p = first + i;
        if (p < pixels) {
            const float4 real = requantise(acc[i], offsets, sum_x[i], weight_zero_point, b,
                                           acc_scale, slope);
#if OUT_KIND == 0
            const float4 r = real;
#else
            const float4 q = real * inv_out_scale + (float)out_zero_point;
#if OUT_KIND == 1
            const char4 r = convert_char4_sat_rte(q);
#else
            const uchar4 r = convert_uchar4_sat_rte(q);
#endif
#endif
            __global out_t *out = output + IMUL(p, out_c) + c;
            if (c + 4 <= out_c) {
                vstore4(r, 0, out);
            } else {
                out[0] = r.s0;
                if (c + 1 < out_c) out[1] = r.s1;
                if (c + 2 < out_c) out[2] = r.s2;
            }
        }
    }
}
