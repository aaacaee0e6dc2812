/*
 * cl_khr_priority_hints
 * What: per-queue priority hint for clCreateCommandQueueWithProperties; Khronos
 *       analogue of the context-level cl_qcom_priority_hint.
 * Reference: portable-interop.md §2.2 (Khronos cl_ext.h @ 15b536b7)
 * Sources: Khronos CL/cl_ext.h, OpenCL-Docs api/cl_khr_priority_hints.asciidoc (rev 1.0.0)
 */

/* Types -- §2.2 */
typedef cl_uint cl_queue_priority_khr;

/* cl_queue_properties key -- §2.2 */
#define CL_QUEUE_PRIORITY_KHR                        0x1096

/* cl_queue_priority_khr values -- §2.2 (default MED) */
#define CL_QUEUE_PRIORITY_HIGH_KHR                   0x1   /* (1 << 0) */
#define CL_QUEUE_PRIORITY_MED_KHR                    0x2   /* (1 << 1) */
#define CL_QUEUE_PRIORITY_LOW_KHR                    0x4   /* (1 << 2) */
