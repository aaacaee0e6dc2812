/*
 * cl_qcom_create_buffer_from_image
 * What: create a buffer aliasing an existing image's storage (from the origin pixel).
 * Reference: qcom-extensions.md §5
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] cl_qcom_create_buffer_from_image.txt (Version 7), [S7] §9.1.5
 */

/* ---- clGetDeviceImageInfoQCOM param_name (cl_image_pitch_info_qcom) -- §5 ----
 * Spec table result types: ROW_PITCH cl_uint, SLICE_PITCH cl_int (as printed). */
#define CL_BUFFER_FROM_IMAGE_ROW_PITCH_QCOM      0x40C0
#define CL_BUFFER_FROM_IMAGE_SLICE_PITCH_QCOM    0x40C1

/* ---- Entry points -- §5 ---- */
typedef cl_mem (*clCreateBufferFromImageQCOM_fn)(cl_mem image, cl_mem_flags flags, cl_int *errcode_ret);
