"""What reaches a driver we do not have: cffi callbacks stand in for the entry points.

Each test calls an entry point the way qcom_ext's code paths do (through
``driver.extension_function`` or a core ``driver.clX``) with a Python callback standing
in for the Adreno driver, and checks the raw bytes the callback receives against
``struct.pack`` of the layout in the reference (qcom-extensions.md, LP64).
"""

from __future__ import annotations

import struct
import sys

import pytest

from qcom_ext.binding.lib import C, driver, ffi

pytestmark = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little",
    reason="layouts below are the LP64 little-endian ones of arm64/x86_64",
)

PLATFORM = 0x2000
DEVICE = 0x1000


def addr(cdata) -> int:
    return int(ffi.cast("uintptr_t", cdata))


def raw(pointer, size: int) -> bytes:
    return ffi.buffer(ffi.cast("char *", pointer), size)[:]


def ext(name: str):
    fn = driver.extension_function(PLATFORM, name)
    assert fn is not None, f"{name} should resolve to the substitute"
    return fn


def test_perf_hint_token_reaches_driver():
    seen = []
    with driver.substitute(
        clSetPerfHintQCOM=lambda ctx, hint: seen.append((addr(ctx), hint)) or 0
    ):
        status = ext("clSetPerfHintQCOM")(ffi.cast("cl_context", 0xC0), C.CL_PERF_HINT_LOW_QCOM)
    assert status == 0
    assert seen == [(0xC0, 0x40C5)]


def test_context_properties_with_hints_are_intptr_pairs():
    seen = {}

    def create_context(props, num_devices, devices, notify, user_data, errcode):
        words = struct.unpack("<7q", raw(props, 7 * 8))
        seen["props"] = words
        seen["devices"] = [addr(devices[i]) for i in range(num_devices)]
        errcode[0] = 0
        return ffi.cast("cl_context", 0xC0)

    props = ffi.new(
        "cl_context_properties[]",
        [
            C.CL_CONTEXT_PLATFORM,
            PLATFORM,
            C.CL_CONTEXT_PERF_HINT_QCOM,
            C.CL_PERF_HINT_HIGH_QCOM,
            C.CL_CONTEXT_PRIORITY_HINT_QCOM,
            C.CL_PRIORITY_HINT_LOW_QCOM,
            0,
        ],
    )
    devices = ffi.new("cl_device_id[]", [ffi.cast("cl_device_id", DEVICE)])
    err = ffi.new("cl_int *")
    with driver.substitute(clCreateContext=create_context):
        ctx = driver.clCreateContext(props, 1, devices, ffi.NULL, ffi.NULL, err)
    assert addr(ctx) == 0xC0 and err[0] == 0
    assert seen["props"] == (0x1084, PLATFORM, 0x40C2, 0x40C3, 0x40C9, 0x40CC, 0)
    assert seen["devices"] == [DEVICE]


def test_protected_context_property_is_a_bool_value():
    seen = []

    def create_context(props, num_devices, devices, notify, user_data, errcode):
        seen.append(struct.unpack("<5q", raw(props, 5 * 8)))
        errcode[0] = C.CL_INVALID_PROPERTY
        return ffi.NULL

    props = ffi.new(
        "cl_context_properties[]",
        [C.CL_CONTEXT_PLATFORM, PLATFORM, C.CL_CONTEXT_PROTECTED_QCOM, 1, 0],
    )
    err = ffi.new("cl_int *")
    with driver.substitute(clCreateContext=create_context):
        ctx = driver.clCreateContext(props, 0, ffi.NULL, ffi.NULL, ffi.NULL, err)
    assert ctx == ffi.NULL and err[0] == -64
    assert seen == [(0x1084, PLATFORM, 0x40C7, 1, 0)]


def test_recordable_queue_property_is_bit_30():
    seen = []

    def create_queue(ctx, dev, props, errcode):
        seen.append(struct.unpack("<3Q", raw(props, 24)))
        errcode[0] = 0
        return ffi.cast("cl_command_queue", 0xA0)

    props = ffi.new(
        "cl_queue_properties[]", [C.CL_QUEUE_PROPERTIES, C.CL_QUEUE_RECORDABLE_QCOM, 0]
    )
    err = ffi.new("cl_int *")
    with driver.substitute(clCreateCommandQueueWithProperties=create_queue):
        driver.clCreateCommandQueueWithProperties(ffi.NULL, ffi.NULL, props, err)
    assert seen == [(0x1093, 1 << 30, 0)]


def test_recording_lifecycle_passes_handles_through():
    calls = []

    def new_recording(queue, errcode):
        calls.append(("new", addr(queue)))
        errcode[0] = 0
        return ffi.cast("cl_recording_qcom", 0xBEEF)

    def one(tag):
        return lambda rec: calls.append((tag, addr(rec))) or 0

    with driver.substitute(
        clNewRecordingQCOM=new_recording,
        clEndRecordingQCOM=one("end"),
        clRetainRecordingQCOM=one("retain"),
        clReleaseRecordingQCOM=one("release"),
    ):
        err = ffi.new("cl_int *", -1)
        rec = ext("clNewRecordingQCOM")(ffi.cast("cl_command_queue", 0xA0), err)
        assert err[0] == 0
        for name in ("clEndRecordingQCOM", "clRetainRecordingQCOM", "clReleaseRecordingQCOM"):
            assert ext(name)(rec) == 0
    assert calls == [("new", 0xA0), ("end", 0xBEEF), ("retain", 0xBEEF), ("release", 0xBEEF)]


def test_enqueue_recording_update_arrays_bytes():
    value = ffi.new("cl_int *", 7)
    mem = ffi.new("cl_mem *", ffi.cast("cl_mem", 0x5000))
    args = ffi.new(
        "cl_array_arg_qcom[]",
        [
            {"dispatch_index": 1, "arg_index": 2, "arg_size": 4, "arg_value": value},
            {"dispatch_index": 0, "arg_index": 0, "arg_size": 8, "arg_value": mem},
        ],
    )
    offsets = ffi.new("cl_offset_qcom[]", [{"dispatch_index": 1, "offsets": [3, 5, 0]}])
    gws = ffi.new("size_t[]", [256, 64])
    lws = ffi.new("size_t[]", [16, 8])
    global_wg = ffi.new("cl_workgroup_qcom[]", [{"dispatch_index": 1, "workgroup_size": gws}])
    local_wg = ffi.new("cl_workgroup_qcom[]", [{"dispatch_index": 1, "workgroup_size": lws}])
    seen = {}

    def enqueue(
        queue,
        rec,
        n_args,
        arg_array,
        n_off,
        off_array,
        n_gwg,
        gwg,
        n_lwg,
        lwg,
        n_events,
        events,
        event,
    ):
        seen["args"] = raw(arg_array, n_args * 24)
        seen["offsets"] = raw(off_array, n_off * 32)
        seen["gwg"] = raw(gwg, n_gwg * 16)
        seen["lwg"] = raw(lwg, n_lwg * 16)
        seen["gws"] = tuple(gwg[0].workgroup_size[i] for i in range(2))
        seen["lws"] = tuple(lwg[0].workgroup_size[i] for i in range(2))
        seen["counts"] = (n_args, n_off, n_gwg, n_lwg, n_events)
        seen["handles"] = (addr(queue), addr(rec), events == ffi.NULL, event == ffi.NULL)
        return 0

    with driver.substitute(clEnqueueRecordingQCOM=enqueue):
        status = ext("clEnqueueRecordingQCOM")(
            ffi.cast("cl_command_queue", 0xA1),
            ffi.cast("cl_recording_qcom", 0xBEEF),
            2,
            args,
            1,
            offsets,
            1,
            global_wg,
            1,
            local_wg,
            0,
            ffi.NULL,
            ffi.NULL,
        )
    assert status == 0
    assert seen["args"] == struct.pack("<IIQQ", 1, 2, 4, addr(value)) + struct.pack(
        "<IIQQ", 0, 0, 8, addr(mem)
    )
    assert seen["offsets"] == struct.pack("<I4xQQQ", 1, 3, 5, 0)  # inline size_t[3]
    assert seen["gwg"] == struct.pack("<I4xQ", 1, addr(gws))
    assert seen["lwg"] == struct.pack("<I4xQ", 1, addr(lws))
    assert seen["gws"] == (256, 64) and seen["lws"] == (16, 8)
    assert seen["counts"] == (2, 1, 1, 1, 0)
    assert seen["handles"] == (0xA1, 0xBEEF, True, True)


def test_enqueue_recording_svm_has_17_parameters_and_svm_args():
    svm = ffi.cast("void *", 0x7000_0000)
    svm_args = ffi.new(
        "cl_array_arg_qcom[]",
        [{"dispatch_index": 0, "arg_index": 1, "arg_size": 0, "arg_value": svm}],
    )
    info_value = ffi.new("cl_bool *", 1)
    exec_info = ffi.new(
        "cl_array_kernel_exec_info_qcom[]",
        [
            {
                "dispatch_index": 2,
                "param_name": 0x11B6,
                "param_value_size": 4,
                "param_value": info_value,
            }
        ],
    )
    seen = {}

    def enqueue_svm(
        queue,
        rec,
        n_args,
        args,
        n_svm,
        svm_array,
        n_off,
        off,
        n_gwg,
        gwg,
        n_lwg,
        lwg,
        n_non_arg,
        non_arg,
        n_events,
        events,
        event,
    ):
        seen["svm"] = raw(svm_array, n_svm * 24)
        seen["non_arg"] = raw(non_arg, n_non_arg * 24)
        seen["counts"] = (n_args, n_svm, n_off, n_gwg, n_lwg, n_non_arg, n_events)
        return 0

    with driver.substitute(clEnqueueRecordingSVMQCOM=enqueue_svm):
        ext("clEnqueueRecordingSVMQCOM")(
            ffi.NULL,
            ffi.NULL,
            0,
            ffi.NULL,
            1,
            svm_args,
            0,
            ffi.NULL,
            0,
            ffi.NULL,
            0,
            ffi.NULL,
            1,
            exec_info,
            0,
            ffi.NULL,
            ffi.NULL,
        )
    assert seen["svm"] == struct.pack("<IIQQ", 0, 1, 0, 0x7000_0000)  # arg_size 0 for SVM
    assert seen["non_arg"] == struct.pack("<IIQQ", 2, 0x11B6, 4, addr(info_value))
    assert seen["counts"] == (0, 1, 0, 0, 0, 1, 0)


def test_buffer_from_image_flags_are_64_bit():
    seen = []

    def create(image, flags, errcode):
        seen.append((addr(image), flags))
        errcode[0] = 0
        return ffi.cast("cl_mem", 0x6000)

    err = ffi.new("cl_int *")
    with driver.substitute(clCreateBufferFromImageQCOM=create):
        buf = ext("clCreateBufferFromImageQCOM")(
            ffi.cast("cl_mem", 0x5000), C.CL_MEM_READ_ONLY, err
        )
    assert addr(buf) == 0x6000
    assert seen == [(0x5000, 0x4)]


def test_device_image_info_query_marshals_format_and_returns_size_t():
    seen = {}

    def query(device, width, height, fmt, param, size, value, size_ret):
        seen["call"] = (addr(device), width, height, raw(fmt, 8), param, size)
        ffi.cast("size_t *", value)[0] = 4096
        size_ret[0] = 8
        return 0

    fmt = ffi.new("cl_image_format *", [C.CL_RGBA, C.CL_UNORM_INT8])
    out = ffi.new("size_t *")
    ret = ffi.new("size_t *")
    with driver.substitute(clGetDeviceImageInfoQCOM=query):
        ext("clGetDeviceImageInfoQCOM")(
            ffi.cast("cl_device_id", DEVICE),
            1000,
            720,
            fmt,
            C.CL_BUFFER_FROM_IMAGE_ROW_PITCH_QCOM,
            8,
            out,
            ret,
        )
    assert seen["call"] == (DEVICE, 1000, 720, struct.pack("<II", 0x10B5, 0x10D2), 0x40C0, 8)
    assert (out[0], ret[0]) == (4096, 8)


def test_query_image_info_marshals_image_desc():
    seen = {}

    def query(device, flags, fmt, desc, param, size, value, size_ret):
        seen["desc"] = raw(desc, 72)
        seen["rest"] = (flags, raw(fmt, 8), param, size)
        ffi.cast("size_t *", value)[0] = 123_456
        return 0

    fmt = ffi.new("cl_image_format *", [C.CL_QCOM_NV12, C.CL_UNORM_INT8])
    desc = ffi.new("cl_image_desc *")
    desc.image_type = C.CL_MEM_OBJECT_IMAGE2D
    desc.image_width, desc.image_height = 1920, 1080
    out = ffi.new("size_t *")
    with driver.substitute(clQueryImageInfoQCOM=query):
        ext("clQueryImageInfoQCOM")(
            ffi.cast("cl_device_id", DEVICE),
            C.CL_MEM_READ_ONLY | C.CL_MEM_OTHER_IMAGE_QCOM,
            fmt,
            desc,
            C.CL_IMAGE_SIZE_QCOM,
            8,
            out,
            ffi.NULL,
        )
    assert seen["desc"] == struct.pack("<I4x6QII8x", 0x10F1, 1920, 1080, 0, 0, 0, 0, 0, 0)
    assert seen["rest"] == ((1 << 37) | 0x4, struct.pack("<II", 0x4133, 0x10D2), 0x411B, 8)
    assert out[0] == 123_456


def test_weight_image_desc_reaches_clCreateImage_as_96_bytes():
    seen = {}

    def create_image(ctx, flags, fmt, desc, host_ptr, errcode):
        seen["desc"] = raw(desc, 96)
        seen["flags"] = flags
        errcode[0] = 0
        return ffi.cast("cl_mem", 0x6100)

    wdesc = ffi.new("cl_weight_image_desc_qcom *")
    wdesc.image_desc.image_type = C.CL_MEM_OBJECT_WEIGHT_IMAGE_QCOM
    wdesc.image_desc.image_width, wdesc.image_desc.image_height = 4, 3
    wdesc.image_desc.image_array_size = 2  # phases
    wdesc.weight_desc.center_coord_x, wdesc.weight_desc.center_coord_y = 1, 1
    wdesc.weight_desc.flags = C.CL_WEIGHT_IMAGE_SEPARABLE_QCOM
    fmt = ffi.new("cl_image_format *", [C.CL_R, C.CL_HALF_FLOAT])
    weights = ffi.new("cl_half[]", 24)
    err = ffi.new("cl_int *")
    with driver.substitute(clCreateImage=create_image):
        driver.clCreateImage(
            ffi.NULL,
            C.CL_MEM_READ_ONLY | C.CL_MEM_COPY_HOST_PTR,
            fmt,
            ffi.cast("cl_image_desc *", wdesc),
            weights,
            err,
        )
    image_desc = struct.pack("<I4x6QII8x", 0x4110, 4, 3, 0, 2, 0, 0, 0, 0)
    assert seen["desc"] == image_desc + struct.pack("<QQQ", 1, 1, 1)
    assert seen["flags"] == 0x24


@pytest.mark.parametrize(
    ("struct_name", "allocation_type", "fields", "layout"),
    [
        (
            "cl_mem_ion_host_ptr",
            "CL_MEM_ION_HOST_PTR_QCOM",
            {"ion_filedesc": 9, "ion_hostptr": 0x7F00_0000},
            "<IIi4xQ",
        ),
        (
            "cl_mem_dmabuf_host_ptr",
            "CL_MEM_DMABUF_HOST_PTR_QCOM",
            {"dmabuf_filedesc": 11, "dmabuf_hostptr": 0x7F10_0000},
            "<IIi4xQ",
        ),
        (
            "cl_mem_android_native_buffer_host_ptr",
            "CL_MEM_ANDROID_NATIVE_BUFFER_HOST_PTR_QCOM",
            {"anb_ptr": 0x7F20_0000},
            "<IIQ",
        ),
        (
            "cl_mem_ahardwarebuffer_host_ptr",
            "CL_MEM_ANDROID_AHARDWAREBUFFER_HOST_PTR_QCOM",
            {"ahb_ptr": 0x7F30_0000},
            "<IIQ",
        ),
        (
            "cl_mem_pmem_host_ptr",
            "CL_MEM_PMEM_HOST_PTR_QCOM",
            {"pmem_handle": 0x44, "pmem_hostptr": 0x7F40_0000},
            "<IIQQ",
        ),
    ],
)
def test_ext_host_ptr_structs_reach_clCreateBuffer(struct_name, allocation_type, fields, layout):
    seen = {}
    size = ffi.sizeof(struct_name)

    def create_buffer(ctx, flags, nbytes, host_ptr, errcode):
        seen["call"] = (flags, nbytes, raw(host_ptr, size))
        errcode[0] = 0
        return ffi.cast("cl_mem", 0x6200)

    mem = ffi.new(f"{struct_name} *")
    mem.ext_host_ptr.allocation_type = getattr(C, allocation_type)
    mem.ext_host_ptr.host_cache_policy = C.CL_MEM_HOST_WRITEBACK_QCOM
    kinds = {field: spec.type.kind for field, spec in ffi.typeof(struct_name).fields}
    for name, value in fields.items():
        setattr(mem, name, ffi.cast("void *", value) if kinds[name] == "pointer" else value)
    err = ffi.new("cl_int *")
    flags = C.CL_MEM_USE_HOST_PTR | C.CL_MEM_EXT_HOST_PTR_QCOM
    with driver.substitute(clCreateBuffer=create_buffer):
        driver.clCreateBuffer(ffi.NULL, flags, 4096, mem, err)
    expected = struct.pack(layout, getattr(C, allocation_type), 0x40A5, *fields.values())
    assert seen["call"] == (0x20000008, 4096, expected)


def test_onchip_and_large_buffer_properties():
    seen = []

    def create(ctx, props, flags, size, host_ptr, errcode):
        count = 0
        while props[count] != 0:
            count += 2
        seen.append(tuple(props[i] for i in range(count + 1)))
        errcode[0] = 0
        return ffi.cast("cl_mem", 0x6300)

    onchip = ffi.new(
        "cl_mem_properties[]",
        [C.CL_MEM_ONCHIP_GLOBAL_QCOM, 1, C.CL_MEM_ONCHIP_GLOBAL_OFFSET_QCOM, 65536, 0],
    )
    large = ffi.new("cl_mem_properties[]", [C.CL_LARGE_BUFFER_QCOM, 1, 0])
    err = ffi.new("cl_int *")
    with driver.substitute(clCreateBufferWithProperties=create):
        driver.clCreateBufferWithProperties(
            ffi.NULL, onchip, C.CL_MEM_READ_WRITE, 4096, ffi.NULL, err
        )
        driver.clCreateBufferWithProperties(
            ffi.NULL, large, C.CL_MEM_READ_WRITE, 1 << 33, ffi.NULL, err
        )
    assert seen == [(0x41A2, 1, 0x41A3, 65536, 0), (0x41A6, 1, 0)]


def test_bicubic_sampler_filter_mode():
    seen = []

    def create_sampler(ctx, normalized, addressing, filter_mode, errcode):
        seen.append((normalized, addressing, filter_mode))
        errcode[0] = 0
        return ffi.cast("cl_sampler", 0x6400)

    err = ffi.new("cl_int *")
    with driver.substitute(clCreateSampler=create_sampler):
        driver.clCreateSampler(
            ffi.NULL, C.CL_TRUE, C.CL_ADDRESS_CLAMP, C.CL_FILTER_BICUBIC_QCOM, err
        )
    assert seen == [(1, 0x1132, 0x411C)]


def test_ml_interface_version_query_fills_caller_arrays():
    def query(majors, minors, capacity, count_ret):
        versions = [(2, 0), (3, 0)]
        if count_ret != ffi.NULL:
            count_ret[0] = len(versions)
        for i, (major, minor) in enumerate(versions[:capacity]):
            majors[i], minors[i] = major, minor
        return 0

    got = {}

    def get_interface(interface, major, minor):
        got["args"] = (major, minor)
        ffi.cast("void **", interface)[0] = ffi.cast("void *", 0x9000)
        return 0

    with driver.substitute(
        clQueryMLInterfaceVersionsQCOM=query, clGetMLInterfaceQCOM=get_interface
    ):
        count = ffi.new("cl_uint *")
        assert ext("clQueryMLInterfaceVersionsQCOM")(ffi.NULL, ffi.NULL, 0, count) == 0
        majors = ffi.new("cl_int[]", count[0])
        minors = ffi.new("cl_int[]", count[0])
        ext("clQueryMLInterfaceVersionsQCOM")(majors, minors, count[0], ffi.NULL)
        table = ffi.new("void **")
        ext("clGetMLInterfaceQCOM")(table, majors[count[0] - 1], minors[count[0] - 1])
    assert (count[0], list(majors), list(minors)) == (2, [2, 3], [0, 0])
    assert got["args"] == (3, 0) and addr(table[0]) == 0x9000


def test_egl_image_import_signature():
    seen = []

    def from_egl(ctx, flags, image, display, errcode):
        seen.append((addr(ctx), flags, addr(image), addr(display)))
        errcode[0] = 0
        return ffi.cast("cl_mem", 0x6500)

    err = ffi.new("cl_int *")
    with driver.substitute(clCreateFromEGLImageIMG=from_egl):
        ext("clCreateFromEGLImageIMG")(
            ffi.cast("cl_context", 0xC0),
            C.CL_MEM_READ_ONLY,
            ffi.cast("void *", 0xE1),
            ffi.cast("void *", 0xE2),
            err,
        )
    assert seen == [(0xC0, 0x4, 0xE1, 0xE2)]


def test_exception_in_a_substitute_is_reraised():
    def broken(ctx, hint):
        raise RuntimeError("fake driver bug")

    with (
        pytest.raises(RuntimeError, match="fake driver bug"),
        driver.substitute(clSetPerfHintQCOM=broken),
    ):
        assert ext("clSetPerfHintQCOM")(ffi.NULL, 0) == -9999
