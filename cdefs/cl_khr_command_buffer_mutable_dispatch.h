/*
 * cl_khr_command_buffer_mutable_dispatch (provisional)
 * What: update arguments / sizes / offsets of recorded NDRange commands between replays
 *       (Khronos counterpart of clEnqueueRecordingQCOM's update arrays).
 * Reference: portable-interop.md §2.1 "Mutable dispatch" (Khronos cl_ext.h @ 15b536b7,
 *            extension version 0.9.5)
 * Sources: Khronos CL/cl_ext.h, OpenCL-Docs api/cl_khr_command_buffer_mutable_dispatch.asciidoc
 * Pre-0.9.2 ABI (clUpdateMutableCommandsKHR taking one cl_mutable_base_config_khr linked list;
 * CL_STRUCTURE_TYPE_MUTABLE_BASE_CONFIG_KHR 0 / ..._DISPATCH_CONFIG_KHR 1): NOT declared. The
 * reference does not give the exact old cl_mutable_dispatch_config_khr layout (it only says it
 * had extra type/next fields), so cl_mutable_base_config_khr and clUpdateMutableCommandsKHR_0_9_1_fn
 * are left out. Only the type tag typedef below is kept.
 */

/* ---- Extension version of the current header -- §2.1 ---- */
#define CL_KHR_COMMAND_BUFFER_MUTABLE_DISPATCH_EXTENSION_VERSION 0x9005   /* CL_MAKE_VERSION(0, 9, 5) */

/* ---- Types -- §2.1 ---- */
typedef cl_uint     cl_command_buffer_structure_type_khr;   /* pre-0.9.2 struct type tag */
typedef cl_uint     cl_command_buffer_update_type_khr;
typedef cl_bitfield cl_mutable_dispatch_fields_khr;
typedef cl_uint     cl_mutable_command_info_khr;
typedef cl_bitfield cl_mutable_dispatch_asserts_khr;

typedef struct _cl_mutable_dispatch_arg_khr {          /* LP64 size 24 */
    cl_uint      arg_index;
    size_t       arg_size;
    const void  *arg_value;
} cl_mutable_dispatch_arg_khr;

typedef struct _cl_mutable_dispatch_exec_info_khr {    /* LP64 size 24 */
    cl_uint      param_name;
    size_t       param_value_size;
    const void  *param_value;
} cl_mutable_dispatch_exec_info_khr;

typedef struct _cl_mutable_dispatch_config_khr {       /* >= 0.9.2 layout; LP64 size 72 */
    cl_mutable_command_khr                   command;
    cl_uint                                  num_args;
    cl_uint                                  num_svm_args;
    cl_uint                                  num_exec_infos;
    cl_uint                                  work_dim;
    const cl_mutable_dispatch_arg_khr       *arg_list;
    const cl_mutable_dispatch_arg_khr       *arg_svm_list;
    const cl_mutable_dispatch_exec_info_khr *exec_info_list;
    const size_t                            *global_work_offset;
    const size_t                            *global_work_size;
    const size_t                            *local_work_size;
} cl_mutable_dispatch_config_khr;

/* ---- cl_command_buffer_flags_khr (bitfield) -- §2.1 ---- */
#define CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR             0x1      /* (1 << 0); in the base extension before mutable 0.9.4 */
#define CL_COMMAND_BUFFER_MUTABLE_KHR                      0x2      /* (1 << 1) */

/* ---- cl_device_command_buffer_capabilities_khr (bitfield) -- §2.1 ---- */
#define CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR  0x4      /* (1 << 2); in the base extension in older headers */

/* ---- Error codes -- §2.1 ---- */
#define CL_INVALID_MUTABLE_COMMAND_KHR                     -1141

/* ---- cl_device_info -- §2.1 ---- */
#define CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR        0x12B0

/* ---- cl_command_properties_khr keys -- §2.1 ---- */
#define CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR           0x12B1
#define CL_MUTABLE_DISPATCH_ASSERTS_KHR                    0x12B8

/* ---- cl_mutable_dispatch_fields_khr (bitfield) -- §2.1 ---- */
#define CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR              0x1      /* (1 << 0) */
#define CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR                0x2      /* (1 << 1) */
#define CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR                 0x4      /* (1 << 2) */
#define CL_MUTABLE_DISPATCH_ARGUMENTS_KHR                  0x8      /* (1 << 3) */
#define CL_MUTABLE_DISPATCH_EXEC_INFO_KHR                  0x10     /* (1 << 4) */

/* ---- cl_mutable_command_info_khr -- §2.1 ----
 * Names of 0x12A3..0x12A7 as spelled in Khronos cl_ext.h (CL_MUTABLE_DISPATCH_* prefix). */
#define CL_MUTABLE_COMMAND_COMMAND_QUEUE_KHR               0x12A0
#define CL_MUTABLE_COMMAND_COMMAND_BUFFER_KHR              0x12A1
#define CL_MUTABLE_COMMAND_PROPERTIES_ARRAY_KHR            0x12A2   /* renamed in 0.9.3 */
#define CL_MUTABLE_DISPATCH_KERNEL_KHR                     0x12A3
#define CL_MUTABLE_DISPATCH_DIMENSIONS_KHR                 0x12A4
#define CL_MUTABLE_DISPATCH_GLOBAL_WORK_OFFSET_KHR         0x12A5
#define CL_MUTABLE_DISPATCH_GLOBAL_WORK_SIZE_KHR           0x12A6
#define CL_MUTABLE_DISPATCH_LOCAL_WORK_SIZE_KHR            0x12A7
#define CL_MUTABLE_COMMAND_COMMAND_TYPE_KHR                0x12AD

/* ---- cl_command_buffer_update_type_khr -- §2.1 (>= 0.9.2; was 1 in the old linked-list ABI) ---- */
#define CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR      0x0

/* ---- cl_command_buffer_properties_khr -- §2.1 ---- */
#define CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR     0x12B7

/* ---- cl_mutable_dispatch_asserts_khr (bitfield) -- §2.1 ---- */
#define CL_MUTABLE_DISPATCH_ASSERT_NO_ADDITIONAL_WORK_GROUPS_KHR 0x1  /* (1 << 0) */

/* ---- cl_command_buffer_state_khr -- §2.1 ---- */
#define CL_COMMAND_BUFFER_STATE_FINALIZED_KHR              0x2      /* same value as the removed
                                                                       CL_COMMAND_BUFFER_STATE_PENDING_KHR (cl_khr_command_buffer.h) */

/* ---- Entry points -- §2.1 ---- */
/* >= 0.9.2: array of (type, config) pairs */
typedef cl_int (*clUpdateMutableCommandsKHR_fn)(cl_command_buffer_khr command_buffer, cl_uint num_configs, const cl_command_buffer_update_type_khr *config_types, const void **configs);
typedef cl_int (*clGetMutableCommandInfoKHR_fn)(cl_mutable_command_khr command, cl_mutable_command_info_khr param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
