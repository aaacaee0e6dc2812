/*
 * cl_khr_throttle_hints
 * What: per-queue power/throttle hint for clCreateCommandQueueWithProperties; Khronos
 *       analogue of the context-level cl_qcom_perf_hint.
 * Reference: portable-interop.md §2.2 (Khronos cl_ext.h @ 15b536b7)
 * Sources: Khronos CL/cl_ext.h, OpenCL-Docs api/opencl_runtime_layer.asciidoc
 */

/* Types -- §2.2 */
typedef cl_uint cl_queue_throttle_khr;

/* cl_queue_properties key -- §2.2 */
#define CL_QUEUE_THROTTLE_KHR                        0x1097

/* cl_queue_throttle_khr values -- §2.2 (default MED) */
#define CL_QUEUE_THROTTLE_HIGH_KHR                   0x1   /* (1 << 0) */
#define CL_QUEUE_THROTTLE_MED_KHR                    0x2   /* (1 << 1) */
#define CL_QUEUE_THROTTLE_LOW_KHR                    0x4   /* (1 << 2) */
