"""Shared fixtures: every OpenCL device found, and declarative capability skips.

``device_caps`` is parametrized over every device (ids like ``pocl-3.1-cpu``);
``QCOM_EXT_TEST_DEVICES=pocl-3.1,nvidia`` keeps only devices whose label contains one
of the strings. ``@pytest.mark.requires_ext("cl_...")`` skips devices without it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import qcom_ext
from qcom_ext.errors import OpenCLUnavailable

DATA = Path(__file__).parent / "data"


def _devices() -> list[qcom_ext.DeviceCaps]:
    try:
        found = qcom_ext.probe_all()
    except OpenCLUnavailable:
        return []
    wanted = [w for w in os.environ.get("QCOM_EXT_TEST_DEVICES", "").split(",") if w]
    return [c for c in found if not wanted or any(w in c.label for w in wanted)]


def _ids(devices: list[qcom_ext.DeviceCaps]) -> list[str]:
    ids, seen = [], {}
    for caps in devices:
        seen[caps.label] = seen.get(caps.label, 0) + 1
        ids.append(caps.label if seen[caps.label] == 1 else f"{caps.label}-{seen[caps.label]}")
    return ids


DEVICES = _devices()


@pytest.fixture(autouse=True, scope="session")
def _program_cache_in_a_temporary_dir(tmp_path_factory):
    """build_program's binary cache goes to a fresh directory, never the user's cache
    (subprocesses such as the samples inherit it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path_factory.mktemp("program-cache")))
        yield


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not DEVICES:
        return ["qcom_ext: no OpenCL device found"]
    return [f"qcom_ext device: {caps.summary()}" for caps in DEVICES]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device_caps" in metafunc.fixturenames:
        if DEVICES:
            metafunc.parametrize("device_caps", DEVICES, ids=_ids(DEVICES), indirect=True)
        else:
            metafunc.parametrize(
                "device_caps",
                [pytest.param(None, marks=pytest.mark.skip(reason="no OpenCL device found"))],
                indirect=True,
            )


@pytest.fixture
def device_caps(request: pytest.FixtureRequest) -> qcom_ext.DeviceCaps:
    caps = request.param
    for marker in request.node.iter_markers("requires_ext"):
        for name in marker.args:
            if not caps.has(name):
                pytest.skip(f"{caps.label} ({caps.device_name}) does not advertise {name}")
    return caps


@pytest.fixture
def cl_context(device_caps):
    import pyopencl as cl

    return cl.Context([device_caps.device()])


_COMPILER_PROBLEMS: dict[int, str | None] = {}


@pytest.fixture
def kernel_context(device_caps, cl_context):
    """A context whose device can build kernels; others skip, naming the build error.

    (The PyPI pocl 3.0 uses LLVM 14, which cannot target some newer host CPUs:
    "unknown target CPU 'generic'".)
    """
    import pyopencl as cl

    if device_caps.device_id not in _COMPILER_PROBLEMS:
        try:
            cl.Program(cl_context, "__kernel void k(__global int *a) { a[0] = 1; }").build()
            _COMPILER_PROBLEMS[device_caps.device_id] = None
        except cl.Error as exc:
            lines = [line for line in str(exc).splitlines() if "error" in line.lower()]
            _COMPILER_PROBLEMS[device_caps.device_id] = lines[-1] if lines else str(exc)
    problem = _COMPILER_PROBLEMS[device_caps.device_id]
    if problem:
        pytest.skip(f"{device_caps.label} cannot compile kernels on this host: {problem}")
    return cl_context


@pytest.fixture
def cl_queue(cl_context):
    import pyopencl as cl

    return cl.CommandQueue(cl_context)


def adreno_strings() -> dict[str, str]:
    """File stem -> the verbatim extension string of a real Adreno device."""
    return {p.stem: p.read_text() for p in sorted(DATA.glob("adreno*.txt"))}
