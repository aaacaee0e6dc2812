/* A fake vendor OpenCL driver that is a real OpenCL implementation: test support for
 * qcom_ext (tests/fakes/opencl_shim/__init__.py builds it; see its docstring).
 *
 * Every cl* entry point of the system ICD loader is exported as a trampoline (an
 * indirect jump through a pointer resolved in the constructor, so no signature is
 * needed) to the same entry point of the backend:
 *  - a private copy of ocl-icd (another file name, another SONAME: never the instance
 *    another loader of the process is) configured, only while it initialises, to see
 *    exactly one vendor ICD (pocl or Oclgrind): SHIM_VENDORS names that vendors dir;
 *  - or, where SHIM_VENDORS is empty, another library opened by the name SHIM_BACKEND
 *    (a bare name: found through LD_LIBRARY_PATH only), as split Android drivers do.
 *
 * The look (SHIM_LOOK: 0 none, 1 Qualcomm, 2 Mesa rusticl) is made by giving every
 * platform and root device a patched copy of its ICD dispatch table whose
 * clGetPlatformInfo / clGetDeviceInfo answer the looked-for strings: whoever calls,
 * through these exports, the private loader or an outer ICD loader, sees them.
 *
 * SHIM_ICD 1: clIcdGetPlatformIDsKHR is exported and answered by
 * clGetExtensionFunctionAddress (an ICD, as Qualcomm Linux's adrenocl); 0: neither
 * (Android's libOpenCL.so, which ocl-icd cannot load).
 *
 * shim_config.h (generated) defines SHIM_LOOK, SHIM_ICD, SHIM_BACKEND, SHIM_VENDORS and
 * SHIM_ENTRIES(X): X(name) for every trampolined entry point.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim_config.h"

#define SHIM_LOOK_NONE 0
#define SHIM_LOOK_QUALCOMM 1
#define SHIM_LOOK_RUSTICL 2

/* ---- trampolines --------------------------------------------------------------- */

#define SHIM_POINTER(name) __attribute__((visibility("hidden"), used)) void *shim_ptr_##name;
SHIM_ENTRIES(SHIM_POINTER)

#if defined(__x86_64__)
#define SHIM_TRAMPOLINE(name)                                                             \
    __asm__(".text\n.globl " #name "\n.type " #name ",@function\n.p2align 4\n" #name      \
            ":\n\tjmp *shim_ptr_" #name "(%rip)\n.size " #name ",.-" #name "\n");
#elif defined(__aarch64__)
#define SHIM_TRAMPOLINE(name)                                                             \
    __asm__(".text\n.globl " #name "\n.type " #name ",%function\n.p2align 2\n" #name      \
            ":\n\tadrp x16, shim_ptr_" #name "\n\tldr x16, [x16, :lo12:shim_ptr_" #name   \
            "]\n\tbr x16\n.size " #name ",.-" #name "\n");
#else
#error "opencl shim: trampolines are written for x86-64 and aarch64 only"
#endif
SHIM_ENTRIES(SHIM_TRAMPOLINE)

struct shim_entry {
    const char *name;
    void **pointer;
};
#define SHIM_ROW(name) {#name, &shim_ptr_##name},
static const struct shim_entry shim_entries[] = {SHIM_ENTRIES(SHIM_ROW){NULL, NULL}};

static void *backend;
static void *(CL_API_CALL *backend_gefa)(const char *);
static void *(CL_API_CALL *backend_gefa_platform)(cl_platform_id, const char *);
static cl_int(CL_API_CALL *backend_platform_ids)(cl_uint, cl_platform_id *, cl_uint *);

/* What an entry point does when the backend could not be loaded: the caller's first
 * call (clGetPlatformIDs) reports no platform; any other reports an invalid operation. */
static cl_int CL_API_CALL no_platform(cl_uint entries, cl_platform_id *platforms,
                                      cl_uint *count) {
    (void)entries, (void)platforms;
    if (count)
        *count = 0;
    return CL_PLATFORM_NOT_FOUND_KHR;
}

static intptr_t no_backend(void) { return CL_INVALID_OPERATION; }

/* ---- the look ------------------------------------------------------------------ */

struct patched {
    struct _cl_icd_dispatch table; /* first: an object's dispatch pointer points here */
    const struct _cl_icd_dispatch *original;
    struct patched *next;
};
static struct patched *patched_tables;

static struct patched *patched_of(const void *object) {
    const void *dispatch = *(const void *const *)object;
    for (struct patched *p = patched_tables; p; p = p->next)
        if ((const void *)&p->table == dispatch)
            return p;
    return NULL;
}

static cl_int answer(const void *data, size_t length, size_t size, void *value,
                     size_t *size_ret) {
    if (value) {
        if (size < length)
            return CL_INVALID_VALUE;
        memcpy(value, data, length);
    }
    if (size_ret)
        *size_ret = length;
    return CL_SUCCESS;
}

/* "OpenCL M.m" of the backend's own version string, so that a look never claims an
 * OpenCL version the backend does not implement. */
static void opencl_version(const char *text, int *major, int *minor) {
    *major = 1, *minor = 2;
    if (text)
        sscanf(text, "OpenCL %d.%d", major, minor);
}

#define QCOM_BUILD "QUALCOMM build: commit #16c1863 changeid #I6928db2619 Date: 01/19/23 Thu"
#define QCOM_COMPILER "Compiler E031.47.00.00"

static cl_int CL_API_CALL look_platform_info(cl_platform_id platform, cl_platform_info param,
                                             size_t size, void *value, size_t *size_ret) {
    struct patched *p = patched_of(platform);
    if (!p)
        return CL_INVALID_PLATFORM;
    const char *text = NULL;
    char buffer[512], original[256] = "";
    int major, minor;
    switch (param) {
    case CL_PLATFORM_NAME:
        text = SHIM_LOOK == SHIM_LOOK_QUALCOMM ? "QUALCOMM Snapdragon(TM)" : "rusticl";
        break;
    case CL_PLATFORM_VENDOR:
        text = SHIM_LOOK == SHIM_LOOK_QUALCOMM ? "QUALCOMM" : "Mesa/X.org";
        break;
    case CL_PLATFORM_VERSION:
        p->original->clGetPlatformInfo(platform, param, sizeof original - 1, original, NULL);
        opencl_version(original, &major, &minor);
        if (SHIM_LOOK == SHIM_LOOK_QUALCOMM)
            snprintf(buffer, sizeof buffer, "OpenCL %d.%d " QCOM_BUILD, major, minor);
        else
            snprintf(buffer, sizeof buffer, "OpenCL %d.%d ", major, minor);
        text = buffer;
        break;
    default:
        return p->original->clGetPlatformInfo(platform, param, size, value, size_ret);
    }
    return answer(text, strlen(text) + 1, size, value, size_ret);
}

static cl_int CL_API_CALL look_device_info(cl_device_id device, cl_device_info param,
                                           size_t size, void *value, size_t *size_ret) {
    struct patched *p = patched_of(device);
    if (!p)
        return CL_INVALID_DEVICE;
    const int qualcomm = SHIM_LOOK == SHIM_LOOK_QUALCOMM;
    const char *text = NULL;
    char buffer[512], original[256] = "";
    int major, minor;
    cl_uint vendor_id = 0x5143;
    switch (param) {
    case CL_DEVICE_NAME:
        text = qualcomm ? "QUALCOMM Adreno(TM) 740" : "FD643";
        break;
    case CL_DEVICE_VENDOR:
        text = qualcomm ? "QUALCOMM" : "Qualcomm";
        break;
    case CL_DEVICE_VENDOR_ID:
        return answer(&vendor_id, sizeof vendor_id, size, value, size_ret);
    case CL_DEVICE_VERSION:
    case CL_DRIVER_VERSION:
        p->original->clGetDeviceInfo(device, CL_DEVICE_VERSION, sizeof original - 1, original,
                                     NULL);
        opencl_version(original, &major, &minor);
        if (param == CL_DEVICE_VERSION)
            snprintf(buffer, sizeof buffer,
                     qualcomm ? "OpenCL %d.%d Adreno(TM) 740" : "OpenCL %d.%d ", major, minor);
        else if (qualcomm)
            snprintf(buffer, sizeof buffer, "OpenCL %d.%d " QCOM_BUILD " " QCOM_COMPILER, major,
                     minor);
        else
            snprintf(buffer, sizeof buffer, "25.0.7");
        text = buffer;
        break;
    default:
        return p->original->clGetDeviceInfo(device, param, size, value, size_ret);
    }
    return answer(text, strlen(text) + 1, size, value, size_ret);
}

/* Give `object` (a platform or device: its first member is its dispatch pointer) a
 * patched copy of its dispatch table, one copy per original table. */
static void patch(void *object) {
    if (patched_of(object))
        return;
    const struct _cl_icd_dispatch *original = *(const struct _cl_icd_dispatch **)object;
    struct patched *p;
    for (p = patched_tables; p && p->original != original; p = p->next)
        ;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p)
            abort();
        memcpy(&p->table, original, sizeof p->table);
        p->table.clGetPlatformInfo = look_platform_info;
        p->table.clGetDeviceInfo = look_device_info;
        p->original = original;
        p->next = patched_tables;
        patched_tables = p;
    }
    *(const struct _cl_icd_dispatch **)object = &p->table;
}

static void patch_all(void) {
    cl_uint count = 0, devices = 0;
    if (backend_platform_ids(0, NULL, &count) != CL_SUCCESS || count == 0)
        return;
    cl_platform_id *platforms = calloc(count, sizeof *platforms);
    if (!platforms || backend_platform_ids(count, platforms, NULL) != CL_SUCCESS)
        abort();
    cl_int(CL_API_CALL * device_ids)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *,
                                     cl_uint *) = shim_ptr_clGetDeviceIDs;
    for (cl_uint i = 0; i < count; i++) {
        if (device_ids(platforms[i], CL_DEVICE_TYPE_ALL, 0, NULL, &devices) == CL_SUCCESS &&
            devices) {
            cl_device_id *list = calloc(devices, sizeof *list);
            if (!list || device_ids(platforms[i], CL_DEVICE_TYPE_ALL, devices, list, NULL))
                abort();
            for (cl_uint d = 0; d < devices; d++)
                patch(list[d]);
            free(list);
        }
        patch(platforms[i]);
    }
    free(platforms);
}

/* ---- loading the backend ------------------------------------------------------- */

static char *saved(const char *name) {
    const char *value = getenv(name);
    return value ? strdup(value) : NULL;
}

static void restore(const char *name, char *value) {
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    free(value);
}

__attribute__((constructor)) static void shim_init(void) {
    const int private_loader = SHIM_VENDORS[0] != '\0';
    char *vendors = saved("OCL_ICD_VENDORS"), *filenames = saved("OCL_ICD_FILENAMES");
    char *vendor_path = saved("OPENCL_VENDOR_PATH");
    if (private_loader) {
        setenv("OCL_ICD_VENDORS", SHIM_VENDORS, 1);
        unsetenv("OCL_ICD_FILENAMES");
        unsetenv("OPENCL_VENDOR_PATH");
    }
    backend = dlopen(SHIM_BACKEND, RTLD_NOW | RTLD_LOCAL);
    if (!backend)
        fprintf(stderr, "opencl shim: cannot load its backend: %s\n", dlerror());
    for (const struct shim_entry *e = shim_entries; e->name; e++) {
        *e->pointer = backend ? dlsym(backend, e->name) : NULL;
        if (!*e->pointer && backend) {
            fprintf(stderr, "opencl shim: the backend %s has no %s\n", SHIM_BACKEND, e->name);
            abort();
        }
        if (!*e->pointer)
            *e->pointer = (void *)no_backend;
    }
    if (backend) {
        backend_gefa = dlsym(backend, "clGetExtensionFunctionAddress");
        backend_gefa_platform = dlsym(backend, "clGetExtensionFunctionAddressForPlatform");
        backend_platform_ids = shim_ptr_clGetPlatformIDs;
        /* The first call initialises the private loader: it reads OCL_ICD_VENDORS now. */
        if (SHIM_LOOK != SHIM_LOOK_NONE)
            patch_all();
        else if (private_loader)
            backend_platform_ids(0, NULL, &(cl_uint){0});
    } else {
        shim_ptr_clGetPlatformIDs = (void *)no_platform;
    }
    if (private_loader) {
        restore("OCL_ICD_VENDORS", vendors);
        restore("OCL_ICD_FILENAMES", filenames);
        restore("OPENCL_VENDOR_PATH", vendor_path);
    } else {
        free(vendors), free(filenames), free(vendor_path);
    }
}

/* ---- the ICD entry --------------------------------------------------------------- */
/* Static functions are what the shim's own code calls: an exported name could be
 * interposed by another library's definition. */

static cl_int CL_API_CALL icd_platform_ids(cl_uint entries, cl_platform_id *platforms,
                                           cl_uint *count) {
    cl_int(CL_API_CALL * ids)(cl_uint, cl_platform_id *, cl_uint *) = shim_ptr_clGetPlatformIDs;
    return ids(entries, platforms, count);
}

#if SHIM_ICD
CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint entries,
                                                       cl_platform_id *platforms,
                                                       cl_uint *count) {
    return icd_platform_ids(entries, platforms, count);
}
#endif

/* The address of an extension entry point; clIcdGetPlatformIDsKHR only from an ICD. */
static void *extension_address(cl_platform_id platform, int for_platform, const char *name) {
    if (name && strcmp(name, "clIcdGetPlatformIDsKHR") == 0)
        return SHIM_ICD ? (void *)icd_platform_ids : NULL;
    if (for_platform)
        return backend_gefa_platform ? backend_gefa_platform(platform, name) : NULL;
    return backend_gefa ? backend_gefa(name) : NULL;
}

CL_API_ENTRY void *CL_API_CALL clGetExtensionFunctionAddress(const char *name) {
    return extension_address(NULL, 0, name);
}

CL_API_ENTRY void *CL_API_CALL clGetExtensionFunctionAddressForPlatform(cl_platform_id platform,
                                                                        const char *name) {
    return extension_address(platform, 1, name);
}
