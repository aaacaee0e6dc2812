/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_subgroup_shuffle (qcom-extensions.md section 9; guide section 5) -----------
 * gentype qcom_sub_group_shuffle_{up,down,rotate_up,rotate_down,xor}(
 *     gentype value, uint offset, qcom_sub_group_shuffle_width_modes_t width,
 *     gentype default_value)
 * gentype: uchar char ushort short uint int ulong long float, and half with cl_khr_fp16.
 * width: CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM (the whole sub-group),
 *        CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM / _W8_QCOM (aligned groups of 4 / 8 lanes).
 * Work-item `lane` of a width group of n lanes receives the value of lane
 *   up: lane - offset          down: lane + offset          xor: lane ^ offset
 *   rotate_up: (lane - offset) mod n      rotate_down: (lane + offset) mod n
 * and default_value when that lane is outside its width group. A width group at the end
 * of a sub-group that is not a multiple of the width has fewer lanes (rotation wraps
 * within them); other width values act as WAVE_SIZE.
 *
 * Paths (the host's -D flags pick one):
 *   native  QCOM_EXT_NATIVE_cl_qcom_subgroup_shuffle: the Adreno builtins.
 *   khr     QCOM_EXT_KHR_cl_qcom_subgroup_shuffle: sub_group_shuffle(value, lane) of
 *           cl_khr_subgroup_shuffle on the device's own sub-groups.
 *   emulated (no sub-group shuffles): the compat header defines the sub-groups itself:
 *     sub-group k of a work-group is local linear ids [k*S, k*S + S), with
 *     S = QCOM_EXT_EMULATED_SUB_GROUP_SIZE (a -D the host passes; default 1), and the
 *     get_sub_group_{size,local_id,id}(), get_max_sub_group_size() and
 *     get_num_sub_groups() builtins are redefined (as macros) to describe those.
 *     - S == 1 (default): an unmodified kernel compiles; every work-item is its own
 *       sub-group, so only offset 0 (or a rotation) returns a lane's own value and
 *       W4/W8 groups have one lane. Algorithms written for any get_sub_group_size()
 *       (scans, reductions) give their documented results.
 *     - S > 1: lanes exchange values through local memory, with barriers. The kernel
 *       declares the scratch once, at the outermost scope of its body:
 *           QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
 *       and passes it to helper functions that shuffle with the parameter
 *       QCOM_SUB_GROUP_SHUFFLE_SCRATCH_PARAM and the argument
 *       QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG. Every work-item of the work-group must
 *       make the same shuffle calls (native needs only the sub-group's work-items).
 *   On the native and khr paths these three macros are harmless placeholders, so one
 *   kernel source serves every path.
 */
#if defined(QCOM_EXT_NATIVE_cl_qcom_subgroup_shuffle)
#if defined(cl_khr_subgroups) /* get_sub_group_local_id() etc. in OpenCL C 1.2 builds */
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#pragma OPENCL EXTENSION cl_qcom_subgroup_shuffle : enable
#define QCOM_EXT_SG_NO_SCRATCH
#else

typedef enum {
    CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM = 0,
    CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM = 4,
    CLK_SUB_GROUP_SHUFFLE_WIDTH_W8_QCOM = 8
} qcom_sub_group_shuffle_width_modes_t;

#define QCOM_EXT_SG_UP 0
#define QCOM_EXT_SG_DOWN 1
#define QCOM_EXT_SG_ROTATE_UP 2
#define QCOM_EXT_SG_ROTATE_DOWN 3
#define QCOM_EXT_SG_XOR 4
#define QCOM_EXT_SG_NONE 0xFFFFFFFFu

/* The lane whose value `lane` of a sub-group of `size` lanes receives, or
 * QCOM_EXT_SG_NONE for default_value. */
uint qcom_ext_sg_source(int op, uint lane, uint size, uint offset,
                        qcom_sub_group_shuffle_width_modes_t width)
{
    uint w = width == CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM   ? 4u
           : width == CLK_SUB_GROUP_SHUFFLE_WIDTH_W8_QCOM ? 8u
                                                          : size;
    uint first = lane / w * w;
    uint n = min(w, size - first); /* lanes in this width group */
    uint pos = lane - first;
    uint src;
    switch (op) {
    case QCOM_EXT_SG_UP:
        if (offset > pos)
            return QCOM_EXT_SG_NONE;
        src = pos - offset;
        break;
    case QCOM_EXT_SG_DOWN:
        if (offset >= n - pos)
            return QCOM_EXT_SG_NONE;
        src = pos + offset;
        break;
    case QCOM_EXT_SG_ROTATE_UP:
        src = (pos + n - offset % n) % n;
        break;
    case QCOM_EXT_SG_ROTATE_DOWN:
        src = (pos + offset % n) % n;
        break;
    default: /* QCOM_EXT_SG_XOR */
        src = pos ^ offset;
        if (src >= n)
            return QCOM_EXT_SG_NONE;
        break;
    }
    return first + src;
}

/* The five public overloads of one gentype, each calling IMPL(op, value, offset, width,
 * default_value). */
#define QCOM_EXT_SG_PUBLIC(T, IMPL)                                                       \
    T __attribute__((overloadable)) qcom_sub_group_shuffle_up(                           \
        T value, uint offset, qcom_sub_group_shuffle_width_modes_t width, T dflt)        \
    { return IMPL(QCOM_EXT_SG_UP, value, offset, width, dflt); }                         \
    T __attribute__((overloadable)) qcom_sub_group_shuffle_down(                         \
        T value, uint offset, qcom_sub_group_shuffle_width_modes_t width, T dflt)        \
    { return IMPL(QCOM_EXT_SG_DOWN, value, offset, width, dflt); }                       \
    T __attribute__((overloadable)) qcom_sub_group_shuffle_rotate_up(                    \
        T value, uint offset, qcom_sub_group_shuffle_width_modes_t width, T dflt)        \
    { return IMPL(QCOM_EXT_SG_ROTATE_UP, value, offset, width, dflt); }                  \
    T __attribute__((overloadable)) qcom_sub_group_shuffle_rotate_down(                  \
        T value, uint offset, qcom_sub_group_shuffle_width_modes_t width, T dflt)        \
    { return IMPL(QCOM_EXT_SG_ROTATE_DOWN, value, offset, width, dflt); }                \
    T __attribute__((overloadable)) qcom_sub_group_shuffle_xor(                          \
        T value, uint offset, qcom_sub_group_shuffle_width_modes_t width, T dflt)        \
    { return IMPL(QCOM_EXT_SG_XOR, value, offset, width, dflt); }

#if defined(cl_khr_fp16)
#define QCOM_EXT_SG_HALF(X, ...) X(half, __VA_ARGS__)
#else
#define QCOM_EXT_SG_HALF(X, ...)
#endif
/* X(T, ...) for every documented gentype. */
#define QCOM_EXT_SG_FOR_EACH_TYPE(X, ...)                                                  \
    X(uchar, __VA_ARGS__) X(char, __VA_ARGS__) X(ushort, __VA_ARGS__)                      \
    X(short, __VA_ARGS__) X(uint, __VA_ARGS__) X(int, __VA_ARGS__)                         \
    X(ulong, __VA_ARGS__) X(long, __VA_ARGS__) X(float, __VA_ARGS__)                       \
    QCOM_EXT_SG_HALF(X, __VA_ARGS__)

#if defined(cl_khr_fp16)
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif

#if defined(QCOM_EXT_KHR_cl_qcom_subgroup_shuffle)
/* ---- khr: cl_khr_subgroup_shuffle on the device's sub-groups ---- */
/* (Builtin-function extensions need no pragma; clang warns about one.) */
#define QCOM_EXT_SG_NO_SCRATCH
#define QCOM_EXT_SG_KHR_CORE(T, unused)                                                   \
    T __attribute__((overloadable)) qcom_ext_sg_shuffle(                                 \
        int op, T value, uint offset, qcom_sub_group_shuffle_width_modes_t width, T dflt) \
    {                                                                                     \
        uint lane = get_sub_group_local_id();                                            \
        uint src = qcom_ext_sg_source(op, lane, get_sub_group_size(), offset, width);    \
        T got = sub_group_shuffle(value, src == QCOM_EXT_SG_NONE ? lane : src);          \
        return src == QCOM_EXT_SG_NONE ? dflt : got;                                     \
    }
QCOM_EXT_SG_FOR_EACH_TYPE(QCOM_EXT_SG_KHR_CORE, 0)
QCOM_EXT_SG_FOR_EACH_TYPE(QCOM_EXT_SG_PUBLIC, qcom_ext_sg_shuffle)

#else
/* ---- emulated sub-groups of QCOM_EXT_EMULATED_SUB_GROUP_SIZE consecutive work-items ---- */
#ifndef QCOM_EXT_EMULATED_SUB_GROUP_SIZE
#define QCOM_EXT_EMULATED_SUB_GROUP_SIZE 1
#endif
#if QCOM_EXT_EMULATED_SUB_GROUP_SIZE < 1
#error "QCOM_EXT_EMULATED_SUB_GROUP_SIZE must be a positive integer"
#endif

uint qcom_ext_sg_local_linear_id(void)
{
    return (uint)((get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0)
                  + get_local_id(0));
}

uint qcom_ext_sg_work_group_items(void)
{
    return (uint)(get_local_size(0) * get_local_size(1) * get_local_size(2));
}

uint qcom_ext_sg_id(void) { return qcom_ext_sg_local_linear_id() / QCOM_EXT_EMULATED_SUB_GROUP_SIZE; }

uint qcom_ext_sg_lane(void)
{
    return qcom_ext_sg_local_linear_id() % QCOM_EXT_EMULATED_SUB_GROUP_SIZE;
}

uint qcom_ext_sg_size(void)
{
    return min((uint)QCOM_EXT_EMULATED_SUB_GROUP_SIZE,
               qcom_ext_sg_work_group_items() - qcom_ext_sg_id() * QCOM_EXT_EMULATED_SUB_GROUP_SIZE);
}

uint qcom_ext_sg_max_size(void)
{
    return min((uint)QCOM_EXT_EMULATED_SUB_GROUP_SIZE, qcom_ext_sg_work_group_items());
}

uint qcom_ext_sg_count(void)
{
    return (qcom_ext_sg_work_group_items() + QCOM_EXT_EMULATED_SUB_GROUP_SIZE - 1)
           / QCOM_EXT_EMULATED_SUB_GROUP_SIZE;
}

#define get_sub_group_size() qcom_ext_sg_size()
#define get_max_sub_group_size() qcom_ext_sg_max_size()
#define get_num_sub_groups() qcom_ext_sg_count()
#define get_sub_group_id() qcom_ext_sg_id()
#define get_sub_group_local_id() qcom_ext_sg_lane()

#if QCOM_EXT_EMULATED_SUB_GROUP_SIZE == 1
/* One lane per sub-group: a lane receives its own value or the default. */
#define QCOM_EXT_SG_NO_SCRATCH
#define QCOM_EXT_SG_SINGLE_CORE(T, unused)                                                \
    T __attribute__((overloadable)) qcom_ext_sg_shuffle(                                 \
        int op, T value, uint offset, qcom_sub_group_shuffle_width_modes_t width, T dflt) \
    {                                                                                     \
        return qcom_ext_sg_source(op, 0u, 1u, offset, width) == QCOM_EXT_SG_NONE ? dflt   \
                                                                                 : value; \
    }
QCOM_EXT_SG_FOR_EACH_TYPE(QCOM_EXT_SG_SINGLE_CORE, 0)
QCOM_EXT_SG_FOR_EACH_TYPE(QCOM_EXT_SG_PUBLIC, qcom_ext_sg_shuffle)

#else
/* Lanes exchange through a kernel-scope __local scratch of QCOM_EXT_SG_CHUNK slots: the
 * work-group is processed in passes of QCOM_EXT_SG_CHUNK work-items (a whole number of
 * sub-groups), each pass between two barriers. */
#define QCOM_EXT_SG_CHUNK                                                                  \
    (((256 + QCOM_EXT_EMULATED_SUB_GROUP_SIZE - 1) / QCOM_EXT_EMULATED_SUB_GROUP_SIZE)     \
     * QCOM_EXT_EMULATED_SUB_GROUP_SIZE)
/* Named so that a kernel that forgot the declaration gets an error that says what to do. */
#define QCOM_EXT_SG_SCRATCH qcom_ext_sub_group_scratch_declare_it_with_QCOM_SUB_GROUP_SHUFFLE_SCRATCH
#define QCOM_SUB_GROUP_SHUFFLE_SCRATCH __local ulong QCOM_EXT_SG_SCRATCH[QCOM_EXT_SG_CHUNK]
#define QCOM_SUB_GROUP_SHUFFLE_SCRATCH_PARAM __local ulong *QCOM_EXT_SG_SCRATCH
#define QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG QCOM_EXT_SG_SCRATCH

#define QCOM_EXT_SG_LOCAL_CORE(T, unused)                                                 \
    T __attribute__((overloadable)) qcom_ext_sg_exchange(                                \
        int op, T value, uint offset, qcom_sub_group_shuffle_width_modes_t width, T dflt, \
        __local ulong *scratch)                                                           \
    {                                                                                     \
        __local T *slots = (__local T *)scratch;                                          \
        uint id = qcom_ext_sg_local_linear_id(), items = qcom_ext_sg_work_group_items();  \
        uint first = qcom_ext_sg_id() * QCOM_EXT_EMULATED_SUB_GROUP_SIZE;                 \
        uint src = qcom_ext_sg_source(op, qcom_ext_sg_lane(), qcom_ext_sg_size(), offset, \
                                      width);                                             \
        T result = dflt;                                                                  \
        for (uint pass = 0; pass < items; pass += QCOM_EXT_SG_CHUNK) {                    \
            barrier(CLK_LOCAL_MEM_FENCE);                                                 \
            if (id - pass < QCOM_EXT_SG_CHUNK)                                            \
                slots[id - pass] = value;                                                 \
            barrier(CLK_LOCAL_MEM_FENCE);                                                 \
            if (id - pass < QCOM_EXT_SG_CHUNK && src != QCOM_EXT_SG_NONE)                 \
                result = slots[first + src - pass];                                       \
        }                                                                                 \
        return result;                                                                    \
    }
QCOM_EXT_SG_FOR_EACH_TYPE(QCOM_EXT_SG_LOCAL_CORE, 0)

#define qcom_sub_group_shuffle_up(value, offset, width, dflt) \
    qcom_ext_sg_exchange(QCOM_EXT_SG_UP, (value), (offset), (width), (dflt), QCOM_EXT_SG_SCRATCH)
#define qcom_sub_group_shuffle_down(value, offset, width, dflt) \
    qcom_ext_sg_exchange(QCOM_EXT_SG_DOWN, (value), (offset), (width), (dflt), QCOM_EXT_SG_SCRATCH)
#define qcom_sub_group_shuffle_rotate_up(value, offset, width, dflt)                     \
    qcom_ext_sg_exchange(QCOM_EXT_SG_ROTATE_UP, (value), (offset), (width), (dflt),      \
                         QCOM_EXT_SG_SCRATCH)
#define qcom_sub_group_shuffle_rotate_down(value, offset, width, dflt)                   \
    qcom_ext_sg_exchange(QCOM_EXT_SG_ROTATE_DOWN, (value), (offset), (width), (dflt),    \
                         QCOM_EXT_SG_SCRATCH)
#define qcom_sub_group_shuffle_xor(value, offset, width, dflt) \
    qcom_ext_sg_exchange(QCOM_EXT_SG_XOR, (value), (offset), (width), (dflt), QCOM_EXT_SG_SCRATCH)
#endif /* QCOM_EXT_EMULATED_SUB_GROUP_SIZE > 1 */
#endif /* emulated */

#if defined(cl_khr_fp16)
#pragma OPENCL EXTENSION cl_khr_fp16 : disable
#endif
#endif /* not native */

#if defined(QCOM_EXT_SG_NO_SCRATCH)
/* Paths that need no scratch: the kernel's declaration and arguments are placeholders. */
#define QCOM_SUB_GROUP_SHUFFLE_SCRATCH
#define QCOM_SUB_GROUP_SHUFFLE_SCRATCH_PARAM __local ulong *qcom_ext_sub_group_scratch_unused
#define QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG ((__local ulong *)0)
#undef QCOM_EXT_SG_NO_SCRATCH
#endif
