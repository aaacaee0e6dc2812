"""Which device a ``--device`` value names.

Every command's ``--device`` takes what ``PYOPENCL_CTX`` takes (``"1:0"``, ``"nvidia"``:
:func:`~qcom_ext.device.probe.default_device`) and, failing that, a device's label as
``qcom-ext probe`` prints it (``pocl-3.1-cpu``) or a part of one, matched by
:func:`label_matches`, the one matcher ``QCOM_EXT_TEST_DEVICES`` uses too. Two platforms
may share a name (pocl 3.0 and 3.1 are both "Portable Computing Language"); their labels
differ. A value that names no device, or several, is a ConfigError that names the option
and lists every device with its label and its ``<platform>:<device>`` indices.

>>> label_matches("pocl-3.1-cpu", "pocl-3.1"), label_matches("pocl-3.1-cpu", "nvidia")
(True, False)
>>> caps = probe()
>>> device_from_spec(caps.label) == device_from_spec(pyopencl_ctx(caps.device_id))
True
>>> device_from_spec("no-such-device")
Traceback (most recent call last):
...
qcom_ext.errors.ConfigError: --device 'no-such-device' names no device: ...
"""

from __future__ import annotations

from typing import Any

from qcom_ext.binding import info as _info
from qcom_ext.binding.lib import C, handle_int
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.location import location
from qcom_ext.device.probe import default_device, probe
from qcom_ext.errors import ConfigError, QcomExtError

__all__ = ["device_from_spec", "devices_by_index", "label_matches", "pyopencl_ctx"]


def label_matches(label: str, selector: str) -> bool:
    """Whether ``selector`` picks the device labelled ``label``: it is the label or a
    part of it (case-sensitive, as labels are lower case)."""
    return selector in label


def devices_by_index() -> list[tuple[str, DeviceCaps]]:
    """``("<platform>:<device>", report)`` of every device, in enumeration order."""
    return [
        (f"{p}:{d}", probe(handle))
        for p, platform in enumerate(_info.platform_ids())
        for d, handle in enumerate(_info.device_ids(platform))
    ]


def _listing(devices: list[tuple[str, DeviceCaps]]) -> str:
    shown = "; ".join(f"{i} = {c.label} ({c.device_name.strip()})" for i, c in devices)
    return shown or "none"


def device_from_spec(spec: str, *, option: str = "--device") -> int:
    """The handle of the device ``spec`` names: ``PYOPENCL_CTX``'s rules first (indices
    or name parts), else a whole device label, else the one label containing ``spec``.
    ConfigError naming ``option`` (and listing the devices) when none or several match.
    """
    try:
        chosen = default_device(spec)
    except ConfigError:
        pass  # not a PYOPENCL_CTX choice here: perhaps a label
    else:
        named = _named_by_ctx(spec)
        if len(named) > 1:  # PYOPENCL_CTX keeps the last platform; --device refuses
            every = devices_by_index()
            raise ConfigError(
                f"{option} {spec!r} matches {len(named)} devices: "
                f"{_listing([(i, c) for i, c in every if c.device_id in named])}; give the "
                "whole label, or '<platform>:<device>' where two devices share a label"
            )
        return chosen
    every = devices_by_index()
    found = [(i, c) for i, c in every if c.label == spec] or [
        (i, c) for i, c in every if label_matches(c.label, spec)
    ]
    if len(found) == 1:
        return found[0][1].device_id
    if not found:
        raise ConfigError(
            f"{option} {spec!r} names no device: expected a device label as 'qcom-ext probe' "
            "prints it (or a part of one), or '<platform>:<device>' (indices, or parts of "
            f"the platform and device names); the devices here: {_listing(every)}"
        )
    raise ConfigError(
        f"{option} {spec!r} matches {len(found)} devices: {_listing(found)}; give the whole "
        "label, or '<platform>:<device>' where two devices share a label"
    )


def _matching(handles: list[int], answer: str, name_of: Any) -> list[int]:
    """The handles ``answer`` names under ``PYOPENCL_CTX``'s rules (an index, else a
    case-insensitive name part), every one of them; the first without an answer."""
    if not answer:
        return handles[:1]
    if answer.isascii() and answer.isdigit() and int(answer) < len(handles):
        return [handles[int(answer)]]
    return [h for h in handles if answer.lower() in name_of(h).lower()]


def _named_by_ctx(spec: str) -> set[int]:
    """Every device a ``PYOPENCL_CTX``-style ``spec`` could mean: pyopencl settles a name
    part that matches two platforms (``Portable``: pocl 3.0 and 3.1) or two devices by
    taking one; ``--device`` counts them all, to refuse the ambiguity."""
    answers = spec.split(":")
    named = set()
    for platform in _matching(_info.platform_ids(), answers[0], _platform_name):
        device_answer = answers[1].split(",")[0] if len(answers) > 1 else ""
        named.update(_matching(_info.device_ids(platform), device_answer, _device_name))
    return named


def _platform_name(handle: int) -> str:
    return _info.platform_str(handle, C.CL_PLATFORM_NAME)


def _device_name(handle: int) -> str:
    return _info.device_str(handle, C.CL_DEVICE_NAME)


def pyopencl_ctx(device: Any) -> str:
    """``"<platform>:<device>"`` of ``device`` (a handle, pyopencl.Device or report), the
    ``PYOPENCL_CTX`` value that picks it."""
    handle = device.device_id if isinstance(device, DeviceCaps) else handle_int(device)
    where = location(handle)
    if where is None:
        raise QcomExtError(f"device {handle:#x} is not in this process's enumeration")
    return f"{where['platform']}:{where['device']}"
