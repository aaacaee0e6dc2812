/*
 * cl_nv_device_attribute_query
 * What: NVIDIA's device queries; qcom_ext reads the compute capability, which decides
 *       whether the portable cl_qcom_dot_product8 builtins may use PTX dp4a (sm_61 on).
 * Reference: portable-interop.md §4 (NVIDIA OpenCL on Linux: the H100's extension string
 *            lists cl_nv_device_attribute_query)
 * Sources: Khronos CL/cl_ext.h ("cl_nv_device_attribute_query" block)
 */

/* cl_device_info -- §4; result: cl_uint */
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV        0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV        0x4001
