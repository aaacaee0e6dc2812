"""The child side of the isolated compile: ``python -m qcom_ext.ext.program.compile_child``.

It reads :func:`~qcom_ext.ext.program.isolated.compile_isolated`'s request on stdin
(:func:`qcom_ext._isolation.serve`), finds the same devices
(:func:`~qcom_ext.device.location.find_device`), builds the exact source and options as
:func:`~qcom_ext.ext.program.build.build_program` would, and stores the binaries in the
program cache the request names, announcing each driver call before it makes it (a death
in ``clBuildProgram`` is the compiler's). The parent side never imports this module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from qcom_ext._isolation import serve
from qcom_ext.device.location import find_device
from qcom_ext.errors import BuildError
from qcom_ext.ext.program import build as _build
from qcom_ext.ext.program import cache as program_cache
from qcom_ext.ext.program.isolated import COMPILE_STAGE

__all__ = ["main"]


def _compile(request: dict[str, Any], stage: Callable[[str], None]) -> dict[str, Any]:
    """The child's work: find the devices, build, store the binaries."""
    import pyopencl as cl

    stage("finding the devices")
    devices = [find_device(w) for w in request["devices"]]
    stage("clCreateContext")
    context = cl.Context(devices)
    stage(COMPILE_STAGE)
    try:
        source, options = request["source"], request["options"]
        program = _build._build_from_source(context, devices, source, options)
    except BuildError as exc:
        return {"outcome": "build_error", "log": exc.log, "options": list(exc.options)}
    stage("clGetProgramInfo (the binaries)")
    binaries = _build._binaries(program, devices)
    if binaries is None:
        return {"outcome": "no_binary"}
    stage("storing the binaries in the program cache")
    cache = program_cache.ProgramCache(request["cache"])
    stored = cache.store(request["key"], request["meta"], binaries)
    return {"outcome": "ok" if stored is not None else "not_stored"}


def main() -> int:
    """``python -m qcom_ext.ext.program.compile_child``: the child
    (:func:`qcom_ext._isolation.serve`)."""
    return serve(_compile)


if __name__ == "__main__":
    sys.exit(main())
