/*
 * cl_khr_image2d_from_buffer
 * What: 2D images created over a buffer (zero-copy); Khronos alternative to
 *       cl_qcom_create_buffer_from_image.
 * Reference: portable-interop.md §2.5 (Khronos cl.h / cl_ext.h @ 15b536b7, version 1.0.0)
 * Sources: Khronos CL/cl_ext.h, OpenCL-Docs api/*.asciidoc
 * The core names CL_DEVICE_IMAGE_PITCH_ALIGNMENT / CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT
 * (same values) are declared in cl_core.h.
 */

/* cl_device_info -- §2.5; both results cl_uint, in pixels */
#define CL_DEVICE_IMAGE_PITCH_ALIGNMENT_KHR          0x104A
#define CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT_KHR   0x104B
