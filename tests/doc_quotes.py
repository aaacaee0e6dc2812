"""What the docs quote, checked against the code: Python calls and signatures against
``inspect.signature`` of the qcom_ext object they name, C entry points against the
``cdefs/`` declarations (parsed by cffi's pycparser), kernel builtins against what
``kernels/compat/*.h`` defines.

Every ``check_*`` function takes quoted text and returns a list of problems (empty when
the quote is right), so the tests can feed it a page or a deliberately wrong snippet.
Conventions the checks understand: ``...`` as an argument elides arguments (then missing
ones are not reported), and a quote with a bare ``*``, ``/``, ``*args`` or ``**kwargs`` is
a signature: its parameters must be the object's, in kind, order and literal default.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import itertools
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import cffi
import numpy as np
import pyopencl

import qcom_ext
from qcom_ext.binding.cdefs import cdef_texts, parse

ROOT = Path(__file__).resolve().parent.parent
KERNEL_HEADERS = [
    *sorted((ROOT / "kernels" / "compat").glob("*.h")),
    ROOT / "kernels" / "qcom_ext.h",
]

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
PY_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\(")
CL_CALL = re.compile(r"(?<![\w.])(cl[A-Z]\w*)\s*\(")
KERNEL_CALL = re.compile(r"(?<![\w.])(qcom_\w+|QCOM_[A-Z0-9_]+)\s*\(")
C_TYPE_BEFORE = re.compile(r"((?:const\s+)?[A-Za-z_]\w*(?:\s*\*)*)\s*$")
NOT_TYPES = frozenset({"return", "else", "case", "do", "goto", "sizeof", "typedef", "define"})
ELISION = "..."
_DEFAULTS_NS = {"np": np, "numpy": np, "cl": pyopencl, "pyopencl": pyopencl, "qcom_ext": qcom_ext}


# ---- the text of a page -------------------------------------------------------------------


def code_blocks(markdown: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return [(m.group(1).lower(), m.group(2)) for m in FENCE.finditer(markdown)]


def code_spans(markdown: str) -> list[str]:
    """The inline code spans outside fenced blocks."""
    return [m.group(2).strip() for m in SPAN.finditer(FENCE.sub("", markdown))]


def balanced(text: str, open_at: int) -> str | None:
    """The text between the ``(`` at ``open_at`` and its ``)``; None when unclosed."""
    depth, quote = 0, ""
    for i in range(open_at, len(text)):
        ch = text[i]
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : i]
    return None


def split_args(text: str) -> list[str]:
    """Top-level comma-separated items of an argument or parameter list."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote and text[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if last or items:
        items.append(last)
    return [item for item in items if item]


@dataclass(frozen=True)
class Quoted:
    """A call (or declaration) found in quoted text: the name, its arguments, and the
    C type written before the name (a declaration) if any."""

    name: str
    args: list[str]
    type_before: str | None = None


def find_calls(text: str, pattern: re.Pattern[str]) -> list[Quoted]:
    found = []
    for m in pattern.finditer(text):
        inner = balanced(text, m.end() - 1)
        if inner is None:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        before = C_TYPE_BEFORE.search(text[line_start : m.start()])
        type_before = before.group(1) if before and before.group(1) not in NOT_TYPES else None
        found.append(Quoted(m.group(1), split_args(inner), type_before))
    return found


# ---- Python -------------------------------------------------------------------------------


@dataclass
class Target:
    """A qcom_ext object a quote calls, and whether it is a method reached via its class
    (then the signature's first parameter, ``self``, is not quoted)."""

    obj: Any
    name: str
    drop_self: bool = False


def _attribute(base: Any, attr: str, name: str) -> Target:
    """``base.attr``; a plain function reached through a class is a method (drop self)."""
    static = inspect.getattr_static(base, attr)  # AttributeError names what is missing
    method = inspect.isclass(base) and inspect.isfunction(static)
    return Target(getattr(base, attr), name, drop_self=method)


def resolve_dotted(dotted: str, env: dict[str, Any] | None = None) -> Target | None:
    """The object ``dotted`` names: through ``env`` (names bound by a page's Python blocks:
    modules, objects, or ``Instance`` of a class), else as ``qcom_ext.<dotted>``. None when
    it is not a qcom_ext name at all; AttributeError / ImportError when it should be one
    and is not."""
    env = env or {}
    parts = dotted.split(".")
    if parts[0] in env:
        base = env[parts[0]]
        rest = parts[1:]
    elif parts[0] == "qcom_ext":
        base, rest = qcom_ext, parts[1:]
    else:
        try:
            base = _submodule_or_attr(qcom_ext, "qcom_ext", parts[0])
        except (AttributeError, ImportError):
            return None
        rest = parts[1:]
    if isinstance(base, Instance) and not rest:  # calling an instance: its __call__
        return _attribute(base.cls, "__call__", dotted)
    target = Target(base.cls if isinstance(base, Instance) else base, dotted)
    for attr in rest:
        if inspect.ismodule(target.obj):
            obj = _submodule_or_attr(target.obj, target.obj.__name__, attr)
            target = Target(obj, dotted)
        else:
            target = _attribute(target.obj, attr, dotted)
    return target


def _submodule_or_attr(module: Any, module_name: str, attr: str) -> Any:
    if hasattr(module, attr):
        return getattr(module, attr)
    return importlib.import_module(f"{module_name}.{attr}")


@dataclass(frozen=True)
class Instance:
    """A name a page's code binds to an instance of a qcom_ext class."""

    cls: type


def _signature(target: Target) -> inspect.Signature:
    obj = target.obj
    if inspect.ismodule(obj) or not callable(obj):
        raise TypeError(f"`{target.name}` is not callable")
    sig = inspect.signature(obj)
    if target.drop_self:
        params = list(sig.parameters.values())[1:]
        sig = sig.replace(parameters=params)
    return sig


POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass
class _Item:
    kind: str  # "pos" | "named" | "star" | "slash" | "varargs" | "varkw" | "elide"
    text: str
    name: str = ""
    default: str | None = None  # the quoted default, "" when written as ``name=``


_NAMED = re.compile(r"^([A-Za-z_]\w*)\s*(?::\s*[^=]+?)?\s*=(?!=)\s*(.*)$", re.DOTALL)
_ANNOTATED = re.compile(r"^([A-Za-z_]\w*)\s*:\s*\S")


def _items(args: list[str]) -> list[_Item]:
    items = []
    for text in args:
        if text == ELISION:
            items.append(_Item("elide", text))
        elif text == "*":
            items.append(_Item("star", text))
        elif text == "/":
            items.append(_Item("slash", text))
        elif re.fullmatch(r"\*\*[A-Za-z_]\w*", text):
            items.append(_Item("varkw", text, text[2:]))
        elif re.fullmatch(r"\*[A-Za-z_]\w*", text):
            items.append(_Item("varargs", text, text[1:]))
        elif m := _NAMED.match(text):
            items.append(_Item("named", text, m.group(1), m.group(2).strip()))
        elif m := _ANNOTATED.match(text):
            items.append(_Item("pos", text, m.group(1)))
        else:
            name = text if re.fullmatch(r"[A-Za-z_]\w*", text) else ""
            items.append(_Item("pos", text, name))
    return items


def _literal_default(text: str) -> tuple[bool, Any]:
    """(True, value) when the quoted default can be evaluated without running code."""
    if not text or text == ELISION:
        return False, None
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return False, None
    if all(
        isinstance(n, ast.Name | ast.Attribute | ast.Load | ast.Expression) for n in ast.walk(tree)
    ):
        try:
            return True, eval(compile(tree, "<doc>", "eval"), {"__builtins__": {}}, _DEFAULTS_NS)
        except (NameError, AttributeError):
            return False, None
    return False, None


def check_arguments(
    target: Target, args: list[str], signature_form: bool | None = None
) -> list[str]:
    """Problems of quoting ``target`` with ``args`` (the comma-separated items)."""
    try:
        sig = _signature(target)
    except (TypeError, ValueError) as exc:
        return [str(exc)]
    items = _items(args)
    if signature_form is None:
        signature_form = any(i.kind in ("star", "slash", "varargs", "varkw") for i in items)
    params = list(sig.parameters.values())
    by_name = {p.name: p for p in params}
    has_varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    has_varkw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    positional = [p for p in params if p.kind in POSITIONAL]
    elided = any(i.kind == "elide" for i in items)
    name = target.name
    problems: list[str] = []
    covered: set[str] = set()
    index, after_star = 0, False
    for item in items:
        if item.kind == "elide":
            continue
        if item.kind == "star":
            after_star = True
            continue
        if item.kind == "slash":
            continue
        if item.kind in ("varargs", "varkw"):
            wanted = "VAR_POSITIONAL" if item.kind == "varargs" else "VAR_KEYWORD"
            if not any(p.kind.name == wanted for p in params):
                problems.append(f"`{name}` takes no {item.text}: {sig}")
            after_star = after_star or item.kind == "varargs"
            continue
        if item.kind == "pos" and not (signature_form and after_star and item.name):
            if after_star:
                problems.append(f"`{name}`: positional {item.text!r} after `*`")
                continue
            if index >= len(positional):
                if not has_varargs:
                    problems.append(
                        f"`{name}` takes {len(positional)} positional argument(s), "
                        f"the quote passes more ({item.text!r}): {sig}"
                    )
                index += 1
                continue
            param = positional[index]
            index += 1
            if signature_form and item.name and item.name != param.name:
                problems.append(
                    f"`{name}`: parameter {index} is {param.name!r}, quoted {item.name!r}"
                )
            covered.add(param.name)
            continue
        # a named item (name=value), or in a signature a bare name after `*`
        param = by_name.get(item.name)
        if param is None or param.kind is inspect.Parameter.VAR_POSITIONAL:
            if not has_varkw or signature_form:
                problems.append(f"`{name}` has no parameter {item.name!r}: {sig}")
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            problems.append(f"`{name}`: {item.name!r} is positional-only: {sig}")
        if item.name in covered:
            problems.append(f"`{name}`: {item.name!r} is given twice")
        covered.add(item.name)
        if signature_form:
            keyword_only = param.kind is inspect.Parameter.KEYWORD_ONLY
            if keyword_only != after_star:
                where = "after" if after_star else "before"
                problems.append(
                    f"`{name}`: {item.name!r} is quoted {where} `*` but is "
                    f"{'keyword-only' if keyword_only else 'positional'}: {sig}"
                )
            if item.kind == "named":
                known, value = _literal_default(item.default or "")
                if param.default is inspect.Parameter.empty:
                    if item.default not in ("", ELISION):
                        problems.append(f"`{name}`: {item.name!r} has no default: {sig}")
                elif known and not _same(value, param.default):
                    problems.append(
                        f"`{name}`: {item.name!r} defaults to {param.default!r}, "
                        f"quoted {item.default}"
                    )
    if not elided:
        for param in params:
            if param.name in covered or param.kind.name.startswith("VAR_"):
                continue
            if param.default is inspect.Parameter.empty:
                problems.append(f"`{name}` needs {param.name!r}, the quote omits it: {sig}")
            elif signature_form:
                problems.append(f"`{name}`: the quoted signature omits {param.name!r}: {sig}")
    return problems


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) or a is b
    except Exception:  # numpy comparisons of odd types
        return a is b


def bindings(source: str, env: dict[str, Any] | None = None) -> dict[str, Any]:
    """The names a Python block binds to qcom_ext modules, objects and instances."""
    env = dict(env or {})
    tree = ast.parse(_strip_prompts(source))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "qcom_ext":
                    top = alias.asname or alias.name.split(".")[0]
                    env[top] = importlib.import_module(alias.name if alias.asname else "qcom_ext")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "qcom_ext":
            module = importlib.import_module(node.module)
            for alias in node.names:
                env[alias.asname or alias.name] = _submodule_or_attr(
                    module, node.module, alias.name
                )
    for node in ast.walk(tree):
        value, names = None, []
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            value, names = node.value, [node.targets[0]]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            value, names = node.context_expr, [node.optional_vars]
        if isinstance(value, ast.Call) and isinstance(names[0], ast.Name):
            cls = _returned_class(value, env)
            if cls is not None:
                env[names[0].id] = Instance(cls)
    return env


def _returned_class(call: ast.Call, env: dict[str, Any]) -> type | None:
    try:
        target = resolve_dotted(ast.unparse(call.func), env)
    except (AttributeError, ImportError):
        return None
    if target is None:
        return None
    if inspect.isclass(target.obj):
        return target.obj
    try:
        annotation = inspect.signature(target.obj).return_annotation
    except (TypeError, ValueError):
        return None
    if isinstance(annotation, str) and annotation.isidentifier():
        module = inspect.getmodule(target.obj)
        annotation = getattr(module, annotation, None) or getattr(qcom_ext, annotation, None)
    if inspect.isclass(annotation) and annotation.__module__.startswith("qcom_ext"):
        return annotation
    return None


def _strip_prompts(source: str) -> str:
    lines = source.splitlines()
    if any(line.startswith(">>> ") for line in lines):
        lines = [line[4:] for line in lines if line.startswith((">>> ", "... "))]
    return "\n".join(lines)


def _call_items(call: ast.Call) -> list[str]:
    items = []
    for arg in call.args:
        elided = isinstance(arg, ast.Starred) or (
            isinstance(arg, ast.Constant) and arg.value is Ellipsis
        )
        items.append(ELISION if elided else "_")
    for kw in call.keywords:
        items.append(ELISION if kw.arg is None else f"{kw.arg}=_")
    return items


def check_python_block(
    source: str, env: dict[str, Any] | None = None, seen: list[str] | None = None
) -> list[str]:
    """Problems of every call in a Python block that reaches a qcom_ext object."""
    seen = [] if seen is None else seen
    try:
        tree = ast.parse(_strip_prompts(source))
    except SyntaxError as exc:
        return [f"the Python block does not parse: {exc}"]
    env = bindings(source, env)
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = ast.unparse(node.func)
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", dotted):
            continue
        head = dotted.split(".")[0]
        if head not in env:
            continue  # numpy, pyopencl, kernels: not qcom_ext
        try:
            target = resolve_dotted(dotted, env)
        except (AttributeError, ImportError) as exc:
            problems.append(f"`{dotted}` is not in qcom_ext ({exc})")
            continue
        if target is not None:
            seen.append(f"python:{dotted}")
            problems += check_arguments(target, _call_items(node), signature_form=False)
    return problems


def check_python_quote(
    text: str, env: dict[str, Any] | None = None, seen: list[str] | None = None
) -> list[str]:
    """Problems of every qcom_ext call or signature quoted in ``text`` (a code span)."""
    seen = [] if seen is None else seen
    problems = []
    for quoted in find_calls(text, PY_CALL):
        if quoted.name.startswith("qcom_ext.") or (env and quoted.name.split(".")[0] in env):
            try:
                target = resolve_dotted(quoted.name, env)
            except (AttributeError, ImportError) as exc:
                problems.append(f"`{quoted.name}` is not in qcom_ext ({exc})")
                continue
        else:
            try:
                target = resolve_dotted(quoted.name, env)
            except (AttributeError, ImportError):
                continue  # neither qcom_ext nor bound: OpenCL C, numpy, prose
            if target is None or hasattr(builtins, quoted.name):
                continue
        if target is not None:
            seen.append(f"python:{quoted.name}")
            problems += check_arguments(target, quoted.args)
    return problems


# ---- C entry points ------------------------------------------------------------------------


@cache
def _cdefs() -> cffi.FFI:
    return parse(cdef_texts())


_aliases = itertools.count()


def entry_point(name: str) -> Any:
    """The cffi function type of ``name`` declared in ``cdefs/`` (``<name>_fn``)."""
    try:
        return _cdefs().typeof(f"{name}_fn")
    except cffi.CDefError:
        return None


def check_c_quote(text: str, seen: list[str] | None = None) -> list[str]:
    """Problems of every ``cl*`` call or prototype quoted in ``text``: the name is a
    ``cdefs/`` entry point, the arity fits, and a prototype's types are the declaration's.
    ``seen`` collects ``c:NAME`` per call and ``prototype:NAME`` per full prototype."""
    seen = [] if seen is None else seen
    problems = []
    for quoted in find_calls(text, CL_CALL):
        seen.append(f"c:{quoted.name}")
        declared = entry_point(quoted.name)
        if declared is None:
            problems.append(f"`{quoted.name}` is not declared in cdefs/ (no {quoted.name}_fn)")
            continue
        arity = len(declared.args)
        args = [a for a in quoted.args if a != "void"]
        given = [a for a in args if a != ELISION]
        too_many = len(given) > arity if ELISION in args else len(given) != arity
        if too_many:
            problems.append(
                f"`{quoted.name}` takes {arity} arguments, the quote has {len(given)}: "
                f"{quoted.name}({', '.join(quoted.args)})"
            )
            continue
        if quoted.type_before and ELISION not in args:
            seen.append(f"prototype:{quoted.name}")
            problems += _check_prototype(quoted, declared)
    return problems


def _check_prototype(quoted: Quoted, declared: Any) -> list[str]:
    alias = f"qcom_ext_doc_quote_{next(_aliases)}_fn"
    ffi = _cdefs()
    params = ", ".join(quoted.args) or "void"
    try:
        ffi.cdef(f"typedef {quoted.type_before} (*{alias})({params});")
        mine = ffi.typeof(alias)
    except (cffi.CDefError, cffi.FFIError) as exc:
        return [f"`{quoted.name}` prototype does not parse against cdefs/: {exc}"]
    if mine.cname != declared.cname:
        return [f"`{quoted.name}` is declared {declared.cname}, quoted {mine.cname}"]
    return []


# ---- kernel builtins -----------------------------------------------------------------------


@dataclass
class Builtin:
    """What the compat headers define for one ``qcom_*`` name (over every #if branch)."""

    arities: set[int] = field(default_factory=set)
    returns: set[str] = field(default_factory=set)
    macro: bool = False


_DEFINITION = re.compile(r"^([A-Za-z_]\w*)\s+(qcom_\w+|QCOM_[A-Z0-9_]+)\s*\(", re.MULTILINE)
_MACRO = re.compile(r"^\s*#\s*define\s+(qcom_\w+|QCOM_[A-Z0-9_]+)\(([^)]*)\)", re.MULTILINE)


def _arity(args: list[str]) -> int:
    return 0 if args in ([], ["void"]) else len(args)


@cache
def kernel_builtins() -> dict[str, Builtin]:
    """Name -> arities and return types defined by kernels/compat/*.h and qcom_ext.h."""
    table: dict[str, Builtin] = {}
    for header in KERNEL_HEADERS:
        text = header.read_text()
        for m in _DEFINITION.finditer(text):
            inner = balanced(text, m.end() - 1)
            if inner is None:
                continue
            entry = table.setdefault(m.group(2), Builtin())
            entry.arities.add(_arity(split_args(inner)))
            entry.returns.add(m.group(1))
        for m in _MACRO.finditer(text):
            entry = table.setdefault(m.group(1), Builtin())
            entry.arities.add(_arity(split_args(m.group(2))))
            entry.macro = True
    return table


def check_kernel_quote(text: str, seen: list[str] | None = None) -> list[str]:
    """Problems of every ``qcom_*`` builtin called or declared in ``text``."""
    seen = [] if seen is None else seen
    table = kernel_builtins()
    problems = []
    for quoted in find_calls(text, KERNEL_CALL):
        seen.append(f"kernel:{quoted.name}")
        entry = table.get(quoted.name)
        if entry is None:
            problems.append(f"`{quoted.name}` is not defined by kernels/compat/*.h")
            continue
        args = [a for a in quoted.args if a != "void"]
        if args != [ELISION] and _arity(args) not in entry.arities:
            problems.append(
                f"`{quoted.name}` takes {sorted(entry.arities)} arguments in "
                f"kernels/compat/, the quote has {_arity(args)}"
            )
        returned = quoted.type_before
        if returned and entry.returns and returned not in entry.returns | {"gentype"}:
            problems.append(
                f"`{quoted.name}` returns {'/'.join(sorted(entry.returns))} in "
                f"kernels/compat/, quoted {returned}"
            )
    return problems


# ---- a whole page ---------------------------------------------------------------------------


def check_page(markdown: str, seen: list[str] | None = None) -> list[str]:
    """Every problem of a page's quoted Python, C entry points and kernel builtins.

    Python blocks bind names for the page's later blocks and its code spans (``rec`` of
    ``with qcom_ext.Recording(queue) as rec:`` is a Recording in ``rec.replay(...)``).
    ``seen`` collects what was checked (``python:``, ``c:``, ``prototype:``, ``kernel:``)."""
    problems: list[str] = []
    env: dict[str, Any] = {}
    for language, body in code_blocks(markdown):
        if language == "python":
            found = check_python_block(body, env, seen)
            problems += [f"python block: {p}" for p in found]
            if not any(p.startswith("the Python block does not parse") for p in found):
                env = bindings(body, env)
        elif language in ("c", "opencl", "cl"):
            found = check_c_quote(body, seen) + check_kernel_quote(body, seen)
            problems += [f"C block: {p}" for p in found]
    for span in code_spans(markdown):
        found = (
            check_python_quote(span, env, seen)
            + check_c_quote(span, seen)
            + check_kernel_quote(span, seen)
        )
        problems += [f"`{span}`: {p}" for p in found]
    return problems
