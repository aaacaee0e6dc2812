"""The package's public surface after the layer move: lazy names, documented module paths."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import qcom_ext
from qcom_ext._public_modules import MOVED
from qcom_ext.device.registry import REGISTRY, Extension, public_names


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


def _type_checking_imports() -> dict[str, str]:
    """The names the ``if TYPE_CHECKING:`` block of ``qcom_ext/__init__.py`` imports -> module."""
    tree = ast.parse(Path(qcom_ext.__file__).read_text())
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
    )
    names = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def test_the_type_checking_block_is_true_and_complete_for_the_package_table():
    """Type checkers read the block: every name it imports is the public name's module,
    and every name of ``_EXPORTS`` is in it. An extension's names (its registry entry)
    resolve without it (typed ``Any`` until a line is added there): the recipe's trade-off."""
    seen = _type_checking_imports()
    modules = {**qcom_ext._public_names(), **qcom_ext._SUBMODULES}
    for name, path in seen.items():
        assert name in qcom_ext.__all__, name
        assert path in (f"{modules[name]}.{name}", modules[name]), (name, path)
    assert set(qcom_ext._EXPORTS) | set(qcom_ext._SUBMODULES) <= set(seen)  # __version__: eager


def test_an_extension_s_public_names_come_from_its_registry_entry():
    names = public_names()
    assert names["onchip_buffer"] == "qcom_ext.ext.memory.onchip"
    assert not set(names) & set(qcom_ext._EXPORTS)  # one table per name
    assert set(names) <= set(qcom_ext.__all__)
    assert qcom_ext.scrub_onchip.__module__ == "qcom_ext.ext.memory.onchip"


def test_a_malformed_or_doubly_claimed_public_name_is_refused(monkeypatch):
    with pytest.raises(ValueError, match=re.escape("'toy_scale' is not '<module>.<name>'")):
        Extension("cl_qcom_toy", "0", "host", "toy", public=("toy_scale",))
    twice = Extension("cl_qcom_toy", "0", "host", "toy", public=("memory.toy.onchip_buffer",))
    monkeypatch.setitem(REGISTRY, "cl_qcom_toy", twice)
    with pytest.raises(
        ValueError, match=re.escape("'onchip_buffer' is qcom_ext.ext.memory.onchip's")
    ):
        public_names()


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
    heavy.add("qcom_ext.device.registry")  # read for __all__ and an extension's names
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
