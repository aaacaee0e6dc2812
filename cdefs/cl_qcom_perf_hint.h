/*
 * cl_qcom_perf_hint
 * What: context-level GPU performance (clock/DCVS) hint, at creation or via clSetPerfHintQCOM.
 * Reference: qcom-extensions.md §1
 * Sources: [S1] cl_ext_qcom.h 2022, [S3] cl_qcom_perf_hint.txt (Version 4, 2018/01/19),
 *          [S4] Khronos cl_ext.h, [S5] Khronos cl.xml + asciidoc (v1.0.5), [S6], [S7] §9.1.1
 */

/* ---- Types -- §1 (same ABI; S1/S3/MACE name vs S4/S5 name) ---- */
typedef cl_uint cl_perf_hint;          /* S1, S3 */
typedef cl_uint cl_perf_hint_qcom;     /* S4, S5 */

/* ---- cl_context_properties key (also returned in CL_CONTEXT_PROPERTIES) -- §1 ---- */
#define CL_CONTEXT_PERF_HINT_QCOM                0x40C2

/* ---- cl_perf_hint values -- §1 ---- */
#define CL_PERF_HINT_HIGH_QCOM                   0x40C3   /* default */
#define CL_PERF_HINT_NORMAL_QCOM                 0x40C4   /* balanced / DCVS */
#define CL_PERF_HINT_LOW_QCOM                    0x40C5   /* low power */

/* ---- Entry points -- §1 (S4 types perf_hint as cl_perf_hint_qcom) ---- */
typedef cl_int (*clSetPerfHintQCOM_fn)(cl_context context, cl_perf_hint perf_hint);
