"""What the Adreno kernel driver (KGSL) says about its GPU, read from sysfs.

Some boards' OpenCL strings carry no model (a QCS8550 Linux board: device name
``QUALCOMM ``, version ``OpenCL 3.0 ``); the kernel driver still names the GPU in
``/sys/class/kgsl/kgsl-3d0/``:

* ``gpu_model``: KGSL's ``adreno_get_gpu_model()`` (``adreno.c``): a device-tree
  ``qcom,gpu-model`` string, else ``"Adreno%u%u%uv%u"`` from the chip id's core, major,
  minor and patch + 1. The attribute is made in ``adreno_sysfs.c`` (``kgsl_pwrctrl.c`` on
  older kernels). Seen: ``Adreno830v2`` (OnePlus 13, GlassHaven/Haven#384). Accepted:
  ``Adreno`` and three digits, an optional ``v<revision>``.
* ``gpu_chipid``: the chip id, the path third-party tools read next to ``gpu_model`` (no
  public kernel source making it was found, so it is read only where present). Accepted
  only in KGSL's form for a u32 attribute, ``0x%X`` (``adreno_sysfs_show_u32``). An id
  maps to a model only in the documented legacy layout, one decimal digit per byte for
  core, major and minor (``0x06030001``: Adreno 630; Mesa's ``fd_dev_gpu_id()`` in
  ``src/freedreno/common/freedreno_dev_info.h``, and tinygrad's ``runtime/ops_qcom.py``).
  Newer ids (``0x43050a01``, Adreno 740 in Mesa's ``freedreno_devices.py``) do not
  follow it and map to nothing.

Every file is untrusted input: a missing, unreadable, oversized or malformed file is a
miss (None), never an exception.

>>> model_from_gpu_model("Adreno740v2"), model_from_gpu_model("Adreno 630")
('740', '630')
>>> model_from_chip_id(0x06030001), model_from_chip_id(0x43050A01) is None
('630', True)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from qcom_ext.device.sysroot import Sysroot, ascii_text, read_regular

__all__ = [
    "KGSL_ROOT",
    "KgslFacts",
    "model_from_chip_id",
    "model_from_gpu_model",
    "parse_chip_id",
    "read_kgsl",
]

#: Where the kernel driver's GPU directory is; ``read_kgsl(root)`` reads another.
KGSL_ROOT = "/sys/class/kgsl/kgsl-3d0"
#: The most bytes read from one file (the kernel's model string fits 32 bytes).
MAX_BYTES = 256

_GPU_MODEL = re.compile(r"Adreno ?(\d{3})(?:v\d{1,3})?")
_CHIP_ID = re.compile(r"0[xX]([0-9A-Fa-f]{1,16})")


@dataclass(frozen=True)
class KgslFacts:
    """The raw facts read (None where missing or unreadable)."""

    gpu_model: str | None = None
    chip_id: int | None = None

    def model(self) -> tuple[str, str] | None:
        """``(model, source)``: from ``gpu_model`` first, then the chip id; None without.

        >>> KgslFacts(gpu_model="Adreno740v2").model()
        ('740', 'kgsl:gpu_model')
        >>> KgslFacts(gpu_model="garbage", chip_id=0x06040001).model()
        ('640', 'kgsl:chipid')
        """
        model = model_from_gpu_model(self.gpu_model)
        if model:
            return model, "kgsl:gpu_model"
        model = model_from_chip_id(self.chip_id)
        if model:
            return model, "kgsl:chipid"
        return None


def model_from_gpu_model(text: str | None) -> str | None:
    """``"740"`` from ``"Adreno740v2"`` (or ``"Adreno 740"``); None for any other text."""
    match = _GPU_MODEL.fullmatch((text or "").strip())
    return match.group(1) if match else None


def parse_chip_id(text: str | None) -> int | None:
    """The chip id in the kernel's ``0x%X`` form (``"0x6030001"``); None otherwise.

    >>> parse_chip_id("0x6030001\\n"), parse_chip_id("6030001"), parse_chip_id("0x")
    (100859905, None, None)
    """
    match = _CHIP_ID.fullmatch((text or "").strip())
    return int(match.group(1), 16) if match else None


def model_from_chip_id(chip_id: int | None) -> str | None:
    """The model of a chip id in the legacy layout (core, major, minor each one decimal
    digit, core 2 or more): ``0x06030001`` -> ``"630"``; None for every other id."""
    if chip_id is None or not 0 <= chip_id <= 0xFFFFFFFF:
        return None
    core, major, minor = (chip_id >> 24) & 0xFF, (chip_id >> 16) & 0xFF, (chip_id >> 8) & 0xFF
    if not (2 <= core <= 9 and major <= 9 and minor <= 9):
        return None
    return f"{core}{major}{minor}"


def _read_text(path: Path) -> str | None:
    """The stripped ASCII text of a small regular file; None when missing, unreadable,
    not a regular file (a FIFO would block), too long or not printable text."""
    return ascii_text(read_regular(path, MAX_BYTES))


def read_kgsl(root: str | os.PathLike[str] | None = None) -> KgslFacts:
    """The facts under ``root`` (default :data:`KGSL_ROOT` under ``QCOM_EXT_SYSROOT``,
    :mod:`qcom_ext.device.sysroot`); empty facts where there is no KGSL (any system but
    a Qualcomm Linux or Android one).

    >>> read_kgsl("/nonexistent").model() is None
    True
    """
    if root is None:
        real = Sysroot.from_env().real_path(KGSL_ROOT)
        if real is None:
            return KgslFacts()
        root = real
    base = Path(root)
    chip = parse_chip_id(_read_text(base / "gpu_chipid"))
    return KgslFacts(gpu_model=_read_text(base / "gpu_model"), chip_id=chip)
