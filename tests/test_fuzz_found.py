"""Bad-input fuzzing (the rule and the settings: tests/fuzzing.py): what fuzzing
found, each case failed before its fix.
"""

from __future__ import annotations

import os
import struct
import warnings

import fuzzing
import numpy as np
import pytest
from fakes.driver import DEVICE, adreno740_device_info, fake_driver, platform_info
from fuzzing import Recorded, typed_error

import qcom_ext
from qcom_ext import ConfigError, QcomExtError, WeightImage, ops
from qcom_ext.errors import DriverAnswerError
from qcom_ext.ext.program import bfloat16
from qcom_ext.ext.program.build import define_options

# pytest finds fixtures among a module's names: the shared ones, from tests/fuzzing.py
ctx, queue, report_counts = fuzzing.ctx, fuzzing.queue, fuzzing.report_counts


# ---- what fuzzing found: each of these failed before its fix -----------------------------


def _weights(ctx, **kwargs):
    return WeightImage(ctx, np.ones((4, 3, 3)), center=(1, 1), **kwargs)


def _recording(ctx, queue):
    rec = Recorded(ctx, queue, "replay")
    return lambda **updates: rec.run(**updates)


def _default_device(spec: str):
    from qcom_ext.device.probe import _default, default_device

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYOPENCL_CTX", spec)
        _default.pop(spec, None)
        return default_device()


def _probe_answering(answers: dict[int, bytes]):
    from qcom_ext.device.probe import read_device

    info = adreno740_device_info()
    info.update(answers)
    with fake_driver(info, platform_info(), []):
        return read_device(DEVICE)


FOUND = {  # id: (call(ctx, queue), what must name it); every one a ConfigError or a subclass
    # a str, float or bool "handle" reached the driver (cffi made 'a' 97): a segfault
    "handle-str": (lambda c, q: qcom_ext.accelerated_limits("a"), "'a'"),
    "handle-float": (lambda c, q: qcom_ext.box_size(1, 1, device=3.7), "3.7"),
    "handle-bool": (lambda c, q: qcom_ext.probe(True), "True"),
    # a silent wrong result: bits beyond 16 wrapped (0x13F80 read as 1.0), floats truncated
    "bf16-wide-bits": (lambda c, q: bfloat16.from_bfloat16(0x13F80), "81792"),
    "bf16-float-bits": (lambda c, q: bfloat16.from_bfloat16(1.5), "float64"),
    "bf16-complex": (lambda c, q: bfloat16.to_bfloat16(1 + 2j), "complex"),
    # recording updates: TypeError, ValueError, pyopencl's std::bad_cast, a silent inf
    "update-not-a-mapping": (lambda c, q: _recording(c, q)(args=5), "args"),
    "update-float-size": (lambda c, q: _recording(c, q)(global_size={1: 4.0}), "4.0"),
    "update-size-t": (lambda c, q: _recording(c, q)(global_size={1: 2**70}), "size_t"),
    "update-offset-size-t": (
        lambda c, q: _recording(c, q)(global_offset={1: 2**64 - 1}),
        "CL_INVALID_GLOBAL_OFFSET",
    ),
    "update-float-overflow": (lambda c, q: _recording(c, q)(args={(1, 1): 1e300}), "1e+300"),
    "update-int-overflow": (lambda c, q: _recording(c, q)(args={(1, 1): 10**400}), "range"),
    # ops: TypeError / ValueError, or a float accepted and truncated into a -D value
    "ops-float-stride": (
        lambda c, q: ops.depthwise_conv2d(
            q, np.ones((1, 4, 5, 5), np.float32), np.ones((4, 1, 3, 3), np.float32), stride=1.5
        ),
        "1.5",
    ),
    "ops-bool-stride": (
        lambda c, q: ops.conv2d_1x1(
            q, np.ones((1, 4, 5, 5), np.float32), np.ones((4, 4), np.float32), stride=True
        ),
        "True",
    ),
    "ops-float-pixels": (
        lambda c, q: ops.depthwise_conv2d(
            q, np.ones((1, 4, 5, 5), np.float32), np.ones((4, 1, 3, 3), np.float32), pixels=4.0
        ),
        "4.0",
    ),
    "ops-float-tile": (
        lambda c, q: ops.conv2d_1x1(
            q, np.ones((1, 4, 5, 5), np.float32), np.ones((4, 4), np.float32), tile=(2.0, 4)
        ),
        "2.0",
    ),
    "ops-list-activation": (
        lambda c, q: ops.conv2d(
            q,
            np.ones((1, 4, 5, 5), np.float32),
            np.ones((4, 4, 3, 3), np.float32),
            activation=["relu"],
        ),
        "['relu']",
    ),
    "ops-str-slope": (
        lambda c, q: ops.conv2d(
            q,
            np.ones((1, 4, 5, 5), np.float32),
            np.ones((4, 4, 3, 3), np.float32),
            negative_slope="0.1",
        ),
        "'0.1'",
    ),
    "ops-float-shape": (lambda c, q: ops.BufferTensor.empty(c, (1, 2.5, 3, 3), np.float32), "2.5"),
    "ops-junk-dtype": (lambda c, q: ops.BufferTensor.empty(c, (1, 2, 3, 3), "junk"), "'junk'"),
    "box-huge-int": (lambda c, q: qcom_ext.box_size(10**400, 1, device=c), "box width"),
    "kernel-2d-half": (lambda c, q: _weights(c).kernel_2d(0.5), "0.5"),
    "kernel-2d-bool": (lambda c, q: _weights(c).kernel_2d(True), "True"),  # was a 4-D array
    "image-size-t": (lambda c, q: qcom_ext.create_image(c, (2**64, 4)), "size_t"),
    "image-too-wide": (lambda c, q: qcom_ext.create_image(c, (10**6, 4)), "IMAGE2D_MAX_WIDTH"),
    "image-unlisted-format": (
        lambda c, q: qcom_ext.create_image(c, (4, 4), _unlisted_format(c)),
        "cannot create",
    ),
    "define-not-ascii": (lambda c, q: define_options({"é": 1}), "'é'"),
    "define-nul": (lambda c, q: define_options({"A": "1\0-DB"}), "control"),
    "define-int-name": (lambda c, q: define_options({1: 1}), "1"),
    "unknown-extension": (
        lambda c, q: qcom_ext.probe().status(["cl_qcom_bitreverse"]),
        "cl_qcom_bitreverse",
    ),
    "pyopencl-ctx-superscript": (lambda c, q: _default_device("²"), "'²'"),  # a ValueError
    "driver-odd-width": (lambda c, q: _probe_answering({0x1016: b"\1\0\0"}), "0x1016"),
}


def _unlisted_format(context) -> str:
    """A legal order/type pair the context's device does not list (RG/UNSIGNED_INT16 on
    pocl; NVIDIA lists that one), so the refusal is the library's, not the driver's."""
    import pyopencl as cl

    listed = {
        (f.channel_order, f.channel_data_type)
        for f in cl.get_supported_image_formats(
            context, cl.mem_flags.READ_ONLY, cl.mem_object_type.IMAGE2D
        )
    }
    for order, kind in (
        ("RG", "UNSIGNED_INT16"),
        ("RA", "SNORM_INT16"),
        ("ARGB", "UNORM_INT8"),
        ("RGBx", "UNORM_SHORT_565"),
        ("A", "SIGNED_INT32"),
    ):
        pair = (getattr(cl.channel_order, order, None), getattr(cl.channel_type, kind, None))
        if None not in pair and pair not in listed:  # (pyopencl builds may lack a name)
            return f"{order}/{kind}"
    pytest.skip("the device lists every candidate format")


@pytest.mark.parametrize("found", sorted(FOUND))
def test_found_by_fuzzing(ctx, queue, found):
    call, named = FOUND[found]
    kinds = (DriverAnswerError,) if found.startswith("driver") else (ConfigError, KeyError)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
        exc = typed_error(lambda: call(ctx, queue), named, kinds=kinds, main=False)
    assert isinstance(exc, QcomExtError)


def test_found_by_fuzzing_names_not_utf8_are_kept():
    """A cl_name_version name that is not UTF-8 made the probe raise UnicodeDecodeError."""
    caps = _probe_answering({0x1060: struct.pack("<I64s", 1 << 22, b"cl_qcom_\xff")})
    assert caps.extension_versions == {"cl_qcom_\ufffd": "1.0.0"}


def test_found_by_fuzzing_long_driver_strings_are_linear():
    """A 32 kB driver string took 12 s to probe (two quadratic patterns); 1 MB must take
    well under the generous limit of this child process (it takes milliseconds)."""
    import subprocess
    import sys

    code = (
        "from qcom_ext.device.caps import DeviceCaps\n"
        "for text in ('1' * 10**6, 'Adreno' + ' ' * 10**6):\n"
        "    DeviceCaps.from_info(extensions='', device_version=text, driver_version=text,"
        " disabled=())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, env=env)
