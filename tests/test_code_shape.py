"""The package keeps the shape docs/ARCHITECTURE.md promises: small modules, short functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "qcom_ext"
GENERATED = {"_cl_ffi.py"}
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60  # the docstring included; data tables are module-level constants

LAB = PACKAGE.parent / "benchmarks"  # the checkout's benchmarking lab keeps the same shape

MODULES = sorted(
    p for p in [*PACKAGE.rglob("*.py"), *LAB.rglob("*.py")] if p.name not in GENERATED
)


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_over_500_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)}: {lines} lines"


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_function_over_60_lines(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines, l.{node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{_name(path)}: {', '.join(long)}"


def test_the_rules_see_every_layer():
    parts = [p.relative_to(PACKAGE.parent).parts for p in MODULES]
    layers = {part[1] for part in parts if part[0] == "qcom_ext" and len(part) > 2}
    assert {"binding", "device", "ext", "ops", "reference", "tools"} <= layers
    if LAB.is_dir():  # the lab, where the checkout has it
        assert {"_ptx.py", "cases_conv.py"} <= {
            part[1] for part in parts if part[0] == "benchmarks"
        }
