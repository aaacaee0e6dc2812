"""Which device runs a device test's whole parameter grid, a pytest plugin (tests/conftest.py
loads it).

The house rule holds: every device test runs on every OpenCL device the suite selects.
Devices of one driver family (one driver, one device type: here pocl 3.0 and pocl 3.1,
both CPU) build and run the same kernels through the same driver code, and a kernel build
is most of a device test's cost on them, so within a family:

* the family's lead (a device that builds programs, the one with the most extensions,
  the first on a tie: pocl 3.1 here) runs every instance of every test;
* the others run each test function's first selected instance (every test, on every
  device) and every instance of a test that needs an extension the lead lacks.

The instances left out on a family's other devices are deselected (the run's summary
counts them) and the report header says which device runs whose grid.
``QCOM_EXT_TEST_FULL_GRID=1`` runs every instance on every device; a run that names
instances (``test_x.py::test_f[pocl-3.0-cpu-f16]``) or selects one device of the family
(``QCOM_EXT_TEST_DEVICES=pocl-3.0``) runs them all too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest

from qcom_ext.errors import QcomExtError
from qcom_ext.tools.pytest_plugin import selected_devices

FULL_GRID_ENV = "QCOM_EXT_TEST_FULL_GRID"


def family(caps: Any) -> tuple[str, str]:
    """A device's driver family: (driver, device type)."""
    return (caps.driver, caps.device_type)


def family_leads(
    devices: Sequence[Any], builds: Callable[[Any], bool] = lambda c: c.builds_programs
) -> dict[tuple[str, str], Any]:
    """Each driver family's lead: a device that ``builds`` programs before one that does
    not, then the most extensions, then the first.

    >>> from qcom_ext import DeviceCaps
    >>> def dev(version, extensions, kind="cpu"):
    ...     return DeviceCaps.from_info(extensions=extensions, platform_name="pocl",
    ...                                 driver_version=version, device_type=kind)
    >>> old, new = dev("3.0", "cl_khr_spir"), dev("3.1", "cl_khr_spir cl_khr_command_buffer")
    >>> {k: c.label for k, c in family_leads([old, new], builds=lambda c: True).items()}
    {('pocl', 'cpu'): 'pocl-3.1-cpu'}
    >>> family_leads([old, new], builds=lambda c: c is old)[("pocl", "cpu")] is old
    True
    """
    leads: dict[tuple[str, str], Any] = {}
    for caps in devices:
        best = leads.get(family(caps))
        if best is None or (builds(caps), len(caps.extensions)) > (
            builds(best),
            len(best.extensions),
        ):
            leads[family(caps)] = caps
    return leads


def grid_plan(
    instances: Iterable[tuple[str, Any, Iterable[str]]], leads: dict[tuple[str, str], Any]
) -> list[bool]:
    """Whether each test instance runs: ``(test function id, its device's DeviceCaps or
    None, the extensions it requires)`` in collection order (see the module's docstring).

    >>> from qcom_ext import DeviceCaps
    >>> def dev(version, extensions):
    ...     return DeviceCaps.from_info(extensions=extensions, platform_name="pocl",
    ...                                 driver_version=version, device_type="cpu")
    >>> old, new = dev("3.0", "cl_khr_spir"), dev("3.1", "cl_khr_command_buffer x y")
    >>> leads = {("pocl", "cpu"): new}
    >>> grid_plan([("f", new, ()), ("f", old, ()), ("f", new, ()), ("f", old, ()),
    ...            ("g", None, ()), ("g", None, ()), ("h", old, ("cl_khr_spir",)),
    ...            ("h", old, ("cl_khr_spir",))], leads)
    [True, True, True, False, True, True, True, True]
    """
    plan, smoked = [], set()
    for function, caps, required in instances:
        lead = None if caps is None else leads.get(family(caps))
        if caps is None or lead is None or lead is caps:
            plan.append(True)
        elif any(not lead.has(name) and caps.has(name) for name in required):
            plan.append(True)  # the lead would skip it: this device runs its grid
        else:
            plan.append((function, id(caps)) not in smoked)
            smoked.add((function, id(caps)))
    return plan


def _instance(item: pytest.Item) -> tuple[str, Any, list[str]]:
    callspec = getattr(item, "callspec", None)
    caps = callspec.params.get("device_caps") if callspec is not None else None
    required = [n for m in item.iter_markers("requires_ext") for n in m.args]
    return item.nodeid.split("[", 1)[0], caps, required


def _thinned(config: pytest.Config) -> dict[tuple[str, str], Any]:
    """The family leads when this run thins the grid, else {}."""
    if os.environ.get(FULL_GRID_ENV, "").strip() not in ("", "0"):
        return {}
    if any("[" in str(arg) for arg in config.args):
        return {}  # the run names instances: all of them run
    try:
        devices = selected_devices()
    except QcomExtError:
        return {}  # a bad QCOM_EXT_TEST_DEVICES: qcom_ext's plugin stops the run, saying so
    leads = family_leads(devices)
    return leads if len(leads) < len(devices) else {}


@pytest.hookimpl(trylast=True)  # after -k / -m: the first instance among those selected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    instances = [_instance(item) for item in items]
    if not any(caps is not None for _, caps, _ in instances):
        return  # no device test selected: nothing to probe or build
    leads = _thinned(config)
    if not leads:
        return
    plan = grid_plan(instances, leads)
    dropped = [item for item, runs in zip(items, plan, strict=True) if not runs]
    if dropped:
        items[:] = [item for item, runs in zip(items, plan, strict=True) if runs]
        config.hook.pytest_deselected(items=dropped)


def pytest_report_header(config: pytest.Config) -> list[str]:
    leads = _thinned(config)
    lines = []
    for caps in selected_devices() if leads else ():
        lead = leads.get(family(caps))
        if lead is not None and lead is not caps:
            lines.append(
                f"device grid: {caps.label} runs each test's first instance, {lead.label} "
                f"every instance (tests/device_grid.py; {FULL_GRID_ENV}=1 runs all on both)"
            )
    return lines
