/*
 * cl_khr_integer_dot_product
 * What: Khronos 4x8-bit integer dot-product built-ins; portable counterpart of the
 *       kernel-only cl_qcom_dot_product8.
 * Reference: portable-interop.md §2.3 (Khronos cl.h / cl_ext.h @ 15b536b7, extension version 2.0.0)
 * Sources: Khronos CL/cl_ext.h, OpenCL-Docs OpenCL_C.txt
 */

/* Types -- §2.3 */
typedef cl_bitfield cl_device_integer_dot_product_capabilities_khr;

typedef struct _cl_device_integer_dot_product_acceleration_properties_khr {   /* size 24 */
    cl_bool signed_accelerated;
    cl_bool unsigned_accelerated;
    cl_bool mixed_signedness_accelerated;
    cl_bool accumulating_saturating_signed_accelerated;
    cl_bool accumulating_saturating_unsigned_accelerated;
    cl_bool accumulating_saturating_mixed_signedness_accelerated;
} cl_device_integer_dot_product_acceleration_properties_khr;

/* cl_device_integer_dot_product_capabilities_khr (bitfield) -- §2.3 */
#define CL_DEVICE_INTEGER_DOT_PRODUCT_INPUT_4x8BIT_PACKED_KHR                   0x1   /* (1 << 0) */
#define CL_DEVICE_INTEGER_DOT_PRODUCT_INPUT_4x8BIT_KHR                          0x2   /* (1 << 1) */

/* cl_device_info -- §2.3 */
#define CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR                          0x1073
#define CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_8BIT_KHR          0x1074
#define CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_4x8BIT_PACKED_KHR 0x1075
