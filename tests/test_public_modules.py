"""The package's public surface after the layer move: lazy names, documented module paths."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import qcom_ext
from qcom_ext._public_modules import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_documented_module_path_is_the_module_in_its_layer(old):
    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__spec__.name == MOVED[old]  # the alias does not rename the real module
    assert sys.modules[old] is module


@pytest.mark.parametrize("name", sorted(qcom_ext.__all__))
def test_every_public_name_resolves(name):
    assert getattr(qcom_ext, name) is not None
    assert name in dir(qcom_ext)


def test_the_namespace_lists_the_public_names_only():
    """``dir(qcom_ext)`` is ``__all__``, whatever was loaded (a submodule, a name); the
    helpers of ``__init__`` (typing, importlib, ``from __future__``) are not attributes."""
    qcom_ext.probe  # noqa: B018  (loads qcom_ext.device.* as attributes of the package)
    assert dir(qcom_ext) == sorted(qcom_ext.__all__)
    for name in ("Any", "TYPE_CHECKING", "annotations", "importlib", "typing"):
        assert not hasattr(qcom_ext, name), name
    assert all(not n.startswith("_") or n == "__version__" for n in qcom_ext.__all__)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        qcom_ext.no_such_name  # noqa: B018


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}; import sys; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_import_qcom_ext_loads_no_driver_numpy_or_layers():
    loaded = _modules_after("import qcom_ext")
    heavy = {"pyopencl", "numpy", "cffi", "rich", "qcom_ext.binding.lib", "qcom_ext.ops"}
    assert not heavy & loaded, sorted(heavy & loaded)


def test_probe_all_loads_only_the_binding_and_device_layers():
    loaded = _modules_after("import qcom_ext; qcom_ext.probe_all()")
    layers = {m.split(".")[1] for m in loaded if m.startswith("qcom_ext.")}
    assert layers <= {
        "binding",
        "device",
        "errors",
        "_cache_dir",
        "_resources",
        "_version",
        "_public_modules",
        "_trials",  # the hook of probe(verify=True), installed by the package
        "_isolation",  # probe_all(isolated=True)'s runner
    }, sorted(layers)
