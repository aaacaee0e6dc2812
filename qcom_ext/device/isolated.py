"""The probe run in a child process: a driver that crashes while it is asked is an error.

Some drivers crash in the probe's very first call (a Windows-on-Snapdragon driver inside
``clGetPlatformIDs``). :func:`probe_isolated` (``probe_all(isolated=True)``, ``qcom-ext
probe --isolated``, ``qcom-ext selftest --isolated``) makes the platform and device
queries in a child process (``python -m qcom_ext.device.probe_child``) and brings the
reports back as JSON (:meth:`DeviceCaps.to_dict`, read back by :func:`report_from_dict`).
A crash there raises :class:`~qcom_ext.errors.DriverCrashError` naming the call and the
signal ("the OpenCL driver crashed in clGetPlatformIDs (SIGSEGV)"), a hang
:class:`~qcom_ext.errors.DriverTimeoutError`; this process never calls the driver.

The reports describe the devices as the child saw them: they carry no handles (a
handle is valid in the process that got it), so ``caps.device()`` is not available; to
use a device, probe it in this process once the isolated probe came back.

>>> every = probe_isolated(all_devices=True)
>>> from qcom_ext import probe_all
>>> [c.to_dict() for c in every] == [c.to_dict() for c in probe_all()]
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from qcom_ext._isolation import module_command, run_child
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.limits import Limits
from qcom_ext.device.verdicts import Verdict
from qcom_ext.errors import QcomExtError

__all__ = ["DEFAULT_TIMEOUT", "probe_isolated", "report_from_dict"]

#: Seconds the child may take for the whole probe (opening the library included);
#: ``verify=True`` runs the crash trials there too and may need more.
DEFAULT_TIMEOUT = 120.0
#: The child (:mod:`qcom_ext.device.probe_child`); this side needs only the runner.
CHILD_MODULE = "qcom_ext.device.probe_child"


def probe_isolated(
    spec: str | None = None,
    *,
    all_devices: bool = False,
    verify: bool = False,
    disabled: str | Iterable[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
) -> list[DeviceCaps]:
    """The reports :func:`~qcom_ext.device.probe.probe_all` (``all_devices``) or
    :func:`~qcom_ext.device.probe.probe` of the device ``spec`` names (a ``--device``
    value, :func:`~qcom_ext.device.choice.device_from_spec`; None: the default device)
    would give, made in a child process within ``timeout`` seconds. ``verify`` and
    ``disabled`` are :func:`probe`'s.

    Raises :class:`~qcom_ext.errors.DriverCrashError` (the call the child was in and
    the signal) when the driver ends the child, :class:`~qcom_ext.errors.DriverTimeoutError`
    when it hangs, and what the probe itself raises (NoPlatformError as
    OpenCLUnavailable, ConfigError) as it would in this process.
    """
    names = [disabled] if isinstance(disabled, str) else list(disabled)
    request = {"spec": spec, "all": all_devices, "verify": verify, "disabled": names}
    run = run_child(module_command(CHILD_MODULE), request, timeout=timeout)
    reports = run.raise_failure().get("reports")
    if not isinstance(reports, list):
        raise QcomExtError(f"the isolated probe's child sent no reports: {run.result!r}")
    return [report_from_dict(r) for r in reports]


def _tupled(value: Any) -> Any:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


def report_from_dict(data: Mapping[str, Any]) -> DeviceCaps:
    """The :class:`DeviceCaps` whose :meth:`~DeviceCaps.to_dict` is ``data`` (without
    handles): the strings go through :meth:`DeviceCaps.from_info` again, the verdicts
    are applied as the probe applies them. QcomExtError for anything else.

    >>> caps = DeviceCaps.from_info(extensions="cl_qcom_bitreverse", device_name="x")
    >>> report_from_dict(caps.to_dict()) == caps
    True
    """
    try:
        device, platform = data["device"], data["platform"]
        caps = DeviceCaps.from_info(
            extensions=data["extensions"],
            device_version=device["version"],
            driver_version=device["driver_version"],
            device_name=device["name"],
            vendor_id=device["vendor_id"],
            opencl_c_version=device["opencl_c_version"],
            device_type=device["type"],
            platform_name=platform["name"],
            platform_version=platform["version"],
            platform_extensions=platform["extensions"],
            extension_versions=data["extension_versions"],
            image_support=device["image_support"],
            limits=Limits(**{k: _tupled(v) for k, v in data["limits"].items()}),
            disabled=data["disabled"],
            problems=data["problems"],
        )
        verdicts = {n: Verdict.from_dict(v) for n, v in data["verdicts"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise QcomExtError(f"not a DeviceCaps report ({type(exc).__name__}: {exc})") from None
    return caps.with_verdicts(verdicts) if verdicts else caps
