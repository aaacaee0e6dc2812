/*
 * cl_qcom_android_native_buffer_host_ptr (Khronos extension #32)
 * What: wrap an Android ANativeWindowBuffer (GraphicBuffer) as a buffer or 2-D image.
 * Reference: qcom-extensions.md §14.4
 * Sources: [S3]/[S6] cl_qcom_android_native_buffer_host_ptr.txt, [S1], [S4], [S5]
 */

/* ---- allocation_type -- §14.4 ---- */
#define CL_MEM_ANDROID_NATIVE_BUFFER_HOST_PTR_QCOM   0x40C6

/* ---- Types -- §14.4 ---- */
typedef struct _cl_mem_android_native_buffer_host_ptr {   /* LP64 size 16 */
    cl_mem_ext_host_ptr ext_host_ptr;      /* off 0 */
    void               *anb_ptr;           /* off 8: ANativeWindowBuffer* */
} cl_mem_android_native_buffer_host_ptr;
