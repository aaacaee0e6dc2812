"""Which drivers' builds qcom_ext's program store keeps (``build.drivers_cache_builds``).

pocl caches its builds itself; asking it for a program's binaries compiles every kernel
once more, so qcom_ext stores none of its binaries unless pocl's cache is off.
"""

from __future__ import annotations

import pytest

import qcom_ext
from qcom_ext.ext.program import build
from qcom_ext.ext.program import cache as program_cache

SOURCE = "__kernel void k(__global uint *v) { v[0] = qcom_bitreverse(v[0]) + SALT; }"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(program_cache.DIR_ENV, str(tmp_path))
    monkeypatch.delenv(program_cache.DISABLE_ENV, raising=False)
    return tmp_path / "programs"


def _entries(directory) -> list:
    return sorted(directory.glob(f"*{program_cache.SUFFIX}")) if directory.is_dir() else []


@pytest.mark.parametrize("pocl_cache", ["default", "1", "0"])
def test_pocl_builds_are_stored_only_with_pocls_cache_off(
    kernel_context, device_caps, store, monkeypatch, pocl_cache
):
    if pocl_cache == "default":
        monkeypatch.delenv("POCL_KERNEL_CACHE", raising=False)
    else:
        monkeypatch.setenv("POCL_KERNEL_CACHE", pocl_cache)
    spied = []
    real = build._binaries
    monkeypatch.setattr(build, "_binaries", lambda *a: spied.append(1) or real(*a))
    qcom_ext.build_program(kernel_context, SOURCE, defines={"SALT": len(pocl_cache)})
    pocl_keeps_its_own = device_caps.driver == "pocl" and pocl_cache != "0"
    assert build.drivers_cache_builds(kernel_context.devices) is pocl_keeps_its_own
    # no binaries asked for (pocl would compile every kernel again), none stored
    assert bool(spied) is not pocl_keeps_its_own
    assert bool(_entries(store)) is not pocl_keeps_its_own


def test_no_devices_means_no_driver_cache():
    assert build.drivers_cache_builds([]) is False
