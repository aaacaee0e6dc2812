/*
 * cl_khr_external_memory_dma_buf
 * What: a Linux dma-buf file descriptor as an external memory handle (on top of
 *       cl_khr_external_memory); the Khronos tier of cl_qcom_dmabuf_host_ptr
 *       (qcom-extensions.md §14.6). Seen with cl_khr_external_memory 1.0.0 in the clinfo of
 *       ggml-org/whisper.cpp#3708 (qcom-extensions.md §20: device name not captured;
 *       issue 16 names it an Adreno 830).
 * Reference: Khronos OpenCL-Headers CL/cl_ext.h @ 15b536b7 ("cl_khr_external_memory_dma_buf",
 *            extension version 1.0.0)
 * Sources: Khronos CL/cl_ext.h; OpenCL-Docs api/cl_khr_external_memory_dma_buf.asciidoc.
 * Properties: { CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)fd, 0 }; the
 * import owns the fd once it succeeds (qcom_ext passes a dup of the caller's).
 */

/* ---- cl_external_memory_handle_type_khr ---- */
#define CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR                0x2067
