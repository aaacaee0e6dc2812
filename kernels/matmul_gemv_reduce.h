/* matmul_gemv_reduce.h -- the end of the GEMV kernels (matmul_gemv.cl, matmul_gemv_q8.cl):
 * a work-item's MR x RPW partial sums added across its row group (the get_local_size(0)
 * work-items that split K for the same RPW rows of W) and written to y with the bias.
 *
 * First within each sub-group by qcom_sub_group_shuffle_xor (kernels/qcom_ext.h; on the
 * emulated path a sub-group is one work-item), then across sub-groups in local memory
 * (one slot per sub-group and sum, slots of a sum adjacent: no bank conflicts), in
 * passes of RED_ITEMS work-items (whole row groups: the host keeps L0 <= RED_ITEMS, both
 * powers of two), as many as the work-group needs (one unless the driver chose the local
 * size). Needs MR, RPW, RED_ITEMS; every work-item of the work-group must call it.
 */
#ifndef MATMUL_GEMV_REDUCE_H
#define MATMUL_GEMV_REDUCE_H

#define V (MR * RPW) /* the partial sums of a work-item */

/* v summed over the `seg` lanes of this work-item's aligned segment of its sub-group
 * (seg: see segment_shift): every lane gets the segment's sum. */
float segment_sum(float v, uint seg, QCOM_SUB_GROUP_SHUFFLE_SCRATCH_PARAM)
{
    for (uint d = seg >> 1; d > 0; d >>= 1)
        v += qcom_sub_group_shuffle_xor(v, d, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0.0f);
    return v;
}

/* log2 of the segment of lanes the shuffles reduce: the largest power of two that divides
 * both the sub-group size and L0 (1 on the emulated path), so that segments are aligned
 * within sub-groups and never span two row groups. (Bit tests in a loop: LLVM turns
 * the usual tricks into ctpop, which Oclgrind 21.10 cannot run, and divisions by a
 * runtime value into a `freeze` its uninitialized-value check stops at.) */
uint segment_shift(uint l0)
{
    const uint lanes = get_max_sub_group_size();
    uint shift = 0;
    while (((lanes | l0) & (2u << shift) - 1u) == 0 && (2u << shift) <= lanes)
        ++shift;
    return shift;
}

/* y[row0 + m][first + r] = acc[m][r] summed over the row group + bias[first + r], for the
 * rows of W below n_rows (`red`: V * RED_ITEMS floats of local memory). */
void gemv_reduce_store(float acc[MR][RPW], __local float *red, int first, int n_rows,
                       __global const float *bias, __global float *y, int ldy, int row0,
                       QCOM_SUB_GROUP_SHUFFLE_SCRATCH_PARAM)
{
    const uint lid = get_local_id(0), l0 = get_local_size(0);
    const uint lin = get_local_id(1) * l0 + lid, items = l0 * get_local_size(1);
    const uint shift = segment_shift(l0), seg = 1u << shift;
#pragma unroll
    for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int r = 0; r < RPW; ++r)
            acc[m][r] = segment_sum(acc[m][r], seg, QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG);
    const uint count = l0 >> shift;
    for (uint pass = 0; pass < items; pass += RED_ITEMS) {
        const bool mine = lin >= pass && lin < pass + RED_ITEMS;
        const uint base = (get_local_id(1) * l0 - pass) >> shift;
        if (mine && (lid & (seg - 1)) == 0)
#pragma unroll
            for (int m = 0; m < MR; ++m)
#pragma unroll
                for (int r = 0; r < RPW; ++r)
                    red[(m * RPW + r) * RED_ITEMS + base + (lid >> shift)] = acc[m][r];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint left = count; left > 1;) {
            const uint half_count = (left + 1) >> 1;
            if (mine && lid < left - half_count)
                for (int v = 0; v < V; ++v)
                    red[v * RED_ITEMS + base + lid] += red[v * RED_ITEMS + base + lid + half_count];
            barrier(CLK_LOCAL_MEM_FENCE);
            left = half_count;
        }
        for (uint v = lid; mine && v < V; v += l0) {
            const int n = first + (int)(v % RPW);
            if (n < n_rows)
                y[(row0 + (int)(v / RPW)) * ldy + n] = red[v * RED_ITEMS + base] + bias[n];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

#endif /* MATMUL_GEMV_REDUCE_H */
