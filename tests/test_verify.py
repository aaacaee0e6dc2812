"""qcom_ext.verify: risky native calls tried in a child process, verdicts cached and applied.

Without an Adreno device, the trials of the Khronos tiers a local device advertises run
for real (pocl 3.1: cl_khr_command_buffer), a claimed native kernel extension really
fails to build in the child, and trials that abort, segfault, hang or return a CL error
are registered from tests/_verify_trials.py (the child imports them by name) against
reports built from the real Adreno strings of tests/data or served by the fake driver.
"""

from __future__ import annotations

import json

import pytest
from conftest import adreno_strings
from fakes.claiming import claiming
from fakes.driver import DEVICE, adreno740_device_info, fake_driver, platform_info, u64

import qcom_ext
from qcom_ext.binding.lib import C, ffi
from qcom_ext.device.caps import DeviceCaps
from qcom_ext.device.probe import clear_cache, probe
from qcom_ext.errors import CLError, ConfigError
from qcom_ext.tools.verify import runner as verify
from qcom_ext.tools.verify import trials as _trials
from qcom_ext.tools.verify.runner import TrialTarget, Verdict

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
    """An empty trial table: only what the test registers runs."""
    monkeypatch.setattr(verify, "TRIALS", {})

    def register(extension: str, function: str, *, needs_device: bool = False) -> None:
        verify.register_trial(
            extension,
            f"the trial {function}",
            f"_verify_trials:{function}",
            needs_device=needs_device,
        )

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
    assert dict(both.limits.broken).keys() == {RECORDING, "cl_khr_command_buffer"}
    assert json.loads(both.to_json())["verdicts"][RECORDING]["outcome"] == "crashed"


def test_passing_verdicts_change_nothing_and_a_new_verdict_replaces_the_old():
    caps = adreno740()
    passed = caps.with_verdicts({RECORDING: verdict(RECORDING, "ok")})
    assert passed.statuses == caps.statuses and passed.limits.broken == ()
    failed = passed.with_verdicts({RECORDING: verdict(RECORDING, "failed", "x")})
    assert failed.path(RECORDING) == "fallback"
    again = failed.with_verdicts({RECORDING: verdict(RECORDING, "ok")})
    assert again.path(RECORDING) == "native" and again.limits.broken == ()


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


def test_trial_functions_must_be_importable_by_name():
    with pytest.raises(ConfigError, match="importable"):
        verify.register_trial("cl_qcom_bitreverse", "x", lambda target: None)
    with pytest.raises(ConfigError, match="importable"):
        verify.register_trial("cl_qcom_bitreverse", "x", "__main__:trial")
    with pytest.raises(ConfigError, match="cl_qcom_typo"):
        verify.register_trial("cl_qcom_typo", "x", "_verify_trials:passes")
    for bad in ({"extension": 1}, [], {"outcome": "exploded"}):
        with pytest.raises((ValueError, TypeError)):
            Verdict.from_dict(bad)


def test_every_builtin_trial_exists():
    khronos = qcom_ext.device.extensions.khronos_names()
    for extension, trial in verify.TRIALS.items():
        assert extension in qcom_ext.REGISTRY or extension in khronos, extension
        assert callable(trial.load()), trial.function


def test_a_report_without_a_device_cannot_run_device_trials(cache, no_child):
    with pytest.raises(ConfigError, match="need the device"):
        verify.verify(adreno740())


# ---- the cache (no child process) --------------------------------------------------------


def test_cache_is_keyed_by_driver_and_corrupt_files_are_ignored(cache, no_child):
    caps = adreno740()
    verify._store(caps, {RECORDING: verdict(RECORDING, "crashed", "SIGSEGV")})
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
    verify._store(caps, {RECORDING: verdict(RECORDING, "crashed", "SIGSEGV")})
    assert not verify.cache_path(caps).exists()
    assert verify.apply_cached(caps).path(RECORDING) == "native"


# ---- trials in child processes -----------------------------------------------------------


@pytest.mark.slow
def test_crashes_and_errors_become_verdicts_and_the_caller_survives(cache, trials, monkeypatch):
    trials("cl_qcom_bitreverse", "cl_error")
    trials("cl_qcom_onchip_global_memory", "segfaults")
    trials("cl_qcom_perf_hint", "passes")
    trials(RECORDING, "aborts")
    trials("cl_khr_command_buffer", "reports_its_target")
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
    # cached: a second verify and a plain application start no child process
    assert verify.cache_path(caps).is_file()
    monkeypatch.setattr(verify, "_child", lambda *a: pytest.fail("a child process was started"))
    again = verify.verify(adreno740(" cl_khr_command_buffer"))
    assert again.statuses == caps.statuses
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


# ---- the built-in trial functions, in this process ---------------------------------------

IN_PROCESS = sorted(
    {
        t.function.split(":")[1]: ext
        for ext, t in verify.TRIALS.items()
        if ext in qcom_ext.REGISTRY
    }.items()
)


@pytest.mark.parametrize(("function", "extension"), IN_PROCESS, ids=[f for f, _ in IN_PROCESS])
def test_builtin_trials_pass_on_the_path_the_device_takes(
    function, extension, device_caps, kernel_context
):
    status = device_caps.status(extension)
    if status.path == "unavailable":
        pytest.skip(f"{extension} is unavailable on {device_caps.label}: {status.reason}")
    target = TrialTarget(extension, extension, status.path, device_caps.device())
    getattr(_trials, function)(target)


def test_a_trial_that_computes_wrong_fails(device_caps, kernel_context, monkeypatch):
    monkeypatch.setattr(_trials, "BF16", _trials.BF16.replace("0x4000", "0x4040"))  # 3, not 2
    target = TrialTarget(
        "cl_qcom_bfloat16_product", "cl_qcom_bfloat16_product", "fallback", device_caps.device()
    )
    with pytest.raises(_trials.WrongResult, match=r"gave 6\.0"):
        _trials.bfloat16_product(target)


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
        target = TrialTarget(name, name, "native", device_caps.device())
        with pytest.raises(CLError, match="CL_OUT_OF_RESOURCES"):
            _trials.onchip(target)
    assert calls == [4096]
