/* Inclusive prefix sum of ints with sub-group shuffles, for samples/subgroup_prefix_sum.py.
 *
 * scan_blocks: each work-group scans LOCAL_SIZE consecutive values. Each sub-group scans
 * its lanes with qcom_sub_group_shuffle_up (cl_qcom_subgroup_shuffle: native on Adreno,
 * cl_khr_subgroup_shuffle where present, emulated sub-groups elsewhere), the sub-group
 * totals go through local memory, and the work-group's total goes to block_sums.
 * add_block_offsets: adds the scanned totals of the preceding blocks; the host scans
 * block_sums with the same two kernels. Build with -DLOCAL_SIZE=<work-group size>. */
#include <qcom_ext.h>

#ifndef LOCAL_SIZE
#error "build with -DLOCAL_SIZE=<the work-group size>"
#endif

/* Hillis-Steele scan within the sub-group: log2(max sub-group size) shuffles. The trip
 * count is the same for every work-item of the work-group, as the shuffles require. */
int sub_group_inclusive_scan(int x, QCOM_SUB_GROUP_SHUFFLE_SCRATCH_PARAM)
{
    for (uint d = 1; d < get_max_sub_group_size(); d <<= 1)
        x += qcom_sub_group_shuffle_up(x, d, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0);
    return x;
}

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1)))
void scan_blocks(__global const int *in, __global int *out, __global int *block_sums, uint n)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    __local int totals[LOCAL_SIZE]; /* one per sub-group; sub-groups have >= 1 lane */
    uint i = get_global_id(0);
    int x = i < n ? in[i] : 0; /* no early return: every work-item takes part */
    x = sub_group_inclusive_scan(x, QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG);
    uint sub_group = get_sub_group_id();
    if (get_sub_group_local_id() == get_sub_group_size() - 1)
        totals[sub_group] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 0; k < sub_group; ++k)
        x += totals[k];
    if (i < n)
        out[i] = x;
    if (get_local_id(0) == LOCAL_SIZE - 1)
        block_sums[get_group_id(0)] = x;
}

__kernel void add_block_offsets(__global int *out, __global const int *scanned_sums, uint n)
{
    uint i = get_global_id(0), block = i / LOCAL_SIZE;
    if (block > 0 && i < n)
        out[i] += scanned_sums[block - 1];
}

/* The sub-group size the scan runs with (for the sample's report). */
__kernel void sub_group_size(__global uint *size) { size[0] = get_max_sub_group_size(); }
