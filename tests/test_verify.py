"""qcom_ext.verify: risky native calls tried in a child process, verdicts cached and applied.

The trials are the selftest cases marked ``trial=...`` (one registry of checks). Without
an Adreno device, the trials of the Khronos tiers a local device advertises run for real
(pocl 3.1: cl_khr_command_buffer), a claimed native kernel extension really fails to
build in the child, and trials that abort, segfault, hang or return a CL error are
registered as trial cases from tests/_verify_trials.py (the child imports them by name)
against reports built from the real Adreno strings of tests/data or served by the fake
driver.
"""

from __future__ import annotations

import json

import _verify_trials
import pytest
from conftest import adreno_strings
from fakes.claiming import claiming
from fakes.driver import DEVICE, adreno740_device_info, fake_driver, platform_info, u64

import qcom_ext
from qcom_ext import _trials
from qcom_ext.binding.lib import C, ffi
from qcom_ext.device.caps import DeviceCaps, Limits
from qcom_ext.device.probe import clear_cache, probe
from qcom_ext.errors import CLError, ConfigError
from qcom_ext.tools.selftest import _registry
from qcom_ext.tools.selftest._env import Env
from qcom_ext.tools.verify import child as trial_child
from qcom_ext.tools.verify import runner as verify
from qcom_ext.tools.verify.runner import Verdict

DRIVER = "OpenCL 3.0 QUALCOMM build: commit #16c1863 Compiler E031.42.02.00"
RECORDING = "cl_qcom_recordable_queues"


def adreno740(extra: str = "", driver: str = DRIVER) -> DeviceCaps:
    return DeviceCaps.from_info(
        extensions=adreno_strings()["adreno740-cl3.0"] + extra,
        device_version="OpenCL 3.0 Adreno(TM) 740",
        driver_version=driver,
        device_name="QUALCOMM Adreno(TM)",
        platform_name="QUALCOMM Snapdragon(TM)",
        vendor_id=0x5143,
        disabled=(),
    )


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache root for this test."""
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    monkeypatch.delenv("QCOM_EXT_DISABLE", raising=False)
    return tmp_path


@pytest.fixture
def trials(monkeypatch):
    """An empty registry of checks: only the trial cases the test registers run."""
    monkeypatch.setattr(_registry, "_CASES", {})
    monkeypatch.setattr(_registry, "_UNCHECKED", {})

    def register(
        extension: str, function: str, *, what: str = "", needs_device: bool = False
    ) -> None:
        _registry.case(
            extension,
            f"stand-in {function}",
            trial=what or f"the trial {function}",
            needs_device=needs_device,
        )(getattr(_verify_trials, function))

    return register


@pytest.fixture
def no_child(monkeypatch):
    """Fails the test if a child process would start."""

    def refuse(*args, **kwargs):
        raise AssertionError("a child process was started")

    monkeypatch.setattr(verify, "_child", refuse)


# ---- verdicts and the path rule (no child process) ---------------------------------------


def verdict(extension: str, outcome: str, detail: str = "") -> Verdict:
    return Verdict(extension, "the trial call", outcome, detail, "2026-01-02")


def test_a_broken_native_extension_takes_its_khronos_tier_then_its_fallback():
    caps = adreno740(" cl_khr_command_buffer")
    crashed = caps.with_verdicts({RECORDING: verdict(RECORDING, "crashed", "SIGSEGV")})
    status = crashed.status(RECORDING)
    assert status.path == "khr:cl_khr_command_buffer"
    assert status.reason.startswith(
        "cl_qcom_recordable_queues advertised, but the trial call crashed (SIGSEGV) in a child "
        "process (verified 2026-01-02); Khronos equivalent cl_khr_command_buffer"
    )
    both = crashed.with_verdicts(
        {"cl_khr_command_buffer": verdict("cl_khr_command_buffer", "failed", "CL_INVALID_VALUE")}
    )
    assert both.path(RECORDING) == "fallback"
    assert (
        "cl_khr_command_buffer advertised, but the trial call failed"
        in both.status(RECORDING).reason
    )
    assert not both.khronos_usable("cl_khr_command_buffer")
    assert dict(both.broken).keys() == {RECORDING, "cl_khr_command_buffer"}
    assert both.limits.broken == both.broken  # the read-only view where it used to live
    assert json.loads(both.to_json())["verdicts"][RECORDING]["outcome"] == "crashed"


def test_passing_verdicts_change_nothing_and_a_new_verdict_replaces_the_old():
    caps = adreno740()
    passed = caps.with_verdicts({RECORDING: verdict(RECORDING, "ok")})
    assert passed.statuses == caps.statuses and passed.broken == ()
    failed = passed.with_verdicts({RECORDING: verdict(RECORDING, "failed", "x")})
    assert failed.path(RECORDING) == "fallback"
    again = failed.with_verdicts({RECORDING: verdict(RECORDING, "ok")})
    assert again.path(RECORDING) == "native" and again.broken == ()


def test_a_crashed_protected_context_never_falls_back():
    name = "cl_qcom_protected_context"
    caps = adreno740().with_verdicts({name: verdict(name, "crashed", "SIGABRT")})
    status = caps.status(name)
    assert status.path == "unavailable"
    assert "crashed (SIGABRT)" in status.reason and "never fall back" in status.reason


def test_kernel_flags_follow_the_downgrade():
    name = "cl_qcom_bitreverse"
    caps = adreno740()
    assert f"-DQCOM_EXT_NATIVE_{name}" in caps.compiler_options()
    broken = caps.with_verdicts({name: verdict(name, "timed_out", "60 s")})
    assert f"-DQCOM_EXT_NATIVE_{name}" not in broken.compiler_options()
    assert "did not finish within 60 s" in broken.status(name).reason


def test_trials_needed_are_the_paths_in_use(monkeypatch):
    needed = {
        t.extension: (subject, path)
        for t, subject, path in verify.trials_needed(adreno740(" cl_khr_command_buffer"))
    }
    assert needed[RECORDING] == (RECORDING, "native")
    assert "cl_khr_command_buffer" not in needed  # native is used, not the tier
    assert "cl_khr_integer_dot_product" not in needed
    assert {"cl_qcom_bitreverse", "cl_qcom_protected_context"} <= needed.keys()
    monkeypatch.setenv("QCOM_EXT_DISABLE", RECORDING)
    disabled = DeviceCaps.from_info(extensions=adreno_strings()["adreno740-cl3.0"])
    assert RECORDING not in {t.extension for t, _, _ in verify.trials_needed(disabled)}
    tier = DeviceCaps.from_info(extensions="cl_khr_command_buffer", disabled=())
    assert [(t.extension, s, p) for t, s, p in verify.trials_needed(tier)] == [
        ("cl_khr_command_buffer", RECORDING, "khr:cl_khr_command_buffer")
    ]


def test_trial_functions_must_be_importable_by_name(trials):
    with pytest.raises(ConfigError, match="importable"):
        _registry.case("cl_qcom_bitreverse", "x", trial="x")(lambda env: None)

    def trial(env):
        return None

    trial.__module__ = "__main__"
    with pytest.raises(ConfigError, match="importable"):
        _registry.case("cl_qcom_bitreverse", "y", trial="y")(trial)
    with pytest.raises(ConfigError, match="cl_qcom_typo"):
        _registry.case("cl_qcom_typo", "x", trial="x")(_verify_trials.passes)
    assert _registry.cases_for("cl_qcom_bitreverse") == ()  # nothing half-registered
    trials("cl_qcom_bitreverse", "passes")
    with pytest.raises(ConfigError, match="two trials"):
        trials("cl_qcom_bitreverse", "aborts")
    with pytest.raises(ConfigError, match="native"):
        _registry.case("cl_qcom_perf_hint", "z", tiers=("fallback",), trial="z")
    for bad in ({"extension": 1}, [], {"outcome": "exploded"}):
        with pytest.raises((ValueError, TypeError)):
            Verdict.from_dict(bad)


#: Every path that had a trial before the trials became selftest cases keeps one.
TRIALLED = {
    "cl_qcom_recordable_queues": ("cl_khr_command_buffer",),
    "cl_qcom_accelerated_image_ops": (),
    "cl_qcom_create_buffer_from_image": ("cl_khr_image2d_from_buffer",),
    "cl_qcom_onchip_global_memory": (),
    "cl_qcom_large_buffer": (),
    "cl_qcom_perf_hint": ("cl_khr_throttle_hints",),
    "cl_qcom_priority_hint": ("cl_khr_priority_hints",),
    "cl_qcom_protected_context": (),
    "cl_qcom_extended_query_image_info": (),
    "cl_qcom_filter_bicubic": (),
    "cl_qcom_bitreverse": ("cl_khr_extended_bit_ops",),
    "cl_qcom_dot_product8": ("cl_khr_integer_dot_product",),
    "cl_qcom_subgroup_shuffle": ("cl_khr_subgroup_shuffle",),
    "cl_qcom_reqd_sub_group_size": ("cl_intel_required_subgroup_size",),
    "cl_qcom_bfloat16_product": (),
    "cl_qcom_vector_image_ops": (),
}


def test_every_builtin_trial_exists():
    khronos = qcom_ext.device.extensions.khronos_names()
    trialled = {name for name in qcom_ext.REGISTRY if _registry.trial_case(name)}
    assert trialled == set(TRIALLED)
    limits = Limits(image_pitch_alignment=64, sub_group_sizes=(16, 32))
    keys = set()
    for extension, tiers in TRIALLED.items():
        case = _registry.trial_case(extension)
        assert trial_child._load(_registry.function_name(case.run)) is case.run
        assert case.trial.startswith("the trial ") and case.needs_device
        for advertised in (extension, *tiers):
            caps = DeviceCaps.from_info(extensions=advertised, limits=limits, disabled=())
            path = "native" if advertised == extension else f"khr:{advertised}"
            assert caps.path(extension) == path
            (trial, subject, taken) = next(
                item for item in verify.trials_needed(caps) if item[1] == extension
            )
            assert (trial.extension, subject, taken, trial.what) == (
                advertised,
                extension,
                path,
                case.trial,
            )
            keys.add(advertised)
    assert keys <= set(qcom_ext.REGISTRY) | khronos and len(keys) == 24


def test_a_report_without_a_device_cannot_run_device_trials(cache, no_child):
    with pytest.raises(ConfigError, match="need the device"):
        verify.verify(adreno740())


# ---- the cache (no child process) --------------------------------------------------------


def test_cache_is_keyed_by_driver_and_corrupt_files_are_ignored(cache, no_child):
    caps = adreno740()
    verify.store_verdicts(caps, {RECORDING: verdict(RECORDING, "crashed", "SIGSEGV")})
    path = verify.cache_path(caps)
    assert path.parent == cache / "verify" and path.is_file()
    assert verify.apply_cached(caps).path(RECORDING) == "fallback"
    newer = adreno740(driver=DRIVER.replace("E031.42.02.00", "E031.45.00.00"))
    assert verify.cache_path(newer) != path
    assert verify.apply_cached(newer).path(RECORDING) == "native"
    for junk in (
        "{not json",
        "[]",
        '{"format": 1}',
        json.dumps({"format": 1, "identity": verify.identity(caps), "verdicts": {RECORDING: 7}}),
    ):
        path.write_text(junk)
        assert verify.cached_verdicts(caps) == {}
        assert verify.apply_cached(caps).path(RECORDING) == "native"
    other = json.loads(
        json.dumps({"format": 1, "identity": verify.identity(newer), "verdicts": {}})
    )
    path.write_text(json.dumps(other))
    assert verify.cached_verdicts(caps) == {}


def test_no_cache_means_no_file(cache, monkeypatch, no_child):
    monkeypatch.setenv("QCOM_EXT_NO_CACHE", "1")
    caps = adreno740()
    verify.store_verdicts(caps, {RECORDING: verdict(RECORDING, "crashed", "SIGSEGV")})
    assert not verify.cache_path(caps).exists()
    assert verify.apply_cached(caps).path(RECORDING) == "native"


# ---- trials in child processes -----------------------------------------------------------


@pytest.mark.slow
def test_crashes_and_errors_become_verdicts_and_the_caller_survives(cache, trials, monkeypatch):
    trials("cl_qcom_bitreverse", "cl_error")
    trials("cl_qcom_onchip_global_memory", "segfaults")
    trials("cl_qcom_perf_hint", "passes")
    trials(RECORDING, "aborts_natively", what="the trial aborts")  # reports on the tier
    caps = verify.verify(adreno740(" cl_khr_command_buffer"))
    found = {name: (v.outcome, v.detail) for name, v in caps.verdicts.items()}
    assert found["cl_qcom_onchip_global_memory"] == ("crashed", "SIGSEGV")
    assert found[RECORDING] == ("crashed", "SIGABRT")
    assert found["cl_qcom_perf_hint"] == ("ok", "")
    outcome, detail = found["cl_qcom_bitreverse"]
    assert outcome == "failed" and "CL_INVALID_OPERATION" in detail
    # the recording crash brought the Khronos tier into use: its trial ran in a later round
    assert found["cl_khr_command_buffer"] == (
        "failed",
        f"RuntimeError: cl_khr_command_buffer {RECORDING} khr:cl_khr_command_buffer",
    )
    assert caps.path(RECORDING) == "fallback"
    assert caps.status(RECORDING).reason.startswith(
        f"{RECORDING} advertised, but the trial aborts crashed (SIGABRT) in a child process "
        f"(verified {caps.verdicts[RECORDING].verified})"
    )
    assert caps.path("cl_qcom_onchip_global_memory") == "fallback"
    assert caps.path("cl_qcom_bitreverse") == "fallback"
    assert caps.path("cl_qcom_perf_hint") == "native"
    # cached: a second verify tries again only what passed (a cache only downgrades: the
    # known-broken ones need no child), and a plain application starts no child process
    assert verify.cache_path(caps).is_file()
    asked = []

    def passes_again(spec, what, timeout):
        asked.append(sorted(what))
        return {name: caps.verdicts[name] for name in what}

    monkeypatch.setattr(verify, "_child", passes_again)
    again = verify.verify(adreno740(" cl_khr_command_buffer"))
    assert asked == [["cl_qcom_perf_hint"]]
    assert again.statuses == caps.statuses
    monkeypatch.setattr(verify, "_child", lambda *a: pytest.fail("a child process was started"))
    assert verify.apply_cached(adreno740(" cl_khr_command_buffer")).statuses == caps.statuses


@pytest.mark.slow
def test_a_hanging_trial_times_out(cache, trials):
    trials(RECORDING, "hangs")
    caps = DeviceCaps.from_info(extensions=RECORDING, disabled=(), driver_version="d")
    verdicts = verify.verify(caps, timeout=1).verdicts
    assert (verdicts[RECORDING].outcome, verdicts[RECORDING].detail) == ("timed_out", "1 s")


@pytest.mark.slow
def test_probe_verify_on_the_fake_adreno_driver(cache, trials, fake_cl_objects, monkeypatch):
    trials(RECORDING, "segfaults")
    with fake_driver(adreno740_device_info(), platform_info(), []):
        assert probe(DEVICE).path(RECORDING) == "native"  # nothing cached yet
        verified = probe(DEVICE, verify=True)
        assert verified.path(RECORDING) == "fallback"
        assert "crashed (SIGSEGV) in a child process" in verified.status(RECORDING).reason
        assert probe(DEVICE) is verified  # in memory
        clear_cache()
        monkeypatch.setattr(verify, "_child", lambda *a: pytest.fail("child process started"))
        cached = probe(DEVICE)  # a plain probe reads the verdict file
        assert cached.path(RECORDING) == "fallback" and RECORDING in cached.verdicts


@pytest.mark.slow
def test_real_trials_on_a_local_device(cache, device_caps, kernel_context):
    """The device claims cl_qcom_bitreverse: the child, on the real device, cannot build
    the native builtin (failed, downgraded); the Khronos tiers the device really has
    pass (pocl 3.1: cl_khr_command_buffer)."""
    name = "cl_qcom_bitreverse"
    with claiming(device_caps.device_id, extensions=[name]):
        caps = probe(device_caps.device_id, verify=True)
    expected = {t.extension for t, _, _ in verify.trials_needed(device_caps)} | {name}
    assert set(caps.verdicts) == expected
    assert caps.verdicts[name].outcome == "failed"
    assert "qcom_bitreverse" in caps.verdicts[name].log
    assert caps.path(name) == device_caps.path(name) != "native"
    assert caps.status(name).reason.startswith(f"{name} advertised, but the trial kernel")
    for extension in expected - {name}:
        assert caps.verdicts[extension].outcome == "ok", caps.verdicts[extension]


@pytest.mark.slow
def test_cli_probe_verify(cache, device_caps, kernel_context, capsys, monkeypatch):
    from qcom_ext.tools import cli

    where = verify._locate(device_caps)
    monkeypatch.setenv("PYOPENCL_CTX", "")  # restored after; --device sets it
    clear_cache()
    assert (
        cli.main(
            ["probe", "--verify", "--json", "--device", f"{where['platform']}:{where['device']}"]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    needed = {t.extension for t, _, _ in verify.trials_needed(device_caps)}
    assert set(report["verdicts"]) == needed
    assert all(v["outcome"] == "ok" for v in report["verdicts"].values())
    assert cli.main(["probe", "--device", f"{where['platform']}:{where['device']}"]) == 0
    table = capsys.readouterr().out
    assert ("trials in a child process" in table) == bool(needed)
    clear_cache()


# ---- the built-in trials, in this process -------------------------------------------

IN_PROCESS = sorted(
    (name, _registry.trial_case(name)) for name in qcom_ext.REGISTRY if _registry.trial_case(name)
)


def in_process(extension: str, path: str, device) -> dict:
    """The child's verdict fields of ``extension``'s trial on ``path``, run here."""
    case = _registry.trial_case(extension)
    item = {
        "extension": extension,
        "function": _registry.function_name(case.run),
        "subject": extension,
        "path": path,
    }
    return trial_child.trial_outcome(item, device)


@pytest.mark.parametrize(("extension", "case"), IN_PROCESS, ids=[e for e, _ in IN_PROCESS])
def test_builtin_trials_pass_on_the_path_the_device_takes(
    extension, case, device_caps, kernel_context
):
    status = device_caps.status(extension)
    if status.path == "unavailable":
        pytest.skip(f"{extension} is unavailable on {device_caps.label}: {status.reason}")
    result = in_process(extension, status.path, device_caps.device())
    assert result["outcome"] == "ok", result


def test_a_trial_that_computes_wrong_fails(device_caps, kernel_context, monkeypatch):
    from qcom_ext.ext.program import bfloat16

    right = bfloat16.mad32_bf16  # the case's numpy reference, made to disagree by 1
    monkeypatch.setattr(bfloat16, "mad32_bf16", lambda a, b, c: right(a, b, c) + 1)
    result = in_process("cl_qcom_bfloat16_product", "fallback", device_caps.device())
    assert result["outcome"] == "failed"
    assert (
        result["detail"].startswith("wrong result: error ") and "> tolerance 0" in result["detail"]
    )


def test_a_trial_on_another_path_than_its_own_fails(device_caps, kernel_context):
    """The library must take the path under trial: a claimed native path it cannot take
    (the stand-in here has no native recording) fails the trial."""
    result = in_process("cl_qcom_recordable_queues", "native", device_caps.device())
    assert result["outcome"] == "failed"
    assert "cl_qcom_recordable_queues took the" in result["detail"]
    assert result["detail"].endswith("path, not 'native'")


def test_native_onchip_trial_reaches_the_driver(device_caps, cl_context):
    """The on-chip trial's native call, through a stand-in that refuses it."""
    calls = []

    def refuse(ctx, props, flags, size, host_ptr, errcode):
        calls.append(int(size))
        errcode[0] = C.CL_OUT_OF_RESOURCES
        return ffi.NULL

    name = "cl_qcom_onchip_global_memory"
    info = {C.CL_DEVICE_ONCHIP_GLOBAL_MEM_SIZE_QCOM: u64(1 << 20)}
    with claiming(
        device_caps.device_id, extensions=[name], info=info, clCreateBufferWithProperties=refuse
    ):
        env = Env(probe(device_caps.device_id), name, "native", isolated=True)
        with pytest.raises(CLError, match="CL_OUT_OF_RESOURCES"):
            _registry.trial_case(name).run(env)
        result = in_process(name, "native", device_caps.device())
    assert calls == [4096, 4096]
    assert result["outcome"] == "failed" and "CL_OUT_OF_RESOURCES" in result["detail"]


def test_the_device_layer_loads_no_tool_until_verify_is_asked():
    """probe() and the verdicts are the device layer's; only probe(verify=True) loads
    the runner (through the hook the package installs, qcom_ext._trials)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from qcom_ext.device.probe import probe\n"
        "from qcom_ext.device.verdicts import apply_cached\n"
        "print(sorted(m for m in sys.modules if m.startswith('qcom_ext.tools')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_probe_verify_runs_the_trial_runner_the_package_installed(device_caps):
    """probe(verify=True) reaches the trials through qcom_ext._trials (no import of the
    tools layer from the device layer); with no runner installed it is a ConfigError."""
    assert _trials.install(None) is not None  # the package installed one at import
    try:
        clear_cache()
        with pytest.raises(ConfigError, match="none is installed"):
            probe(device_caps.device_id, verify=True)
        seen = []
        _trials.install(lambda caps: seen.append(caps.label) or caps)
        clear_cache()
        assert probe(device_caps.device_id, verify=True).label == device_caps.label
        assert seen == [device_caps.label]
    finally:
        _trials.install(qcom_ext._run_trials)
        clear_cache()
