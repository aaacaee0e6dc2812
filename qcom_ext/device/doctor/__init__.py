"""``qcom-ext doctor``: how this Python reaches an OpenCL driver, and the exact fix.

What a user runs first on a new device (``qcom_ext.doctor()``, ``qcom-ext doctor
[--json]``, ``qcom-ext env``). It reports, as facts it read:

* which OpenCL library pyopencl actually calls (a wheel's bundled loader, an ICD loader
  or a vendor library) and which one qcom_ext's binding opens (:mod:`.child`);
* the ICD sources that loader reads and the known ones it does not, each ``.icd`` file
  and its library (:mod:`.libraries`), and what each library is, read from its ELF
  dynamic symbols without loading it (:mod:`.elf`);
* the vendor libraries on disk and the platforms each shows when loaded in a child
  process (a crash there is a finding);
* the kernel's GPU, KGSL or DRM (:mod:`qcom_ext.device.kernel_gpu`);
* a verdict and the exact fix (:mod:`.verdict`).

Every file is read through ``QCOM_EXT_SYSROOT`` (:mod:`qcom_ext.device.sysroot`), so a
prepared tree (the tests' simulated phones and boards, a mounted device image) is
inspected the same way. :func:`hint` is the verdict from files alone, in one line, for
the errors a machine with Adreno hardware but no platform raises.

The modules: :mod:`.elf`, :mod:`.libraries`, :mod:`.child`, :mod:`.facts`,
:mod:`.verdict`, :mod:`.gather`.
"""

from __future__ import annotations

from qcom_ext.device.doctor.gather import DoctorReport, doctor, hint
from qcom_ext.device.doctor.verdict import EnvSetting, Fix, Verdict, decide

__all__ = ["DoctorReport", "EnvSetting", "Fix", "Verdict", "decide", "doctor", "hint"]
