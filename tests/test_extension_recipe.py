"""docs/ARCHITECTURE.md's "Adding an extension", walked on a toy extension.

The package, ``cdefs/`` and ``kernels/`` are copied to a temporary directory; the test
adds ``cl_qcom_toy`` (a host API and a kernel builtin) by touching exactly the files the
recipe's lists name, and a child process that imports the copy checks that the library
picks it up: its cdef's token, the probe's path for it (the registry), its route (the
host module decides through ``shared.route``), the ``-D`` flag of its native part, its
builtin compiled and run on the portable path (the compat part, through ``qcom_ext.h``),
its public name (named by its registry entry; in ``qcom_ext.__all__`` and ``dir``), and its
selftest case registered and passing. A recipe whose files or count drift from the code
fails here.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DEVICES

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("qcom_ext", "cdefs", "kernels")
NAMES = {"X": "toy", "<family>": "memory", "<group>": "host"}

CDEF = """/*
 * cl_qcom_toy
 * What: a toy extension of tests/test_extension_recipe.py (no driver has it).
 * Reference: none; docs/ARCHITECTURE.md "Adding an extension" is walked with it.
 */

#define CL_TOY_SCALE_QCOM 0x7FF0

typedef cl_int (*clToyScaleQCOM_fn)(cl_context context, cl_uint value, cl_uint *scaled);
"""

REGISTRY_ENTRY = """        Extension(
            "cl_qcom_toy",
            "none",
            "host+kernel",
            "the toy of tests/test_extension_recipe.py",
            fallback="twice the value, on the host and in OpenCL C",
            public=("memory.toy.toy_scale",),
        ),
"""

HOST_MODULE = '''"""cl_qcom_toy: twice a value (the toy of tests/test_extension_recipe.py)."""

from __future__ import annotations

from typing import Any

from qcom_ext.binding.lib import C, check, ffi
from qcom_ext.device import shared
from qcom_ext.errors import EntryPointMissing

__all__ = ["toy_scale"]

EXTENSION = "cl_qcom_toy"


def toy_scale(context: Any, value: int) -> tuple[int, str]:
    """Twice ``value`` (natively ``clToyScaleQCOM``), and the path that made it."""
    route = shared.route(context, EXTENSION)
    if route.native:
        try:
            return _native(context, route, value), route.path
        except EntryPointMissing as exc:
            route = route.downgrade(exc, "the value is scaled on the host")
    return 2 * value, route.path


def _native(context: Any, route: shared.Route, value: int) -> int:
    scale = route.require("clToyScaleQCOM")
    out = ffi.new("cl_uint *")
    check(scale(ffi.cast("cl_context", context.int_ptr), value, out), "clToyScaleQCOM")
    assert C.CL_TOY_SCALE_QCOM
    return int(out[0])
'''

COMPAT_PART = """/* Part of qcom_ext.h: include <qcom_ext.h>, not this file. */
/* ---- cl_qcom_toy (the toy of tests/test_extension_recipe.py) ---- */
#if defined(QCOM_EXT_NATIVE_cl_qcom_toy)
#pragma OPENCL EXTENSION cl_qcom_toy : enable
#else
uint qcom_toy_scale(uint v) { return 2u * v; }
#endif
"""

SELFTEST_CASE = '''

TOY_SOURCE = """
__kernel void toy(__global const uint *src, __global uint *dst)
{
    size_t i = get_global_id(0);
    dst[i] = qcom_toy_scale(src[i]);
}
"""


@case("cl_qcom_toy", "qcom_toy_scale of 64 uints, and toy_scale on the host")
def _toy(env: Env) -> Outcome:
    import pyopencl as cl

    from qcom_ext.ext.memory.toy import toy_scale

    values = env.rng.integers(0, 2**31, 64, dtype=np.uint32)
    dst, host = env.empty(64, np.uint32)
    kernel = cl.Kernel(env.program(TOY_SOURCE), "toy")
    kernel(env.queue, (64,), None, env.to_device(values), dst)
    scaled, path = toy_scale(env.context, 21)
    got = np.concatenate([env.read(dst, host), [scaled]])
    return Outcome(got, np.concatenate([values * np.uint32(2), [42]]), ran_as=path)
'''

CHILD = """
import json, sys
import numpy as np
import pyopencl as cl
import qcom_ext
from qcom_ext import DeviceCaps
from qcom_ext.binding.lib import C
from qcom_ext.device import shared
from qcom_ext.device.probe import probe_all
from qcom_ext.tools.selftest import _registry, run_selftest

label, root = sys.argv[1], sys.argv[2]
assert qcom_ext.__file__.startswith(root), qcom_ext.__file__
caps = next(c for c in probe_all() if c.label == label)
context = cl.Context([caps.device()])
claimed = DeviceCaps.from_info(extensions="cl_qcom_toy", disabled=())
report = run_selftest(caps, only=["cl_qcom_toy"])
route = shared.route(context, "cl_qcom_toy")
print(json.dumps({
    "token": C.CL_TOY_SCALE_QCOM,
    "probe_path": caps.path("cl_qcom_toy"),
    "in_report": caps.to_dict()["qcom"]["cl_qcom_toy"]["path"],
    "claimed_route": shared.route(claimed, "cl_qcom_toy").path,
    "native_flag": "-DQCOM_EXT_NATIVE_cl_qcom_toy" in claimed.compiler_options(),
    "route": [route.path, route.reason],
    "public": qcom_ext.toy_scale(context, 5),
    "listed": ["toy_scale" in qcom_ext.__all__, "toy_scale" in dir(qcom_ext)],
    "cases": [c.name for c in _registry.cases_for("cl_qcom_toy")],
    "selftest_ok": report.ok,
    "selftest": report.extension("cl_qcom_toy").to_dict(),
}))
"""


def recipe_lists() -> dict[str, tuple[int, list[str]]]:
    """The recipe's lists: kind -> (stated count, the shipped files its steps name)."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("## Adding an extension", 1)[1].split("\n## ", 1)[0]
    lists = {}
    pattern = (
        r"\*\*A (host|kernel)-side extension, (\d+) shipped files.*?:\*\*\n\n(.*?)\n\n(?=\*\*)"
    )
    for kind, count, body in re.findall(pattern, section, re.S):
        steps = re.findall(r"^\d+\. `([^`]+)`", body, re.M)
        lists[kind] = (int(count), [_named(step) for step in steps])
    both = re.search(r"\*\*An extension with both, (\d+) shipped files:\*\*", section)
    lists["both"] = (int(both.group(1)), [])
    return lists


def _named(path: str) -> str:
    for placeholder, name in NAMES.items():
        path = path.replace(placeholder, name)
    return path


def _insert(path: Path, anchor: str, text: str, *, before: bool = True) -> None:
    source = path.read_text()
    assert source.count(anchor) == 1, f"{path.name}: the anchor {anchor!r} moved"
    path.write_text(source.replace(anchor, text + anchor if before else anchor + text))


def walk_recipe(root: Path) -> None:
    """The toy, one step per file the recipe names."""
    (root / "cdefs" / "cl_qcom_toy.h").write_text(CDEF)
    _insert(root / "qcom_ext/device/registry.py", "    )\n}\n", REGISTRY_ENTRY)
    (root / "qcom_ext/ext/memory/toy.py").write_text(HOST_MODULE)
    (root / "kernels/compat/cl_qcom_toy.h").write_text(COMPAT_PART)
    last = "/* Keep cl_qcom_filter_bicubic last"
    _insert(root / "kernels/qcom_ext.h", last, '#include "compat/cl_qcom_toy.h"\n')
    checks = root / "qcom_ext/tools/selftest/checks_host.py"
    checks.write_text(checks.read_text() + SELFTEST_CASE)


def touched(copy: Path) -> set[str]:
    """The shipped files of ``copy`` that differ from the checkout's (or are new)."""
    changed = set()
    for top in SHIPPED:
        for path in (copy / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                original = ROOT / path.relative_to(copy)
                if not original.is_file() or not filecmp.cmp(path, original, shallow=False):
                    changed.add(str(path.relative_to(copy)))
    return changed


@pytest.fixture(scope="module")
def toy_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("recipe")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for top in SHIPPED:
        shutil.copytree(ROOT / top, root / top, ignore=ignore)
    walk_recipe(root)
    return root


def test_the_recipe_lists_are_the_files_the_toy_touches(toy_tree):
    lists = recipe_lists()
    host_count, host = lists["host"]
    kernel_count, kernel = lists["kernel"]
    assert (host_count, len(host)) == (4, 4)
    assert kernel_count == len(kernel) - 1  # the cdef only with host tokens
    files = touched(toy_tree)
    assert files == set(host) | set(kernel), files
    assert len(files) == lists["both"][0] <= 6  # issue 27: a new extension in <= 6 files


@pytest.mark.slow
def test_the_library_picks_up_the_toy(toy_tree):
    device = DEVICES[0]
    paths = os.pathsep.join(p for p in (str(toy_tree), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": paths, "PYTHONSAFEPATH": "1"}  # the toy's copy first
    env.pop("QCOM_EXT_DISABLE", None)
    run = subprocess.run(
        [sys.executable, "-c", CHILD, device.label, str(toy_tree)],
        cwd=toy_tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["token"] == 0x7FF0  # the cdef reached the binding
    assert seen["probe_path"] == seen["in_report"] == "fallback"  # registry -> probe report
    assert seen["claimed_route"] == "native" and seen["native_flag"]  # the -D flag
    assert seen["route"][0] == "fallback" and "not advertised" in seen["route"][1]
    assert seen["public"] == [10, "fallback"]  # the host module, named by its entry
    assert seen["listed"] == [True, True]  # qcom_ext.__all__ and dir(qcom_ext)
    assert seen["cases"] == ["qcom_toy_scale of 64 uints, and toy_scale on the host"]
    assert seen["selftest_ok"], seen["selftest"]
