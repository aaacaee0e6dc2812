/*
 * cl_qcom_android_ahardwarebuffer_host_ptr
 * What: wrap an Android AHardwareBuffer as a buffer or image (S2 calls the section
 *       "cl_qcom_ahardwarebuffer_host_ptr"; devices report the name used for this file).
 * Reference: qcom-extensions.md §14.5
 * Sources: [S2] Qualcomm-modified cl_ext.h (MNN), [S7] §7.4.2.3, [S8] AHB samples, MNN OpenCLBackend.cpp.
 *          No spec text found.
 */

/* ---- allocation_type -- §14.5 ---- */
#define CL_MEM_ANDROID_AHARDWAREBUFFER_HOST_PTR_QCOM 0x4119

/* ---- Types -- §14.5 ---- */
typedef struct _cl_mem_ahardwarebuffer_host_ptr {   /* LP64 size 16 */
    cl_mem_ext_host_ptr ext_host_ptr;      /* off 0 */
    void               *ahb_ptr;           /* off 8: AHardwareBuffer* */
} cl_mem_ahardwarebuffer_host_ptr;
