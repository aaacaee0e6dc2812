/* Kernels for samples/buffer_from_image.py: one pixel store seen as an image and as a
 * buffer. RGBA / CL_UNSIGNED_INT8 pixels; the buffer view honours the row pitch. */

/* Through the image: a pattern of x, y and their xor; alpha 255. */
__kernel void paint(write_only image2d_t image)
{
    int x = (int)get_global_id(0), y = (int)get_global_id(1);
    write_imageui(image, (int2)(x, y), (uint4)(x & 255, y & 255, (x ^ y) & 255, 255));
}

/* Through the buffer: invert the colour channels, alpha = 2 * y (row-pitch addressing). */
__kernel void invert_rows(__global uchar *pixels, uint row_pitch)
{
    size_t x = get_global_id(0), y = get_global_id(1);
    __global uchar *p = pixels + y * row_pitch + x * 4;
    p[0] = (uchar)(255 - p[0]);
    p[1] = (uchar)(255 - p[1]);
    p[2] = (uchar)(255 - p[2]);
    p[3] = (uchar)(2 * y);
}

/* Back through the image: gather every pixel into a packed buffer. */
__kernel void gather(read_only image2d_t image, __global uchar4 *out, uint width)
{
    int x = (int)get_global_id(0), y = (int)get_global_id(1);
    uint4 v = read_imageui(image, (int2)(x, y));
    out[y * width + x] = convert_uchar4(v);
}
