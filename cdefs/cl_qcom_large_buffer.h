/*
 * cl_qcom_large_buffer
 * What: allow one buffer to exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE
 *       (cl_mem_properties {CL_LARGE_BUFFER_QCOM, 1, 0} to clCreateBufferWithProperties).
 * Reference: qcom-extensions.md §19
 * Sources: [S11] llama.cpp ggml-opencl.cpp, PR ggml-org/llama.cpp#20997 (Android A7x/A8x;
 *          not X Elite Windows). No Qualcomm header or spec found.
 */

/* ---- cl_mem_properties key -- §19 (value 1) ---- */
#define CL_LARGE_BUFFER_QCOM                     0x41A6
