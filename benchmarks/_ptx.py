"""What NVIDIA's OpenCL compiler says about a kernel: the PTX it returns as the program
binary, counted into a static instruction mix (:func:`instruction_mix`), and the ptxas
lines a ``-cl-nv-verbose`` build log holds (:func:`ptxas_info`).

Formats. PTX is NVIDIA's virtual ISA ("Parallel Thread Execution ISA", docs.nvidia.com/
cuda/parallel-thread-execution): a kernel is ``.entry name(params) { ... }``, one
instruction per line ``[@[!]%p] opcode.mod.mod operands;``, labels ``$L__BB0_2:``,
directives start with ``.``. The OpenCL driver returns that text from
``CL_PROGRAM_BINARIES`` (``.target sm_90, texmode_independent``). ``-cl-nv-verbose``
(cl_nv_compiler_options) puts ptxas's ``--verbose`` report in the build log, the lines
nvcc's ``-Xptxas -v`` prints, e.g. (NVIDIA/Fuser PR 359, csarofeen/pytorch PR 2317)::

    ptxas info    : Compiling entry function 'k' for 'sm_80'
    ptxas info    : Function properties for k
        224 bytes stack frame, 284 bytes spill stores, 532 bytes spill loads
    ptxas info    : Used 24 registers, 16 bytes smem, 480 bytes cmem[0]

The mix is static: each instruction of the text counted once, whatever loops run it.

>>> ptx = '''.entry k(.param .u64 k_param_0)
... {
...     ld.param.u64    %rd1, [k_param_0];
...     ld.global.nc.v4.f32     {%f1, %f2, %f3, %f4}, [%rd1];
...     fma.rn.f32      %f5, %f1, %f2, %f3;
...     @%p1 bra        $L__BB0_2;
... $L__BB0_2:
...     st.global.v4.f32        [%rd1], {%f5, %f2, %f3, %f4};
...     ret;
... }'''
>>> mix = instruction_mix(ptx)["k"]
>>> mix.counts["fp32_fma"], mix.counts["branch"], mix.global_loads, mix.global_stores
(1, 1, {'v4.f32': 1}, {'v4.f32': 1})
>>> info = ptxas_info('''ptxas info    : Compiling entry function 'k' for 'sm_90'
... ptxas info    : Function properties for k
...     0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
... ptxas info    : Used 40 registers, 2048 bytes smem, 380 bytes cmem[0]''')["k"]
>>> info.registers, info.smem_bytes, info.spill_store_bytes, info.arch
(40, 2048, 8, 'sm_90')
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CATEGORIES",
    "InstructionMix",
    "PtxasInfo",
    "classify",
    "instruction_mix",
    "is_ptx",
    "ptxas_info",
]

#: The categories of :func:`classify`, in table order.
CATEGORIES = (
    "global_load",
    "global_store",
    "texture",
    "surface",
    "shared_load",
    "shared_store",
    "local_load",
    "local_store",
    "barrier",
    "fp32_fma",
    "fp32_add",
    "fp32_mul",
    "fp32_other",
    "fp16",
    "integer",
    "compare",
    "convert",
    "move",
    "branch",
    "atomic",
    "other",
)

_INT_TYPES = frozenset(
    f"{k}{n}" for k in "sub" for n in (8, 16, 32, 64) if not (k == "b" and n == 8)
) | {"b8"}
_INT_OPS = frozenset(
    {
        "add",
        "sub",
        "mul",
        "mad",
        "mul24",
        "mad24",
        "sad",
        "div",
        "rem",
        "abs",
        "neg",
        "min",
        "max",
        "popc",
        "clz",
        "bfind",
        "fns",
        "brev",
        "bfe",
        "bfi",
        "dp4a",
        "dp2a",
        "shl",
        "shr",
        "shf",
        "and",
        "or",
        "xor",
        "not",
        "cnot",
        "lop3",
        "prmt",
    }
)
_FP16_TYPES = frozenset({"f16", "f16x2", "bf16", "bf16x2"})
_SIMPLE = {
    "tex": "texture",
    "tld4": "texture",
    "txq": "texture",
    "suld": "surface",
    "sust": "surface",
    "suq": "surface",
    "sured": "surface",
    "bar": "barrier",
    "barrier": "barrier",
    "cvt": "convert",
    "mov": "move",
    "bra": "branch",
    "brx": "branch",
    "atom": "atomic",
    "red": "atomic",
    "setp": "compare",
    "selp": "compare",
    "set": "compare",
    "slct": "compare",
}
_SPACES = {"global": "global", "shared": "shared", "local": "local"}


def _memory(base: str, mods: set[str]) -> str | None:
    if base not in ("ld", "ldu", "st"):
        return None
    space = next((_SPACES[m] for m in mods if m in _SPACES), None)
    if space is None:
        return "other"  # .param, .const: arguments and constants
    return f"{space}_{'store' if base == 'st' else 'load'}"


def _arithmetic(base: str, mods: set[str]) -> str:
    if "f32" in mods:
        names = {"fma": "fp32_fma", "mad": "fp32_fma", "add": "fp32_add", "sub": "fp32_add"}
        return names.get(base, "fp32_mul" if base == "mul" else "fp32_other")
    if mods & _FP16_TYPES:
        return "fp16"
    if base in _INT_OPS and mods & _INT_TYPES:
        return "integer"
    return "other"


def classify(opcode: str) -> str:
    """The category (:data:`CATEGORIES`) of one PTX opcode with its modifiers.

    >>> [classify(op) for op in ("ld.global.nc.v4.f32", "tex.2d.v4.f32.f32", "mad.lo.s32",
    ...                          "sub.ftz.f32", "bar.sync", "cvt.rn.f32.s32", "ld.shared.f32")]
    ['global_load', 'texture', 'integer', 'fp32_add', 'barrier', 'convert', 'shared_load']
    """
    base, *rest = opcode.split(".")
    mods = set(rest)
    memory = _memory(base, mods)
    if memory is not None:
        return memory
    if base in _SIMPLE:
        return _SIMPLE[base]
    return _arithmetic(base, mods)


def _shape(opcode: str) -> str:
    """``v4.f32`` of ``ld.global.nc.v4.f32``: vector width (if any) and element type."""
    mods = opcode.split(".")[1:]
    vector = [m for m in mods if re.fullmatch(r"v\d+", m)]
    return ".".join(vector + mods[-1:])


@dataclass
class InstructionMix:
    """Static instruction counts of one PTX function: per category, and the global
    loads and stores by shape (``v4.f32``: four floats, 16 bytes, per instruction)."""

    counts: Counter = field(default_factory=Counter)
    global_loads: dict[str, int] = field(default_factory=dict)
    global_stores: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def add(self, opcode: str) -> None:
        category = classify(opcode)
        self.counts[category] += 1
        shapes = {"global_load": self.global_loads, "global_store": self.global_stores}
        if category in shapes:
            key = _shape(opcode)
            shapes[category][key] = shapes[category].get(key, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": {c: self.counts.get(c, 0) for c in CATEGORIES},
            "total": self.total,
            "global_loads": dict(self.global_loads),
            "global_stores": dict(self.global_stores),
        }


_HEADER = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(entry|func)\s+(?:\([^)]*\)\s*)?(\w+)")
_LABEL = re.compile(r"^[$\w]+:\s*")
_PREDICATE = re.compile(r"^@!?%\w+\s+")


def is_ptx(binary: bytes | str) -> bool:
    """Whether a program binary is PTX text (NVIDIA's OpenCL), not a device ELF."""
    text = binary if isinstance(binary, str) else bytes(binary[:4096]).decode("latin-1")
    return ".target" in text and (".entry" in text or ".version" in text)


def _opcode(line: str) -> str | None:
    line = _PREDICATE.sub("", _LABEL.sub("", line.strip()))
    if not line or line[0] in ".{}" or not line.endswith(";"):
        return None
    return line.split(None, 1)[0].rstrip(";")


def instruction_mix(ptx: str) -> dict[str, InstructionMix]:
    """Per ``.entry`` kernel of ``ptx``, its :class:`InstructionMix` (``.func`` bodies are
    not counted: NVIDIA's OpenCL compiler inlines what a kernel calls)."""
    mixes: dict[str, InstructionMix] = {}
    current: InstructionMix | None = None
    depth = 0
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0]
        header = _HEADER.match(line) if depth == 0 else None
        if header:
            entry = header.group(1) == "entry"
            current = mixes.setdefault(header.group(2), InstructionMix()) if entry else None
        opened, closed = line.count("{"), line.count("}")
        if depth > 0 and current is not None:
            opcode = _opcode(line)
            if opcode is not None:
                current.add(opcode)
        depth += opened - closed
    return mixes


@dataclass(frozen=True)
class PtxasInfo:
    """ptxas's ``--verbose`` report of one entry function (bytes per work-item, except
    ``smem_bytes``: static shared memory per work-group)."""

    registers: int
    smem_bytes: int
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    arch: str | None


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, .*?(\d+) bytes smem)?")


def ptxas_info(log: str) -> dict[str, PtxasInfo]:
    """Per entry function named in a ``-cl-nv-verbose`` build log, its registers, shared
    memory, stack frame and spills. Entries without a "Used N registers" line are absent."""
    found: dict[str, PtxasInfo] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    entry = arch = props = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            entry, arch = m.group(1), m.group(2)
        elif m := _PROPERTIES.search(line):
            props = m.group(1)
        elif (m := _FRAME.search(line)) and props is not None:
            frames[props] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif (m := _USED.search(line)) and entry is not None:
            frame = frames.get(entry, (0, 0, 0))
            smem = int(m.group(2)) if m.group(2) else 0
            found[entry] = PtxasInfo(int(m.group(1)), smem, *frame, arch)
            entry = None
    return found
