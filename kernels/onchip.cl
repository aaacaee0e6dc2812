/* Kernels for samples/onchip_memory.py: two stages that pass data through an on-chip
 * buffer inside one replay of a recording. Integer arithmetic: numpy gives the same bits.
 *
 * Lifetime rule (cl_qcom_onchip_global_memory): the first kernel of a replay must write
 * every on-chip element it or a later kernel reads; nothing survives between replays. */

/* Stage 1 writes all of `staged` (on-chip): staged = src * scale + bias. */
__kernel void scale_bias(__global const int *src, __global int *staged, int scale, int bias)
{
    size_t i = get_global_id(0);
    staged[i] = src[i] * scale + bias;
}

/* Stage 2 reads `staged` (on-chip) written by stage 1 in the same replay:
 * dst = staged[i-1] + 2 * staged[i] + staged[i+1], edges clamped. */
__kernel void smooth3(__global const int *staged, __global int *dst, int n)
{
    int i = (int)get_global_id(0);
    int left = staged[max(i - 1, 0)], right = staged[min(i + 1, n - 1)];
    dst[i] = left + 2 * staged[i] + right;
}
