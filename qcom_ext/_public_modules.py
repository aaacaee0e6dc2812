"""The module paths the documentation promises, kept importable after the layer move.

``import qcom_ext.verify`` (or ``from qcom_ext.bicubic import upscale``) gives the very
module object that now lives in its layer folder, so attributes set on one are seen
through the other. One table, one finder; nothing else in the package knows about it.

>>> import qcom_ext.bicubic, qcom_ext.reference.bicubic
>>> qcom_ext.bicubic is qcom_ext.reference.bicubic
True
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from types import ModuleType

#: documented path -> where the module lives now
MOVED: dict[str, str] = {
    "qcom_ext.bicubic": "qcom_ext.reference.bicubic",
    "qcom_ext.cli": "qcom_ext.tools.cli",
    "qcom_ext.extensions": "qcom_ext.device.extensions",
    "qcom_ext.image_ops": "qcom_ext.ext.accelerated.whole_image",
    "qcom_ext.ops.variant_cache": "qcom_ext.ext.variant_store",
    "qcom_ext.program_cache": "qcom_ext.ext.program.cache",
    "qcom_ext.pytest_plugin": "qcom_ext.tools.pytest_plugin",
    "qcom_ext.selftest": "qcom_ext.tools.selftest",
    "qcom_ext.subgroups": "qcom_ext.ext.program.subgroups",
    "qcom_ext.tuning": "qcom_ext.ops.tuning",
    "qcom_ext.verify": "qcom_ext.tools.verify.runner",
    "qcom_ext.yuv": "qcom_ext.ext.images.yuv",
}


class _Alias:
    """Resolves a documented path to the module that now lives elsewhere.

    A meta path finder and its loader (the protocols, not the ABCs: importing
    ``importlib.abc`` would cost more than the rest of ``import qcom_ext``).
    """

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__  # importlib overwrites __spec__: keep the real one
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module was imported under its own name): restore its spec."""
        module.__spec__ = module.__spec__.loader_state


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (idempotent)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        # First on the path: a stale directory of an old layout (a ``qcom_ext/selftest/``
        # holding only ``__pycache__``) would otherwise be imported as a namespace package.
        sys.meta_path.insert(0, _Alias())
