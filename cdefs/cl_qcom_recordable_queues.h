/*
 * cl_qcom_recordable_queues
 * What: record clEnqueueNDRangeKernel commands on a recordable queue, then replay them
 *       (optionally with updated args / offsets / work sizes) on a live queue.
 * Reference: qcom-extensions.md §3
 * Sources: [S1] cl_ext_qcom.h 2022 ("cl_recordable_command_queue extension"), [S7] §9.1.3,
 *          [S8] recordable_queues_svm.cpp, MNN / TVM usage, [S9]. No spec text found.
 * Parameter names: S1 leaves them unnamed; names follow MNN OpenCLWrapper.cpp.
 * Entry points are plain exported symbols of libOpenCL.so (MNN uses dlsym).
 */

/* ---- Types -- §3 ---- */
typedef struct _cl_recording_qcom *cl_recording_qcom;   /* opaque handle */

typedef struct _cl_array_arg_qcom {             /* LP64 size 24 */
    cl_uint      dispatch_index;                /* off 0: ordinal of the recorded NDRange */
    cl_uint      arg_index;                     /* off 4 */
    size_t       arg_size;                      /* off 8: 0 for SVM args */
    const void  *arg_value;                     /* off 16: SVM pointer itself for SVM args */
} cl_array_arg_qcom;

typedef struct _cl_array_kernel_exec_info_qcom {   /* LP64 size 24 */
    cl_uint              dispatch_index;        /* off 0 */
    cl_kernel_exec_info  param_name;            /* off 4 */
    size_t               param_value_size;      /* off 8 */
    const void          *param_value;           /* off 16 */
} cl_array_kernel_exec_info_qcom;

typedef struct _cl_workgroup_qcom {             /* LP64 size 16 */
    cl_uint        dispatch_index;              /* off 0 */
    const size_t  *workgroup_size;              /* off 8: size_t[work_dim] */
} cl_workgroup_qcom;

typedef struct _cl_offset_qcom {                /* LP64 size 32 */
    cl_uint  dispatch_index;                    /* off 0 */
    size_t   offsets[3];                        /* off 8: INLINE array, not a pointer */
} cl_offset_qcom;

/* ---- cl_device_info -- §3 (no _QCOM suffix; result cl_uint: max kernels per recording) ---- */
#define CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE      0x41DE

/* ---- cl_command_queue_properties bit -- §3 ---- */
#define CL_QUEUE_RECORDABLE_QCOM                 0x40000000   /* (1u << 30u) */

/* ---- Entry points -- §3 ---- */
typedef cl_recording_qcom (*clNewRecordingQCOM_fn)(cl_command_queue recordable_queue, cl_int *errcode_ret);
typedef cl_int (*clEndRecordingQCOM_fn)(cl_recording_qcom recording);
typedef cl_int (*clReleaseRecordingQCOM_fn)(cl_recording_qcom recording);
typedef cl_int (*clRetainRecordingQCOM_fn)(cl_recording_qcom recording);

/* 13 parameters */
typedef cl_int (*clEnqueueRecordingQCOM_fn)(cl_command_queue command_queue, cl_recording_qcom recording,
    size_t num_args, const cl_array_arg_qcom *arg_array,
    size_t num_global_offsets, const cl_offset_qcom *global_offset_array,
    size_t num_global_workgroups, const cl_workgroup_qcom *global_workgroup_array,
    size_t num_local_workgroups, const cl_workgroup_qcom *local_workgroup_array,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);

/* 17 parameters */
typedef cl_int (*clEnqueueRecordingSVMQCOM_fn)(cl_command_queue command_queue, cl_recording_qcom recording,
    size_t num_args, const cl_array_arg_qcom *arg_array,
    size_t num_svm_args, const cl_array_arg_qcom *arg_svm_array,
    size_t num_global_offsets, const cl_offset_qcom *global_offset_array,
    size_t num_global_workgroups, const cl_workgroup_qcom *global_workgroup_array,
    size_t num_local_workgroups, const cl_workgroup_qcom *local_workgroup_array,
    size_t num_non_arg_objs, const cl_array_kernel_exec_info_qcom *non_arg_obj_array,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
