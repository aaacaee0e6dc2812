/*
 * cl_qcom_ml_ops (CLML)
 * What: Adreno OpenCL ML operators; only the interface-version query and the
 *       interface-table bootstrap are declared here.
 * Reference: qcom-extensions.md §17
 * Sources: [S9] cl_qcom_ml_ops.h v3.0 ("Copyright (c) 2019-2022"), [S10] TVM CLML runtime,
 *          [S7] §9.4.2-9.4.3, [S8] README
 * Not declared: the CLMLInterfaceV<N>QCOM tables (struct of two cl_int then function pointers).
 * They are versioned (TVM handles majors 1-5), member order differs across versions, and this
 * binding does not need them; the header-inline clGetMLInterfaceV<N>QCOM helpers and the
 * CL_GET_ML_INTERFACE_QCOM macro are not exported symbols.
 */

/* ---- Header version macros -- §17 (S9) ---- */
#define CL_QCOM_ML_OPS_H_MAJOR_VERSION           0x3
#define CL_QCOM_ML_OPS_H_MINOR_VERSION           0x0

/* ---- Entry points (exported) -- §17 ----
 * Call pattern (TVM): (NULL, NULL, 0, &n), then with arrays of n; pick major[n-1], minor[n-1]. */
typedef cl_int (*clQueryMLInterfaceVersionsQCOM_fn)(cl_int *pMajorVersions, cl_int *pMinorVersions, cl_uint numVersions, cl_uint *pNumVersionsRet);
/* pInterface is really CLMLInterfaceVxQCOM ** passed as void * */
typedef cl_int (*clGetMLInterfaceQCOM_fn)(void *pInterface, cl_int majorVersion, cl_int minorVersion);
