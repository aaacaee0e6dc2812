/*
 * cl_qcom_onchip_global_memory
 * What: place buffers/images in on-chip GPU memory (contents not preserved across kernels,
 *       except within one enqueue of a recording).
 * Reference: qcom-extensions.md §6
 * Sources: [S1] cl_ext_qcom.h 2022, [S7] §9.1.6, [S10] TVM clml_runtime.cc / clml_utils.cc.
 *          No spec text found.
 * Disagreement: one third-party project uses 0x40CB for the size query -- wrong (collides with
 * CL_PRIORITY_HINT_NORMAL_QCOM); S1 value 0x41A4 used.
 */

/* ---- cl_mem_properties keys (clCreateBufferWithProperties) -- §6 ---- */
#define CL_MEM_ONCHIP_GLOBAL_QCOM                0x41A2   /* value 1 */
#define CL_MEM_ONCHIP_GLOBAL_OFFSET_QCOM         0x41A3   /* value: byte offset into on-chip memory */

/* ---- cl_device_info -- §6 (bytes; TVM reads size_t, type otherwise unspecified) ---- */
#define CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM    0x41A4
