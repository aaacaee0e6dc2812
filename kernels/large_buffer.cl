/* Kernels for samples/large_buffer.py and the cl_qcom_large_buffer selftest check.
 *
 * Element indices are ulong: a buffer beyond 4 GiB holds more than 2^32 bytes, where a
 * 32-bit index (or int offset arithmetic) would wrap. Build the program with
 * build_program(..., large_buffer=True): on the native path that adds
 * -qcom-enable-large-buffer, which Qualcomm's compiler needs for such buffers.
 * Integer arithmetic only: numpy gives the same bits. */

/* x[i] = pattern(base + i), the value of element base + i of the whole array: a chunk
 * that starts at element `base` holds what that part of one large buffer holds. */
__kernel void fill_pattern(__global uint *x, ulong base)
{
    ulong i = base + (ulong)get_global_id(0);
    x[get_global_id(0)] = (uint)(i ^ (i >> 32)) * 2654435761u;
}

/* x[i] = x[i] * scale + bias (mod 2^32). */
__kernel void affine(__global uint *x, uint scale, uint bias)
{
    ulong i = (ulong)get_global_id(0);
    x[i] = x[i] * scale + bias;
}
