"""Synthetic reports from real captures: real probe facts, generated verdicts, labelled so.

A capture is a real device's ``CL_DEVICE_EXTENSIONS`` string (``tests/data/adreno*.txt``)
and the driver strings published with it (``tests/data/captures.json``, under the
capture's file name without ``.txt``). :func:`report_from_capture` probes them as the
library probes a device (:meth:`DeviceCaps.from_info <qcom_ext.DeviceCaps.from_info>`:
model, compiler, paths, quirks) and writes the report the selftest's plan would give
(:func:`qcom_ext.tools.fleet.checks.planned`), every check that would run getting the
verdict asked for and every path the device lacks a ``skip``. The report says
``"synthetic": true`` and where its facts come from (``synthetic_note``), so the fleet
tools (``qcom-ext compat``) meet real model and compiler strings without a device.

>>> strings = {"device_version": "OpenCL 3.0 Adreno(TM) 730",
...            "driver_version": "commit #16c1863 ... Compiler E031.38.11.12"}
>>> report = report_from_capture("cl_qcom_bitreverse cl_khr_fp16", strings=strings)
>>> ident = report["identity"]
>>> report["synthetic"], ident["adreno_model"], ident["compiler_version"], ident["compiler_key"]
(True, '730', 'E031.38.11.12', [0, 38, 11, 12])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from qcom_ext import _cache_dir
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.kernel_gpu import KernelGpu
from qcom_ext.device.kgsl import KgslFacts
from qcom_ext.errors import ConfigError
from qcom_ext.tools.fleet.checks import VerdictFunction, planned
from qcom_ext.tools.fleet.privacy import Scrubber
from qcom_ext.tools.fleet.report import build_report

__all__ = ["STRINGS", "capture_caps", "capture_strings", "report_from_capture"]

#: The driver strings a capture may come with (``captures.json``'s keys).
STRINGS = (
    "device_name",
    "device_version",
    "driver_version",
    "platform_name",
    "platform_version",
    "platform_extensions",
    "kgsl_model",
    "os_name",
    "os_version",
    "architecture",
    "source",
)
_QUALCOMM_VENDOR = 0x5143
_MAX_BYTES = 1 << 20


def _read(path: Path, what: str) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{what} {str(path)!r}: cannot be read ({exc.strerror})") from None
    if len(data) > _MAX_BYTES:
        raise ConfigError(f"{what} {str(path)!r}: over {_MAX_BYTES} bytes")
    return data


def capture_strings(path: str | os.PathLike[str]) -> dict[str, str]:
    """The driver strings published with the capture at ``path`` (from ``captures.json``
    beside it), or ``{}`` where there is no such file or entry; a malformed file or
    entry is a ConfigError."""
    capture = Path(path)
    index = capture.with_name("captures.json")
    if not index.is_file():
        return {}
    data = _cache_dir.parse_json(
        _read(index, "captures index"), max_bytes=_MAX_BYTES, validate=_well_formed
    )
    if data is None:
        raise ConfigError(
            f"captures index {str(index)!r}: expected a JSON object of capture name -> "
            f"{{string name: string}} with names among {', '.join(STRINGS)}"
        )
    entry: dict[str, str] = data.get(capture.stem, {})
    return entry


def _well_formed(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    entries = [v for k, v in data.items() if not k.startswith("_")]
    return all(
        isinstance(v, dict) and all(k in STRINGS and isinstance(s, str) for k, s in v.items())
        for v in entries
    )


def _capture_text(capture: str | os.PathLike[str]) -> tuple[str, dict[str, str], str]:
    """(extension string, its published strings, where it came from)."""
    if isinstance(capture, os.PathLike) or (
        isinstance(capture, str) and capture.endswith(".txt") and not capture.split()[1:]
    ):
        path = Path(capture)
        try:
            text = _read(path, "capture").decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"capture {str(path)!r}: not UTF-8 text") from None
        return text, capture_strings(path), path.name
    if not isinstance(capture, str):
        raise ConfigError(
            f"capture of type {type(capture).__name__}: expected a path to an "
            "adreno*.txt file or the extension string itself"
        )
    return capture, {}, "an extension string"


def capture_caps(text: str, strings: Mapping[str, str]) -> DeviceCaps:
    """The probe's report of a device with extension string ``text`` and driver
    ``strings`` (Qualcomm's vendor id; ``kgsl_model``: the kernel names the model)."""
    unknown = sorted(set(strings) - set(STRINGS))
    if unknown:
        raise ConfigError(f"capture strings {unknown}: expected names among {', '.join(STRINGS)}")
    model = strings.get("kgsl_model")
    kgsl = KernelGpu(kgsl=KgslFacts(gpu_model=f"Adreno{model}"), kgsl_device=True)
    return DeviceCaps.from_info(
        extensions=text,
        device_name=strings.get("device_name", ""),
        device_version=strings.get("device_version", ""),
        driver_version=strings.get("driver_version", ""),
        platform_name=strings.get("platform_name", ""),
        platform_version=strings.get("platform_version", ""),
        platform_extensions=strings.get("platform_extensions", ""),
        vendor_id=_QUALCOMM_VENDOR,
        disabled=(),
        kgsl=kgsl if model else None,
    )


def _verdict_function(verdicts: str | VerdictFunction) -> VerdictFunction:
    if callable(verdicts):
        return verdicts
    if isinstance(verdicts, str):
        return lambda extension, path, case: verdicts
    raise ConfigError(
        f"verdicts {verdicts!r}: expected a verdict name or a function "
        "(extension, path, case id) -> verdict"
    )


def report_from_capture(
    capture: str | os.PathLike[str],
    *,
    verdicts: str | Callable[[str, str, str], str] = "pass",
    strings: Mapping[str, str] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    """A schema-valid synthetic report of the device of ``capture`` (a path to an
    ``adreno*.txt`` capture, or its extension string). ``strings`` (names of
    :data:`STRINGS`) replace those published with a capture file; ``verdicts`` is the
    verdict of every check that would run (``"pass"``, ``"fail"``, ``"crash"``,
    ``"unchecked"``) or a function ``(extension, path, case id) -> verdict``."""
    text, published, origin = _capture_text(capture)
    given = {**published, **dict(strings or {})}
    caps = capture_caps(text, given)
    os_facts = tuple(given.get(k) or "unknown" for k in ("os_name", "os_version", "architecture"))
    source = f" ({given['source']})" if given.get("source") else ""
    note = (
        f"synthetic: probe facts from the real capture {origin}{source}; identity's OS is "
        "what the source says; verdicts generated, not measured; environment is the "
        "generator's"
    )
    return build_report(
        caps,
        None,
        created=created,
        os=(os_facts[0], os_facts[1], os_facts[2]),
        synthetic_note=note,
        checks=planned(caps, _verdict_function(verdicts)),
        scrubber=Scrubber(),
    )
