/*
 * cl_qcom_limited_printf
 * What: printf in kernels with a bounded buffer; query of that buffer's size.
 * Reference: qcom-extensions.md §19
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] 2017 header
 */

/* ---- cl_device_info -- §19 ----
 * Same value as the core CL_DEVICE_PRINTF_BUFFER_SIZE (0x1049, cl_core.h). */
#define CL_DEVICE_PRINTF_BUFFER_SIZE_QCOM        0x1049
