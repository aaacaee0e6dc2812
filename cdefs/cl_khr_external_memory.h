/*
 * cl_khr_external_memory
 * What: the base of the Khronos external-memory imports: a handle passed as a
 *       cl_mem_properties pair to clCreateBufferWithProperties / clCreateImageWithProperties
 *       (cl_core.h), and the acquire/release commands that hand the memory between OpenCL
 *       and its other user. Needed by cl_khr_external_memory_dma_buf and
 *       cl_khr_external_memory_android_hardware_buffer, the Khronos tiers of
 *       cl_qcom_dmabuf_host_ptr (qcom-extensions.md §14.6) and
 *       cl_qcom_android_ahardwarebuffer_host_ptr (§14.5).
 * Reference: Khronos OpenCL-Headers CL/cl_ext.h @ 15b536b7 ("cl_khr_external_memory",
 *            extension version 1.0.1)
 * Sources: Khronos CL/cl_ext.h; OpenCL-Docs api/cl_khr_external_memory.asciidoc and
 *          api/opencl_runtime_layer.asciidoc ("Descriptions of External Memory Handle Types":
 *          a successful import of a file descriptor transfers its ownership to OpenCL;
 *          without CL_MEM_DEVICE_HANDLE_LIST_KHR the memory belongs to every device of the
 *          context; objects must be acquired before commands use them).
 */

/* ---- Types ---- */
typedef cl_uint cl_external_memory_handle_type_khr;

/* ---- cl_platform_info ---- */
#define CL_PLATFORM_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR  0x2044

/* ---- cl_device_info (cl_external_memory_handle_type_khr[]) ---- */
#define CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR    0x204F
#define CL_DEVICE_EXTERNAL_MEMORY_IMPORT_ASSUME_LINEAR_IMAGES_HANDLE_TYPES_KHR 0x2052

/* ---- cl_mem_properties ---- */
#define CL_MEM_DEVICE_HANDLE_LIST_KHR                        0x2051
#define CL_MEM_DEVICE_HANDLE_LIST_END_KHR                    0

/* ---- cl_command_type ---- */
#define CL_COMMAND_ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR          0x2047
#define CL_COMMAND_RELEASE_EXTERNAL_MEM_OBJECTS_KHR          0x2048

/* ---- Entry points ---- */
typedef cl_int (*clEnqueueAcquireExternalMemObjectsKHR_fn)(cl_command_queue command_queue, cl_uint num_mem_objects, const cl_mem *mem_objects, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
typedef cl_int (*clEnqueueReleaseExternalMemObjectsKHR_fn)(cl_command_queue command_queue, cl_uint num_mem_objects, const cl_mem *mem_objects, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
