"""OpenCL libraries that crash or hang, for the isolated probe's tests: loaded in a child
process through ``QCOM_EXT_OPENCL_LIBRARY``, never in the test process.

``segfault``: ``clGetPlatformIDs`` reads address 0; ``one_platform``: it reports one
platform and ``clGetDeviceIDs`` aborts; ``hang``: ``clGetPlatformIDs`` sleeps 10 minutes.
Built with the system C compiler; where there is none the test is skipped, naming that.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = r"""
#include <stdlib.h>
#include <unistd.h>
int clGetPlatformIDs(unsigned n, void **platforms, unsigned *count) {
#if defined(HANG)
    sleep(600);
#elif defined(ONE_PLATFORM)
    if (count) *count = 1;
    if (platforms && n) platforms[0] = (void *)0x1000;
#else
    *(volatile int *)0 = 1;
#endif
    return 0;
}
int clGetDeviceIDs(void *platform, unsigned long type, unsigned n, void **d, unsigned *c) {
    abort();
}
"""
KINDS = {"segfault": None, "one_platform": "ONE_PLATFORM", "hang": "HANG"}


def build_libraries(folder: Path) -> dict[str, str]:
    """Kind -> the path of its shared library, built in ``folder`` (skips without cc)."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None or sys.platform == "win32":
        pytest.skip("no system C compiler (cc, gcc or clang) to build a crashing libOpenCL")
    source = folder / "crashing_opencl.c"
    source.write_text(SOURCE)
    built = {}
    for kind, define in KINDS.items():
        target = folder / f"lib{kind}.so"
        flags = [f"-D{define}"] if define else []
        command = [compiler, "-shared", "-fPIC", *flags, "-o", str(target), str(source)]
        subprocess.run(command, check=True, capture_output=True)
        built[kind] = str(target)
    return built
