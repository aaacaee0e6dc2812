"""qcom-ext selftest: every extension's computation on each path a device can take.

On the real devices here (pocl) the fallbacks and the Khronos tiers they have run for
real. Native host-side paths run through the fake Adreno entry points (a real device
claims the extensions, tests/fakes/claiming.py; cffi callbacks stand in for the driver's
``*QCOM`` entry points and hand back real objects). Native kernel builtins cannot run
here: only an Adreno compiler knows them (docs/selftest.md).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import struct
import sys
import threading
import time

import numpy as np
import pytest
from fakes.claiming import claiming, real
from fakes.driver import addr, ml_versions_query, u32, u64
from fakes.recording import FakeRecordingDriver

from qcom_ext import REGISTRY, ConfigError, probe
from qcom_ext.binding.lib import C, ffi
from qcom_ext.device.probe import disabling
from qcom_ext.tools import cli
from qcom_ext.tools.selftest import (
    SelftestReport,
    checks_builtins,
    coverage,
    run_selftest,
    selected,
)
from qcom_ext.tools.selftest import _memory as memory_module
from qcom_ext.tools.selftest import _runner as runner_module
from qcom_ext.tools.selftest._paths import plan_paths
from qcom_ext.tools.selftest._registry import USABLE, Outcome, case, cases_for, unchecked
from qcom_ext.tools.selftest._report import ExtensionReport, PathRun, difference
from qcom_ext.tools.selftest._runner import _compare

_REPORTS: dict[int, tuple[SelftestReport, float]] = {}


def full_report(caps) -> tuple[SelftestReport, float]:
    """The whole selftest of one device (run once per session) and its seconds."""
    if caps.device_id not in _REPORTS:
        start = time.perf_counter()
        report = run_selftest(caps.device_id, seed=3)
        _REPORTS[caps.device_id] = report, time.perf_counter() - start
    return _REPORTS[caps.device_id]


def device_spec(caps) -> str:
    import pyopencl as cl

    return next(
        f"{p}:{d}"
        for p, platform in enumerate(cl.get_platforms())
        for d, device in enumerate(platform.get_devices())
        if device.int_ptr == caps.device_id
    )


def failures(report: SelftestReport) -> list:
    runs = [
        (e.extension, r.path, r.error, [c for c in r.cases if not c.ok])
        for e in report.extensions
        for r in e.runs
        if not r.ok
    ]
    return runs + [(e.extension, c) for e in report.extensions for c in e.comparisons if not c.ok]


# ---- the whole selftest on the devices here ------------------------------------------


def test_selftest_passes_for_every_extension(device_caps, kernel_context, monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    report, seconds = full_report(device_caps)
    assert report.ok, failures(report)
    assert [e.extension for e in report.extensions] == list(REGISTRY)
    assert report.device.label == device_caps.label
    for item in report.extensions:
        ext = REGISTRY[item.extension]
        assert item.path == device_caps.path(item.extension)
        if item.unchecked:
            assert not item.runs and item.outcome == "unchecked"
            continue
        paths = [run.path for run in item.runs]
        assert paths[0] == item.path, item.extension  # the device's own path first
        if ext.fallback is not None and (not ext.needs_images or device_caps.image_support):
            assert paths[-1] == "fallback", item.extension  # and the portable code last
        else:
            assert paths == ["unavailable"], item.extension
        assert item.outcome in ("pass", "skipped", "unavailable"), item.extension
        ran = {p for p, _ in item.skipped} | set(paths)
        assert {"native", "fallback"} <= ran | {"unavailable"}, item.extension
        assert all(reason for _, reason in item.skipped), item.extension
        comparable = [c for c in cases_for(item.extension) if c.compare and c.applies(paths[0])]
        if len(paths) > 1:  # every comparable case compared with the first path
            assert len(item.comparisons) == len(comparable) * (len(paths) - 1)
    # ~3 s with pocl's kernel cache warm (docs/selftest.md); not asserted: a cold
    # kernel cache on a loaded machine takes many times that
    print(f"{device_caps.label}: whole selftest {seconds:.1f} s")


def test_khronos_tier_and_fallback_are_both_run_and_compared(device_caps, kernel_context):
    report, _ = full_report(device_caps)
    tiered = [e for e in report.extensions if e.path.startswith("khr:")]
    if not tiered:
        pytest.skip(f"{device_caps.label} has no Khronos tier for any extension")
    for item in tiered:
        assert [r.path for r in item.runs] == [item.path, "fallback"]
        assert item.comparisons and all(c.ok for c in item.comparisons)
        assert all(c.paths == (item.path, "fallback") for c in item.comparisons)


def test_unavailable_extensions_are_listed_with_the_reason(device_caps, kernel_context):
    report, _ = full_report(device_caps)
    protected = report.extension("cl_qcom_protected_context")
    if device_caps.path("cl_qcom_protected_context") == "native":
        pytest.skip(f"{device_caps.label} has protected contexts")
    assert protected.path == "unavailable" and "never fall back" in protected.reason
    (run,) = protected.runs  # the refusal itself is checked
    assert run.path == "unavailable" and run.ok and run.cases[0].name.startswith("never")
    assert (
        "fallback",
        REGISTRY["cl_qcom_protected_context"].no_fallback_reason,
    ) in protected.skipped


def test_every_extension_has_a_check_or_a_reason():
    found = coverage()
    assert set(found) == set(REGISTRY)
    for name, state in found.items():
        assert state, f"{name}: neither a check nor a reason"
        if state == "checked":
            assert cases_for(name), name
        else:
            assert len(state) > 30 and not cases_for(name), name


def test_the_registry_refuses_what_would_hide_an_extension():
    with pytest.raises(ValueError, match="REGISTRY"):
        case("cl_qcom_nonexistent", "x")
    with pytest.raises(ValueError, match="registered cases"):
        unchecked("cl_qcom_bitreverse", "a reason")
    with pytest.raises(ValueError, match="two cases"):
        case("cl_qcom_bitreverse", cases_for("cl_qcom_bitreverse")[0].name)(lambda env: None)
    with pytest.raises(ValueError, match="tiers"):
        case("cl_qcom_bitreverse", "y", tiers=("gpu",))


# ---- the command line and its JSON -------------------------------------------------


def run_cli(monkeypatch, capsys, caps, *args: str) -> tuple[int, str]:
    monkeypatch.setenv("PYOPENCL_CTX", device_spec(caps))  # restored after the test
    status = cli.main(["selftest", "--device", device_spec(caps), *args])
    return status, capsys.readouterr().out


def test_json_report_fields(device_caps, kernel_context, monkeypatch, capsys):
    status, out = run_cli(
        monkeypatch,
        capsys,
        device_caps,
        "--json",
        "--seed",
        "2",
        "--only",
        "bitreverse,recordable_queues",
        "--only",
        "cl_qcom_protected_context",
    )
    data = json.loads(out)
    assert status == 0 and data["ok"] is True
    assert {
        "schema",
        "qcom_ext",
        "ok",
        "device",
        "seed",
        "disabled",
        "only",
        "problems",
        "counts",
        "extensions",
    } <= set(data)
    assert data["device"] == {
        "label": device_caps.label,
        "platform": device_caps.platform_name,
        "platform_version": device_caps.platform_version,
        "device": device_caps.device_name.strip(),
        "device_version": device_caps.device_version,
        "driver": device_caps.driver_version,
        "opencl_c_version": device_caps.opencl_c_version,
        "adreno_model": device_caps.adreno_model,
        "adreno_compiler": device_caps.adreno_compiler,
        "image_support": device_caps.image_support,
    }
    assert data["seed"] == 2
    names = ["cl_qcom_recordable_queues", "cl_qcom_protected_context", "cl_qcom_bitreverse"]
    assert data["only"] == names and [e["extension"] for e in data["extensions"]] == names
    for item in data["extensions"]:
        assert {
            "extension",
            "path",
            "reason",
            "outcome",
            "ok",
            "paths_run",
            "max_error",
            "time_ms",
            "runs",
            "comparisons",
            "skipped_paths",
            "unchecked",
        } <= set(item)
        assert item["path"] == device_caps.path(item["extension"])
        for skipped in item["skipped_paths"]:
            assert set(skipped) == {"path", "reason"} and skipped["reason"]
        for run in item["runs"]:
            assert {"path", "ok", "max_error", "time_ms", "cases"} <= set(run)
            for result in run["cases"]:
                assert {
                    "name",
                    "ok",
                    "max_error",
                    "tolerance",
                    "time_ms",
                    "error",
                    "mismatch",
                    "skipped",
                    "notes",
                } <= set(result)
                assert result["ok"] and result["time_ms"] >= 0
    assert sum(data["counts"].values()) == 3


def test_table_output(device_caps, kernel_context, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    status, out = run_cli(monkeypatch, capsys, device_caps, "--only", "bitreverse")
    assert status == 0
    assert "cl_qcom_bitreverse" in out and device_caps.driver_version in out
    assert "OK (1 pass)" in out and "cl_qcom_perf_hint" not in out


def test_the_table_fits_80_columns_without_splitting_words(device_caps, kernel_context):
    """The whole selftest's table at 80 columns: no line wider, every extension name,
    path and reason whole (a row too wide puts its extension above it, a long note
    under it)."""
    import io

    from rich.console import Console

    from qcom_ext.device.quirks import QUIRKS
    from qcom_ext.tools.selftest._render import render

    report, _ = full_report(device_caps)
    report = dataclasses.replace(report, quirks=QUIRKS)  # every quirk's line, as on Adreno
    out = io.StringIO()
    render(report, Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert not [line for line in text.splitlines() if len(line.rstrip()) > 80]
    shown = {word.strip(",;:()") for line in text.splitlines() for word in line.split()}
    words = []
    for item in report.extensions:
        words += [item.extension, *(run.path for run in item.runs)]
        words += [w for path, why in item.skipped for w in (path, *why.split())]
        words += [w for run in item.runs for w in (run.skipped or "").split()]
    words += [w for quirk in QUIRKS for w in (quirk.id, quirk.source)]
    split = sorted({w for w in words if w.strip(",;:()") not in shown})
    assert not split, f"split or missing: {split}\n{text}"
    assert f"  {report.extensions[0].extension}" in text.splitlines()  # above its rows


def test_progress_goes_to_a_terminals_stderr_only(
    device_caps, kernel_context, monkeypatch, capsys
):
    """Each extension's name on stderr while it runs, where stderr is a terminal
    (TTY_COMPATIBLE=1 makes rich take it for one); none with --json, none into a pipe."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("PYOPENCL_CTX", device_spec(device_caps))

    def selftest(*args: str) -> tuple[int, str, str]:
        argv = ["selftest", "--device", device_spec(device_caps), "--only", "bitreverse,perf_hint"]
        status = cli.main([*argv, *args])
        out, err = capsys.readouterr()
        return status, out, err

    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    status, _, err = selftest()
    assert status == 0 and "bitreverse" in err and "perf_hint" in err and "1/2" in err, err
    status, out, err = selftest("--json")
    assert status == 0 and json.loads(out)["ok"] and err == ""
    monkeypatch.setenv("TTY_COMPATIBLE", "0")  # a pipe or a file
    status, out, err = selftest()
    assert status == 0 and "OK (2 pass)" in out and err == ""


def test_a_wrong_reference_fails_the_check_and_the_exit_status(
    device_caps, kernel_context, monkeypatch, capsys
):
    right = checks_builtins.bit_reversed
    monkeypatch.setattr(checks_builtins, "bit_reversed", lambda v: right(v) ^ np.uint32(4))
    status, out = run_cli(monkeypatch, capsys, device_caps, "--json", "--only", "bitreverse")
    item = json.loads(out)["extensions"][0]
    assert status == 1 and item["ok"] is False and item["outcome"] == "fail"
    result = item["runs"][0]["cases"][0]
    assert result["ok"] is False and result["max_error"] == 4.0
    assert result["mismatch"].startswith("element ")
    monkeypatch.setenv("COLUMNS", "200")
    status, out = run_cli(monkeypatch, capsys, device_caps, "--only", "bitreverse")
    assert status == 1 and "FAILED" in out and "max error 4 > tolerance 0" in out


def test_an_exception_in_a_check_is_a_failure_not_a_crash(
    device_caps, kernel_context, monkeypatch
):
    def broken(matrix):
        raise RuntimeError("packing broke")

    monkeypatch.setattr(checks_builtins, "_packed_rows", broken)
    report = run_selftest(device_caps.device_id, only=["dot_product8", "bitreverse"])
    dot8 = report.extension("cl_qcom_dot_product8")
    assert not report.ok and dot8.outcome == "fail"
    assert dot8.runs[0].cases[0].error == "RuntimeError: packing broke"
    assert report.extension("cl_qcom_bitreverse").ok  # the others still ran


def test_only_rejects_unknown_names(capsys):
    assert cli.main(["selftest", "--only", "bitreverse,warp_drive"]) == 1
    err = capsys.readouterr().err
    assert "'warp_drive' is not a cl_qcom_* extension" in err and "cl_qcom_bitreverse" in err
    assert selected(["cl_qcom_bitreverse", " perf_hint "]) == [
        "cl_qcom_perf_hint",
        "cl_qcom_bitreverse",
    ]
    assert selected(None) == list(REGISTRY)
    with pytest.raises(ConfigError, match="no extension"):
        selected([","])


def test_selftest_rejects_a_bad_seed(capsys):
    with pytest.raises(SystemExit):
        cli.main(["selftest", "--seed", "x"])
    assert "invalid int value" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="seed"):
        run_selftest(seed=1.5)


# ---- forcing paths -----------------------------------------------------------------


def test_forcing_adds_to_the_users_value_and_restores_it(device_caps, monkeypatch):
    device = device_caps.device_id
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_qcom_bitreverse")
    with disabling({"cl_qcom_perf_hint"}):
        assert probe(device).disabled == {"cl_qcom_bitreverse", "cl_qcom_perf_hint"}
        assert os.environ["QCOM_EXT_DISABLE"] == "cl_qcom_bitreverse"  # never rewritten
    assert probe(device).disabled == {"cl_qcom_bitreverse"}
    monkeypatch.delenv("QCOM_EXT_DISABLE")
    with pytest.raises(RuntimeError), disabling({"cl_khr_command_buffer"}):
        assert probe(device).disabled == {"cl_khr_command_buffer"}
        raise RuntimeError
    assert probe(device).disabled == frozenset() and "QCOM_EXT_DISABLE" not in os.environ
    assert probe(device, disabled=["cl_qcom_perf_hint"]).disabled == {"cl_qcom_perf_hint"}
    with pytest.raises(ConfigError, match="cl_qcom_typo"), disabling({"cl_qcom_typo"}):
        pass


def test_forcing_is_seen_by_the_forcing_thread_only(device_caps):
    """Another thread keeps its paths while the selftest forces one (the environment
    was process-wide: forcing through it changed every thread's paths)."""
    name, device = "cl_qcom_bitreverse", device_caps.device_id
    seen = {}
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait(30)
        seen["other"] = probe(device).path(name)
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with disabling({name}):
        seen["forcing"] = probe(device).path(name)
        inside.set()
        done.wait(30)
    thread.join(30)
    assert seen == {"forcing": "fallback", "other": device_caps.path(name)}


def test_the_selftest_probes_once_per_path_and_passes_the_report_down(
    device_caps, kernel_context, monkeypatch
):
    """One probe() for the device and one per path run (with that path's names
    disabled); planning the paths and every case get the report passed down."""
    calls = []

    def counting(device=None, **kwargs):
        calls.append(kwargs.get("disabled", ()))
        return probe(device, **kwargs)

    monkeypatch.setattr(runner_module, "probe", counting)
    report = run_selftest(device_caps.device_id, only=["bitreverse", "recordable_queues"])
    assert report.ok, failures(report)
    runs = [run for item in report.extensions for run in item.runs]
    assert len(runs) >= 2 and len(calls) == 1 + len(runs)
    assert calls[0] == () and all(isinstance(extra, frozenset) for extra in calls[1:])


def test_the_users_disabled_names_stay_off(device_caps, kernel_context, monkeypatch):
    if device_caps.path("cl_qcom_recordable_queues") != "khr:cl_khr_command_buffer":
        pytest.skip(f"{device_caps.label} has no cl_khr_command_buffer tier")
    monkeypatch.setenv("QCOM_EXT_DISABLE", "cl_khr_command_buffer")
    report = run_selftest(device_caps.device_id, only=["recordable_queues"])
    item = report.extension("cl_qcom_recordable_queues")
    assert report.disabled == ("cl_khr_command_buffer",)
    assert [r.path for r in item.runs] == ["fallback"] and item.ok
    assert ("khr:cl_khr_command_buffer", "disabled by QCOM_EXT_DISABLE") in item.skipped
    assert os.environ["QCOM_EXT_DISABLE"] == "cl_khr_command_buffer"


def test_comparison_flags_paths_that_differ():
    want = np.zeros(4)
    first, second = PathRun("native"), PathRun("fallback")
    first.values = {"same": (np.zeros(4), 1e-5), "shifted": (np.ones(4), 1e-5)}
    second.values = {"same": (want, 1e-5), "shifted": (want, 0.0)}
    cases = [c for c in (_Case("same"), _Case("shifted"), _Case("alone"))]
    found = _compare([first, second], cases)
    assert [(c.case, c.paths, c.max_difference, c.ok) for c in found] == [
        ("same", ("native", "fallback"), 0.0, True),
        ("shifted", ("native", "fallback"), 1.0, False),
    ]
    report = ExtensionReport("cl_qcom_bitreverse", "native", "", [first, second], found)
    assert not report.ok and report.outcome == "fail"
    assert report.to_dict()["comparisons"][1]["mismatch"] == "element 0: 0 against 1"


class _Case:
    def __init__(self, name: str) -> None:
        self.name, self.compare = name, True


def test_difference_of_arrays_and_mappings():
    assert difference([1, 2], [1, 2]) == (0.0, "")
    assert difference(np.zeros((2, 2)), np.eye(2))[1] == "element (0, 0): 0 against 1"
    assert difference([1.0], [1.0, 2.0])[0] == math.inf
    assert difference([np.nan], [np.nan]) == (0.0, "")
    assert difference([np.nan], [0.0])[0] == math.inf
    assert difference({"a": True, "b": "x"}, {"a": True, "b": "x"}) == (0.0, "")
    assert difference({"a": True}, {"a": False}) == (1.0, "a: True against False")
    assert difference({"a": 1}, {"b": 1})[0] == math.inf
    assert difference({"path": "native"}, {"path": "fallback"})[0] == math.inf
    assert json.dumps(PathRun("x").to_dict())  # no infinities in JSON


# ---- native host paths through fake Adreno entry points --------------------------------

pytest_lp64 = pytest.mark.skipif(
    ffi.sizeof("void *") != 8 or sys.byteorder != "little",
    reason="the fakes decode LP64 little-endian layouts",
)
HOST_SIDE = [
    "cl_qcom_perf_hint",
    "cl_qcom_priority_hint",
    "cl_qcom_recordable_queues",
    "cl_qcom_onchip_global_memory",
    "cl_qcom_extended_query_image_info",
    "cl_qcom_ml_ops",
    "cl_qcom_ext_host_ptr",
    "cl_qcom_dmabuf_host_ptr",
    "cl_qcom_protected_context",
]
INFO = {
    C.CL_DEVICE_RECORDABLE_QUEUE_MAX_SIZE: u32(64),
    C.CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM: u64(1 << 20),
    C.CL_DEVICE_PAGE_SIZE_QCOM: u64(4096),
    C.CL_DEVICE_EXT_MEM_PADDING_IN_BYTES_QCOM: u64(0),
}
QCOM_CONTEXT_KEYS = {
    C.CL_CONTEXT_PERF_HINT_QCOM,
    C.CL_CONTEXT_PRIORITY_HINT_QCOM,
    C.CL_CONTEXT_PROTECTED_QCOM,
}


class FakeAdrenoHost:
    """The host-side ``*QCOM`` entry points: each records what reached it and makes the
    real object without the Qualcomm properties, so the computation runs for real."""

    def __init__(self) -> None:
        self.calls: dict[str, list] = {}
        self._create_context = real("clCreateContext")
        self._create_buffer = real("clCreateBuffer")

    def log(self, name: str, *what) -> None:
        self.calls.setdefault(name, []).append(what)

    def create_context(self, props, count, devices, notify, user_data, errcode):
        words = []
        while props != ffi.NULL and props[len(words)] != 0:
            words += [int(props[len(words)]), int(props[len(words) + 1])]
        pairs = list(zip(words[::2], words[1::2], strict=True))
        self.log("clCreateContext", pairs)
        kept = [w for key, value in pairs if key not in QCOM_CONTEXT_KEYS for w in (key, value)]
        plist = ffi.new("cl_context_properties[]", [*kept, 0]) if kept else ffi.NULL
        return self._create_context(plist, count, devices, notify, user_data, errcode)

    def set_perf_hint(self, context, hint):
        self.log("clSetPerfHintQCOM", addr(context), int(hint))
        return 0

    def create_buffer_with_properties(self, context, props, flags, size, host_ptr, errcode):
        self.log("clCreateBufferWithProperties", int(props[0]), int(size))
        return self._create_buffer(context, flags, size, host_ptr, errcode)

    def query_image_info(self, device, flags, fmt, desc, param, size, value, size_ret):
        order, data_type = struct.unpack("<II", ffi.buffer(ffi.cast("char *", fmt), 8)[:])
        assert (order, data_type) == (C.CL_RGBA, C.CL_UNORM_INT8)
        width, height = struct.unpack("<QQ", ffi.buffer(ffi.cast("char *", desc), 24)[8:24])
        self.log("clQueryImageInfoQCOM", int(param), width, height)
        answers = {
            C.CL_IMAGE_ROW_PITCH: width * 4,
            C.CL_IMAGE_SIZE_QCOM: width * 4 * height,
            C.CL_IMAGE_ELEMENT_SIZE: 4,
            C.CL_IMAGE_ROW_ALIGNMENT_QCOM: 4,
            C.CL_IMAGE_BASE_ADDRESS_ALIGNMENT_QCOM: 4096,
        }
        ffi.memmove(value, struct.pack("<Q", answers[int(param)]), 8)
        size_ret[0] = 8
        return 0

    def substitutes(self) -> dict:
        return {
            "clCreateContext": self.create_context,
            "clSetPerfHintQCOM": self.set_perf_hint,
            "clCreateBufferWithProperties": self.create_buffer_with_properties,
            "clQueryImageInfoQCOM": self.query_image_info,
            "clQueryMLInterfaceVersionsQCOM": ml_versions_query(),
        }


@pytest_lp64
def test_native_host_paths_through_fake_adreno_entry_points(
    device_caps, kernel_context, monkeypatch
):
    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no images")
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    monkeypatch.setattr(memory_module, "DMA_HEAPS", ("/nonexistent/dma_heap/system",))
    fake, recording = FakeAdrenoHost(), FakeRecordingDriver()
    with (
        claiming(device_caps.device_id, extensions=HOST_SIDE, info=INFO, **fake.substitutes()),
        recording,
    ):
        report = run_selftest(device_caps.device_id, only=HOST_SIDE)
    assert report.ok, failures(report)
    for name in HOST_SIDE:
        item = report.extension(name)
        assert item.path == "native", name
        last = "unavailable" if name == "cl_qcom_protected_context" else "fallback"
        assert [r.path for r in item.runs] == ["native", last], name
        native = item.runs[0]
        assert not any(c.ran_as for c in native.cases), (name, native.cases)  # stayed native
        for path, reason in item.skipped:
            if path.startswith("khr:") and reason.startswith("not reachable"):
                assert f"QCOM_EXT_DISABLE={name}" in reason
    # the driver saw the native calls: hints, on-chip buffers, layouts, recordings
    hints = [dict(pairs) for (pairs,) in fake.calls["clCreateContext"]]
    assert {C.CL_CONTEXT_PERF_HINT_QCOM: C.CL_PERF_HINT_LOW_QCOM}.items() <= hints[0].items()
    assert any(
        h.get(C.CL_CONTEXT_PRIORITY_HINT_QCOM) == C.CL_PRIORITY_HINT_LOW_QCOM for h in hints
    )
    # a protected context natively; forced off, it is refused: never a fallback
    assert sum(h.get(C.CL_CONTEXT_PROTECTED_QCOM) == 1 for h in hints) == 1
    protected = report.extension("cl_qcom_protected_context")
    assert [c.name[:5] for r in protected.runs for c in r.cases] == ["prote", "never"]
    assert fake.calls["clSetPerfHintQCOM"][0][1] == C.CL_PERF_HINT_HIGH_QCOM
    assert fake.calls["clCreateBufferWithProperties"][0] == (C.CL_MEM_ONCHIP_GLOBAL_QCOM, 8192)
    assert (C.CL_IMAGE_ROW_PITCH, 100, 30) in fake.calls["clQueryImageInfoQCOM"]
    # 3 replays of the recording check, 3 of the on-chip pipeline on each on-chip path
    assert len(recording.replays) == 3 + 3 + 3
    clml = report.extension("cl_qcom_ml_ops").runs[0].cases
    assert [c.name for c in clml][1].startswith("CLML") and "2.0, 3.0" in clml[1].notes[0]
    # no dma-buf heap here: the native import is skipped with the reason, the fallback ran
    dmabuf = report.extension("cl_qcom_dmabuf_host_ptr")
    assert dmabuf.runs[0].skipped.startswith("needs a dma-buf") and dmabuf.runs[1].ok
    assert dmabuf.outcome == "pass"


@pytest_lp64
def test_plan_of_a_native_extension_with_a_khronos_tier(device_caps, kernel_context, monkeypatch):
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    if not device_caps.khronos_usable("cl_khr_command_buffer"):
        pytest.skip(f"{device_caps.label} has no cl_khr_command_buffer")
    with claiming(device_caps.device_id, extensions=["cl_qcom_recordable_queues"], info=INFO):
        plan = plan_paths(probe(device_caps.device_id), "cl_qcom_recordable_queues")
    assert plan.runs == (
        ("native", frozenset()),
        ("fallback", frozenset({"cl_qcom_recordable_queues"})),
    )
    ((path, reason),) = plan.skipped
    assert path == "khr:cl_khr_command_buffer" and reason.startswith("not reachable")


def test_outcome_defaults():
    outcome = Outcome([1], [1])
    assert (outcome.tolerance, outcome.ran_as, outcome.note) == (0.0, None, "")
    assert USABLE == ("native", "khr", "fallback")


@pytest.mark.slow
def test_verify_runs_the_trials_first_and_the_report_carries_the_verdicts(
    device_caps, kernel_context, tmp_path, monkeypatch
):
    """A Khronos tier whose trial crashes in the child is not used: the selftest checks
    the fallback instead, and the report (and its JSON) names the verdict."""
    import _verify_trials

    from qcom_ext.device.probe import clear_cache

    extension, tier = _verify_trials.only_an_aborting_khr_trial(device_caps, monkeypatch, tmp_path)
    try:
        report = run_selftest(device_caps.device_id, only=[extension], verify=True)
    finally:
        clear_cache()
    assert report.verdicts[tier]["outcome"] == "crashed"
    assert report.verdicts[tier]["detail"] == "SIGABRT"
    checked = report.extension(extension)
    assert checked.path == "fallback" and [r.path for r in checked.runs] == ["fallback"]
    assert report.ok and report.to_dict()["verdicts"] == report.verdicts
