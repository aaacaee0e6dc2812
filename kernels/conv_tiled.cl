/* Local-memory tiled conv2d on NCHW buffers (guide section 8.4, after the OpenCL
 * textbook's chapter 9.5), generalised to any output size, stride and dilation.
 *
 * input   N x Ci x IH x IW   store_t
 * weights [COP][Ci][KH][KW]  store_t, COP = Co rounded up to COT (zero rows)
 * bias    [COP] float
 * output  N x Co x OH x OW   store_t
 *
 * A BS x BS work-group computes a BS x BS tile of output pixels; each work-item computes
 * COT output channels of its pixel (the variant where a work-item computes several
 * outputs: the cached input is reused COT times). Global size (ceil(OW/BS) * BS,
 * ceil(OH/BS) * BS, N * ceil(Co/COT)), local size (BS, BS, 1) (required).
 *
 * Per input channel the group caches the RH x RW input region its outputs read,
 * RW = (BS - 1) * SW + (KW - 1) * DW + 1 (RH likewise; (BS + K - 1)^2 for stride 1): the
 * work-items load it together, element lid, lid + BS*BS, ... (which for stride 1 and
 * BS >= K - 1 is the textbook pattern: own position, then the halo right, below and
 * diagonal). Elements outside the input are the zero padding and are not read. Then one
 * barrier(CLK_LOCAL_MEM_FENCE), then every work-item computes from local memory. The
 * region is double-buffered by input channel parity, so that one barrier per channel is
 * enough: channel c + 1 is written into the other buffer, which every work-item finished
 * reading (channel c - 1) before it passed channel c's barrier. Work-items past the
 * output edge load and wait like the others but write nothing, so any output size works
 * without reading or writing out of bounds.
 * Compile-time: BS, COT, KH KW SH SW DH DW, ACTIVATION, STORAGE_HALF.
 */
#include "conv_common.h"

#ifndef KH
#error "define KH, KW, SH, SW, DH, DW"
#endif
#ifndef BS
#define BS 8
#endif
#ifndef COT
#define COT 4
#endif
#define RW ((BS - 1) * SW + (KW - 1) * DW + 1)
#define RH ((BS - 1) * SH + (KH - 1) * DH + 1)

__kernel __attribute__((reqd_work_group_size(BS, BS, 1)))
void conv2d_tiled(__global const store_t *restrict input,
                  __global const store_t *restrict weights, __global const float *restrict bias,
                  __global store_t *output, int in_c, int in_h, int in_w, int out_c, int out_h,
                  int out_w, int pad_h, int pad_w, int co_groups, float slope)
{
    __local float region[2][RH * RW];
    const int lx = get_local_id(0), ly = get_local_id(1), lid = ly * BS + lx;
    const int ox = get_global_id(0), oy = get_global_id(1);
    const int z = get_global_id(2);
    const int n = z / co_groups, co0 = (z - n * co_groups) * COT;
    const int x0 = get_group_id(0) * (BS * SW) - pad_w;
    const int y0 = get_group_id(1) * (BS * SH) - pad_h;

    float acc[COT];
#pragma unroll
    for (int t = 0; t < COT; ++t) acc[t] = bias[co0 + t];

    const int plane = in_h * in_w;
    const int taps = KH * KW;
    for (int c = 0; c < in_c; ++c) {
        __local float *tile = region[c & 1];
        const int base = (n * in_c + c) * plane;
        for (int i = lid; i < RH * RW; i += BS * BS) {
            const int ry = i / RW, rx = i - ry * RW;
            const int iy = y0 + ry, ix = x0 + rx;
            tile[i] = (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w)
                          ? LOAD1(input, base + iy * in_w + ix) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int w_at = (co0 * in_c + c) * taps;
        for (int ky = 0; ky < KH; ++ky) {
            for (int kx = 0; kx < KW; ++kx) {
                const float v = tile[(ly * SH + ky * DH) * RW + lx * SW + kx * DW];
#pragma unroll
                for (int t = 0; t < COT; ++t) {
                    acc[t] = mad(v, LOAD1(weights, w_at + t * in_c * taps + ky * KW + kx),
                                 acc[t]);
                }
            }
        }
    }

    if (ox >= out_w || oy >= out_h) return;
#pragma unroll
    for (int t = 0; t < COT; ++t) {
        if (co0 + t < out_c) {
            STORE1(ACTIVATE(acc[t], slope), output,
                   ((n * out_c + co0 + t) * out_h + oy) * out_w + ox);
        }
    }
}
