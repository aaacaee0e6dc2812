"""The project's own tests use qcom_ext's installed pytest plugin (qcom_ext.tools.pytest_plugin,
inert until asked; ``qcom_ext = true`` in pyproject.toml enables it for this suite):
``device_caps`` / ``cl_device`` / ``cl_context`` / ``cl_queue`` / ``kernel_context`` over
every device, ``requires_ext`` and ``fallback_and_native`` markers. Test data lives here;
the test doubles live in tests/fakes/.

Three suite-wide rules are set here:

* hypothesis profiles: ``ci`` (derandomized: every run draws the same examples, so a CI
  machine's kernel caches are reused and a failure reproduces) is loaded when ``CI`` is
  set, ``dev`` (random draws) otherwise; ``--hypothesis-profile`` overrides either;
* the time budget (tests/time_budget.py, a plugin): a test slower than ``test_budget_s``
  (pyproject.toml), counting its setup and teardown, fails, and the run ends with a list
  of its slowest tests;
* the device grid (tests/device_grid.py, a plugin): every device test runs on every
  device; of devices of one driver family (pocl 3.0 and 3.1, both CPU) one runs each
  test's whole parameter grid and the others each test's first instance.
"""

from __future__ import annotations

import copy
import importlib
import os
import sys
from pathlib import Path

# Under pytest-xdist (-n auto: a worker a CPU) one pocl thread a worker, set before any
# OpenCL call: pocl's pthread device runs each kernel on every CPU, so two workers'
# kernels oversubscribed two CPUs (an Oclgrind shard of 12 CPU-s took 31 s of wall time).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("POCL_MAX_PTHREAD_COUNT", "1")

import pytest
from hypothesis import settings

from qcom_ext.tools.pytest_plugin import selected_devices

pytest_plugins = ["time_budget", "device_grid"]

DATA = Path(__file__).parent / "data"
DEVICES = selected_devices()  # the devices the plugin parametrizes over

# Loaded before any test module builds its own settings, which inherit from the profile.
settings.register_profile("dev")  # hypothesis's defaults: new random draws each run
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev")


@pytest.fixture(autouse=True, scope="session")
def _program_cache_in_a_temporary_dir(tmp_path_factory):
    """build_program's binary cache goes to a fresh directory, never the user's cache
    (subprocesses such as the samples inherit it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path_factory.mktemp("program-cache")))
        yield


@pytest.fixture
def program_binaries_stored(monkeypatch):
    """build_program stores binaries on every driver, pocl included (whose builds it
    otherwise leaves to pocl's own cache: ``build.drivers_cache_builds``). For the tests
    of qcom_ext's program store itself. (Not ``POCL_KERNEL_CACHE=0``: pocl 3.1's uncached
    builds race in concurrent processes, "Can't get stat() on ..._UNCACHED_.../program.bc".)
    """
    from qcom_ext.ext.program import build

    monkeypatch.setattr(build, "drivers_cache_builds", lambda devices: False)


@pytest.fixture
def tuning_cache_dir(tmp_path, monkeypatch):
    """A fresh cache directory for the tuning caches (local sizes and variant choices),
    their in-process memos cleared before and after; yields the ``tuning`` folder."""
    from qcom_ext.ops import tuning

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    tuning.forget()
    yield tmp_path / "tuning"
    tuning.forget()


@pytest.fixture
def fake_cl_objects(monkeypatch):
    """``fake_cl_objects(module, "_wrap_x", ...)``: those wrappers return
    ``fakes.driver.FakeCLObject`` objects for fake handles; the probe cache (keyed by
    handle) is forgotten before and after and QCOM_EXT_DISABLE is cleared (tests that want
    it set it)."""
    from fakes.driver import FakeCLObject

    from qcom_ext.device.probe import clear_cache

    def use(module, *names: str) -> None:
        for name in names:
            monkeypatch.setattr(module, name, FakeCLObject)

    clear_cache()
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    yield use
    clear_cache()


def benchmark_module(name: str):
    """``qcom_ext/tools/bench/<name>.py`` as ``qcom_ext.tools.bench.<name>``: the package
    ``qcom-ext bench`` runs, from the checkout or from an installed wheel."""
    from qcom_ext.tools.cli import benchmarks_runner

    benchmarks_runner()
    return importlib.import_module(f"qcom_ext.tools.bench.{name}")


#: The top of the checkout: the benchmarking lab, ``benchmarks/``, lives there (not in the
#: wheel).
CHECKOUT = Path(__file__).resolve().parent.parent


def lab_module(name: str):
    """``benchmarks/<name>.py`` of this checkout as ``benchmarks.<name>`` (``__main__``: the
    lab's runner), the checkout put on the import path after what is there (as
    ``python -m benchmarks`` run from it has it); skipped where the tests run without their
    checkout (``benchmarks/`` does not ship)."""
    if not (CHECKOUT / "benchmarks" / "__init__.py").is_file():
        pytest.skip(
            "the benchmarking lab (benchmarks/) is part of a checkout, not the wheel",
            allow_module_level=True,
        )
    if not any(Path(p or ".").resolve() == CHECKOUT for p in sys.path):
        sys.path.append(str(CHECKOUT))
    return importlib.import_module(f"benchmarks.{name}")


#: Limits a driver may compute from the host's free memory (pocl does, the image sizes
#: too): two probes of one device, here and in a child, may read them under another load.
MEMORY_LIMITS = ("max_mem_alloc_size", "max_large_buffer_size", "image2d_max_size")


def stable_report(report) -> dict:
    """A probe report (a DeviceCaps or its ``to_dict()``) without :data:`MEMORY_LIMITS`:
    what two probes of one device must agree on whatever the host's load."""
    data = copy.deepcopy(report if isinstance(report, dict) else report.to_dict())
    for name in MEMORY_LIMITS:
        data["limits"].pop(name, None)
    return data


def adreno_strings() -> dict[str, str]:
    """File stem -> the verbatim extension string of a real Adreno device."""
    return {p.stem: p.read_text() for p in sorted(DATA.glob("adreno*.txt"))}


def building_device():
    """The first selected device that builds programs (``DeviceCaps.builds_programs``,
    the plugin's device rule); the test skips, naming why, where none does."""
    from qcom_ext.tools.pytest_plugin import skip_unless_building

    if not DEVICES:
        pytest.skip("needs an OpenCL device")
    for caps in DEVICES:
        if caps.builds_programs:
            return caps
    skip_unless_building(DEVICES[0])


def default_building_context():
    """A context on the default device (``qcom_ext.probe()``), skipping the test where
    that device cannot build kernels (the plugin's device rule, as ``kernel_context``)."""
    import pyopencl as cl

    from qcom_ext import QcomExtError, probe
    from qcom_ext.tools.pytest_plugin import skip_unless_building

    try:
        caps = probe()
    except QcomExtError as exc:
        pytest.skip(f"needs a device that builds kernels: {exc}")
    skip_unless_building(caps)
    return cl.Context([caps.device()])
