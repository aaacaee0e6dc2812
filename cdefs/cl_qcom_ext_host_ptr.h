/*
 * cl_qcom_ext_host_ptr (Khronos extension #21)
 * What: base of the Qualcomm external-memory family -- wrap memory allocated outside
 *       OpenCL (ION, ANB, AHB, dma-buf, PMEM) with CL_MEM_USE_HOST_PTR | CL_MEM_EXT_HOST_PTR_QCOM.
 * Reference: qcom-extensions.md §14.1 (and §14.7 PMEM)
 * Sources: [S1] cl_ext_qcom.h 2022, [S3]/[S6] cl_qcom_ext_host_ptr.txt (Version 5, 2018/01/19),
 *          [S4] Khronos cl_ext.h, [S5] Khronos cl.xml, [S14] clinfo
 * Loaded right after the Khronos files: the per-allocation-type structs in the other
 * host-pointer files embed cl_mem_ext_host_ptr.
 */

/* ---- Types -- §14.1 ---- */
typedef cl_uint cl_image_pitch_info_qcom;

typedef struct _cl_mem_ext_host_ptr {      /* size 8, align 4 */
    cl_uint allocation_type;               /* off 0: CL_MEM_*_HOST_PTR_QCOM */
    cl_uint host_cache_policy;             /* off 4: CL_MEM_HOST_*_QCOM */
} cl_mem_ext_host_ptr;

/* ---- cl_mem_flags bit -- §14.1 (only valid together with CL_MEM_USE_HOST_PTR) ---- */
#define CL_MEM_EXT_HOST_PTR_QCOM                 0x20000000   /* (1 << 29) */

/* ---- cl_device_info -- §14.1 (result type unstated; clinfo reads size_t) ---- */
#define CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM  0x40A0
#define CL_DEVICE_PAGE_SIZE_QCOM                 0x40A1

/* ---- cl_image_pitch_info_qcom (clGetDeviceImageInfoQCOM param_name) -- §14.1 ----
 * Also accepted: CL_IMAGE_ROW_PITCH / CL_IMAGE_SLICE_PITCH (cl_core.h) and
 * CL_BUFFER_FROM_IMAGE_{ROW,SLICE}_PITCH_QCOM (cl_qcom_create_buffer_from_image.h, §5). */
#define CL_IMAGE_ROW_ALIGNMENT_QCOM              0x40A2
#define CL_IMAGE_SLICE_ALIGNMENT_QCOM            0x40A3

/* ---- host_cache_policy -- §14.1 (IOCOHERENT 0x40A9: cl_qcom_ext_host_ptr_iocoherent.h) ---- */
#define CL_MEM_HOST_UNCACHED_QCOM                0x40A4
#define CL_MEM_HOST_WRITEBACK_QCOM               0x40A5
#define CL_MEM_HOST_WRITETHROUGH_QCOM            0x40A6
#define CL_MEM_HOST_WRITE_COMBINING_QCOM         0x40A7

/* ---- PMEM allocation type -- §14.7 ----
 * PMEM has no extension string of its own on any device seen; S1 declares it next to
 * the ext_host_ptr family, so it lives here. (CL_MEM_PMEM_HOST_PTR_PROTECTED_QCOM 0x4118
 * and CL_CONTEXT_PROTECTED_PMEM_QCOM 0x4117: cl_qcom_protected_context.h, §4.) */
#define CL_MEM_PMEM_HOST_PTR_QCOM                0x4116

typedef struct _cl_mem_pmem_host_ptr {     /* LP64 size 24 */
    cl_mem_ext_host_ptr ext_host_ptr;      /* off 0 */
    uintptr_t           pmem_handle;       /* off 8 */
    void               *pmem_hostptr;      /* off 16 */
} cl_mem_pmem_host_ptr;

/* ---- Entry points -- §14.1 ---- */
typedef cl_int (*clGetDeviceImageInfoQCOM_fn)(cl_device_id device, size_t image_width, size_t image_height, const cl_image_format *image_format, cl_image_pitch_info_qcom param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
