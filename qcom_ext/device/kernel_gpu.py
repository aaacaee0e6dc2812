"""What the kernel says about the GPU: KGSL (Android, older Qualcomm Linux) or DRM.

The one place the probe and ``qcom-ext doctor`` learn whether Adreno hardware is there
and its model when the OpenCL strings name none: KGSL's sysfs
(:mod:`~qcom_ext.device.kgsl`) first, then the DRM driver's device-tree node
(:mod:`~qcom_ext.device.drm`). Every read goes through ``QCOM_EXT_SYSROOT``
(:mod:`~qcom_ext.device.sysroot`).

>>> from qcom_ext.device.drm import DrmFacts, DrmGpu
>>> gpu = KernelGpu(drm=DrmFacts((DrmGpu("/n", "msm", ("qcom,adreno-630.2",)),)))
>>> gpu.adreno_seen, gpu.model(), gpu.describe()
(True, ('630', 'drm:compatible'), 'DRM: /n (driver msm, qcom,adreno-630.2)')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qcom_ext.device.drm import DrmFacts, read_drm
from qcom_ext.device.kgsl import KGSL_ROOT, KgslFacts, read_kgsl
from qcom_ext.device.sysroot import Sysroot

__all__ = ["KGSL_DEVICE", "KernelGpu", "read_kernel_gpu"]

#: KGSL's device node, which the Adreno OpenCL driver opens.
KGSL_DEVICE = "/dev/kgsl-3d0"


@dataclass(frozen=True)
class KernelGpu:
    """KGSL's facts (its device node, its sysfs directory) and DRM's."""

    kgsl: KgslFacts = field(default_factory=KgslFacts)
    kgsl_device: bool = False
    kgsl_sysfs: bool = False
    drm: DrmFacts = field(default_factory=DrmFacts)

    @property
    def adreno_seen(self) -> bool:
        """Whether the kernel shows Adreno hardware (KGSL, or an Adreno DRM node)."""
        return self.kgsl_device or self.kgsl_sysfs or self.drm.adreno() is not None

    def model(self) -> tuple[str, str] | None:
        """``(model, source)``: ``kgsl:gpu_model``, ``kgsl:chipid``, then
        ``drm:compatible``; None when the kernel names no model."""
        return self.kgsl.model() or self.drm.model()

    def describe(self) -> str:
        """One line for people: what was found, or that nothing was."""
        parts = []
        if self.kgsl_device or self.kgsl_sysfs:
            seen = [KGSL_DEVICE] if self.kgsl_device else []
            if self.kgsl.gpu_model:
                seen.append(f"gpu_model {self.kgsl.gpu_model}")
            if self.kgsl.chip_id is not None:
                seen.append(f"gpu_chipid 0x{self.kgsl.chip_id:X}")
            parts.append("KGSL: " + (", ".join(seen) or KGSL_ROOT))
        gpu = self.drm.adreno()
        if gpu is not None:
            what = ", ".join(c for c in gpu.compatible if c.startswith("qcom,adreno-"))
            parts.append(
                f"DRM: {gpu.node} (driver {gpu.driver or 'none'}, {what or 'qcom,adreno'})"
            )
        return "; ".join(parts) or "no Adreno GPU in KGSL or DRM"


def read_kernel_gpu(root: Sysroot | None = None) -> KernelGpu:
    """The kernel's GPU facts under ``root`` (default ``QCOM_EXT_SYSROOT``)."""
    root = Sysroot.from_env() if root is None else root
    kgsl_dir = root.real_path(KGSL_ROOT)
    return KernelGpu(
        kgsl=read_kgsl(kgsl_dir) if kgsl_dir is not None else KgslFacts(),
        kgsl_device=root.exists(KGSL_DEVICE),
        kgsl_sysfs=kgsl_dir is not None,
        drm=read_drm(root),
    )
