/*
 * cl_qcom_extended_images
 * What: opt-in (per context) to image sizes beyond the standard 2-D/3-D maxima.
 * Reference: qcom-extensions.md §19
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] 2017 header
 */

/* ---- cl_context_properties key -- §19 ---- */
#define CL_CONTEXT_ENABLE_EXTENDED_IMAGES_QCOM       0x40AA

/* ---- cl_device_info -- §19 ---- */
#define CL_DEVICE_EXTENDED_IMAGE2D_MAX_WIDTH_QCOM    0x40AB
#define CL_DEVICE_EXTENDED_IMAGE2D_MAX_HEIGHT_QCOM   0x40AC
#define CL_DEVICE_EXTENDED_IMAGE3D_MAX_WIDTH_QCOM    0x40AD
#define CL_DEVICE_EXTENDED_IMAGE3D_MAX_HEIGHT_QCOM   0x40AE
#define CL_DEVICE_EXTENDED_IMAGE3D_MAX_DEPTH_QCOM    0x40AF
