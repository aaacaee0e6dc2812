"""cdefs/ and kernels/ ship inside the wheel and are found from it and from a checkout."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from qcom_ext._resources import cdefs_dir, kernels_dir

ROOT = Path(__file__).resolve().parent.parent
CHECK = """
import qcom_ext, qcom_ext._resources as r, qcom_ext.binding.lib as lib
import qcom_ext.binding.cdefs as cd
print(qcom_ext.__file__); print(r.cdefs_dir()); print(r.kernels_dir())
import qcom_ext.binding._cl_ffi as generated
print(len(cd.cdef_files()), lib.C.CL_QUEUE_RECORDABLE_QCOM, lib.ffi is generated.ffi)
import qcom_ext.tools.cli; run = qcom_ext.tools.cli.benchmarks_runner()
print(run.__name__, run.__file__, len(run.discover()))
"""


def test_checkout_layout_is_found():
    if not (ROOT / "cdefs").is_dir():
        pytest.skip("not running from a source checkout")
    assert cdefs_dir() in (ROOT / "cdefs", ROOT / "qcom_ext" / "cdefs")
    assert (kernels_dir() / "qcom_ext.h").is_file()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout, built once for the module's tests."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not running from a source checkout")
    wheels = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    (built,) = wheels.glob("qcom_ext-*.whl")
    return built


@pytest.mark.slow
def test_installed_wheel_carries_and_finds_its_data(wheel, tmp_path):
    names = zipfile.ZipFile(wheel).namelist()
    for path in (ROOT / "cdefs").glob("*.h"):
        assert f"qcom_ext/cdefs/{path.name}" in names
    for path in (ROOT / "kernels").rglob("*"):
        if path.is_file():
            assert f"qcom_ext/kernels/{path.relative_to(ROOT / 'kernels').as_posix()}" in names
    for path in (ROOT / "qcom_ext" / "schemas").glob("*.json"):
        assert f"qcom_ext/schemas/{path.name}" in names
    assert "qcom_ext/tools/fleet/aggregate.sql" in names  # qcom-ext compat's SQL
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    # The wheel first; what the environment already puts on the path (dependencies
    # installed with --target, as on the GPU machine) after it.
    path = [str(target), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    out = subprocess.run(
        [sys.executable, "-c", CHECK],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split("\n")
    package = Path(out[0]).parent
    assert package.is_relative_to(target)
    assert Path(out[1]) == package / "cdefs"
    assert Path(out[2]) == package / "kernels"
    assert out[3] == f"{len(list((ROOT / 'cdefs').glob('*.h')))} {1 << 30} True"
    name, runner, count = out[4].split()  # qcom-ext bench works from the wheel
    assert name == "qcom_ext.tools.bench.run" and Path(runner).is_relative_to(package)
    assert int(count) > 0


#: What only the benchmarking lab (benchmarks/) needs: torch, OpenCV, ptxas's report, CUDA's
#: occupancy rules and timers. (PTX itself is named in the shipped dot8 code: dp4a.)
LAB_ONLY = re.compile(r"ptxas|-cl-nv-verbose|\bcuda\b|occupancy", re.I)
LAB_PACKAGES = {"torch", "cv2"}


def lab_leaks(sources: dict[str, str]) -> list[str]:
    """The shipped Python files (path -> text) that carry the lab: a module named as one of
    ``benchmarks/``'s, an import of torch or OpenCV (a statement, or a module name handed
    to ``find_spec`` / ``import_module``), or text only the lab needs (:data:`LAB_ONLY`)."""
    lab = {p.name for p in (ROOT / "benchmarks").glob("*.py")} - {"__init__.py", "__main__.py"}
    leaks = []
    for path, text in sources.items():
        imported = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.Call) and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    imported.add(first.value.split(".")[0])
        found = LAB_ONLY.search(text)
        if PurePosixPath(path).name in lab or imported & LAB_PACKAGES or found:
            leaks.append(f"{path}: {found[0] if found else sorted(imported & LAB_PACKAGES)}")
    return leaks


def test_the_package_holds_no_benchmarking_lab():
    """qcom_ext/ (what the wheel ships of Python) has none of the lab's modules, imports
    and NVIDIA tooling: they live in the checkout's benchmarks/."""
    if not (ROOT / "benchmarks").is_dir():
        pytest.skip("not running from a source checkout")
    package = ROOT / "qcom_ext"
    sources = {p.relative_to(ROOT).as_posix(): p.read_text() for p in package.rglob("*.py")}
    assert len(sources) > 100
    assert lab_leaks(sources) == []
    sample = {"qcom_ext/tools/bench/_ptx.py": "x = 1\n", "a.py": "import torch.cuda\n"}
    sample |= {"b.py": "find_spec('cv2')\n", "c.py": "# ptxas -v\n"}
    assert len(lab_leaks(sample)) == 4  # each kind of leak is seen


@pytest.mark.slow
def test_the_wheel_ships_no_benchmarking_lab(wheel):
    """The wheel's Python files: none of benchmarks/ (no PTX parser, CUDA occupancy, torch
    timer, torch or OpenCV comparison, issue 18's goals), and no path outside qcom_ext."""
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert all(n.startswith(("qcom_ext/", "qcom_ext-")) for n in names), names
    sources = {n: archive.read(n).decode() for n in names if n.endswith(".py")}
    assert "qcom_ext/tools/bench/run.py" in sources  # qcom-ext bench ships
    assert lab_leaks(sources) == []
