"""Bad-input fuzzing (reliability harness, issue 8), the part the tests/test_fuzz_*.py
modules share: hypothesis draws what a caller, a driver or the environment can hand
qcom_ext, valid and invalid input mixed.

Every target follows one rule. A valid input gives the reference result (numpy, the
OpenCL specification, an exact rational computation: ``fuzz_oracles``, never qcom_ext's
own code); an invalid one raises a typed error (:class:`qcom_ext.QcomExtError`;
``ConfigError`` for arguments and settings) whose message names the bad value. An untyped
exception, a crash or a result that differs from the reference fails the test.

``QCOM_EXT_FUZZ_EXAMPLES`` sets hypothesis's ``max_examples`` of every target (default
60: each module stays under 30 s on two CPUs); ``QCOM_EXT_FUZZ_REPORT=<path>`` writes
the examples each target ran, and how many were refused, as JSON (the counts that
docs/RELIABILITY.md quotes).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import default_building_context
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import QcomExtError

# ---- settings, counting, the typed-error rule --------------------------------------------


def _examples() -> int:
    raw = os.environ.get("QCOM_EXT_FUZZ_EXAMPLES", "")
    if not raw:
        return 60
    if not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
        raise pytest.UsageError(f"QCOM_EXT_FUZZ_EXAMPLES={raw!r}: expected a positive integer")
    return int(raw)


settings.register_profile(
    "qcom_ext-fuzz",
    max_examples=_examples(),
    deadline=None,  # pocl builds a kernel on first use: no per-example time limit
    database=None,  # nothing written next to the checkout
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("qcom_ext-fuzz")

#: Examples per target in this process, and how many were invalid input that was refused.
COUNTS: Counter[str] = Counter()
REFUSED: Counter[str] = Counter()
_current = {"target": "", "refused": False}


def counted(target: str) -> None:
    """Count one example of ``target`` (first thing in each test body)."""
    COUNTS[target] += 1
    _current.update(target=target, refused=False)


def refused() -> None:
    """Count the current example as invalid input that was refused."""
    if not _current["refused"]:
        REFUSED[_current["target"]] += 1
        _current["refused"] = True


def typed_error(call, *names: str, kinds=(QcomExtError,), main: bool = True) -> BaseException:
    """``call()`` must raise one of ``kinds`` whose message contains every one of ``names``
    (``main``: the example's own input was refused, not a side check)."""
    try:
        result = call()
    except kinds as exc:
        text = str(exc)
        missing = [n for n in names if n not in text]
        assert not missing, f"{type(exc).__name__} does not name {missing}: {text}"
        if main:
            refused()
        return exc
    except Exception as exc:  # the failure looked for
        pytest.fail(f"untyped {type(exc).__module__}.{type(exc).__name__}: {exc}")
    pytest.fail(f"invalid input accepted, returned {result!r}")


def either(valid, invalid):
    """Valid input three times as often as invalid input."""
    return st.sampled_from((valid, valid, valid, invalid)).flatmap(lambda chosen: chosen)


def one_spoilt(valid: dict, invalid: dict):
    """A dict of valid values, half the time with one of them replaced by an invalid one."""

    @st.composite
    def draw_fields(draw):
        values = {name: draw(strategy) for name, strategy in valid.items()}
        spoil = draw(st.sampled_from([None] * len(invalid) + sorted(invalid)))
        if spoil is not None:
            values[spoil] = draw(invalid[spoil])
        return values

    return draw_fields()


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    """Writes the counts of every fuzz module so far when a module ends (each module
    takes this fixture, so the last one writes the counts of the whole run)."""
    yield
    path = os.environ.get("QCOM_EXT_FUZZ_REPORT")
    if path:
        targets = {t: {"examples": n, "refused": REFUSED[t]} for t, n in sorted(COUNTS.items())}
        total, bad = sum(COUNTS.values()), sum(REFUSED.values())
        report = {"targets": targets, "examples": total, "refused": bad, "valid": total - bad}
        Path(path).write_text(json.dumps(report, indent=1) + "\n")


# The fixtures every fuzz module takes (pytest finds them among a module's names).


@pytest.fixture(scope="module")
def ctx():
    """A context on the default device, which must build kernels (pocl here)."""
    return default_building_context()


@pytest.fixture(scope="module")
def queue(ctx):
    import pyopencl as cl

    return cl.CommandQueue(ctx)


# ---- a recording with every kind of update, on a path ----------------------------------

RECORDED_SOURCE = """
#define N 16
__kernel void add(__global int *a, int b) { size_t i = get_global_id(0); if (i < N) a[i] += b; }
__kernel void put(__global float *f, float v) { size_t i = get_global_id(0); if (i < N) f[i] = v; }
"""
N = 16
#: (kernel, buffer, scalar, global size, local size, global offset) as recorded
RECORDED = (
    ("add", "A", np.int32(1), (8,), (4,), None),
    ("put", "F", np.float32(2.5), (4,), None, None),
    ("add", "B", np.int32(10), (16,), None, (0,)),
)


class Recorded:
    """The recording above, on the device's own path or the replay path."""

    def __init__(self, ctx, queue, path: str):
        import pyopencl as cl

        program = cl.Program(ctx, RECORDED_SOURCE).build()
        kernels = {name: cl.Kernel(program, name) for name in ("add", "put")}
        self.buffers = {name: cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * N) for name in "ABF"}
        self.queue = queue
        with pytest.MonkeyPatch.context() as patch:
            if path == "replay":
                patch.setenv("QCOM_EXT_DISABLE", "cl_qcom_recordable_queues")
            self.rec = qcom_ext.Recording(queue)
            with self.rec:
                for name, buf, scalar, gs, ls, off in RECORDED:
                    self.rec.enqueue(
                        kernels[name], gs, ls, self.buffers[buf], scalar, global_offset=off
                    )
        size = cl.kernel_work_group_info.WORK_GROUP_SIZE
        self.max_wg = min(k.get_work_group_info(size, queue.device) for k in kernels.values())

    def run(self, **updates) -> dict[str, bytes]:
        import pyopencl as cl

        for buf in self.buffers.values():
            cl.enqueue_copy(self.queue, buf, np.zeros(N, np.int32))
        self.rec.replay(self.queue, **updates).wait()
        out = {name: np.empty(N * 4, np.uint8) for name in self.buffers}
        for name, buf in self.buffers.items():
            cl.enqueue_copy(self.queue, out[name], buf)
        return {name: data.tobytes() for name, data in out.items()}
