/*
 * cl_qcom_ion_host_ptr (Khronos extension #22)
 * What: wrap an ION allocation (fd + optional host mapping) as a buffer or image.
 * Reference: qcom-extensions.md §14.3
 * Sources: [S3]/[S6] cl_qcom_ion_host_ptr.txt, [S1], [S4], [S5]
 * Protected ION (CL_MEM_ION_HOST_PTR_PROTECTED_QCOM 0x40C8) uses this struct; it is declared
 * in cl_qcom_protected_context.h (§4).
 */

/* ---- allocation_type -- §14.3 ---- */
#define CL_MEM_ION_HOST_PTR_QCOM                 0x40A8

/* ---- Types -- §14.3 ---- */
typedef struct _cl_mem_ion_host_ptr {      /* LP64 size 24 */
    cl_mem_ext_host_ptr ext_host_ptr;      /* off 0 */
    int                 ion_filedesc;      /* off 8 */
    void               *ion_hostptr;       /* off 16; may be NULL (no host map) */
} cl_mem_ion_host_ptr;
