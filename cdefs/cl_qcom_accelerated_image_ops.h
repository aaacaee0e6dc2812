/*
 * cl_qcom_accelerated_image_ops
 * What: texture-unit accelerated convolution (weight images), box filter and block
 *       matching (SAD/SSD) built-ins, plus their host-side types and limits.
 * Reference: qcom-extensions.md §10
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] cl_qcom_accelerated_image_ops.txt (Version 8, 2018/01/19),
 *          [S7] §9.3.1-9.3.3, [S8] samples (hof_filter.cpp), TFLite QcomThinFilter
 * Bicubic sampling (CL_FILTER_BICUBIC_QCOM) is the separate extension cl_qcom_filter_bicubic.h.
 */

/* ---- Types -- §10 ---- */
typedef struct _cl_weight_desc_qcom {           /* LP64 size 24 */
    size_t       center_coord_x;                /* off 0 */
    size_t       center_coord_y;                /* off 8 */
    cl_bitfield  flags;                         /* off 16: 0 (2-D) or CL_WEIGHT_IMAGE_SEPARABLE_QCOM */
} cl_weight_desc_qcom;

typedef struct _cl_weight_image_desc_qcom {     /* LP64 size 96; pass as (cl_image_desc *) */
    cl_image_desc        image_desc;            /* off 0, 72 bytes */
    cl_weight_desc_qcom  weight_desc;           /* off 72 */
} cl_weight_image_desc_qcom;

typedef struct _cl_box_filter_size_qcom {       /* size 8, align 4; kernel type qcom_box_size_t */
    float box_filter_width;
    float box_filter_height;
} cl_box_filter_size_qcom;

/* Spec text (S3 .txt) names the same struct cl_box_size_qcom; header S1/S3 name above. */
typedef cl_box_filter_size_qcom cl_box_size_qcom;

/* ---- cl_mem_object_type (image_desc.image_type; clGetSupportedImageFormats) -- §10 ---- */
#define CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM                  0x4110

/* ---- cl_device_info -- §10 (result types NOT FOUND; honour param_value_size_ret) ---- */
#define CL_DEVICE_HOF_MAX_NUM_PHASES_QCOM                0x4111
#define CL_DEVICE_HOF_MAX_FILTER_SIZE_X_QCOM             0x4112   /* also bounds box-filter size */
#define CL_DEVICE_HOF_MAX_FILTER_SIZE_Y_QCOM             0x4113
#define CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_X_QCOM  0x4114
#define CL_DEVICE_BLOCK_MATCHING_MAX_REGION_SIZE_Y_QCOM  0x4115

/* ---- cl_weight_desc_qcom.flags (bitfield) -- §10 ---- */
#define CL_WEIGHT_IMAGE_SEPARABLE_QCOM                   0x1      /* (1 << 0) */
