"""Bad-input fuzzing (the rule and the settings: tests/fuzzing.py): extension and
driver strings through the probe of a fake driver, and the environment variables.
"""

from __future__ import annotations

import json
import re
import string
import struct
import warnings
from pathlib import Path
from types import SimpleNamespace

import fuzzing
import pytest
from fakes.driver import DEVICE, adreno740_device_info, cstr, fake_driver, platform_info
from fuzzing import FUZZ, counted, either, refused, typed_error
from hypothesis import assume, given
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import ConfigError, DeviceCaps
from qcom_ext.device.extensions import REGISTRY, khronos_names
from qcom_ext.errors import DriverAnswerError

# pytest finds fixtures among a module's names: the shared ones, from tests/fuzzing.py
report_counts = fuzzing.report_counts


# ---- extension and driver strings, through the probe of a fake driver --------------------

_NAMES = sorted(set(REGISTRY) | khronos_names())
_TOKEN = st.one_of(
    st.sampled_from(_NAMES),
    st.text(alphabet=string.ascii_letters + string.digits + "_-.", min_size=1, max_size=30),
    st.text(min_size=1, max_size=8),  # any unicode, separators included
)
#: very long strings (the probe must stay linear in them) and near misses of the patterns
_LONG = st.sampled_from(["", "1" * 20000, " " * 20000, "Adreno" + " " * 20000, "Compiler "])


def _decoded(raw: bytes) -> str:
    """A C string as read: up to the first NUL, invalid UTF-8 replaced."""
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")


@FUZZ
@given(
    tokens=st.lists(_TOKEN, max_size=40),
    seps=st.lists(st.sampled_from([" ", "  ", "\t", "\n", "\0"]), min_size=1, max_size=3),
    raw_tail=st.binary(max_size=24),
    model=st.one_of(st.from_regex(r"\A(\d{3,4}[a-z]?|X\d-\d\d)\Z"), st.just(None)),
    junk=st.text(alphabet=string.ascii_letters + string.digits + " .()#", max_size=40),
    long=_LONG,
    driver=st.one_of(st.text(max_size=80), _LONG),
    vendor_width=either(st.sampled_from([1, 2, 4, 8]), st.sampled_from([3, 5])),
    hof_width=either(st.sampled_from([1, 2, 4, 8]), st.sampled_from([0, 3, 9])),
    versions=st.dictionaries(
        st.binary(min_size=1, max_size=64), st.integers(0, 2**32 - 1), max_size=3
    ),
)
def test_probe_of_any_driver_strings(
    tokens, seps, raw_tail, model, junk, long, driver, vendor_width, hof_width, versions
):
    counted("probe: extension and driver strings")
    assume("adreno" not in junk.lower())
    text = "".join(t + seps[i % len(seps)] for i, t in enumerate(tokens))
    info = adreno740_device_info()
    info[0x1030] = text.encode() + raw_tail + b"\0"
    version = f"OpenCL 3.0 {junk}{long}" + (f" Adreno(TM) {model} {junk}" if model else "")
    info[0x102F] = cstr(version)
    info[0x102D] = driver.encode("utf-8", "surrogatepass") + b"\0"
    info[0x1001] = (0x5143).to_bytes(8, "little")[:vendor_width]  # cl_uint in odd widths
    info[0x4112] = (16).to_bytes(9, "little")[:hof_width]  # 0 bytes: the query fails
    info[0x1060] = b"".join(struct.pack("<I64s", v, n) for n, v in versions.items())
    from qcom_ext.device.probe import read_device

    with pytest.MonkeyPatch.context() as patch, fake_driver(info, platform_info(), []):
        patch.delenv("QCOM_EXT_DISABLE", raising=False)
        if vendor_width not in (1, 2, 4, 8):
            typed_error(lambda: read_device(DEVICE), "0x1001", kinds=(DriverAnswerError,))
            return
        caps = read_device(DEVICE)
    extensions = set(_decoded(info[0x1030]).split())
    assert caps.extensions == extensions
    assert caps.driver_version == _decoded(info[0x102D])
    for name in REGISTRY:
        assert (caps.path(name) == "native") == (name in extensions), name
    assert caps.is_adreno and caps.adreno_model == (
        model or "740"
    )  # else CL_DEVICE_OPENCL_C_VERSION's
    names = [_decoded(n[:64]) for n in versions]
    if len(set(names)) == len(names):  # equal names collapse
        assert caps.extension_versions == {
            name: f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"
            for name, v in zip(names, versions.values(), strict=True)
        }
    hof = caps.limits.hof_max_filter_size
    if "cl_qcom_accelerated_image_ops" not in extensions:
        assert hof is None
    elif hof_width in (1, 2, 4, 8):
        assert hof == (16, 8)
    else:  # an advertised extension whose limit cannot be read: reported, not fatal
        assert hof is None
        assert any("CL_DEVICE_HOF_MAX_FILTER_SIZE_X_QCOM" in p for p in caps.problems)
        refused()
    json.loads(caps.to_json())


# ---- environment variables ---------------------------------------------------------------

_DISABLE_ITEM = either(
    st.sampled_from([*_NAMES, "all"]),
    st.one_of(
        st.sampled_from(_NAMES).map(str.upper),  # names are case-sensitive
        st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=12),
    ),
)


@FUZZ
@given(
    items=st.lists(_DISABLE_ITEM, max_size=4),
    sep=st.sampled_from([",", ", ", " ", "\t", ",,", " , "]),
    edges=st.sampled_from(["", ",", " "]),
)
def test_kill_switch_values(items, sep, edges):
    counted("env: QCOM_EXT_DISABLE")
    value = edges + sep.join(items) + edges
    tokens = [t for t in re.split(r"[,\s]+", value) if t]
    unknown = sorted(set(tokens) - set(_NAMES) - {"all"})
    every = " ".join(REGISTRY)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QCOM_EXT_DISABLE", value)
        if unknown:
            typed_error(
                lambda: DeviceCaps.from_info(extensions=every),
                "QCOM_EXT_DISABLE",
                *unknown,
                kinds=(ConfigError,),
            )
            return
        caps = DeviceCaps.from_info(extensions=every)
    expected = set(tokens) - {"all"} | (set(REGISTRY) if "all" in tokens else set())
    assert caps.disabled == expected
    for name in REGISTRY:
        assert (caps.path(name) == "native") == (name not in expected), name
    if "cl_qcom_protected_context" in expected:
        assert caps.path("cl_qcom_protected_context") == "unavailable"


def _platforms():
    from qcom_ext.binding import info as _info

    return [(p, _info.device_ids(p)) for p in _info.platform_ids()]


@FUZZ
@given(
    spec=st.one_of(
        st.from_regex(r"\A[0-9]{1,2}(:[0-9]{1,2}(,[0-9])?)?\Z"),
        st.text(alphabet="0123456789:,²١ abcdefghijklmnopqrstuvwxyzPC-", max_size=12),
        st.sampled_from(
            [
                "Portable",
                "pocl",
                "Portable Computing Language:pthread",
                ":",
                "::",
                ":0",
                "0:",
                "0:0:0",
                "²",
                "١:0",
                "0:٠",
            ]
        ),
    )
)
def test_pyopencl_ctx_selector(spec):
    counted("env: PYOPENCL_CTX")
    from qcom_ext.device.probe import _default, default_device

    platforms = _platforms()
    if not platforms:
        pytest.skip("no OpenCL platform")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYOPENCL_CTX", spec)
        _default.pop(spec, None)
        try:
            found = default_device()
        except ConfigError as exc:
            answers = [*spec.split(":"), *spec.split(":")[-1].split(",")]
            assert "PYOPENCL_CTX" in str(exc), str(exc)
            assert repr(spec) in str(exc) or any(repr(a) in str(exc) for a in answers), str(exc)
            refused()
            return
        except Exception as exc:  # the failure looked for
            pytest.fail(f"PYOPENCL_CTX={spec!r}: untyped {type(exc).__name__}: {exc}")
    assert any(found in devices for _, devices in platforms)
    parts = spec.split(":")
    if len(parts) == 2 and all(p.isascii() and p.isdigit() for p in parts):
        i, j = int(parts[0]), int(parts[1])
        if i < len(platforms) and j < len(platforms[i][1]):
            assert found == platforms[i][1][j]  # pyopencl's index rule


_LABELS = ["pocl-3.1-cpu", "pocl-3.0-cpu", "nvidia-560.35-gpu", "adreno-740-gpu"]
_SELECTOR = either(
    st.sampled_from(["pocl", "pocl-3.1", "nvidia", "gpu", "cpu", "adreno-740", " pocl ", ""]),
    st.text(alphabet="abcdefgh-. 0123", max_size=6),
)


@FUZZ
@given(
    labels=st.lists(st.sampled_from(_LABELS), max_size=4, unique=True),
    entries=st.lists(_SELECTOR, max_size=4),
)
def test_device_selector(labels, entries):
    counted("env: QCOM_EXT_TEST_DEVICES")
    from qcom_ext.tools.pytest_plugin import filter_devices

    found = [SimpleNamespace(label=label) for label in labels]
    spec = ",".join(entries)
    wanted = [e.strip() for e in entries if e.strip()]
    kept = [c for c in found if any(w in c.label for w in wanted)] if wanted else found
    if found and wanted and not kept:
        typed_error(
            lambda: filter_devices(found, spec),
            "QCOM_EXT_TEST_DEVICES",
            repr(spec),
            kinds=(ConfigError,),
        )
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert filter_devices(found, spec) == kept
    unmatched = [w for w in wanted if not any(w in c.label for c in found)]
    shown = " ".join(str(w.message) for w in caught)
    assert all(repr(w) in shown for w in unmatched) if found else not caught


@FUZZ
@given(
    no_cache=st.text(alphabet=" 0123yesnoTRUE\t", max_size=5),
    cache_dir=st.one_of(
        st.just(""), st.text(alphabet=string.ascii_letters + "/~._-", min_size=1, max_size=20)
    ),
)
def test_cache_switches(no_cache, cache_dir, tmp_path_factory):
    counted("env: QCOM_EXT_NO_CACHE, QCOM_EXT_CACHE_DIR")
    from qcom_ext import _cache_dir
    from qcom_ext.ext.program import cache as program_cache

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QCOM_EXT_NO_CACHE", no_cache)
        patch.setenv("QCOM_EXT_CACHE_DIR", cache_dir)
        enabled = no_cache.strip() in ("", "0")  # the documented rule
        assert _cache_dir.cache_enabled() is enabled
        if cache_dir:
            try:
                expected = Path(cache_dir).expanduser()
            except RuntimeError:  # ~user of no such user
                typed_error(
                    _cache_dir.cache_root,
                    "QCOM_EXT_CACHE_DIR",
                    repr(cache_dir),
                    kinds=(ConfigError,),
                )
                return
            assert _cache_dir.cache_root() == expected
        assert (program_cache.default_cache() is None) is not enabled
        # a cache root that is a file: nothing can be written (a warning), loads miss
        blocker = tmp_path_factory.mktemp("root") / "file"
        blocker.write_text("not a directory")
        patch.setenv("QCOM_EXT_CACHE_DIR", str(blocker))
        store = program_cache.ProgramCache(program_cache.default_dir())
        key = program_cache.key_of({"source": no_cache})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert store.store(key, {}, [b"x"]) is None
        assert any(issubclass(w.category, qcom_ext.QcomExtWarning) for w in caught)
        assert store.load(key, {}) is None


@FUZZ
@given(name=st.text(alphabet=string.ascii_letters + "/._-", min_size=1, max_size=16))
def test_opencl_library_override(name, tmp_path_factory):
    counted("env: QCOM_EXT_OPENCL_LIBRARY")
    from qcom_ext.binding.lib import ENV_LIBRARY, open_library

    path = str(tmp_path_factory.getbasetemp() / "no-library-here" / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_LIBRARY, path)
        typed_error(open_library, ENV_LIBRARY, path, kinds=(qcom_ext.LibraryNotFound,))
