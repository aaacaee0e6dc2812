/* bench_read.cl -- memory probes for `qcom-ext bench`: how fast a kernel that only reads
 * can read a given number of bytes on this device (the floor a bandwidth-bound kernel of
 * that size is measured against), and what an empty launch costs.
 *
 * read_words: each of the n 16-byte words of `words` read exactly once, four words a
 * work-item a round (a global size apart: every read coalesced), folded with xor; the
 * result goes to `sink` only if it matches a constant, so the reads cannot be dropped.
 * empty: nothing (its device time is the launch's own).
 * copy_texels: dst = src through read_imagef / write_imagef, two texels a work-item, half
 * the global width apart (each read and write coalesced across the work-group): the
 * image path's own ceiling for a kernel that reads and writes each pixel once. On the
 * H200 (4K RGBA float) this layout ran at 0.60 of the buffer copy, one texel a
 * work-item at 0.53 (docs/BENCHMARKS.md).
 */
__kernel void read_words(__global const uint4 *words, uint n, __global uint *sink)
{
    uint acc = 0u;
    const uint stride = (uint)get_global_size(0);
    for (uint i = (uint)get_global_id(0); i < n; i += 4u * stride) {
        uint4 v = words[i];
        if (i + stride < n)
            v ^= words[i + stride];
        if (i + 2u * stride < n)
            v ^= words[i + 2u * stride];
        if (i + 3u * stride < n)
            v ^= words[i + 3u * stride];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u)
        sink[0] = 1u;
}

__kernel void empty(__global uint *sink)
{
    if (get_global_id(0) == 0xFFFFFFFFu)
        sink[0] = 1u;
}

__kernel void copy_texels(__read_only image2d_t src, __write_only image2d_t dst)
{
    const int x = (int)get_global_id(0), y = (int)get_global_id(1);
    const int half_width = (int)get_global_size(0);
    if (y >= get_image_height(dst))
        return;
    for (int i = 0; i < 2; ++i) {
        const int2 p = (int2)(x + i * half_width, y);
        if (p.x < get_image_width(dst))
            write_imagef(dst, p, read_imagef(src, p));
    }
}
