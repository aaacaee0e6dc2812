"""cdefs/ and kernels/ ship inside the wheel and are found from it and from a checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

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


@pytest.mark.slow
def test_installed_wheel_carries_and_finds_its_data(tmp_path):
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not running from a source checkout")
    wheels = tmp_path / "wheels"
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
    (wheel,) = wheels.glob("qcom_ext-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for path in (ROOT / "cdefs").glob("*.h"):
        assert f"qcom_ext/cdefs/{path.name}" in names
    for path in (ROOT / "kernels").rglob("*"):
        if path.is_file():
            assert f"qcom_ext/kernels/{path.relative_to(ROOT / 'kernels').as_posix()}" in names
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
