/*
 * cl_khr_external_memory_android_hardware_buffer (provisional)
 * What: an AHardwareBuffer* as an external memory handle (on top of cl_khr_external_memory);
 *       the Khronos tier of cl_qcom_android_ahardwarebuffer_host_ptr (qcom-extensions.md §14.5).
 * Reference: Khronos OpenCL-Headers CL/cl_ext.h @ 15b536b7, a beta extension (declared only
 *            under CL_ENABLE_BETA_EXTENSIONS), extension version 0.9.2
 * Sources: Khronos CL/cl_ext.h; OpenCL-Docs api/cl_khr_external_memory_android_hardware_buffer.asciidoc
 *          (revision 0.9.2, 2025-05-02, "provisional"): a buffer is imported with size 0 (the
 *          driver infers it; the AHB format must be AHARDWAREBUFFER_FORMAT_BLOB), an image with
 *          NULL image_format and image_desc (the driver infers format and dimensions);
 *          the import takes a reference on the AHardwareBuffer.
 * Properties: { CL_EXTERNAL_MEMORY_HANDLE_ANDROID_HARDWARE_BUFFER_KHR, (cl_mem_properties)ahb, 0 }.
 */

/* ---- cl_external_memory_handle_type_khr ---- */
#define CL_EXTERNAL_MEMORY_HANDLE_ANDROID_HARDWARE_BUFFER_KHR 0x2070
