/*
 * cl_qcom_ext_host_ptr_iocoherent (Khronos extension #53)
 * What: extra host_cache_policy -- I/O-coherent mapping of cached external allocations.
 * Reference: qcom-extensions.md §14.2
 * Sources: [S3]/[S6] cl_qcom_ext_host_ptr_iocoherent.txt (Version 4, 2018/03/06 "Corrected token value"),
 *          [S1], [S4], [S5]
 */

/* ---- host_cache_policy (cl_mem_ext_host_ptr) -- §14.2; only for memory allocated cached ---- */
#define CL_MEM_HOST_IOCOHERENT_QCOM              0x40A9
