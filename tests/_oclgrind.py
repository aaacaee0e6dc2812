"""The one way the tests run kernels under Oclgrind and read what it reports.

:func:`run_all` runs ``tests/oclgrind_cases.py`` (every kernel of ``kernels/*.cl`` and
every compat-header builtin, checked against numpy) in child processes that use Oclgrind
as their only OpenCL platform (an ICD: ``OCL_ICD_VENDORS`` names a directory holding
``oclgrind.icd``, so pyopencl and qcom_ext's cffi see the same platform), with

* out-of-bounds checks (always on in Oclgrind), ``OCLGRIND_DATA_RACES=1`` (data races and
  barrier divergence), ``OCLGRIND_CHECK_API=1``, and ``OCLGRIND_UNINITIALIZED=1`` for
  every case but those whose kernels hit a defect of Oclgrind's uninitialized-value
  plugin that this Oclgrind still has (:data:`DEFECTS`; each is tried first on a small
  plain-OpenCL kernel, so a fixed Oclgrind gets the check everywhere);
* ``OCLGRIND_LOG`` on a pipe: Oclgrind opens the log once per OpenCL context and
  truncates a regular file each time, so a later context would erase an earlier one's
  reports; a pipe keeps them all;
* ``OCLGRIND_INST_COUNTS=1``: Oclgrind prints the name of every kernel it ran, which is
  compared with the child's own record of its launches.

Oclgrind's reports never change the exit status (portable-interop.md section 5), so
:meth:`Run.reports` reads them from the log and stderr. The source parsers
(:func:`kernel_names`, :func:`builtin_names`) say what has to be covered.

``python tests/_oclgrind.py`` runs everything and prints the counts that
docs/RELIABILITY.md records.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
CASES = Path(__file__).resolve().parent / "oclgrind_cases.py"
#: The cases' shards: the test suite runs one a test (each well under the 30 s budget of
#: one test on a 2-CPU machine: two shards took 59 s at once; of 8, one took 26 s).
SHARDS = 10
#: Child processes at once in run_all and the defect probes (CI machines have 2 CPUs).
WORKERS = 2

# Asked on purpose, and handled: the probe and pyopencl query device parameters Oclgrind
# 21.10 does not know (CL_INVALID_VALUE), and pyopencl's Kernel(program, name) looks up
# an optional ``_source`` attribute, which a Program made from a handle (Kernel.program)
# turns into clCreateKernel(..., "_source"). Any other API error is a report.
_UNKNOWN_QUERY = re.compile(
    r"Oclgrind - OpenCL runtime error detected\s+(?:Function: clGetDeviceInfo\s+"
    r"Error:\s+CL_INVALID_VALUE\s+For argument 'param_name'|Function: clCreateKernel\s+"
    r"Error:\s+CL_INVALID_KERNEL_NAME\s+Kernel '_source' not found)[^\n]*\n?"
)
# clang's count of a build log's diagnostics, which Oclgrind echoes to stderr (the
# diagnostics themselves are in the build log).
_DIAGNOSTIC_COUNT = re.compile(r"^\d+ (?:warning|error)s? generated\.\n?", re.MULTILINE)
_COUNTED = re.compile(r"^Instructions executed for kernel '(\w+)':", re.MULTILINE)
_COMMENTS = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"', re.DOTALL)
_BUILTIN = re.compile(r"\b(?:qcom_\w+|QCOM_\w+|[A-Z]\w*_QCOM)\b")
_INTERNAL = ("qcom_ext_", "QCOM_EXT_")


# ---- what has to be covered, from the sources ------------------------------------------


def _code(text: str) -> str:
    """``text`` without comments and string literals, continued lines joined."""
    return _COMMENTS.sub(" ", text).replace("\\\n", " ")


def kernel_names(folder: Path = KERNELS) -> dict[str, str]:
    """Every ``__kernel`` function of ``folder/*.cl``: name -> file name. A kernel defined
    inside a function-like macro is found through the macro's invocations."""
    found: dict[str, str] = {}
    kernel = re.compile(r"__kernel\b.*?\bvoid\s+(\w+)\s*\(", re.S)
    for path in sorted(folder.glob("*.cl")):
        lines = _code(path.read_text()).splitlines()
        plain = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
        found.update(dict.fromkeys(kernel.findall(plain), path.name))
        for line in lines:
            macro = re.match(r"\s*#\s*define\s+(\w+)\(([^)]*)\)(.*)", line)
            inner = kernel.search(macro.group(3)) if macro else None
            if not inner:
                continue
            params = [p.strip() for p in macro.group(2).split(",")]
            if inner.group(1) not in params:
                found[inner.group(1)] = path.name
                continue
            position = params.index(inner.group(1))
            for call in re.finditer(rf"^\s*{macro.group(1)}\(([^)]*)\)", plain, re.M):
                found[call.group(1).split(",")[position].strip()] = path.name
    return found


def builtin_names(folder: Path = KERNELS) -> set[str]:
    """The compat headers' ``qcom_*`` / ``QCOM_*`` / ``*_QCOM`` names (builtins, types,
    macros, constants), found in their code (not their comments). ``qcom_ext_*`` names
    are the headers' internals, except those the docs show being called."""
    headers = [folder / "qcom_ext.h", *sorted((folder / "compat").glob("*.h"))]
    names = set(_BUILTIN.findall(" ".join(_code(h.read_text()) for h in headers)))
    docs = "\n".join(p.read_text() for p in sorted((ROOT / "docs").rglob("*.md")))
    called = set(re.findall(r"\b(\w+)\(", docs))
    return {n for n in names if not n.startswith(_INTERNAL) or n in called}


def used_builtins(source: str, names: Iterable[str]) -> set[str]:
    """The ``names`` that ``source`` (comments left out) mentions."""
    return set(_BUILTIN.findall(_code(source))) & set(names)


# ---- defects of Oclgrind's uninitialized-value plugin -------------------------------------


@dataclass(frozen=True)
class Defect:
    """A defect of the plugin, and a plain-OpenCL reproducer (the body of a script that
    has ``ctx``, ``queue``, ``cl``, ``np``, ``mf`` and ``build(source)``)."""

    description: str
    reproducer: str
    symptom: str  # what the reproducer shows: "crash", or the start of a report


DEFECTS = {
    "shufflevector": Defect(
        "crashes (SIGSEGV, an out-of-bounds memcpy) on a shufflevector with undefined mask "
        "elements, which clang emits for vector widening and some swizzles",
        """
import pyopencl.cltypes as cltypes
k = build("__kernel void k(float2 c, __global float4 *o) { o[0] = (float4)(c, 0.0f, 0.0f); }")
k(queue, (1,), None, cltypes.make_float2(1, 2), cl.Buffer(ctx, mf.WRITE_ONLY, 16))
""",
        "crash",
    ),
    "image-reads": Defect(
        "reports every read_image* value as uninitialized in any kernel launch after the "
        "first of its context (it takes the image's shadow from memory past the 8 bytes "
        "it keeps for the argument)",
        """
k = build("__kernel void k(read_only image2d_t im, sampler_t s, __global float4 *o)"
          "{ o[0] = read_imagef(im, s, (int2)(0, 0)); }")
fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
image = cl.create_image(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, fmt, shape=(1, 1),
                        hostbuf=np.zeros(4, np.float32))
sampler = cl.Sampler(ctx, False, cl.addressing_mode.CLAMP, cl.filter_mode.NEAREST)
out = cl.Buffer(ctx, mf.WRITE_ONLY, 16)
for _ in range(2):
    k(queue, (1,), None, image, sampler, out)
""",
        "Uninitialized value written",
    ),
    "freeze": Defect(
        "stops the kernel with 'Unsupported instruction: freeze' (LLVM emits freeze, e.g. "
        "for a division and a remainder by the same value in a loop)",
        """
k = build("__kernel void k(__global int *o, int w) { for (int i = get_local_id(0); i < 24;"
          " i += get_local_size(0)) o[i] = i % w + 10 * (i / w); }")
k(queue, (4,), (4,), cl.Buffer(ctx, mf.WRITE_ONLY, 96), np.int32(5))
""",
        "OCLGRIND FATAL ERROR",
    ),
}
# Known and worked around in the cases (not a reason to turn the check off):
# * a buffer allocated where a released one was gets the released one's shadow (Oclgrind
#   reuses buffer ids), so a larger one reads as uninitialized past the old size: the
#   cases keep every memory object they make until the case ends;
# * clEnqueueFillBuffer shrinks a buffer's shadow to the pattern size: no case fills.
_PROBE = """
import numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
mf = cl.mem_flags
def build(source):
    return cl.Kernel(cl.Program(ctx, source).build(), "k")
{body}
queue.finish()
print("done")
"""


# ---- running ----------------------------------------------------------------------------


def icd_library() -> Path | None:
    """Oclgrind's ICD library, found next to the ``oclgrind`` command (None: none)."""
    command = shutil.which("oclgrind")
    if command is None:
        return None
    prefix = Path(os.path.realpath(command)).parent.parent
    return next(iter(sorted(prefix.glob("lib*/**/liboclgrind-rt-icd.so"))), None)


def missing() -> str | None:
    """Why Oclgrind cannot run here, or None."""
    if icd_library() is None:
        return "oclgrind (with liboclgrind-rt-icd.so next to it) is not installed"
    return None


@dataclass
class Run:
    """One child process: what it printed, Oclgrind's log and the child's manifest."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    log: str
    manifest: dict[str, Any] | None

    def reports(self) -> list[str]:
        """Everything Oclgrind reported (log and stderr), one entry per message, less
        the deliberate unknown-parameter queries and clang's diagnostic counts. The
        child keeps its own stderr empty, so anything else there is a report too."""
        found = []
        for text in (self.log, self.stderr):
            text = _DIAGNOSTIC_COUNT.sub("", _UNKNOWN_QUERY.sub("", text))
            found += [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]
        return found

    def counted_kernels(self) -> list[str]:
        """The kernels Oclgrind says it ran, one entry per launch."""
        return _COUNTED.findall(self.stdout)

    def failure(self) -> str:
        """What to show when this run is not clean."""
        lines = self.stdout.splitlines()
        tail = "\n".join(line for line in lines if line[:1] not in (" ", "I"))
        return f"{' '.join(self.args)}\n{tail[-6000:]}\n{self.stderr[-6000:]}\n{self.log[:6000]}"


def environment(vendors: Path, log_fd: int, cache: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("QCOM_EXT_", "OCLGRIND_", "PYOPENCL_"))
    }
    env.update(
        PYTHONPATH=path,
        OCL_ICD_VENDORS=str(vendors),
        PYOPENCL_CTX="Oclgrind",
        PYOPENCL_NO_CACHE="1",  # programs from source: the manifest reads their source
        QCOM_EXT_NO_CACHE="1",
        QCOM_EXT_CACHE_DIR=str(cache),  # tuning cache
        OCLGRIND_LOG=f"/dev/fd/{log_fd}",
        OCLGRIND_DATA_RACES="1",
        OCLGRIND_CHECK_API="1",
        OCLGRIND_UNINITIALIZED="1",
        OCLGRIND_INST_COUNTS="1",
    )
    return env


def run_python(workdir: Path, args: Sequence[str], timeout: float = 600) -> Run:
    """``python ARGS`` under Oclgrind with every check on; files go to ``workdir``
    (``manifest.json`` is read back when the child writes it)."""
    library = icd_library()
    if library is None:
        raise RuntimeError(missing())
    workdir.mkdir(parents=True, exist_ok=True)
    vendors = workdir / "icd"
    vendors.mkdir(exist_ok=True)
    (vendors / "oclgrind.icd").write_text(f"{library}\n")
    read_end, write_end = os.pipe()
    chunks: list[bytes] = []

    def drain() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            chunks.append(pipe.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        child = subprocess.Popen(
            [sys.executable, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            pass_fds=(write_end,),
            env=environment(vendors, write_end, workdir / "cache"),
        )
    finally:
        os.close(write_end)
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        stdout, stderr = child.communicate()
    reader.join(timeout=60)
    log = b"".join(chunks).decode(errors="replace")
    manifest = workdir / "manifest.json"
    data = json.loads(manifest.read_text()) if manifest.exists() else None
    return Run(list(args), child.returncode, stdout, stderr, log, data)


def run_cases(workdir: Path, args: Sequence[str] = (), timeout: float = 600) -> Run:
    """``tests/oclgrind_cases.py ARGS`` under Oclgrind, writing its manifest."""
    return run_python(
        workdir, [str(CASES), "--manifest", str(workdir / "manifest.json"), *args], timeout
    )


def probe_defect(workdir: Path, name: str) -> bool:
    """Whether this Oclgrind still has the defect ``name``: its reproducer shows the
    symptom under the uninitialized-value check. Anything else it shows is an error."""
    defect = DEFECTS[name]
    run = run_python(workdir, ["-c", _PROBE.replace("{body}", defect.reproducer)])
    reports = run.reports()
    if defect.symptom == "crash" and run.returncode < 0:
        return True
    shown = all(report.startswith(defect.symptom) for report in reports)
    if run.returncode == 0 and "done" in run.stdout and shown:
        return bool(reports)
    raise RuntimeError(f"the reproducer of {name} showed something else:\n{run.failure()}")


def find_defects(workdir: Path, workers: int = WORKERS) -> list[str]:
    """The names of the known Oclgrind defects this Oclgrind has (their probes, run
    ``workers`` at once)."""
    with ThreadPoolExecutor(workers) as pool:
        present = pool.map(lambda name: probe_defect(workdir / f"probe-{name}", name), DEFECTS)
        return [name for name, there in zip(DEFECTS, present, strict=True) if there]


def run_shard(workdir: Path, shard: int, defects: Sequence[str], shards: int = SHARDS) -> Run:
    """Shard ``shard`` of ``shards`` of the cases, the uninitialized check off for
    ``defects``."""
    args = ["--defects", ",".join(defects)] if defects else []
    return run_cases(workdir / f"shard{shard}", [*args, "--shard", f"{shard}/{shards}"])


def run_all(workdir: Path, shards: int = SHARDS) -> tuple[list[Run], list[str]]:
    """Every case, split over ``shards`` child processes run ``WORKERS`` at once, after
    the defect probes; also returns the names of the defects found."""
    found = find_defects(workdir)
    with ThreadPoolExecutor(WORKERS) as pool:
        jobs = [pool.submit(run_shard, workdir, i, found, shards) for i in range(shards)]
        return [job.result() for job in jobs], found


# ---- what ran ---------------------------------------------------------------------------


def launches(runs: Sequence[Run]) -> list[dict[str, Any]]:
    return [launch for run in runs for launch in (run.manifest or {}).get("launches", [])]


def credited_builtins(runs: Sequence[Run]) -> set[str]:
    """The builtins of each program source whose every kernel ran (over all its builds:
    contexts, -D variants); a builtin only a kernel that never ran uses is not credited."""
    kernels: dict[str, set[str]] = {}
    launched: dict[str, set[str]] = {}
    builtins: dict[str, set[str]] = {}
    for run in runs:
        for program in (run.manifest or {}).get("programs", []):
            key = program["source"]
            kernels.setdefault(key, set()).update(program["kernels"])
            launched.setdefault(key, set()).update(program["launched"])
            builtins.setdefault(key, set()).update(program["builtins"])
    return {name for key in kernels if kernels[key] <= launched[key] for name in builtins[key]}


def build_errors(runs: Sequence[Run]) -> dict[str, str]:
    """Builtins checked to fail to build with their documented error: name -> error."""
    return {k: v for run in runs for k, v in (run.manifest or {}).get("build_errors", {}).items()}


def summary(runs: Sequence[Run]) -> dict[str, int]:
    """The counts docs/RELIABILITY.md records."""
    ran = launches(runs)
    in_files = [launch for launch in ran if launch["file"]]
    names, builtins = kernel_names(), builtin_names()
    cases = [c for run in runs for c in (run.manifest or {}).get("cases", {}).values()]
    checked = {c["name"] for c in cases if c["uninitialized"] is True}
    variants = {
        (x["file"], x["kernel"], json.dumps(x["defines"], sort_keys=True)) for x in in_files
    }
    return {
        "kernel files": len(set(names.values())),
        "kernels": len(names),
        "kernels run": len({launch["kernel"] for launch in in_files} & set(names)),
        "kernel variants run": len(variants),
        "builtins": len(builtins),
        "builtins run": len(credited_builtins(runs) & builtins),
        "builtins checked as build errors": len(set(build_errors(runs)) & builtins),
        "cases": len(cases),
        "cases with the uninitialized check": len(checked),
        "launches": len(ran),
        "launches with the uninitialized check": sum(x["case"] in checked for x in ran),
        "numpy checks": sum(c["checks"] for c in cases),
        "reports": sum(len(run.reports()) for run in runs),
    }


def main() -> int:
    reason = missing()
    if reason:
        print(reason)
        return 1
    with tempfile.TemporaryDirectory() as workdir:
        runs, defects = run_all(Path(workdir))
    for run in runs:
        for report in run.reports():
            print(f"REPORT ({' '.join(run.args[-2:])}):\n{report}\n")
        if run.returncode != 0:
            print(run.failure())
    print(f"uninitialized-plugin defects present: {', '.join(defects) or 'none'}")
    counts = summary(runs)
    for key, value in counts.items():
        print(f"{key}: {value}")
    clean = all(r.returncode == 0 for r in runs) and counts["reports"] == 0
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
