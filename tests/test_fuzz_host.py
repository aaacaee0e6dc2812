"""Bad-input fuzzing (the rule and the settings: tests/fuzzing.py): kernel defines,
handles, hints, memory flags, and persistent cache entries (corrupt, truncated,
altered).
"""

from __future__ import annotations

import json
import re
import string

import fuzzing
import numpy as np
import pytest
from fuzzing import FUZZ, counted, either, one_spoilt, refused, typed_error
from hypothesis import example, given
from hypothesis import strategies as st

import qcom_ext
from qcom_ext import ConfigError, DeviceCaps
from qcom_ext.binding.lib import C
from qcom_ext.device.extensions import REGISTRY
from qcom_ext.ext.program.build import define_options

# pytest finds fixtures among a module's names: the shared ones, from tests/fuzzing.py
ctx, report_counts = fuzzing.ctx, fuzzing.report_counts


# ---- kernel defines, handles, hints, memory flags ----------------------------------------

_DEFINE_NAME = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,8}\Z")
_DEFINE_VALUE = st.one_of(
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(),
    st.text(alphabet=string.ascii_letters + "_.+-", max_size=6),
)
_DEFINES = one_spoilt(
    {"defines": st.dictionaries(_DEFINE_NAME, _DEFINE_VALUE, max_size=3)},
    {
        "defines": st.one_of(
            st.dictionaries(
                st.one_of(st.text(max_size=4), st.integers(0, 3), st.just("é")),
                _DEFINE_VALUE,
                min_size=1,
                max_size=2,
            ),
            st.dictionaries(
                _DEFINE_NAME,
                st.sampled_from(["a b", "x\t", "1\x00", "\n", "é\u200b"]),
                min_size=1,
                max_size=2,
            ),
            st.sampled_from([[("A", 1)], "A=1", 5]),
        )
    },
).map(lambda fields: fields["defines"])


@FUZZ
@given(defines=_DEFINES)
def test_define_options(defines):
    counted("kernel defines")

    if not isinstance(defines, dict):
        typed_error(lambda: define_options(defines), "defines", kinds=(ConfigError,))
        return
    want, bad = [], []
    for name, value in defines.items():
        if not (isinstance(name, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)):
            bad.append(repr(name))
        elif value is True:
            want.append(f"-D{name}")
        elif value is not False and value is not None:
            text = str(value)
            if not all(ch.isprintable() and not ch.isspace() for ch in text):
                bad.append(repr(text))
            want.append(f"-D{name}={text}")
    if bad:
        exc = typed_error(lambda: define_options(defines), kinds=(ConfigError,))
        assert any(b in str(exc) for b in bad), str(exc)
        return
    assert define_options(defines) == want


@FUZZ
@given(
    junk=st.one_of(
        st.text(max_size=4),
        st.floats(),
        st.booleans(),
        st.complex_numbers(),
        st.binary(max_size=3),
        st.lists(st.text(max_size=1), min_size=1),
    ),
    where=st.sampled_from(
        ["probe", "accelerated_limits", "box_size", "create_context", "formats"]
    ),
)
def test_junk_handles(junk, where):
    counted("handles")  # ints are raw handles, trusted as pyopencl's from_int_ptr trusts them
    calls = {
        "probe": lambda: qcom_ext.probe(junk),
        "accelerated_limits": lambda: qcom_ext.accelerated_limits(junk),
        "box_size": lambda: qcom_ext.box_size(1, 1, device=junk),
        "create_context": lambda: qcom_ext.create_context(junk),
        "formats": lambda: qcom_ext.supported_image_formats(junk),
    }
    typed_error(calls[where], kinds=(ConfigError,))


def test_handles_that_are_accepted(ctx):
    """What handle_int takes (the other side of test_junk_handles): ints, numpy ints, cffi
    pointers and arrays (a host buffer passed as a pointer), pyopencl objects."""
    from qcom_ext.binding.lib import ffi, handle_int

    buffer = ffi.new("char[]", 16)
    assert handle_int(7) == 7 and handle_int(np.uint64(7)) == 7
    assert handle_int(buffer) == handle_int(ffi.cast("void *", buffer)) != 0
    assert handle_int(ctx) == ctx.int_ptr and handle_int(ffi.NULL) == 0


_HINT_KINDS = {
    "perf_hint": ("PERF_HINT_{}_QCOM", "NORMAL"),
    "priority_hint": ("PRIORITY_HINT_{}_QCOM", "NORMAL"),
    "priority": ("QUEUE_PRIORITY_{}_KHR", "MED"),
    "throttle": ("QUEUE_THROTTLE_{}_KHR", "MED"),
}
_TOKENS = sorted(
    {
        int(getattr(C, "CL_" + f.format(n)))
        for f, mid in _HINT_KINDS.values()
        for n in ("HIGH", mid, "LOW")
    }
)


@FUZZ
@given(
    kind=st.sampled_from(sorted(_HINT_KINDS)),
    value=either(
        st.sampled_from(["high", " LOW ", "Normal", None, *_TOKENS]),
        st.one_of(
            st.sampled_from(["med", "", "highest", True, 1.0, b"high"]),
            st.integers(-5, 0x40D0),
            st.integers(0, 4).map(np.int32),
        ),
    ),
)
def test_hint_values(kind, value):
    counted("hints")
    from qcom_ext.ext import hints as _hints

    form, mid = _HINT_KINDS[kind]
    tokens = [int(getattr(C, "CL_" + form.format(n))) for n in ("HIGH", mid, "LOW")]
    levels = ("high", "normal", "low")
    if value is None:
        assert _hints.parse(kind, value) is None
    elif isinstance(value, str) and value.strip().lower() in levels:
        assert _hints.parse(kind, value) == value.strip().lower()
    elif type(value) is int and value in tokens:
        assert _hints.parse(kind, value) == levels[tokens.index(value)]
    else:
        typed_error(lambda: _hints.parse(kind, value), f"{kind}={value!r}", kinds=(ConfigError,))


_ACCESS = {
    "read_write": C.CL_MEM_READ_WRITE,
    "read_only": C.CL_MEM_READ_ONLY,
    "write_only": C.CL_MEM_WRITE_ONLY,
}
_HOST = (C.CL_MEM_HOST_WRITE_ONLY, C.CL_MEM_HOST_READ_ONLY, C.CL_MEM_HOST_NO_ACCESS)


def _one_bit(value: int) -> bool:
    return value & (value - 1) == 0


_VALID_FLAGS = st.tuples(
    st.sampled_from([0, *_ACCESS.values()]), st.sampled_from([0, *_HOST])
).map(sum)


@FUZZ
@given(
    flags=either(
        st.one_of(_VALID_FLAGS, st.sampled_from([*_ACCESS, " Read-Only"])),
        st.one_of(
            st.integers(-2, 2**12),
            st.sampled_from([2**64, True, 1.0, None]),
            st.text(alphabet="read_writeonlyRWO- ", max_size=12),
        ),
    )
)
def test_access_flags(flags):
    counted("memory flags")
    from qcom_ext.ext.memory.flags import access_flags

    if isinstance(flags, str):
        key = flags.strip().lower().replace("-", "_")
        if key in _ACCESS:
            assert access_flags(flags) == _ACCESS[key]
        else:
            typed_error(lambda: access_flags(flags), repr(flags), kinds=(ConfigError,))
        return
    access, host = sum(_ACCESS.values()), sum(_HOST)
    valid = (
        type(flags) is int
        and flags >= 0
        and not flags & ~(access | host)
        and _one_bit(flags & access)
        and _one_bit(flags & host)
    )
    if not valid:
        typed_error(lambda: access_flags(flags), "flags", kinds=(ConfigError,))
        return
    assert access_flags(flags) == flags | (flags & access or C.CL_MEM_READ_WRITE)


# ---- persistent cache entries: corrupt, truncated, altered -------------------------------


@FUZZ
@given(
    binaries=st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=3),
    change=st.sampled_from(["truncate", "flip", "append", "replace", "none", "empty"]),
    where=st.integers(0, 10**6),
    junk=st.binary(max_size=64),
)
def test_program_cache_entries(tmp_path_factory, binaries, change, where, junk):
    counted("program cache entries")
    from qcom_ext.ext.program.cache import ProgramCache, key_of

    store = ProgramCache(tmp_path_factory.mktemp("programs"))
    key, meta = key_of({"n": len(binaries)}), {"device": "fuzz", "driver": "1.0"}
    path = store.store(key, meta, binaries)
    data = path.read_bytes()
    spot = where % len(data)
    altered = {
        "truncate": data[:spot],
        "append": data + junk,
        "replace": junk,
        "none": data,
        "flip": data[:spot] + bytes([data[spot] ^ 0x55]) + data[spot + 1 :],
        "empty": b"",
    }[change]
    path.write_bytes(altered)
    loaded = store.load(key, meta)
    if altered == data:
        assert loaded == binaries
    else:
        assert loaded is None and not path.exists()  # a rejected entry is removed
        refused()


_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


_LOCAL = st.lists(st.integers(1, 64), min_size=1, max_size=1)


@FUZZ
@given(
    field=st.sampled_from(
        ["format", "version", "key", "local_size", "best_ns", "driver_ns", None]
    ),
    value=either(_LOCAL, _JSON),
    local=st.one_of(st.none(), _LOCAL),
)
@example(field="best_ns", value=False, local=None)  # was loaded as best_ns=False
@example(field="driver_ns", value=-5, local=[8])
def test_tuning_cache_entries(tmp_path_factory, field, value, local):
    counted("tuning cache entries")
    from qcom_ext.ops.tuning import KernelIdentity, TuningCache, TuningResult

    cache = TuningCache(tmp_path_factory.mktemp("tuning"))
    identity = KernelIdentity("pocl", "cpu", "3.1", "k", "0" * 64, "")
    result = TuningResult(None if local is None else tuple(local), 5.0, 6.0)
    path = cache.store(identity, (64,), False, result)
    entry = json.loads(path.read_text())
    if field is not None:
        entry[field] = value
    path.write_text(json.dumps(entry))
    found = cache.load(identity, (64,), False)
    ls = entry.get("local_size")
    times = (entry.get("best_ns"), entry.get("driver_ns"))
    valid = (
        entry.get("format") == "qcom_ext-tuning"
        and entry.get("version") == 1
        and entry.get("key") == identity.key((64,), False)
        and (
            ls is None
            or (
                isinstance(ls, list) and len(ls) == 1 and all(type(v) is int and v > 0 for v in ls)
            )
        )
        and all(v is None or (type(v) in (int, float) and v >= 0) for v in times)
    )
    if not valid:
        assert found is None
        refused()
        return
    assert found is not None and found.from_cache
    assert found.local_size == (None if ls is None else tuple(ls))


_SOME = sorted(REGISTRY)[:4]


@st.composite
def verdict_entries(draw):
    """Entries of a verdict file: mostly well formed (some for another extension than
    their key, some with an unknown outcome), some any JSON."""
    out = {}
    for name in draw(st.lists(st.sampled_from([*_SOME, "cl_bogus"]), max_size=3, unique=True)):
        if draw(st.integers(0, 3)):
            extension = name if draw(st.integers(0, 3)) else draw(st.sampled_from(_SOME))
            outcome = draw(st.sampled_from(["ok", "failed", "crashed", "timed_out", "x"]))
            out[name] = {"extension": extension, "trial": "t", "outcome": outcome}
        else:
            out[name] = draw(_JSON)
    return out


@FUZZ
@given(data=_JSON, verdicts=verdict_entries())
def test_verdict_cache_entries(tmp_path_factory, data, verdicts):
    counted("verdict cache entries")
    from qcom_ext.tools.verify import runner as verify

    caps = DeviceCaps.from_info(
        extensions=" ".join(REGISTRY),
        platform_name="fuzz",
        device_name="cpu",
        driver_version="1",
        disabled=(),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        patch.delenv("QCOM_EXT_NO_CACHE", raising=False)
        path = verify.cache_path(caps)
        path.parent.mkdir(parents=True, exist_ok=True)
        whole = {"format": verify.FORMAT, "identity": verify.identity(caps), "verdicts": verdicts}
        for payload in (data, whole):
            path.write_text(json.dumps(payload))
            found = verify.cached_verdicts(caps)
            assert all(
                isinstance(v, verify.Verdict) and v.extension == k for k, v in found.items()
            )
            applied = verify.apply_cached(caps)
            for name in REGISTRY:  # a verdict only ever takes a native path away
                changed = applied.path(name) != caps.path(name)
                assert not changed or (name in found and found[name].broken), name
    if not found:
        refused()
