/*
 * cl_qcom_dmabuf_host_ptr
 * What: wrap a Linux dma-buf (fd + optional host mapping) as a buffer or image.
 * Reference: qcom-extensions.md §14.6 (protected variant also listed in §4)
 * Sources: [S1] cl_ext_qcom.h 2022. No spec text found.
 */

/* ---- allocation_type -- §14.6 ---- */
#define CL_MEM_DMABUF_HOST_PTR_QCOM              0x411D
#define CL_MEM_DMABUF_HOST_PTR_PROTECTED_QCOM    0x411E   /* for protected contexts (§4) */

/* ---- Types -- §14.6 ---- */
typedef struct _cl_mem_dmabuf_host_ptr {   /* LP64 size 24 */
    cl_mem_ext_host_ptr ext_host_ptr;      /* off 0 */
    int                 dmabuf_filedesc;   /* off 8 */
    void               *dmabuf_hostptr;    /* off 16 */
} cl_mem_dmabuf_host_ptr;
