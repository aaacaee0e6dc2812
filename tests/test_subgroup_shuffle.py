"""cl_qcom_subgroup_shuffle through build_program, on the device's path and emulated.

The kernels report, per work-item, its sub-group id, lane and sub-group size; a numpy
model of the extension spec (written from the spec text, not from the C) rebuilds every
sub-group from those and computes each shuffle. On the emulated path the reported
sub-groups are also checked against their definition (QCOM_EXT_EMULATED_SUB_GROUP_SIZE
consecutive local linear ids).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qcom_ext

EXT = "cl_qcom_subgroup_shuffle"
SIZE_MACRO = "QCOM_EXT_EMULATED_SUB_GROUP_SIZE"
OPS = ("up", "down", "rotate_up", "rotate_down", "xor")
WIDTHS = {"wave": 0, "w4": 4, "w8": 8}
TYPES = {
    "uchar": np.uint8,
    "char": np.int8,
    "ushort": np.uint16,
    "short": np.int16,
    "uint": np.uint32,
    "int": np.int32,
    "ulong": np.uint64,
    "long": np.int64,
    "float": np.float32,
}

SHUFFLE_HEAD = """
#define WIDTH(code) ((code) == 4 ? CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM \\
                   : (code) == 8 ? CLK_SUB_GROUP_SHUFFLE_WIDTH_W8_QCOM \\
                   : CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM)
uint local_linear_id(void)
{ return (uint)(get_local_id(1) * get_local_size(0) + get_local_id(0)); }

#define SHUFFLES(T)                                                                       \\
__kernel void shuffle_##T(__global const T *in, __global T *out, __global uint *info,     \\
                          uint offset, int width_code, T dflt)                            \\
{                                                                                         \\
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;                                                       \\
    size_t g = get_global_id(1) * get_global_size(0) + get_global_id(0);                  \\
    T v = in[g];                                                                          \\
    qcom_sub_group_shuffle_width_modes_t w = WIDTH(width_code);                           \\
    out[5 * g + 0] = qcom_sub_group_shuffle_up(v, offset, w, dflt);                       \\
    out[5 * g + 1] = qcom_sub_group_shuffle_down(v, offset, w, dflt);                     \\
    out[5 * g + 2] = qcom_sub_group_shuffle_rotate_up(v, offset, w, dflt);                \\
    out[5 * g + 3] = qcom_sub_group_shuffle_rotate_down(v, offset, w, dflt);              \\
    out[5 * g + 4] = qcom_sub_group_shuffle_xor(v, offset, w, dflt);                      \\
    info[5 * g + 0] = (uint)(get_group_id(1) * get_num_groups(0) + get_group_id(0));      \\
    info[5 * g + 1] = local_linear_id();                                                  \\
    info[5 * g + 2] = get_sub_group_id();                                                 \\
    info[5 * g + 3] = get_sub_group_local_id();                                           \\
    info[5 * g + 4] = get_sub_group_size();                                               \\
}
"""


def shuffle_source(type_name: str) -> str:
    """The kernel ``shuffle_<type_name>``: every shuffle of one value per work-item, and
    the sub-group each work-item is in. One type a program: pocl's build time grows with
    the kernels in a program (about 2 CPU-s each here), so a program of all ten types
    costs every test ten builds' time."""
    fp16 = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" if type_name == "half" else ""
    return f"{SHUFFLE_HEAD}{fp16}SHUFFLES({type_name})\n"


# ---- the model (extension spec, section 6.13.18 of cl_qcom_subgroup_shuffle.txt) -----


def source_lane(op: str, lane: int, size: int, offset: int, width: int) -> int | None:
    """The lane whose value ``lane`` receives, or None for the default value."""
    w = width or size
    first = lane - lane % w
    n = min(w, size - first)  # a width group cut short by the end of the sub-group
    pos = lane - first
    if op == "up":
        src = pos - offset
    elif op == "down":
        src = pos + offset
    elif op == "rotate_up":
        src = (pos - offset) % n
    elif op == "rotate_down":
        src = (pos + offset) % n
    else:
        src = pos ^ offset
    return first + src if 0 <= src < n else None


def model(
    values: np.ndarray, info: np.ndarray, op: str, offset: int, width: int, default
) -> np.ndarray:
    """What each work-item receives, from the sub-groups the kernel reported."""
    groups: dict[tuple[int, int], dict[int, int]] = defaultdict(dict)
    for index, (wg, _, sg, lane, _size) in enumerate(info):
        groups[int(wg), int(sg)][int(lane)] = index
    out = np.empty_like(values)
    for lanes in groups.values():
        size = int(info[next(iter(lanes.values())), 4])
        assert sorted(lanes) == list(range(size)), "a sub-group's lanes are not 0..size-1"
        for lane, index in lanes.items():
            src = source_lane(op, lane, size, offset, width)
            out[index] = default if src is None else values[lanes[src]]
    return out


# ---- running ------------------------------------------------------------------------

# One context per device for the module, and each program built once on it: the tests'
# own contexts would build every program again (and a memo of them would keep each
# test's context alive).
_CONTEXTS: dict[int, cl.Context] = {}
_PROGRAMS: dict[tuple, cl.Program] = {}


@pytest.fixture(scope="module", autouse=True)
def _release_programs():
    yield
    _PROGRAMS.clear()
    _CONTEXTS.clear()


def shared_context(caps) -> cl.Context:
    """The module's context on ``caps``'s device."""
    if caps.device_id not in _CONTEXTS:
        _CONTEXTS[caps.device_id] = cl.Context([caps.device()])
    return _CONTEXTS[caps.device_id]


def program(caps, source: str, size: int, options: tuple[str, ...] = ()) -> cl.Program:
    """``source`` built for ``caps``'s path with emulated sub-groups of ``size``."""
    key = (caps.device_id, caps.path(EXT), source, size, options)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = qcom_ext.build_program(
            shared_context(caps), source, list(options), defines={SIZE_MACRO: size}
        )
    return _PROGRAMS[key]


def run(
    context,
    prg,
    type_name: str,
    values: np.ndarray,
    local: tuple[int, ...],
    offset: int,
    width: int,
    default,
) -> tuple[np.ndarray, np.ndarray]:
    queue = cl.CommandQueue(context)
    mf = cl.mem_flags
    in_buf = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=values)
    out = np.empty((values.size, 5), values.dtype)
    info = np.empty((values.size, 5), np.uint32)
    out_buf = cl.Buffer(context, mf.WRITE_ONLY, out.nbytes)
    info_buf = cl.Buffer(context, mf.WRITE_ONLY, info.nbytes)
    kernel = cl.Kernel(prg, f"shuffle_{type_name}")
    global_size = (values.size // local[1], local[1]) if len(local) == 2 else (values.size,)
    kernel(
        queue,
        global_size,
        local,
        in_buf,
        out_buf,
        info_buf,
        np.uint32(offset),
        np.int32(width),
        values.dtype.type(default),
    )
    cl.enqueue_copy(queue, out, out_buf)
    cl.enqueue_copy(queue, info, info_buf)
    return out, info


def check_emulated_sub_groups(info: np.ndarray, size: int, items_per_group: int) -> None:
    """Sub-group k is local linear ids [k*S, k*S + S) of its work-group."""
    local_id = info[:, 1].astype(np.int64)
    np.testing.assert_array_equal(info[:, 2], local_id // size)
    np.testing.assert_array_equal(info[:, 3], local_id % size)
    np.testing.assert_array_equal(
        info[:, 4], np.minimum(size, items_per_group - (local_id // size) * size)
    )


@pytest.fixture(params=["probed", "emulated"])
def shuffle_path(request, device_caps, kernel_context, monkeypatch):
    """The device's own path, and the emulation forced with QCOM_EXT_DISABLE."""
    if request.param == "emulated":
        if device_caps.path(EXT) == "fallback":
            pytest.skip(f"{device_caps.label} already takes the emulated path ('probed')")
        monkeypatch.setenv("QCOM_EXT_DISABLE", EXT)
        caps = qcom_ext.probe(device_caps.device())
        assert caps.path(EXT) == "fallback"
        return caps
    return device_caps


# ---- golden: the extension spec's examples (W4, 4 work-items) ------------------------

SPEC = {  # (op, offset, default) -> after, for before = AA BB CC DD
    ("up", 1, None): [0xAA, 0xAA, 0xBB, 0xCC],
    ("up", 3, None): [0xAA, 0xBB, 0xCC, 0xAA],
    ("down", 1, 0x11): [0xBB, 0xCC, 0xDD, 0x11],
    ("down", 3, 0x11): [0xDD, 0x11, 0x11, 0x11],
    ("rotate_up", 1, None): [0xDD, 0xAA, 0xBB, 0xCC],
    ("rotate_up", 3, None): [0xBB, 0xCC, 0xDD, 0xAA],
    ("rotate_down", 1, 0x22): [0xBB, 0xCC, 0xDD, 0xAA],
    ("rotate_down", 3, 0x22): [0xDD, 0xAA, 0xBB, 0xCC],
    ("xor", 1, 0x33): [0xBB, 0xAA, 0xDD, 0xCC],
    ("xor", 3, 0x33): [0xDD, 0xCC, 0xBB, 0xAA],
}

GOLDEN_SOURCE = """
__kernel void spec(__global uint *buf, uint offset, int op, int own_default, uint dflt)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    uint i = get_global_id(0);
    uint d = own_default ? buf[i] : dflt;
    qcom_sub_group_shuffle_width_modes_t w = CLK_SUB_GROUP_SHUFFLE_WIDTH_W4_QCOM;
    uint r = op == 0 ? qcom_sub_group_shuffle_up(buf[i], offset, w, d)
           : op == 1 ? qcom_sub_group_shuffle_down(buf[i], offset, w, d)
           : op == 2 ? qcom_sub_group_shuffle_rotate_up(buf[i], offset, w, d)
           : op == 3 ? qcom_sub_group_shuffle_rotate_down(buf[i], offset, w, d)
           : qcom_sub_group_shuffle_xor(buf[i], offset, w, d);
    buf[i] = r;
}
"""


@pytest.mark.parametrize("case", sorted(SPEC, key=str), ids=lambda c: f"{c[0]}-{c[1]}")
def test_spec_examples(shuffle_path, case):
    op, offset, default = case
    prg = program(shuffle_path, GOLDEN_SOURCE, 4)
    context = shared_context(shuffle_path)
    queue = cl.CommandQueue(context)
    before = np.array([0xAA, 0xBB, 0xCC, 0xDD] * 2, np.uint32)  # two W4 groups
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=before)
    kernel = cl.Kernel(prg, "spec")
    kernel(
        queue,
        (8,),
        (8,),
        buf,
        np.uint32(offset),
        np.int32(OPS.index(op)),
        np.int32(default is None),
        np.uint32(default or 0),
    )
    after = np.empty_like(before)
    cl.enqueue_copy(queue, after, buf)
    assert [hex(v) for v in after] == [hex(v) for v in SPEC[case] * 2]


# ---- property tests -------------------------------------------------------------------

# pocl builds a program in time that grows with its kernels and compiles each kernel
# again for every local size, so the shapes are a fixed set, each built and compiled once
# a device: (type, emulated sub-group size, local size). Together they take every type
# and every branch of the emulation; what hypothesis draws (values, default, offset,
# width, number of work-groups) are kernel arguments and buffer sizes, which reuse the
# compiled kernel. (Random shapes cost 150 to 500 s a device: each draw compiled.)
SHAPES = [
    ("uchar", 1, (5,)),  # one-lane sub-groups, no scratch; an odd work-group
    ("char", 4, (5,)),  # the last sub-group cut to one lane
    ("ushort", 8, (1,)),  # one work-item: a sub-group of one lane out of eight
    ("short", 12, (33,)),  # a size no power of two: W8 groups of 8 and 4, last sub-group 9
    ("uint", 8, (64,)),  # eight whole sub-groups
    ("int", 12, (320,)),  # more work-items than the 264-slot scratch: two passes
    ("ulong", 32, (3, 5)),  # 2-D, one sub-group larger than the work-group
    ("long", 4, (8, 2)),  # 2-D, whole sub-groups
    ("float", 64, (24, 6)),  # 2-D, 144 work-items in sub-groups of 64 (the last 16)
    ("half", 8, (8, 2)),  # where the device has cl_khr_fp16
]
_SETTINGS = settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@st.composite
def shuffle_arguments(draw):
    """(number of work-groups, width, offset, seed): what a shape runs with."""
    groups = draw(st.integers(1, 3))
    width = draw(st.sampled_from(sorted(WIDTHS.values())))
    offset = draw(st.integers(0, (width or 64) - 1))
    seed = draw(st.integers(0, 2**32 - 1))
    return groups, width, offset, seed


def random_values(dtype: np.dtype, count: int, rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "f":
        return (rng.standard_normal(count) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)


def shape_id(shape: tuple) -> str:
    type_name, size, local = shape
    return f"{type_name}-size{size}-local{'x'.join(map(str, local))}"


@pytest.mark.slow  # a program build and a kernel compile a shape: 5 to 15 s cold
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_shuffles_match_model(shuffle_path, shape):
    caps = shuffle_path
    type_name, size, local = shape
    if type_name == "half" and not caps.has("cl_khr_fp16"):
        pytest.skip(f"{caps.label} has no cl_khr_fp16 (half)")
    emulated = caps.path(EXT) == "fallback"
    dtype = np.dtype(TYPES.get(type_name, np.float16))
    prg = program(caps, shuffle_source(type_name), size)
    context = shared_context(caps)

    @_SETTINGS
    @given(shuffle_arguments())
    def inner(arguments):
        groups, width, offset, seed = arguments
        rng = np.random.default_rng(seed)
        items = int(np.prod(local))
        values = random_values(dtype, items * groups, rng)
        default = random_values(dtype, 1, rng)[0]
        out, info = run(context, prg, type_name, values, local, offset, width, default)
        if emulated:
            check_emulated_sub_groups(info, size, items)
        for k, op in enumerate(OPS):
            expected = model(values, info, op, offset, width, default)
            np.testing.assert_array_equal(out[:, k], expected, err_msg=op)

    inner()


def test_shapes_take_every_type_and_branch():
    """The fixed shapes still reach what random shapes did: every type, every size the
    draws had, one-lane and multi-lane emulation, sub-groups cut short at the end of a
    work-group, a scratch taken in several passes, 2-D work-groups."""
    assert sorted(t for t, _, _ in SHAPES) == sorted([*TYPES, "half"])
    assert {size for _, size, _ in SHAPES} == {1, 4, 8, 12, 32, 64}
    items = {(size, int(np.prod(local))) for _, size, local in SHAPES}
    assert any(n % size for size, n in items if 1 < size < n), "no sub-group cut short"
    assert any(size > n for size, n in items), "no sub-group larger than its work-group"
    chunk = {size: -(-256 // size) * size for size, _ in items}  # the header's scratch
    assert any(n > chunk[size] for size, n in items if size > 1), "no second pass"
    assert any(len(local) == 2 for _, _, local in SHAPES)


def test_model_matches_the_spec_examples():
    """The model reproduces the spec's worked examples it was written from."""
    before = np.array([0xAA, 0xBB, 0xCC, 0xDD], np.uint32)
    info = np.array([[0, i, 0, i, 4] for i in range(4)], np.uint32)
    for (op, offset, default), after in SPEC.items():
        got = [
            model(before, info, op, offset, 4, d)[i]
            for i, d in enumerate(before if default is None else [default] * 4)
        ]
        assert got == after, (op, offset)


# ---- the emulation's own rules --------------------------------------------------------


@pytest.fixture
def emulated(device_caps, kernel_context, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_DISABLE", EXT)
    caps = qcom_ext.probe(device_caps.device())
    assert caps.path(EXT) == "fallback"
    return caps


UNMODIFIED = """
__kernel void scan(__global int *v)
{
    size_t g = get_global_id(0);
    int x = v[g];
    for (uint d = 1; d < get_sub_group_size(); d <<= 1) {
        int y = qcom_sub_group_shuffle_up(x, d, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0);
        x += y;
    }
    v[g] = x * 1000 + (int)get_sub_group_size();
}
"""


def test_unmodified_kernel_builds_with_one_lane_sub_groups(emulated, kernel_context):
    """No scratch, no define: every work-item is a sub-group of one; a size-generic scan
    is still right (it is the identity)."""
    prg = qcom_ext.build_program(kernel_context, UNMODIFIED)
    queue = cl.CommandQueue(kernel_context)
    values = np.arange(-5, 11, dtype=np.int32)
    buf = cl.Buffer(
        kernel_context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=values
    )
    prg.scan(queue, values.shape, (8,), buf)
    out = np.empty_like(values)
    cl.enqueue_copy(queue, out, buf)
    np.testing.assert_array_equal(out, values * 1000 + 1)


def test_missing_scratch_is_a_clear_build_error(emulated, kernel_context):
    with pytest.raises(qcom_ext.BuildError) as exc:
        qcom_ext.build_program(kernel_context, UNMODIFIED, defines={SIZE_MACRO: 16})
    assert "declare_it_with_QCOM_SUB_GROUP_SHUFFLE_SCRATCH" in str(exc.value)


def test_bad_emulated_size_is_a_build_error(emulated, kernel_context):
    with pytest.raises(qcom_ext.BuildError) as exc:
        qcom_ext.build_program(kernel_context, UNMODIFIED, defines={SIZE_MACRO: 0})
    assert f"{SIZE_MACRO} must be a positive integer" in str(exc.value)


HELPER = """
int rotate_in_helper(int x, QCOM_SUB_GROUP_SHUFFLE_SCRATCH_PARAM)
{
    return qcom_sub_group_shuffle_rotate_down(x, 1u, CLK_SUB_GROUP_SHUFFLE_WIDTH_W8_QCOM, -1);
}

__kernel void k(__global int *v)
{
    QCOM_SUB_GROUP_SHUFFLE_SCRATCH;
    size_t g = get_global_id(0);
    v[g] = rotate_in_helper(v[g], QCOM_SUB_GROUP_SHUFFLE_SCRATCH_ARG);
}
"""


def test_helper_functions_take_the_scratch(shuffle_path):
    """The PARAM/ARG macros pass the scratch on the emulated path, and are placeholders
    on the others: one source for every path."""
    prg = program(shuffle_path, HELPER, 8)
    context = shared_context(shuffle_path)
    queue = cl.CommandQueue(context)
    values = np.arange(32, dtype=np.int32)
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=values)
    cl.Kernel(prg, "k")(queue, values.shape, (16,), buf)
    out = np.empty_like(values)
    cl.enqueue_copy(queue, out, buf)
    expected = (values // 8) * 8 + (values % 8 + 1) % 8  # rotate down by 1 within W8
    np.testing.assert_array_equal(out, expected)


def test_large_work_groups_take_several_passes(emulated, kernel_context):
    """More work-items than the 256-slot scratch: exchanged in passes, still exact."""
    device = kernel_context.devices[0]
    local = min(device.max_work_group_size, 600)
    if local <= 256:
        pytest.skip(f"max work-group size {device.max_work_group_size} fits one pass")
    prg = program(emulated, shuffle_source("int"), 32)
    values = np.arange(2 * local, dtype=np.int32)
    out, info = run(shared_context(emulated), prg, "int", values, (local,), 5, 0, -7)
    check_emulated_sub_groups(info, 32, local)
    for k, op in enumerate(OPS):
        np.testing.assert_array_equal(out[:, k], model(values, info, op, 5, 0, -7), op)


# Stand-ins for cl_khr_subgroups / cl_khr_subgroup_shuffle (one-lane sub-groups), so the
# khr branch of the compat header is compiled and run on devices without them.
KHR_STAND_INS = [
    "-DQCOM_EXT_KHR_cl_qcom_subgroup_shuffle",
    "-Dget_sub_group_local_id()=0u",
    "-Dget_sub_group_size()=1u",
    "-Dget_sub_group_id()=((uint)get_local_id(0))",
    "-Dsub_group_shuffle(value,lane)=(value)",
]


@pytest.mark.filterwarnings("ignore::pyopencl.CompilerWarning")  # the unsupported pragmas
def test_khr_branch_with_stand_in_builtins(emulated):
    if emulated.has("cl_khr_subgroup_shuffle"):
        pytest.skip("the device has cl_khr_subgroup_shuffle: the 'probed' tests run it")
    prg = program(emulated, shuffle_source("long"), 1, tuple(KHR_STAND_INS))
    context = shared_context(emulated)
    rng = np.random.default_rng(3)
    values = rng.integers(-1000, 1000, 24, dtype=np.int64)
    for offset, width in ((0, 0), (1, 4), (3, 8)):
        out, info = run(context, prg, "long", values, (8,), offset, width, -5)
        np.testing.assert_array_equal(info[:, 3:], [[0, 1]] * 24)
        for k, op in enumerate(OPS):
            np.testing.assert_array_equal(
                out[:, k], model(values, info, op, offset, width, -5), op
            )
