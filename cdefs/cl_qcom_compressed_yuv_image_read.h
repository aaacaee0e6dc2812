/*
 * cl_qcom_compressed_yuv_image_read
 * What: reading compressed planar YUV (NV12) images; mem flag, channel order and
 *       ION allocation types for compressed YUV.
 * Reference: qcom-extensions.md §12 (protected allocation type also listed in §4)
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] 2017 header, 2014 header (public copy)
 */

/* ---- cl_mem_flags bit -- §12 ---- */
#define CL_MEM_COMPRESSED_YUV_IMAGE_QCOM         0x8000000000   /* (1ULL << 39), S1 2022; S3 2017 / 2014 had (1<<28)
                                                                   = 0x10000000, now IMG's bit in cl.xml */

/* ---- cl_channel_order -- §12 ---- */
#define CL_QCOM_COMPRESSED_NV12                  0x4139         /* S1 2022 (inside the QCOM 0x4130 range);
                                                                   S3 2017 header had 0x10C4 */

/* ---- allocation_type (cl_mem_ext_host_ptr; struct cl_mem_ion_host_ptr) -- §12 / §4 ---- */
#define CL_MEM_ION_HOST_PTR_COMPRESSED_YUV_QCOM            0x40CD
#define CL_MEM_ION_HOST_PTR_PROTECTED_COMPRESSED_YUV_QCOM  0x40CE   /* also listed under §4 protected context */
