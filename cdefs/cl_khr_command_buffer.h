/*
 * cl_khr_command_buffer (provisional)
 * What: record commands once, replay with clEnqueueCommandBufferKHR; portable
 *       equivalent of cl_qcom_recordable_queues.
 * Reference: portable-interop.md §2.1 (Khronos cl_ext.h @ 15b536b7: extension 0.9.8;
 *            older values from header v2024.05.08)
 * Sources: Khronos CL/cl_ext.h, OpenCL-Docs api/cl_khr_command_buffer.asciidoc
 * Entry points are reached with clGetExtensionFunctionAddressForPlatform.
 * Related tokens declared in cl_khr_command_buffer_mutable_dispatch.h (where the current
 * header puts them): CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR (1 << 0),
 * CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR (1 << 2), CL_COMMAND_BUFFER_STATE_FINALIZED_KHR 2,
 * CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR 0x12B7.
 */

/* ---- Extension version of the current header -- §2.1 ---- */
#define CL_KHR_COMMAND_BUFFER_EXTENSION_VERSION                  0x9008   /* CL_MAKE_VERSION(0, 9, 8) */

/* ---- Types -- §2.1 ---- */
typedef cl_bitfield   cl_device_command_buffer_capabilities_khr;
typedef struct _cl_command_buffer_khr  *cl_command_buffer_khr;
typedef cl_uint       cl_sync_point_khr;
typedef cl_uint       cl_command_buffer_info_khr;
typedef cl_uint       cl_command_buffer_state_khr;
typedef cl_properties cl_command_buffer_properties_khr;
typedef cl_bitfield   cl_command_buffer_flags_khr;
typedef cl_properties cl_command_properties_khr;
typedef cl_properties cl_ndrange_kernel_command_properties_khr;   /* <= 0.9.4 name; same ABI */
typedef struct _cl_mutable_command_khr *cl_mutable_command_khr;

/* ---- cl_device_info -- §2.1 ---- */
#define CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR                0x12A9
#define CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR  0x129A   /* >= 0.9.6 */
#define CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR   0x12AA

/* ---- cl_device_command_buffer_capabilities_khr (bitfield) -- §2.1 ---- */
#define CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR           0x1      /* (1 << 0) */
#define CL_COMMAND_BUFFER_CAPABILITY_DEVICE_SIDE_ENQUEUE_KHR     0x2      /* (1 << 1) */
/* (1 << 2) CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR: see cl_khr_command_buffer_mutable_dispatch.h */
#define CL_COMMAND_BUFFER_CAPABILITY_OUT_OF_ORDER_KHR            0x8      /* (1 << 3); older headers only (v2024.05.08) */

/* ---- cl_command_buffer_properties_khr -- §2.1 ---- */
#define CL_COMMAND_BUFFER_FLAGS_KHR                              0x1293

/* ---- Error codes -- §2.1 ---- */
#define CL_INVALID_COMMAND_BUFFER_KHR                            -1138
#define CL_INVALID_SYNC_POINT_WAIT_LIST_KHR                      -1139
#define CL_INCOMPATIBLE_COMMAND_QUEUE_KHR                        -1140

/* ---- cl_command_buffer_info_khr -- §2.1 ---- */
#define CL_COMMAND_BUFFER_QUEUES_KHR                             0x1294
#define CL_COMMAND_BUFFER_NUM_QUEUES_KHR                         0x1295
#define CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR                    0x1296
#define CL_COMMAND_BUFFER_STATE_KHR                              0x1297
#define CL_COMMAND_BUFFER_PROPERTIES_ARRAY_KHR                   0x1298
#define CL_COMMAND_BUFFER_CONTEXT_KHR                            0x1299   /* >= 0.9.2 */

/* ---- cl_command_buffer_state_khr -- §2.1 ---- */
#define CL_COMMAND_BUFFER_STATE_RECORDING_KHR                    0x0
#define CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR                   0x1
#define CL_COMMAND_BUFFER_STATE_PENDING_KHR                      0x2      /* < 0.9.8 only (removed); same value as
                                                                             CL_COMMAND_BUFFER_STATE_FINALIZED_KHR (mutable dispatch file) */

/* ---- cl_command_type -- §2.1 ---- */
#define CL_COMMAND_COMMAND_BUFFER_KHR                            0x12A8

/* ---- Entry points, current ABI (>= 0.9.5: `properties` on every clCommand*KHR) -- §2.1 ---- */
typedef cl_command_buffer_khr (*clCreateCommandBufferKHR_fn)(cl_uint num_queues, const cl_command_queue *queues, const cl_command_buffer_properties_khr *properties, cl_int *errcode_ret);
typedef cl_int (*clFinalizeCommandBufferKHR_fn)(cl_command_buffer_khr command_buffer);
typedef cl_int (*clRetainCommandBufferKHR_fn)(cl_command_buffer_khr command_buffer);
typedef cl_int (*clReleaseCommandBufferKHR_fn)(cl_command_buffer_khr command_buffer);
typedef cl_int (*clEnqueueCommandBufferKHR_fn)(cl_uint num_queues, cl_command_queue *queues, cl_command_buffer_khr command_buffer, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
typedef cl_int (*clCommandBarrierWithWaitListKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyBufferKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_mem src_buffer, cl_mem dst_buffer, size_t src_offset, size_t dst_offset, size_t size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyBufferRectKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_mem src_buffer, cl_mem dst_buffer, const size_t *src_origin, const size_t *dst_origin, const size_t *region, size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyBufferToImageKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_mem src_buffer, cl_mem dst_image, size_t src_offset, const size_t *dst_origin, const size_t *region, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyImageKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_mem src_image, cl_mem dst_image, const size_t *src_origin, const size_t *dst_origin, const size_t *region, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyImageToBufferKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_mem src_image, cl_mem dst_buffer, const size_t *src_origin, const size_t *region, size_t dst_offset, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandFillBufferKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_mem buffer, const void *pattern, size_t pattern_size, size_t offset, size_t size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandFillImageKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_mem image, const void *fill_color, const size_t *origin, const size_t *region, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
/* NDRange: same positional ABI in every version (<= 0.9.4 typed the 3rd parameter
   const cl_ndrange_kernel_command_properties_khr *, also a cl_properties array). */
typedef cl_int (*clCommandNDRangeKernelKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, cl_kernel kernel, cl_uint work_dim, const size_t *global_work_offset, const size_t *global_work_size, const size_t *local_work_size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clGetCommandBufferInfoKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_buffer_info_khr param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
/* >= 0.9.4, OpenCL 2.0 */
typedef cl_int (*clCommandSVMMemcpyKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, void *dst_ptr, const void *src_ptr, size_t size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandSVMMemFillKHR_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties, void *svm_ptr, const void *pattern, size_t pattern_size, size_t size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);

/* ---- Entry points, OLD ABI of versions <= 0.9.4 -- §2.1 "Version-dependent ABI" ----
 * Barrier, all Copy*, Fill* and SVM* had NO `properties` parameter before 0.9.5
 * (e.g. headers v2024.05.08, Debian 12 opencl-c-headers 3.0~2023.02.06; Debian pocl 3.1
 * implements 0.9.0, pocl 5.0 implements 0.9.4). Same exported symbol names; pick the
 * typedef from the version in CL_DEVICE_EXTENSIONS_WITH_VERSION. Create/Finalize/Retain/
 * Release/Enqueue/NDRange/GetInfo are unchanged and have no _0_9_4 variant. */
typedef cl_int (*clCommandBarrierWithWaitListKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyBufferKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, cl_mem src_buffer, cl_mem dst_buffer, size_t src_offset, size_t dst_offset, size_t size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyBufferRectKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, cl_mem src_buffer, cl_mem dst_buffer, const size_t *src_origin, const size_t *dst_origin, const size_t *region, size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyBufferToImageKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, cl_mem src_buffer, cl_mem dst_image, size_t src_offset, const size_t *dst_origin, const size_t *region, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyImageKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, cl_mem src_image, cl_mem dst_image, const size_t *src_origin, const size_t *dst_origin, const size_t *region, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandCopyImageToBufferKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, cl_mem src_image, cl_mem dst_buffer, const size_t *src_origin, const size_t *region, size_t dst_offset, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandFillBufferKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, cl_mem buffer, const void *pattern, size_t pattern_size, size_t offset, size_t size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandFillImageKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, cl_mem image, const void *fill_color, const size_t *origin, const size_t *region, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
/* SVM commands exist only from 0.9.4, so their old ABI is exactly 0.9.4's */
typedef cl_int (*clCommandSVMMemcpyKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, void *dst_ptr, const void *src_ptr, size_t size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int (*clCommandSVMMemFillKHR_0_9_4_fn)(cl_command_buffer_khr command_buffer, cl_command_queue command_queue, void *svm_ptr, const void *pattern, size_t pattern_size, size_t size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
