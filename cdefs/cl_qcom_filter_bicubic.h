/*
 * cl_qcom_filter_bicubic
 * What: bicubic (4x4) sampler filter mode for read_imagef.
 * Reference: qcom-extensions.md §10 (bicubic part)
 * Sources: [S1] cl_ext_qcom.h 2022 (section name), [S7] §9.3.4, [S8] qcom_filter_bicubic.cpp
 * Kernel-side QCOM_CLK_FILTER_BICUBIC: value NOT FOUND (compiler constant; not needed on the host).
 */

/* ---- cl_filter_mode (clCreateSampler filter_mode / CL_SAMPLER_FILTER_MODE) -- §10 ---- */
#define CL_FILTER_BICUBIC_QCOM                   0x411C
