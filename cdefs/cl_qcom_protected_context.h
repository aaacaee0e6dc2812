/*
 * cl_qcom_protected_context
 * What: protected (secure) contexts/queues and the protected external-memory allocation types.
 * Reference: qcom-extensions.md §4
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] cl_qcom_protected_context.txt (Version 5, 2018/01/19),
 *          [S7] §9.1.4, [S8] protected samples
 * Also listed in §4 but declared with their owning extension:
 *   CL_MEM_DMABUF_HOST_PTR_PROTECTED_QCOM 0x411E             -> cl_qcom_dmabuf_host_ptr.h
 *   CL_MEM_ION_HOST_PTR_PROTECTED_COMPRESSED_YUV_QCOM 0x40CE -> cl_qcom_compressed_yuv_image_read.h
 */

/* ---- cl_context_properties keys -- §4 (value type cl_bool: {CL_CONTEXT_PROTECTED_QCOM, 1, 0}) ---- */
#define CL_CONTEXT_PROTECTED_QCOM                0x40C7
#define CL_CONTEXT_PROTECTED_PMEM_QCOM           0x4117   /* S1 only */

/* ---- allocation_type (cl_mem_ext_host_ptr) -- §4 ---- */
#define CL_MEM_ION_HOST_PTR_PROTECTED_QCOM       0x40C8   /* struct: cl_mem_ion_host_ptr */
#define CL_MEM_PMEM_HOST_PTR_PROTECTED_QCOM      0x4118   /* S1 only; struct: cl_mem_pmem_host_ptr */
