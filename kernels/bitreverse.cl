/* Bit-reversal permutation of a uint array: out[i] = qcom_bitreverse(in[i]).
 * Runs unchanged on Adreno (native builtin) and elsewhere (kernels/qcom_ext.h). */
#include <qcom_ext.h>

__kernel void bitreverse_u32(__global const uint *in, __global uint *out)
{
    size_t i = get_global_id(0);
    out[i] = qcom_bitreverse(in[i]);
}
