"""No import cycle between qcom_ext's modules, counting every import the code can make:
module-level ones, those inside functions and methods, and ``importlib.import_module`` /
``__import__`` of a string literal (docs/ARCHITECTURE.md, "Layers and the import rule").

import-linter's contracts (pyproject.toml) see function-level imports too, but a layers
contract says nothing about cycles within a layer and ``acyclic_siblings`` only about
siblings: this walk covers every pair of modules. What only a static checker reads
(``if TYPE_CHECKING:`` blocks) is left out: it never runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import qcom_ext

PACKAGE = Path(qcom_ext.__file__).parent
ROOT = "qcom_ext"


def _module_name(path: Path) -> str:
    parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _target(name: str) -> str | None:
    """The qcom_ext module ``name`` is, or the module that defines it (a name imported
    from a package); None outside qcom_ext."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _walk(tree: ast.AST) -> list[tuple[ast.AST, bool]]:
    """Every node with whether it sits inside a function (``if TYPE_CHECKING:`` left out)."""
    found: list[tuple[ast.AST, bool]] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, nested = stack.pop()
        found.append((node, nested))
        inner = nested or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            if not _is_type_checking(child):
                stack.append((child, inner))
    return found


def _literal_import(node: ast.AST) -> str | None:
    """The module of ``importlib.import_module("...")`` / ``import_module("...")`` /
    ``__import__("...")`` with a string literal."""
    if not (isinstance(node, ast.Call) and node.args):
        return None
    func, first = node.func, node.args[0]
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def _edges(module: str) -> list[tuple[str, bool]]:
    """``(imported qcom_ext module, made inside a function)`` for each import of ``module``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    edges: list[tuple[str, bool]] = []
    for node, nested in _walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            names = [f"{base}.{alias.name}" for alias in node.names]
        elif (literal := _literal_import(node)) is not None:
            names = [literal]
        for name in names:
            target = _target(name) if name.startswith(ROOT) else None
            if target is not None and target != module:
                edges.append((target, nested))
    return edges


GRAPH: dict[str, list[tuple[str, bool]]] = {m: _edges(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_walk_sees_function_level_and_literal_imports():
    """The walk is not blind: the probe's lazy import of the doctor (inside a function)
    and the package's lazy ``importlib`` of ``qcom_ext.ops`` are edges."""
    assert ("qcom_ext.device.doctor", True) in GRAPH["qcom_ext.device.probe"]
    assert ("qcom_ext._public_modules", False) in GRAPH["qcom_ext"]
    nested = sum(1 for edges in GRAPH.values() for _, inside in edges if inside)
    assert nested > 50
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_between_modules():
    """Not one cycle, function-level imports included: a lazy import that closes one
    is a cycle all the same (it only moves the failure to the first call)."""
    graph = {m: {t for t, _ in edges} for m, edges in GRAPH.items()}
    assert _cycles(graph) == []
