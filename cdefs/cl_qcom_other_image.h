/*
 * cl_qcom_other_image
 * What: planar / packed "other" image formats (NV12, P010, TP10, tiled variants, Bayer,
 *       MIPI-packed) selected with CL_MEM_OTHER_IMAGE_QCOM; single-plane children come
 *       from the kernel/host rules of cl_qcom_extract_image_plane (no host tokens of its own).
 * Reference: qcom-extensions.md §13
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] cl_qcom_other_image.txt (Version 6, 2018/04/25),
 *          cl_qcom_extract_image_plane.txt (Version 5), 2014 header (public copy)
 */

/* ---- cl_mem_flags bit -- §13 ---- */
#define CL_MEM_OTHER_IMAGE_QCOM                  0x2000000000   /* (1ULL << 37), S1 2022; S3 / 2014 header had (1<<25)
                                                                   = 0x2000000, now Intel's bit in cl.xml */

/* ---- cl_channel_type -- §13 (S1 = S3) ---- */
#define CL_QCOM_UNORM_MIPI10                     0x4159
#define CL_QCOM_UNORM_MIPI12                     0x415A
#define CL_QCOM_UNSIGNED_MIPI10                  0x415B
#define CL_QCOM_UNSIGNED_MIPI12                  0x415C
#define CL_QCOM_UNORM_INT10                      0x415D
#define CL_QCOM_UNORM_INT12                      0x415E
#define CL_QCOM_UNSIGNED_INT16                   0x415F

/* ---- cl_channel_order -- §13 (compressed orders: cl_qcom_compressed_image.h) ---- */
#define CL_QCOM_NV12                             0x4133
#define CL_QCOM_NV12_Y                           0x4134
#define CL_QCOM_NV12_UV                          0x4135
#define CL_QCOM_TILED_NV12                       0x4136
#define CL_QCOM_TILED_NV12_Y                     0x4137
#define CL_QCOM_TILED_NV12_UV                    0x4138
#define CL_QCOM_P010                             0x413C
#define CL_QCOM_P010_Y                           0x413D
#define CL_QCOM_P010_UV                          0x413E
#define CL_QCOM_TILED_P010                       0x413F
#define CL_QCOM_TILED_P010_Y                     0x4140
#define CL_QCOM_TILED_P010_UV                    0x4141
#define CL_QCOM_TP10                             0x4145
#define CL_QCOM_TP10_Y                           0x4146
#define CL_QCOM_TP10_UV                          0x4147
#define CL_QCOM_TILED_TP10                       0x4148
#define CL_QCOM_TILED_TP10_Y                     0x4149
#define CL_QCOM_TILED_TP10_UV                    0x414A
#define CL_QCOM_BAYER                            0x414E
#define CL_QCOM_NV12_512                         0x4152   /* NV12_512 family: S1 only */
#define CL_QCOM_NV12_512_Y                       0x4153
#define CL_QCOM_NV12_512_UV                      0x4154
