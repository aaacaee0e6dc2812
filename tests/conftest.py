"""The project's own tests use qcom_ext's installed pytest plugin (qcom_ext.pytest_plugin):
``device_caps`` / ``cl_device`` / ``cl_context`` / ``cl_queue`` / ``kernel_context`` over
every device, ``requires_ext`` and ``fallback_and_native`` markers. Test data lives here.
"""

from __future__ import annotations

from pathlib import Path

from qcom_ext.pytest_plugin import selected_devices

DATA = Path(__file__).parent / "data"
DEVICES = selected_devices()  # the devices the plugin parametrizes over


def adreno_strings() -> dict[str, str]:
    """File stem -> the verbatim extension string of a real Adreno device."""
    return {p.stem: p.read_text() for p in sorted(DATA.glob("adreno*.txt"))}
