"""What the Adreno GPU's DRM driver (Linux's ``msm``) says in sysfs.

Qualcomm Linux images may run the Adreno OpenCL driver on DRM instead of KGSL (meta-qcom's
``qcom-adreno-cl`` "can run with drm"); then ``/sys/class/kgsl`` does not exist and the
GPU is a device-tree node bound to the ``adreno`` platform driver, a component of the
``msm`` DRM device. The node's ``compatible`` names the GPU, as the upstream device trees
write it (``Documentation/devicetree/bindings/display/msm/gpu.yaml``):

* ``qcom,adreno-<model>.<patch>`` (``qcom,adreno-630.2``): the model itself;
* ``qcom,adreno-<chip id, 8 hex digits>`` (``qcom,adreno-43050a01``, SM8550): the chip
  id, mapped to a model in the legacy layout (:func:`~qcom_ext.device.kgsl.model_from_chip_id`)
  or by the ids of :data:`CHIP_IDS`;
* then ``qcom,adreno``.

Read from ``/sys/class/drm/card*/device/`` (its ``driver`` link, ``of_node/compatible``
or ``OF_COMPATIBLE_*`` of ``uevent``) and from the devices bound to
``/sys/bus/platform/drivers/adreno/`` (where the card is the display's), through
:class:`~qcom_ext.device.sysroot.Sysroot`. Any unreadable or malformed file is a miss.

>>> DrmGpu("/x", "adreno", ("qcom,adreno-43050a01", "qcom,adreno")).model()
('740', 'drm:compatible')
>>> DrmGpu("/x", "msm", ("qcom,adreno-630.2", "qcom,adreno")).chip
'630.2'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qcom_ext.device.kgsl import model_from_chip_id
from qcom_ext.device.sysroot import Sysroot

__all__ = ["CHIP_IDS", "DrmFacts", "DrmGpu", "read_drm"]

DRM_CLASS = "/sys/class/drm"
ADRENO_DRIVER = "/sys/bus/platform/drivers/adreno"
#: Chip ids outside the legacy layout, with their model (Mesa's
#: ``src/freedreno/common/freedreno_devices.py``; the kernel's ``adreno_device.c``).
CHIP_IDS = {0x43050A01: "740"}

_CARD = re.compile(r"card\d{1,3}")
_MODEL_PATCH = re.compile(r"qcom,adreno-(\d{3})\.\d{1,3}")
_CHIP_HEX = re.compile(r"qcom,adreno-([0-9a-fA-F]{8})")
_OF_COMPATIBLE = re.compile(r"OF_COMPATIBLE_\d{1,3}=(.*)")


@dataclass(frozen=True)
class DrmGpu:
    """One device-tree node read: where, its bound driver, its ``compatible`` strings."""

    node: str
    driver: str | None
    compatible: tuple[str, ...]

    @property
    def adreno(self) -> bool:
        """Whether the node is an Adreno GPU (``qcom,adreno`` or ``qcom,adreno-*``)."""
        return any(c == "qcom,adreno" or c.startswith("qcom,adreno-") for c in self.compatible)

    @property
    def chip(self) -> str | None:
        """What follows ``qcom,adreno-`` (``"43050a01"``, ``"630.2"``), or None."""
        for c in self.compatible:
            if c.startswith("qcom,adreno-"):
                return c[len("qcom,adreno-") :]
        return None

    def model(self) -> tuple[str, str] | None:
        """``(model, "drm:compatible")``, or None when the compatible names no model."""
        for c in self.compatible:
            match = _MODEL_PATCH.fullmatch(c)
            if match:
                return match.group(1), "drm:compatible"
            match = _CHIP_HEX.fullmatch(c)
            if match:
                chip = int(match.group(1), 16)
                model = CHIP_IDS.get(chip) or model_from_chip_id(chip)
                if model:
                    return model, "drm:compatible"
        return None


@dataclass(frozen=True)
class DrmFacts:
    """The GPU nodes found and the render nodes (``/dev/dri/renderD*``)."""

    gpus: tuple[DrmGpu, ...] = ()
    render_nodes: tuple[str, ...] = ()

    def adreno(self) -> DrmGpu | None:
        """The first Adreno node, or None."""
        return next((g for g in self.gpus if g.adreno), None)

    def model(self) -> tuple[str, str] | None:
        """The model of the first Adreno node that names one."""
        for gpu in self.gpus:
            found = gpu.model() if gpu.adreno else None
            if found:
                return found
        return None


def _compatible(root: Sysroot, device: str) -> tuple[str, ...]:
    found = root.read_strings(f"{device}/of_node/compatible")
    if found:
        return found
    data = root.read_bytes(f"{device}/uevent") or b""
    lines = data.decode("ascii", errors="replace").splitlines()
    found = (m.group(1) for line in lines if (m := _OF_COMPATIBLE.fullmatch(line)))
    return tuple(c for c in found if c.isprintable() and c.isascii())


def _node(root: Sysroot, device: str) -> DrmGpu | None:
    compatible = _compatible(root, device)
    if not compatible:
        return None
    return DrmGpu(device, root.link_name(f"{device}/driver"), compatible)


def read_drm(root: Sysroot | None = None) -> DrmFacts:
    """The DRM facts under ``root`` (default ``QCOM_EXT_SYSROOT``); empty where none."""
    root = Sysroot.from_env() if root is None else root
    devices = [f"{DRM_CLASS}/{c}/device" for c in root.listdir(DRM_CLASS) if _CARD.fullmatch(c)]
    devices += [
        f"{ADRENO_DRIVER}/{name}"
        for name in root.listdir(ADRENO_DRIVER)
        if name not in ("bind", "unbind", "uevent", "module", "new_id", "remove_id")
    ]
    gpus = tuple(g for d in devices if (g := _node(root, d)) is not None)
    renders = tuple(root.glob("/dev/dri/renderD*"))
    return DrmFacts(gpus, renders)
