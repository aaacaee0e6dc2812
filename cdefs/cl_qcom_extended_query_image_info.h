/*
 * cl_qcom_extended_query_image_info
 * What: query pitch / alignment / size of an image that need not exist yet
 *       (RGBA, Bayer/MIPI, NV12, compressed NV12, 2-D arrays).
 * Reference: qcom-extensions.md §7
 * Sources: [S1] cl_ext_qcom.h 2022, [S7] §9.1.7, [S8] qcom_extended_query_image_info.cpp + wrapper.
 *          No spec text found.
 * Other param_name values used by the S8 sample: CL_IMAGE_ROW_PITCH, CL_IMAGE_ELEMENT_SIZE,
 * CL_IMAGE_SLICE_PITCH (cl_core.h), CL_IMAGE_ROW_ALIGNMENT_QCOM, CL_IMAGE_SLICE_ALIGNMENT_QCOM
 * (cl_qcom_ext_host_ptr.h).
 */

/* ---- Types -- §7 ---- */
typedef cl_uint cl_extended_image_info_qcom;

/* ---- cl_extended_image_info_qcom values -- §7 (S8 reads all into size_t) ---- */
#define CL_IMAGE_SIZE_QCOM                       0x411B
#define CL_IMAGE_BASE_ADDRESS_ALIGNMENT_QCOM     0x411F
/* CL_IMAGE_HEIGHT_ALIGNMENT_QCOM: value NOT FOUND (used by the S8 sample, absent from S1) --
   deliberately not declared. */

/* ---- Entry points -- §7 ---- */
typedef cl_int (*clQueryImageInfoQCOM_fn)(cl_device_id device, cl_mem_flags flags, const cl_image_format *image_format, const cl_image_desc *image_desc, cl_extended_image_info_qcom param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
