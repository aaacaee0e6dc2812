/*
 * cl_qcom_priority_hint
 * What: context-level GPU scheduling priority hint (context-creation property only).
 * Reference: qcom-extensions.md §2
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] cl_qcom_priority_hint.txt (Version 5, 2018/01/19), [S7] §9.1.2
 */

/* ---- Types -- §2 ---- */
typedef cl_uint cl_priority_hint;

/* ---- cl_context_properties key -- §2 ---- */
#define CL_CONTEXT_PRIORITY_HINT_QCOM            0x40C9

/* ---- cl_priority_hint values -- §2 ---- */
#define CL_PRIORITY_HINT_HIGH_QCOM               0x40CA
#define CL_PRIORITY_HINT_NORMAL_QCOM             0x40CB   /* default */
#define CL_PRIORITY_HINT_LOW_QCOM                0x40CC
#define CL_PRIORITY_HINT_NONE_QCOM               0x0      /* S1 header only, not in the spec */
