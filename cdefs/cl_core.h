/*
 * cl_core.h -- OpenCL core subset (types, tokens and entry points used by qcom_ext)
 * What: the small part of the Khronos OpenCL 3.0 API that the vendor-extension
 *       declarations in this directory build on.
 * Reference: Khronos CL/cl.h (OpenCL 3.0, KhronosGroup/OpenCL-Headers) -- standard values;
 *            qcom-extensions.md §0 ("Common host-side facts": type sizes);
 *            portable-interop.md §2 (headers @ 15b536b7).
 * Sources: [S4] Khronos CL/cl.h + CL/cl_ext.h (cl_khr_icd error code).
 * Loaded first; every other file may use the types declared here.
 */

/* ---- Scalar types (cl_platform.h) ---- */
typedef int8_t      cl_char;
typedef uint8_t     cl_uchar;
typedef int16_t     cl_short;
typedef uint16_t    cl_ushort;
typedef int32_t     cl_int;
typedef uint32_t    cl_uint;
typedef int64_t     cl_long;
typedef uint64_t    cl_ulong;
typedef uint16_t    cl_half;
typedef float       cl_float;
typedef double      cl_double;

typedef cl_uint     cl_bool;
typedef cl_ulong    cl_bitfield;
typedef cl_ulong    cl_properties;
typedef cl_uint     cl_version;

/* ---- Opaque handles ---- */
typedef struct _cl_platform_id   *cl_platform_id;
typedef struct _cl_device_id     *cl_device_id;
typedef struct _cl_context       *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem           *cl_mem;
typedef struct _cl_program       *cl_program;
typedef struct _cl_kernel        *cl_kernel;
typedef struct _cl_event         *cl_event;
typedef struct _cl_sampler       *cl_sampler;

/* ---- Info / flag types ---- */
typedef cl_bitfield     cl_device_type;
typedef cl_uint         cl_platform_info;
typedef cl_uint         cl_device_info;
typedef cl_bitfield     cl_device_svm_capabilities;
typedef intptr_t        cl_context_properties;
typedef cl_uint         cl_context_info;
typedef cl_properties   cl_queue_properties;
typedef cl_bitfield     cl_command_queue_properties;
typedef cl_uint         cl_command_queue_info;
typedef cl_bitfield     cl_mem_flags;
typedef cl_properties   cl_mem_properties;
typedef cl_uint         cl_mem_object_type;
typedef cl_uint         cl_mem_info;
typedef cl_uint         cl_image_info;
typedef cl_uint         cl_channel_order;
typedef cl_uint         cl_channel_type;
typedef cl_uint         cl_addressing_mode;
typedef cl_uint         cl_filter_mode;
typedef cl_properties   cl_sampler_properties;   /* cl_bitfield before 3.0; same 64-bit ABI */
typedef cl_uint         cl_kernel_exec_info;
typedef cl_uint         cl_kernel_work_group_info;
typedef cl_uint         cl_kernel_sub_group_info;
typedef cl_uint         cl_program_build_info;
typedef cl_bitfield     cl_svm_mem_flags;
typedef cl_bitfield     cl_map_flags;

/* ---- Structs ---- */
typedef struct _cl_image_format {
    cl_channel_order    image_channel_order;
    cl_channel_type     image_channel_data_type;
} cl_image_format;

typedef struct _cl_image_desc {            /* OpenCL 1.2+/2.0 layout; LP64 size 72 */
    cl_mem_object_type  image_type;
    size_t              image_width;
    size_t              image_height;
    size_t              image_depth;
    size_t              image_array_size;
    size_t              image_row_pitch;
    size_t              image_slice_pitch;
    cl_uint             num_mip_levels;
    cl_uint             num_samples;
    union {
        cl_mem          buffer;
        cl_mem          mem_object;
    };
} cl_image_desc;

#define CL_NAME_VERSION_MAX_NAME_SIZE 0x40   /* 64 */

typedef struct _cl_name_version {          /* size 68 */
    cl_version          version;
    char                name[64];          /* CL_NAME_VERSION_MAX_NAME_SIZE */
} cl_name_version;

/* ---- Error codes ---- */
#define CL_SUCCESS                                   0x0
#define CL_DEVICE_NOT_FOUND                          -1
#define CL_DEVICE_NOT_AVAILABLE                      -2
#define CL_COMPILER_NOT_AVAILABLE                    -3
#define CL_MEM_OBJECT_ALLOCATION_FAILURE             -4
#define CL_OUT_OF_RESOURCES                          -5
#define CL_OUT_OF_HOST_MEMORY                        -6
#define CL_PROFILING_INFO_NOT_AVAILABLE              -7
#define CL_MEM_COPY_OVERLAP                          -8
#define CL_IMAGE_FORMAT_MISMATCH                     -9
#define CL_IMAGE_FORMAT_NOT_SUPPORTED                -10
#define CL_BUILD_PROGRAM_FAILURE                     -11
#define CL_MAP_FAILURE                               -12
#define CL_MISALIGNED_SUB_BUFFER_OFFSET              -13
#define CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST -14
#define CL_COMPILE_PROGRAM_FAILURE                   -15
#define CL_LINKER_NOT_AVAILABLE                      -16
#define CL_LINK_PROGRAM_FAILURE                      -17
#define CL_DEVICE_PARTITION_FAILED                   -18
#define CL_KERNEL_ARG_INFO_NOT_AVAILABLE             -19
#define CL_INVALID_VALUE                             -30
#define CL_INVALID_DEVICE_TYPE                       -31
#define CL_INVALID_PLATFORM                          -32
#define CL_INVALID_DEVICE                            -33
#define CL_INVALID_CONTEXT                           -34
#define CL_INVALID_QUEUE_PROPERTIES                  -35
#define CL_INVALID_COMMAND_QUEUE                     -36
#define CL_INVALID_HOST_PTR                          -37
#define CL_INVALID_MEM_OBJECT                        -38
#define CL_INVALID_IMAGE_FORMAT_DESCRIPTOR           -39
#define CL_INVALID_IMAGE_SIZE                        -40
#define CL_INVALID_SAMPLER                           -41
#define CL_INVALID_BINARY                            -42
#define CL_INVALID_BUILD_OPTIONS                     -43
#define CL_INVALID_PROGRAM                           -44
#define CL_INVALID_PROGRAM_EXECUTABLE                -45
#define CL_INVALID_KERNEL_NAME                       -46
#define CL_INVALID_KERNEL_DEFINITION                 -47
#define CL_INVALID_KERNEL                            -48
#define CL_INVALID_ARG_INDEX                         -49
#define CL_INVALID_ARG_VALUE                         -50
#define CL_INVALID_ARG_SIZE                          -51
#define CL_INVALID_KERNEL_ARGS                       -52
#define CL_INVALID_WORK_DIMENSION                    -53
#define CL_INVALID_WORK_GROUP_SIZE                   -54
#define CL_INVALID_WORK_ITEM_SIZE                    -55
#define CL_INVALID_GLOBAL_OFFSET                     -56
#define CL_INVALID_EVENT_WAIT_LIST                   -57
#define CL_INVALID_EVENT                             -58
#define CL_INVALID_OPERATION                         -59
#define CL_INVALID_GL_OBJECT                         -60
#define CL_INVALID_BUFFER_SIZE                       -61
#define CL_INVALID_MIP_LEVEL                         -62
#define CL_INVALID_GLOBAL_WORK_SIZE                  -63
#define CL_INVALID_PROPERTY                          -64
#define CL_INVALID_IMAGE_DESCRIPTOR                  -65
#define CL_INVALID_COMPILER_OPTIONS                  -66
#define CL_INVALID_LINKER_OPTIONS                    -67
#define CL_INVALID_DEVICE_PARTITION_COUNT            -68
#define CL_INVALID_PIPE_SIZE                         -69
#define CL_INVALID_DEVICE_QUEUE                      -70
#define CL_INVALID_SPEC_ID                           -71
#define CL_MAX_SIZE_RESTRICTION_EXCEEDED             -72
#define CL_PLATFORM_NOT_FOUND_KHR                    -1001   /* cl_khr_icd (cl_ext.h) */

/* ---- cl_bool ---- */
#define CL_FALSE                                     0x0
#define CL_TRUE                                      0x1

/* ---- cl_platform_info ---- */
#define CL_PLATFORM_PROFILE                          0x0900
#define CL_PLATFORM_VERSION                          0x0901
#define CL_PLATFORM_NAME                             0x0902
#define CL_PLATFORM_VENDOR                           0x0903
#define CL_PLATFORM_EXTENSIONS                       0x0904
#define CL_PLATFORM_HOST_TIMER_RESOLUTION            0x0905
#define CL_PLATFORM_NUMERIC_VERSION                  0x0906
#define CL_PLATFORM_EXTENSIONS_WITH_VERSION          0x0907

/* ---- cl_device_type (bitfield) ---- */
#define CL_DEVICE_TYPE_DEFAULT                       0x1          /* (1 << 0) */
#define CL_DEVICE_TYPE_CPU                           0x2          /* (1 << 1) */
#define CL_DEVICE_TYPE_GPU                           0x4          /* (1 << 2) */
#define CL_DEVICE_TYPE_ACCELERATOR                   0x8          /* (1 << 3) */
#define CL_DEVICE_TYPE_CUSTOM                        0x10         /* (1 << 4) */
#define CL_DEVICE_TYPE_ALL                           0xFFFFFFFF

/* ---- cl_device_info ---- */
#define CL_DEVICE_TYPE                               0x1000
#define CL_DEVICE_VENDOR_ID                          0x1001
#define CL_DEVICE_MAX_COMPUTE_UNITS                  0x1002
#define CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS           0x1003
#define CL_DEVICE_MAX_WORK_GROUP_SIZE                0x1004
#define CL_DEVICE_MAX_WORK_ITEM_SIZES                0x1005
#define CL_DEVICE_MAX_CLOCK_FREQUENCY                0x100C
#define CL_DEVICE_ADDRESS_BITS                       0x100D
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE                 0x1010
#define CL_DEVICE_IMAGE2D_MAX_WIDTH                  0x1011
#define CL_DEVICE_IMAGE2D_MAX_HEIGHT                 0x1012
#define CL_DEVICE_IMAGE3D_MAX_WIDTH                  0x1013
#define CL_DEVICE_IMAGE3D_MAX_HEIGHT                 0x1014
#define CL_DEVICE_IMAGE3D_MAX_DEPTH                  0x1015
#define CL_DEVICE_IMAGE_SUPPORT                      0x1016
#define CL_DEVICE_MEM_BASE_ADDR_ALIGN                0x1019
#define CL_DEVICE_GLOBAL_MEM_SIZE                    0x101F
#define CL_DEVICE_LOCAL_MEM_SIZE                     0x1023
#define CL_DEVICE_NAME                               0x102B
#define CL_DEVICE_VENDOR                             0x102C
#define CL_DRIVER_VERSION                            0x102D
#define CL_DEVICE_PROFILE                            0x102E
#define CL_DEVICE_VERSION                            0x102F
#define CL_DEVICE_EXTENSIONS                         0x1030
#define CL_DEVICE_PLATFORM                           0x1031
#define CL_DEVICE_OPENCL_C_VERSION                   0x103D
#define CL_DEVICE_IMAGE_MAX_BUFFER_SIZE              0x1040
#define CL_DEVICE_IMAGE_MAX_ARRAY_SIZE               0x1041
#define CL_DEVICE_PRINTF_BUFFER_SIZE                 0x1049   /* = CL_DEVICE_PRINTF_BUFFER_SIZE_QCOM, cl_qcom_limited_printf.h */
#define CL_DEVICE_IMAGE_PITCH_ALIGNMENT              0x104A   /* _KHR alias in cl_khr_image2d_from_buffer.h */
#define CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT       0x104B   /* _KHR alias in cl_khr_image2d_from_buffer.h */
#define CL_DEVICE_SVM_CAPABILITIES                   0x1053
#define CL_DEVICE_IL_VERSION                         0x105B
#define CL_DEVICE_MAX_NUM_SUB_GROUPS                 0x105C
#define CL_DEVICE_NUMERIC_VERSION                    0x105E
#define CL_DEVICE_EXTENSIONS_WITH_VERSION            0x1060
#define CL_DEVICE_OPENCL_C_ALL_VERSIONS              0x1066
#define CL_DEVICE_OPENCL_C_FEATURES                  0x106F

/* ---- cl_device_svm_capabilities (bitfield) ---- */
#define CL_DEVICE_SVM_COARSE_GRAIN_BUFFER            0x1          /* (1 << 0) */
#define CL_DEVICE_SVM_FINE_GRAIN_BUFFER              0x2          /* (1 << 1) */
#define CL_DEVICE_SVM_FINE_GRAIN_SYSTEM              0x4          /* (1 << 2) */
#define CL_DEVICE_SVM_ATOMICS                        0x8          /* (1 << 3) */

/* ---- cl_context_info / cl_context_properties ---- */
#define CL_CONTEXT_REFERENCE_COUNT                   0x1080
#define CL_CONTEXT_DEVICES                           0x1081
#define CL_CONTEXT_PROPERTIES                        0x1082
#define CL_CONTEXT_NUM_DEVICES                       0x1083
#define CL_CONTEXT_PLATFORM                          0x1084

/* ---- cl_command_queue_info / cl_queue_properties keys ---- */
#define CL_QUEUE_CONTEXT                             0x1090
#define CL_QUEUE_DEVICE                              0x1091
#define CL_QUEUE_REFERENCE_COUNT                     0x1092
#define CL_QUEUE_PROPERTIES                          0x1093
#define CL_QUEUE_SIZE                                0x1094
#define CL_QUEUE_PROPERTIES_ARRAY                    0x1098

/* ---- cl_command_queue_properties (bitfield) ---- */
#define CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE       0x1          /* (1 << 0) */
#define CL_QUEUE_PROFILING_ENABLE                    0x2          /* (1 << 1) */
#define CL_QUEUE_ON_DEVICE                           0x4          /* (1 << 2) */
#define CL_QUEUE_ON_DEVICE_DEFAULT                   0x8          /* (1 << 3) */
/* bit 30 (0x40000000) = CL_QUEUE_RECORDABLE_QCOM, cl_qcom_recordable_queues.h */

/* ---- cl_mem_flags / cl_svm_mem_flags (bitfield) ---- */
#define CL_MEM_READ_WRITE                            0x1          /* (1 << 0) */
#define CL_MEM_WRITE_ONLY                            0x2          /* (1 << 1) */
#define CL_MEM_READ_ONLY                             0x4          /* (1 << 2) */
#define CL_MEM_USE_HOST_PTR                          0x8          /* (1 << 3) */
#define CL_MEM_ALLOC_HOST_PTR                        0x10         /* (1 << 4) */
#define CL_MEM_COPY_HOST_PTR                         0x20         /* (1 << 5) */
#define CL_MEM_HOST_WRITE_ONLY                       0x80         /* (1 << 7) */
#define CL_MEM_HOST_READ_ONLY                        0x100        /* (1 << 8) */
#define CL_MEM_HOST_NO_ACCESS                        0x200        /* (1 << 9) */
#define CL_MEM_SVM_FINE_GRAIN_BUFFER                 0x400        /* (1 << 10), cl_svm_mem_flags only */
#define CL_MEM_SVM_ATOMICS                           0x800        /* (1 << 11), cl_svm_mem_flags only */
#define CL_MEM_KERNEL_READ_AND_WRITE                 0x1000       /* (1 << 12) */
/* QCOM bits: 29 EXT_HOST_PTR, 37 OTHER_IMAGE, 38 COMPRESSED_IMAGE, 39 COMPRESSED_YUV_IMAGE (own files) */

/* ---- cl_map_flags (bitfield) ---- */
#define CL_MAP_READ                                  0x1          /* (1 << 0) */
#define CL_MAP_WRITE                                 0x2          /* (1 << 1) */
#define CL_MAP_WRITE_INVALIDATE_REGION               0x4          /* (1 << 2) */

/* ---- cl_channel_order ---- */
#define CL_R                                         0x10B0
#define CL_A                                         0x10B1
#define CL_RG                                        0x10B2
#define CL_RA                                        0x10B3
#define CL_RGB                                       0x10B4
#define CL_RGBA                                      0x10B5
#define CL_BGRA                                      0x10B6
#define CL_ARGB                                      0x10B7
#define CL_INTENSITY                                 0x10B8
#define CL_LUMINANCE                                 0x10B9
#define CL_Rx                                        0x10BA
#define CL_RGx                                       0x10BB
#define CL_RGBx                                      0x10BC
#define CL_DEPTH                                     0x10BD
#define CL_DEPTH_STENCIL                             0x10BE
#define CL_sRGB                                      0x10BF
#define CL_sRGBx                                     0x10C0
#define CL_sRGBA                                     0x10C1
#define CL_sBGRA                                     0x10C2
#define CL_ABGR                                      0x10C3

/* ---- cl_channel_type ---- */
#define CL_SNORM_INT8                                0x10D0
#define CL_SNORM_INT16                               0x10D1
#define CL_UNORM_INT8                                0x10D2
#define CL_UNORM_INT16                               0x10D3
#define CL_UNORM_SHORT_565                           0x10D4
#define CL_UNORM_SHORT_555                           0x10D5
#define CL_UNORM_INT_101010                          0x10D6
#define CL_SIGNED_INT8                               0x10D7
#define CL_SIGNED_INT16                              0x10D8
#define CL_SIGNED_INT32                              0x10D9
#define CL_UNSIGNED_INT8                             0x10DA
#define CL_UNSIGNED_INT16                            0x10DB
#define CL_UNSIGNED_INT32                            0x10DC
#define CL_HALF_FLOAT                                0x10DD
#define CL_FLOAT                                     0x10DE
#define CL_UNORM_INT24                               0x10DF
#define CL_UNORM_INT_101010_2                        0x10E0

/* ---- cl_mem_object_type ---- */
#define CL_MEM_OBJECT_BUFFER                         0x10F0
#define CL_MEM_OBJECT_IMAGE2D                        0x10F1
#define CL_MEM_OBJECT_IMAGE3D                        0x10F2
#define CL_MEM_OBJECT_IMAGE2D_ARRAY                  0x10F3
#define CL_MEM_OBJECT_IMAGE1D                        0x10F4
#define CL_MEM_OBJECT_IMAGE1D_ARRAY                  0x10F5
#define CL_MEM_OBJECT_IMAGE1D_BUFFER                 0x10F6

/* ---- cl_mem_info ---- */
#define CL_MEM_TYPE                                  0x1100
#define CL_MEM_FLAGS                                 0x1101
#define CL_MEM_SIZE                                  0x1102
#define CL_MEM_HOST_PTR                              0x1103
#define CL_MEM_MAP_COUNT                             0x1104
#define CL_MEM_REFERENCE_COUNT                       0x1105
#define CL_MEM_CONTEXT                               0x1106
#define CL_MEM_ASSOCIATED_MEMOBJECT                  0x1107
#define CL_MEM_OFFSET                                0x1108
#define CL_MEM_USES_SVM_POINTER                      0x1109
#define CL_MEM_PROPERTIES                            0x110A

/* ---- cl_image_info ---- */
#define CL_IMAGE_FORMAT                              0x1110
#define CL_IMAGE_ELEMENT_SIZE                        0x1111
#define CL_IMAGE_ROW_PITCH                           0x1112
#define CL_IMAGE_SLICE_PITCH                         0x1113
#define CL_IMAGE_WIDTH                               0x1114
#define CL_IMAGE_HEIGHT                              0x1115
#define CL_IMAGE_DEPTH                               0x1116
#define CL_IMAGE_ARRAY_SIZE                          0x1117
#define CL_IMAGE_BUFFER                              0x1118
#define CL_IMAGE_NUM_MIP_LEVELS                      0x1119
#define CL_IMAGE_NUM_SAMPLES                         0x111A

/* ---- cl_addressing_mode ---- */
#define CL_ADDRESS_NONE                              0x1130
#define CL_ADDRESS_CLAMP_TO_EDGE                     0x1131
#define CL_ADDRESS_CLAMP                             0x1132
#define CL_ADDRESS_REPEAT                            0x1133
#define CL_ADDRESS_MIRRORED_REPEAT                   0x1134

/* ---- cl_filter_mode ---- (CL_FILTER_BICUBIC_QCOM 0x411C: cl_qcom_filter_bicubic.h) */
#define CL_FILTER_NEAREST                            0x1140
#define CL_FILTER_LINEAR                             0x1141

/* ---- cl_sampler_info / cl_sampler_properties keys ---- */
#define CL_SAMPLER_REFERENCE_COUNT                   0x1150
#define CL_SAMPLER_CONTEXT                           0x1151
#define CL_SAMPLER_NORMALIZED_COORDS                 0x1152
#define CL_SAMPLER_ADDRESSING_MODE                   0x1153
#define CL_SAMPLER_FILTER_MODE                       0x1154

/* ---- cl_program_build_info ---- */
#define CL_PROGRAM_BUILD_STATUS                      0x1181
#define CL_PROGRAM_BUILD_OPTIONS                     0x1182
#define CL_PROGRAM_BUILD_LOG                         0x1183

/* ---- cl_kernel_work_group_info ---- (CL_KERNEL_WAVE_SIZE_QCOM 0xAA02: cl_qcom_reqd_sub_group_size.h) */
#define CL_KERNEL_WORK_GROUP_SIZE                    0x11B0
#define CL_KERNEL_COMPILE_WORK_GROUP_SIZE            0x11B1
#define CL_KERNEL_LOCAL_MEM_SIZE                     0x11B2
#define CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE 0x11B3
#define CL_KERNEL_PRIVATE_MEM_SIZE                   0x11B4
#define CL_KERNEL_GLOBAL_WORK_SIZE                   0x11B5

/* ---- cl_kernel_exec_info ---- */
#define CL_KERNEL_EXEC_INFO_SVM_PTRS                 0x11B6
#define CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM    0x11B7

/* ---- cl_kernel_sub_group_info ---- */
#define CL_KERNEL_LOCAL_SIZE_FOR_SUB_GROUP_COUNT     0x11B8
#define CL_KERNEL_MAX_NUM_SUB_GROUPS                 0x11B9
#define CL_KERNEL_COMPILE_NUM_SUB_GROUPS             0x11BA
#define CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE     0x2033
#define CL_KERNEL_SUB_GROUP_COUNT_FOR_NDRANGE        0x2034

/* ---- Entry points (Khronos-style function-pointer typedefs) ---- */
/* Platform / device */
typedef cl_int (*clGetPlatformIDs_fn)(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms);
typedef cl_int (*clGetPlatformInfo_fn)(cl_platform_id platform, cl_platform_info param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
typedef cl_int (*clGetDeviceIDs_fn)(cl_platform_id platform, cl_device_type device_type, cl_uint num_entries, cl_device_id *devices, cl_uint *num_devices);
typedef cl_int (*clGetDeviceInfo_fn)(cl_device_id device, cl_device_info param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);

/* Context */
typedef cl_context (*clCreateContext_fn)(const cl_context_properties *properties, cl_uint num_devices, const cl_device_id *devices, void (*pfn_notify)(const char *errinfo, const void *private_info, size_t cb, void *user_data), void *user_data, cl_int *errcode_ret);
typedef cl_int (*clRetainContext_fn)(cl_context context);
typedef cl_int (*clReleaseContext_fn)(cl_context context);
typedef cl_int (*clGetContextInfo_fn)(cl_context context, cl_context_info param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);

/* Command queue */
typedef cl_command_queue (*clCreateCommandQueue_fn)(cl_context context, cl_device_id device, cl_command_queue_properties properties, cl_int *errcode_ret);
typedef cl_command_queue (*clCreateCommandQueueWithProperties_fn)(cl_context context, cl_device_id device, const cl_queue_properties *properties, cl_int *errcode_ret);
typedef cl_int (*clRetainCommandQueue_fn)(cl_command_queue command_queue);
typedef cl_int (*clReleaseCommandQueue_fn)(cl_command_queue command_queue);
typedef cl_int (*clGetCommandQueueInfo_fn)(cl_command_queue command_queue, cl_command_queue_info param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);

/* Memory objects */
typedef cl_mem (*clCreateBuffer_fn)(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr, cl_int *errcode_ret);
typedef cl_mem (*clCreateBufferWithProperties_fn)(cl_context context, const cl_mem_properties *properties, cl_mem_flags flags, size_t size, void *host_ptr, cl_int *errcode_ret);
typedef cl_mem (*clCreateImage_fn)(cl_context context, cl_mem_flags flags, const cl_image_format *image_format, const cl_image_desc *image_desc, void *host_ptr, cl_int *errcode_ret);
typedef cl_mem (*clCreateImageWithProperties_fn)(cl_context context, const cl_mem_properties *properties, cl_mem_flags flags, const cl_image_format *image_format, const cl_image_desc *image_desc, void *host_ptr, cl_int *errcode_ret);
typedef cl_int (*clRetainMemObject_fn)(cl_mem memobj);
typedef cl_int (*clReleaseMemObject_fn)(cl_mem memobj);
typedef cl_int (*clGetMemObjectInfo_fn)(cl_mem memobj, cl_mem_info param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
typedef cl_int (*clGetImageInfo_fn)(cl_mem image, cl_image_info param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
typedef cl_int (*clGetSupportedImageFormats_fn)(cl_context context, cl_mem_flags flags, cl_mem_object_type image_type, cl_uint num_entries, cl_image_format *image_formats, cl_uint *num_image_formats);

/* Samplers */
typedef cl_sampler (*clCreateSampler_fn)(cl_context context, cl_bool normalized_coords, cl_addressing_mode addressing_mode, cl_filter_mode filter_mode, cl_int *errcode_ret);
typedef cl_sampler (*clCreateSamplerWithProperties_fn)(cl_context context, const cl_sampler_properties *sampler_properties, cl_int *errcode_ret);
typedef cl_int (*clReleaseSampler_fn)(cl_sampler sampler);

/* Kernels */
typedef cl_int (*clSetKernelArg_fn)(cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void *arg_value);
typedef cl_int (*clSetKernelArgSVMPointer_fn)(cl_kernel kernel, cl_uint arg_index, const void *arg_value);
typedef cl_int (*clSetKernelExecInfo_fn)(cl_kernel kernel, cl_kernel_exec_info param_name, size_t param_value_size, const void *param_value);
typedef cl_int (*clGetKernelWorkGroupInfo_fn)(cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info param_name, size_t param_value_size, void *param_value, size_t *param_value_size_ret);
typedef cl_int (*clGetKernelSubGroupInfo_fn)(cl_kernel kernel, cl_device_id device, cl_kernel_sub_group_info param_name, size_t input_value_size, const void *input_value, size_t param_value_size, void *param_value, size_t *param_value_size_ret);

/* Enqueue / sync */
typedef cl_int (*clEnqueueNDRangeKernel_fn)(cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim, const size_t *global_work_offset, const size_t *global_work_size, const size_t *local_work_size, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
typedef cl_int (*clEnqueueReadBuffer_fn)(cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_read, size_t offset, size_t size, void *ptr, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
typedef cl_int (*clEnqueueWriteBuffer_fn)(cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_write, size_t offset, size_t size, const void *ptr, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
typedef cl_int (*clFinish_fn)(cl_command_queue command_queue);
typedef cl_int (*clFlush_fn)(cl_command_queue command_queue);
typedef cl_int (*clWaitForEvents_fn)(cl_uint num_events, const cl_event *event_list);
typedef cl_int (*clReleaseEvent_fn)(cl_event event);

/* SVM */
typedef void * (*clSVMAlloc_fn)(cl_context context, cl_svm_mem_flags flags, size_t size, cl_uint alignment);
typedef void (*clSVMFree_fn)(cl_context context, void *svm_pointer);

/* Extension function lookup */
typedef void * (*clGetExtensionFunctionAddressForPlatform_fn)(cl_platform_id platform, const char *func_name);
