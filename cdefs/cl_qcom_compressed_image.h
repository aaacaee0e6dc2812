/*
 * cl_qcom_compressed_image
 * What: GPU-specific (UBWC) compressed images: mem flag plus compressed channel orders.
 * Reference: qcom-extensions.md §12
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] cl_qcom_compressed_image.txt (Version 3) + 2017 header,
 *          2014 header (public copy), [S7] §9.3.6, [S5] cl.xml (bit 38 reserved for QCOM)
 * CL_QCOM_COMPRESSED_NV12 (0x4139) and the compressed-YUV tokens live in
 * cl_qcom_compressed_yuv_image_read.h.
 */

/* ---- cl_mem_flags bit -- §12 ---- */
#define CL_MEM_COMPRESSED_IMAGE_QCOM             0x4000000000   /* (1ULL << 38), S1 2022; S3 2017 / 2014 had (1<<27)
                                                                   = 0x8000000, now IMG's bit in cl.xml */

/* ---- cl_channel_order (compressed) -- §12 (S1 = S3) ---- */
#define CL_QCOM_COMPRESSED_RGBA                  0x4130
#define CL_QCOM_COMPRESSED_RGBx                  0x4131
#define CL_QCOM_COMPRESSED_NV12_Y                0x413A
#define CL_QCOM_COMPRESSED_NV12_UV               0x413B
#define CL_QCOM_COMPRESSED_P010                  0x4142
#define CL_QCOM_COMPRESSED_P010_Y                0x4143
#define CL_QCOM_COMPRESSED_P010_UV               0x4144
#define CL_QCOM_COMPRESSED_TP10                  0x414B
#define CL_QCOM_COMPRESSED_TP10_Y                0x414C
#define CL_QCOM_COMPRESSED_TP10_UV               0x414D
#define CL_QCOM_COMPRESSED_NV12_4R               0x414F
#define CL_QCOM_COMPRESSED_NV12_4R_Y             0x4150
#define CL_QCOM_COMPRESSED_NV12_4R_UV            0x4151
