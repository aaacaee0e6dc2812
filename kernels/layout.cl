/* Tensor <-> RGBA image layout (guide sections 7 and 8.1; conv_common.h describes it).
 *
 * Upload path host -> buffer -> image: the host copies the tensor as is into a buffer and
 * tensor_to_image packs four channels per texel, zero-filling the channels past C, so no
 * padding is done on the host. image_to_tensor is the way back. -DTENSOR_NHWC selects an
 * N x H x W x C buffer, NCHW otherwise. Global size (W * ceil(C/4), H * N), one texel per
 * work-item; work-items past the image (a global size rounded up to a local size) return.
 */
#include "conv_common.h"

#ifdef TENSOR_NHWC
#define CHANNEL_STRIDE(H, W) 1
#define OFFSET(n, c, h, w, C, H, W) (((IMAD((n), (H), (h)) * (W) + (w)) * (C)) + (c))
#else
#define CHANNEL_STRIDE(H, W) ((H) * (W))
#define OFFSET(n, c, h, w, C, H, W) ((IMAD((n), (C), (c)) * (H) + (h)) * (W) + (w))
#endif

__kernel void tensor_to_image(__global const store_t *restrict tensor,
                              __write_only image2d_t image, int batch, int channels, int height,
                              int width)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int blocks = (channels + 3) / 4;
    if (x >= width * blocks || y >= height * batch) return;
    const int cb = x / width, w = x - IMUL(cb, width);
    const int n = y / height, h = y - IMUL(n, height);
    const int c = cb * 4, valid = min(4, channels - c);
    const int stride = CHANNEL_STRIDE(height, width);
    const int at = OFFSET(n, c, h, w, channels, height, width);
    float4 v = (float4)(0.0f);
    v.s0 = LOAD1(tensor, at);
    if (valid > 1) v.s1 = LOAD1(tensor, at + stride);
    if (valid > 2) v.s2 = LOAD1(tensor, at + 2 * stride);
    if (valid > 3) v.s3 = LOAD1(tensor, at + 3 * stride);
    write_imagef(image, (int2)(x, y), v);
}

__kernel void image_to_tensor(__read_only image2d_t image, __global store_t *tensor,
                              int batch, int channels, int height, int width)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int blocks = (channels + 3) / 4;
    if (x >= width * blocks || y >= height * batch) return;
    const int cb = x / width, w = x - IMUL(cb, width);
    const int n = y / height, h = y - IMUL(n, height);
    const int c = cb * 4, valid = min(4, channels - c);
    const int stride = CHANNEL_STRIDE(height, width);
    const int at = OFFSET(n, c, h, w, channels, height, width);
    const float4 v = read_imagef(image, CONV_SAMPLER, (int2)(x, y));
    STORE1(v.s0, tensor, at);
    if (valid > 1) STORE1(v.s1, tensor, at + stride);
    if (valid > 2) STORE1(v.s2, tensor, at + 2 * stride);
    if (valid > 3) STORE1(v.s3, tensor, at + 3 * stride);
}
