/*
 * cl_img_egl_image
 * What: create a cl_mem from an EGLImage (IMG extension, reported by older Adreno drivers
 *       and declared in the 2017 Qualcomm header).
 * Reference: qcom-extensions.md §19
 * Sources: [S3] cl_ext_qcom.h 2017 (inc/CL/cl_ext_qcom.h); device lists [L2], [L6]
 */

/* ---- Types -- §19 (both void * in S3) ---- */
typedef void *CLeglImageIMG;
typedef void *CLeglDisplayIMG;

/* ---- Entry points -- §19 ---- */
typedef cl_mem (*clCreateFromEGLImageIMG_fn)(cl_context context, cl_mem_flags flags, CLeglImageIMG image, CLeglDisplayIMG display, cl_int *errcode_ret);
