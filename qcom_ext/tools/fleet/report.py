"""``qcom-ext report``: one self-contained JSON file about one device, to attach to a bug.

The report puts together what already exists: the probe (:func:`qcom_ext.probe`, as
``qcom-ext probe --json`` prints it: facts, paths and reasons, quirks applied), the
selftest (:func:`~qcom_ext.tools.selftest.run_selftest`, as checks with stable ids:
:mod:`qcom_ext.tools.fleet.checks`), the device's identity as gpuinfo.org keys its
reports plus the Adreno model and compiler (:mod:`qcom_ext.tools.fleet.identity`) and
the versions a maintainer asks for. The whole report then passes the scrubber
(:mod:`qcom_ext.tools.fleet.privacy`): no host name, user name, home path, serial number,
MAC or IP address is written. Its shape is ``qcom_ext/schemas/report-1.json`` (JSON
Schema, :func:`schema`); docs/report.md describes every field.

>>> from qcom_ext import probe
>>> report = build_report(probe(), None)
>>> report["schema"], report["schema_version"], report["checks"], report["selftest"]["ran"]
('qcom_ext.report', 1, [], False)
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from qcom_ext._resources import schemas_dir
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.probe import probe
from qcom_ext.tools._output import write_text
from qcom_ext.tools.fleet.checks import VERDICTS, checks_from_selftest
from qcom_ext.tools.fleet.identity import OsFacts, environment, identity, identity_key
from qcom_ext.tools.fleet.privacy import Scrubber
from qcom_ext.tools.selftest._report import SelftestReport

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "build_report",
    "counts",
    "default_filename",
    "run_report",
    "schema",
    "write_report",
]

SCHEMA = "qcom_ext.report"
SCHEMA_VERSION = 1
#: The probe's facts kept in the report's ``probe.facts`` (the rest has its own place).
_FACTS = (
    "label",
    "platform",
    "device",
    "adreno",
    "unknown_qcom",
    "extension_versions",
    "limits",
    "broken",
    "disabled",
    "problems",
    "verdicts",
)


@functools.cache
def _schema_text() -> str:
    return (schemas_dir() / f"report-{SCHEMA_VERSION}.json").read_text(encoding="utf-8")


def schema() -> dict[str, Any]:
    """The JSON Schema of the reports this version writes (a fresh copy)."""
    loaded: dict[str, Any] = json.loads(_schema_text())
    return loaded


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quirk_reason(quirk: Any) -> str:
    return f"{quirk.summary}; qcom_ext: {quirk.effect}"


def _probe_block(caps: DeviceCaps, build_problem: str | None) -> dict[str, Any]:
    data = caps.to_dict()
    facts = {key: data[key] for key in _FACTS}
    facts["build_problem"] = build_problem
    return {
        "extensions": data["extensions"],
        "paths": data["qcom"],
        "quirks": [{"id": q.id, "reason": _quirk_reason(q)} for q in caps.quirks],
        "facts": facts,
    }


def _selftest_block(selftest: SelftestReport | None) -> dict[str, Any]:
    if selftest is None:
        return {"ran": False, "seed": None, "only": None, "ok": None, "build_problem": None}
    return {
        "ran": True,
        "seed": selftest.seed,
        "only": None if selftest.only is None else list(selftest.only),
        "ok": selftest.ok,
        "build_problem": selftest.build_problem,
    }


def build_report(
    caps: DeviceCaps,
    selftest: SelftestReport | None,
    *,
    created: str | None = None,
    os: OsFacts | None = None,
    synthetic_note: str | None = None,
    checks: list[dict[str, Any]] | None = None,
    scrubber: Scrubber | None = None,
) -> dict[str, Any]:
    """The report of ``caps``'s device and its ``selftest`` (None: the probe alone), on
    this OS unless ``os`` says otherwise, scrubbed whole (``scrubber``: this machine's,
    :meth:`Scrubber.from_environment`, by default). ``synthetic_note`` marks a generated
    report (``synthetic: true``); ``checks`` then stand in for the selftest's."""
    if selftest is not None:
        build_problem = selftest.build_problem
    else:  # a report built from strings has no device to build on
        build_problem = caps.build_problem if caps.device_id else None
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created": created or _now(),
        "synthetic": synthetic_note is not None,
    }
    if synthetic_note is not None:
        report["synthetic_note"] = synthetic_note
    report["identity"] = identity(caps, os)
    report["identity_key"] = ""
    report["environment"] = environment(caps)
    report["probe"] = _probe_block(caps, build_problem)
    report["selftest"] = _selftest_block(selftest)
    if checks is None:
        checks = [] if selftest is None else checks_from_selftest(selftest)
    report["checks"] = checks
    scrubbed: dict[str, Any] = (scrubber or Scrubber.from_environment())(report)
    scrubbed["identity_key"] = identity_key(scrubbed["identity"])
    return scrubbed


def run_report(
    device: Any = None,
    *,
    selftest: bool = True,
    only: Sequence[str] | None = None,
    seed: int = 0,
    verify: bool = False,
    isolated: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Probe ``device`` (a ``--device`` value, a pyopencl.Device, a handle, or None:
    the device ``qcom_ext.probe()`` picks), run the selftest there unless ``selftest``
    is false (``only``: those extensions), and return the report."""
    from qcom_ext.tools.selftest import run_selftest

    if not selftest:
        if isolated:
            from qcom_ext.device.isolated import probe_isolated

            probe_isolated(device if isinstance(device, str) else None)
        return build_report(probe(_device_id(device), verify=verify), None)
    result = run_selftest(
        device, seed=seed, only=only, verify=verify, isolated=isolated, progress=progress
    )
    return build_report(probe(_device_id(device)), result)


def _device_id(device: Any) -> Any:
    """What :func:`probe` takes for ``device`` (a ``--device`` value is looked up)."""
    if isinstance(device, str):
        from qcom_ext.device.choice import device_from_spec

        return device_from_spec(device, option="--device")
    if isinstance(device, DeviceCaps):
        return device.device_id
    return device


def counts(report: dict[str, Any]) -> dict[str, int]:
    """How many checks had each verdict."""
    found = dict.fromkeys(VERDICTS, 0)
    for check in report.get("checks", ()):
        found[check["verdict"]] += 1
    return found


def default_filename(report: dict[str, Any]) -> str:
    """``qcom-ext-report-<device label>-<YYYYMMDD>.json``."""
    label = str(report["probe"]["facts"].get("label") or "device")
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", label).strip("-.").lower()[:60] or "device"
    day = str(report["created"])[:10].replace("-", "")
    return f"qcom-ext-report-{slug}-{day}.json"


def write_report(
    report: dict[str, Any], path: str | os.PathLike[str], option: str = "--output"
) -> Path:
    """Write ``report`` to ``path`` (UTF-8 JSON, mode 0600) whole or not at all
    (:func:`~qcom_ext.tools._output.write_text`); an unwritable place is a
    :class:`~qcom_ext.errors.ConfigError` naming ``option``."""
    text = json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return write_text(path, text, option, private=True)
