"""The harness of the Oclgrind cases (tests/oclgrind_cases.py runs them): the record of
every launch and program (:class:`Recorder`), what a case gets (:class:`Trial`), and the
registry the ``@case`` decorator fills (:data:`CASES`). The cases themselves are in
tests/oclgrind_cases_builtins.py, _images.py and _kernels.py.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyopencl as cl
import pyopencl._cl as _cl

TESTS = Path(__file__).resolve().parent
sys.path.insert(1, str(TESTS.parent / "samples"))  # reuse the samples' references

import _oclgrind  # noqa: E402

import qcom_ext  # noqa: E402
from qcom_ext._resources import kernels_dir  # noqa: E402
from qcom_ext.ext.program.build import PRELUDE  # noqa: E402

MF = cl.mem_flags
RGBA_FLOAT = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)


class Mismatch(AssertionError):
    pass


# ---- the record of what ran ---------------------------------------------------------


@dataclass
class Program:
    file: str | None
    source: str  # the file name, or "inline <hash of the source>"
    kernels: list[str]
    builtins: list[str]
    launched: set[str] = field(default_factory=set)
    keep: Any = None  # the program object: its handle is not reused while recorded


class Recorder:
    """Wraps pyopencl's enqueue (``Kernel.__call__`` and ``enqueue_nd_range_kernel``
    both end there) and notes each launch with its program's source file and -D flags."""

    def __init__(self, device: Any) -> None:
        self.case = ""
        self.launches: list[dict[str, Any]] = []
        self.programs: dict[int, Program] = {}
        self.build_errors: dict[str, str] = {}
        # -D flags every build gets (the probe's path flags, pyopencl's own): not a variant
        empty = qcom_ext.build_program(cl.Context([device]), "__kernel void k(void) {}")
        self.baseline = self.defines(empty.get_build_info(device, cl.program_build_info.OPTIONS))
        self.files = {PRELUDE + p.read_text(): p.name for p in sorted(kernels_dir().glob("*.cl"))}
        self.builtins = _oclgrind.builtin_names()

    def install(self) -> None:
        original = _cl.enqueue_nd_range_kernel

        def enqueue(queue, kernel, *args, **kwargs):
            event = original(queue, kernel, *args, **kwargs)
            self.note(queue.device, kernel)
            return event

        _cl.enqueue_nd_range_kernel = enqueue
        cl.enqueue_nd_range_kernel = enqueue

    @staticmethod
    def defines(options: str) -> set[tuple[str, str]]:
        return {
            (name, value or "1")
            for name, value in re.findall(r"-D\s*(\w+)(?:=(\S+))?", options or "")
        }

    def program(self, device: Any, kernel: Any) -> tuple[Program, dict[str, str]]:
        program = kernel.get_info(cl.kernel_info.PROGRAM)
        options = program.get_build_info(device, cl.program_build_info.OPTIONS) or ""
        found = self.programs.get(program.int_ptr)
        if found is None:
            source = program.get_info(cl.program_info.SOURCE)
            if not source:
                raise RuntimeError("a program without source (from a binary cache?)")
            names = program.get_info(cl.program_info.KERNEL_NAMES).split(";")
            file = self.files.get(source)
            key = file or "inline " + hashlib.sha1(source.encode()).hexdigest()[:12]
            found = Program(
                file,
                key,
                sorted(names),
                sorted(_oclgrind.used_builtins(source, self.builtins)),
                keep=program,
            )
            self.programs[program.int_ptr] = found
        defines = dict(self.defines(options) - self.baseline)
        return found, defines

    def note(self, device: Any, kernel: Any) -> None:
        program, defines = self.program(device, kernel)
        program.launched.add(kernel.function_name)
        self.launches.append(
            {
                "case": self.case,
                "kernel": kernel.function_name,
                "file": program.file,
                "defines": defines,
            }
        )

    def manifest(self, cases: dict[str, Any]) -> dict[str, Any]:
        programs = [
            {
                "file": p.file,
                "source": p.source,
                "kernels": p.kernels,
                "launched": sorted(p.launched),
                "builtins": p.builtins,
            }
            for p in self.programs.values()
        ]
        return {
            "cases": cases,
            "launches": self.launches,
            "programs": programs,
            "build_errors": self.build_errors,
        }


# ---- cases ------------------------------------------------------------------------------


@dataclass
class Trial:
    """What a case gets: its own context and queue, a seeded generator, the checks."""

    ctx: Any
    queue: Any
    device: Any
    recorder: Recorder
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    checks: int = 0

    def program(self, source: str, **defines: Any) -> Any:
        return qcom_ext.build_program(self.ctx, source, defines=defines)

    def file(self, name: str, **defines: Any) -> Any:
        return self.program((kernels_dir() / name).read_text(), **defines)

    def buffer(self, array: np.ndarray) -> Any:
        return cl.Buffer(
            self.ctx, MF.READ_ONLY | MF.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(array)
        )

    def output(self, nbytes: int) -> Any:
        return cl.Buffer(self.ctx, MF.WRITE_ONLY, nbytes)

    def get(self, buffer: Any, shape: Any, dtype: Any) -> np.ndarray:
        out = np.empty(shape, dtype)
        cl.enqueue_copy(self.queue, out, buffer)
        return out

    def image(self, pixels: np.ndarray, fmt: Any = RGBA_FLOAT) -> Any:
        return cl.create_image(
            self.ctx,
            MF.READ_ONLY | MF.COPY_HOST_PTR,
            fmt,
            shape=(pixels.shape[1], pixels.shape[0]),
            hostbuf=np.ascontiguousarray(pixels),
        )

    def equal(self, what: str, got: Any, want: Any) -> None:
        self.checks += 1
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape or not np.array_equal(
            got, want, equal_nan=got.dtype.kind == "f"
        ):
            raise Mismatch(f"{what}: got\n{got}\nexpected\n{want}")

    def close(
        self, what: str, got: Any, want: Any, atol: float = 1e-5, rtol: float = 1e-5
    ) -> None:
        self.checks += 1
        try:
            np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)
        except AssertionError as exc:
            raise Mismatch(f"{what}: {exc}") from None

    def build_error(self, builtin: str, source: str, expected: str) -> None:
        """``source`` calls ``builtin``, which must fail to build naming ``expected``."""
        self.checks += 1
        try:
            self.program(source)
        except qcom_ext.BuildError as exc:
            if expected not in str(exc):
                raise Mismatch(f"{builtin}: the build error does not name {expected}") from None
            self.recorder.build_errors[builtin] = expected
            return
        raise Mismatch(
            f"{builtin} built on {self.device.name}; expected an error naming {expected}"
        )


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Trial], None]
    # The defects of Oclgrind's uninitialized-value plugin (tests/_oclgrind.py DEFECTS)
    # the case's kernels hit: the check is off for it while this Oclgrind has one of them.
    defects: tuple[str, ...]
    check_api: bool


CASES: dict[str, Case] = {}


def case(*defects: str, check_api: bool = True) -> Callable:
    unknown = set(defects) - set(_oclgrind.DEFECTS)
    if unknown:
        raise ValueError(f"unknown defects {unknown}")

    def register(function: Callable[[Trial], None]) -> Callable[[Trial], None]:
        name = function.__name__.removeprefix("case_")
        CASES[name] = Case(name, function, defects, check_api)
        return function

    return register


class Kept:
    """Keeps every buffer and image a case makes (pyopencl's Buffer and Image replaced by
    subclasses that register themselves) until the case ends: Oclgrind reuses the ids of
    released memory objects and its uninitialized-value plugin keeps the old shadow, so
    a larger buffer in a reused slot would read as uninitialized past the old size."""

    objects: ClassVar[list[Any]] = []

    @classmethod
    def install(cls) -> None:
        for name in ("Buffer", "Image"):
            base = getattr(cl, name)

            def init(self, *args, _base=base, **kwargs):
                _base.__init__(self, *args, **kwargs)
                cls.objects.append(self)

            setattr(cl, name, type(name, (base,), {"__init__": init}))


# ---- helpers of several case modules -------------------------------------------------

FP16_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"


def compiler_fp16(t: Trial) -> bool:
    """Whether the compiler defines cl_khr_fp16, which selects the compat header's half
    builtins. (Oclgrind 21.10's does, though its device does not list the extension; it
    runs half loads, stores, moves and conversion builtins, not half arithmetic.)"""
    try:
        t.program("#ifndef cl_khr_fp16\n#error no cl_khr_fp16\n#endif\n__kernel void k(void) {}")
    except qcom_ext.BuildError:
        return False
    return True


def accelerated_close(t: Trial, what: str, got: Any, want: Any) -> None:
    t.close(what, got, want, atol=1e-4, rtol=1e-4)
