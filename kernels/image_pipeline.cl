/* A four-stage grey-image pipeline for samples/recordable_queue.py.
 * uchar pixels, row-major, integer arithmetic only, so every device (and numpy)
 * produces the same bits. */

/* dst = clamp(round(src * gain_q8 / 256) + bias, 0, 255) */
__kernel void brightness_contrast(__global const uchar *src, __global uchar *dst,
                                  int gain_q8, int bias)
{
    size_t i = get_global_id(0);
    int v = ((int)src[i] * gain_q8 + 128) >> 8;
    dst[i] = (uchar)clamp(v + bias, 0, 255);
}

/* 3x3 box blur, edges clamped; 2-D range (width, height) */
__kernel void box_blur3(__global const uchar *src, __global uchar *dst, int width, int height)
{
    int x = (int)get_global_id(0), y = (int)get_global_id(1);
    int sum = 0;
    for (int dy = -1; dy <= 1; dy++) {
        int yy = clamp(y + dy, 0, height - 1);
        for (int dx = -1; dx <= 1; dx++)
            sum += src[yy * width + clamp(x + dx, 0, width - 1)];
    }
    dst[y * width + x] = (uchar)((sum + 4) / 9);
}

/* mask = src > level ? 255 : 0 */
__kernel void threshold(__global const uchar *src, __global uchar *mask, uchar level)
{
    size_t i = get_global_id(0);
    mask[i] = src[i] > level ? 255 : 0;
}

/* out = mask ? image : image / 4 (highlight what passed the threshold) */
__kernel void highlight(__global const uchar *image, __global const uchar *mask,
                        __global uchar *out)
{
    size_t i = get_global_id(0);
    out[i] = mask[i] ? image[i] : (uchar)(image[i] >> 2);
}
