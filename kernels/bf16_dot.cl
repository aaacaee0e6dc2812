/* Dot product of two bfloat16 vectors with qcom_mad32_bf16 (cl_qcom_bfloat16_product):
 * natively the Adreno builtin, elsewhere the portable fma of kernels/qcom_ext.h.
 * Each work-item accumulates a strided slice in float32; each work-group then sums its
 * work-items' results in local memory (a power-of-two local size) into partial[group]. */
#include <qcom_ext.h>

__kernel void bf16_dot(__global const ushort *a, __global const ushort *b, uint n,
                       __global float *partial, __local float *scratch)
{
    float acc = 0.0f;
    for (uint i = (uint)get_global_id(0); i < n; i += (uint)get_global_size(0))
        acc = qcom_mad32_bf16(a[i], b[i], acc);
    uint lid = (uint)get_local_id(0);
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = (uint)get_local_size(0) / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            scratch[lid] += scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
