/*
 * cl_ext_image_requirements_info
 * What: an image's row pitch alignment, base address alignment, size and maximum
 *       dimensions, asked before the image exists (clGetImageRequirementsInfoEXT);
 *       the Khronos tier of cl_qcom_extended_query_image_info (qcom-extensions.md §7).
 *       Advertised by Adreno 740 (qcom-extensions.md §20 [L3]) and 750 drivers
 *       (Oblomov/clinfo#92 clinfo).
 * Reference: Khronos OpenCL-Headers CL/cl_ext.h @ 15b536b7 ("cl_ext_image_requirements_info",
 *            extension version 0.5.0; "cl_ext_image_from_buffer" for the slice pitch token);
 *            portable-interop.md §2.5 (the row pitch rule it replaces)
 * Sources: Khronos CL/cl_ext.h, OpenCL-Docs api/opencl_runtime_layer.asciidoc
 *          (refpage clGetImageRequirementsInfoEXT: the alignments and the size are size_t,
 *          the maximum dimensions cl_uint; MAX_HEIGHT takes only 2D/2D array/3D descriptors,
 *          MAX_DEPTH only 3D, MAX_ARRAY_SIZE only 1D/2D arrays).
 * The query takes a cl_context, not a device.
 */

/* ---- Types ---- */
typedef cl_uint cl_image_requirements_info_ext;

/* ---- cl_image_requirements_info_ext ---- */
#define CL_IMAGE_REQUIREMENTS_ROW_PITCH_ALIGNMENT_EXT       0x1290   /* size_t, bytes */
#define CL_IMAGE_REQUIREMENTS_BASE_ADDRESS_ALIGNMENT_EXT    0x1292   /* size_t, bytes */
#define CL_IMAGE_REQUIREMENTS_SIZE_EXT                      0x12B2   /* size_t, bytes */
#define CL_IMAGE_REQUIREMENTS_MAX_WIDTH_EXT                 0x12B3   /* cl_uint */
#define CL_IMAGE_REQUIREMENTS_MAX_HEIGHT_EXT                0x12B4   /* cl_uint */
#define CL_IMAGE_REQUIREMENTS_MAX_DEPTH_EXT                 0x12B5   /* cl_uint */
#define CL_IMAGE_REQUIREMENTS_MAX_ARRAY_SIZE_EXT            0x12B6   /* cl_uint */
/* cl_ext_image_from_buffer (same header): asked only where that extension is advertised */
#define CL_IMAGE_REQUIREMENTS_SLICE_PITCH_ALIGNMENT_EXT     0x1291   /* size_t, bytes */

/* ---- Entry points ---- */
typedef cl_int (*clGetImageRequirementsInfoEXT_fn)(cl_context context, const cl_mem_properties *properties, cl_mem_flags flags, const cl_image_format *image_format, const cl_image_desc *image_desc, cl_image_requirements_info_ext param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
