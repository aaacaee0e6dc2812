"""Bad-input fuzzing (reliability harness, issue 8): hypothesis draws what a caller, a
driver or the environment can hand qcom_ext, valid and invalid input mixed.

Every target follows one rule. A valid input gives the reference result (numpy, the
OpenCL specification, an exact rational computation: ``fuzz_oracles``, never qcom_ext's
own code); an invalid one raises a typed error (:class:`qcom_ext.QcomExtError`;
``ConfigError`` for arguments and settings) whose message names the bad value. An untyped
exception, a crash or a result that differs from the reference fails the test.

``QCOM_EXT_FUZZ_EXAMPLES`` sets hypothesis's ``max_examples`` of every target (default
60: the file stays well under 40 s on two CPUs); ``QCOM_EXT_FUZZ_REPORT=<path>`` writes
the examples each target ran, and how many were refused, as JSON (the counts that
docs/RELIABILITY.md quotes).
"""

from __future__ import annotations

import json
import math
import os
import re
import string
import struct
import warnings
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import fuzz_oracles as oracle
import numpy as np
import pytest
from _fakes import DEVICE, adreno740_device_info, cstr, fake_driver, platform_info
from conftest import default_building_context
from conv_reference import assert_close
from conv_reference import conv2d as conv2d_reference
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import qcom_ext
from qcom_ext import ConfigError, DeviceCaps, QcomExtError, WeightImage, ops
from qcom_ext.binding.lib import C
from qcom_ext.device.extensions import REGISTRY, khronos_names
from qcom_ext.errors import DriverAnswerError
from qcom_ext.ext.program import bfloat16
from qcom_ext.ext.program.build import define_options
from qcom_ext.reference import accelerated as accelerated_reference

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


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    path = os.environ.get("QCOM_EXT_FUZZ_REPORT")
    if path:
        targets = {t: {"examples": n, "refused": REFUSED[t]} for t, n in sorted(COUNTS.items())}
        total, bad = sum(COUNTS.values()), sum(REFUSED.values())
        report = {"targets": targets, "examples": total, "refused": bad, "valid": total - bad}
        Path(path).write_text(json.dumps(report, indent=1) + "\n")


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


@pytest.fixture(scope="module")
def ctx():
    """A context on the default device, which must build kernels (pocl here)."""
    return default_building_context()


@pytest.fixture(scope="module")
def queue(ctx):
    import pyopencl as cl

    return cl.CommandQueue(ctx)


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


# ---- image formats and shapes ------------------------------------------------------------


def _spelt(name: str):
    """Spellings the parser accepts: CL_ or not, any case, surrounding blanks."""
    return st.tuples(st.sampled_from(["", "CL_", "cl_", " "]), st.booleans()).map(
        lambda p: p[0] + (name.upper() if p[1] else name)
    )


def _tokens() -> set[int]:
    return {int(getattr(C, f"CL_{n}")) for n in (*oracle.ORDERS, *oracle.TYPES)}


@FUZZ
@given(
    order=either(st.sampled_from(oracle.ORDERS), st.text(alphabet="RGBAx_", min_size=1)),
    data_type=either(st.sampled_from(oracle.TYPES), st.text(alphabet="UNORMINT_8", max_size=6)),
    form=st.sampled_from(["string", "names", "tokens", "pyopencl", "junk"]),
    junk=st.one_of(
        st.none(),
        st.floats(),
        st.text(max_size=6),
        st.integers(-5, 2**70),
        st.lists(st.integers(), max_size=3),
    ),
    data=st.data(),
)
def test_image_format_parsing(order, data_type, form, junk, data):
    counted("image formats")
    from qcom_ext import parse_image_format

    o_name = {o.upper(): o for o in oracle.ORDERS}.get(order.upper())
    t_name = {t.upper(): t for t in oracle.TYPES}.get(data_type.upper())
    if form == "junk":
        value = junk
        if isinstance(junk, int):  # a pair of unknown tokens (outside the Qualcomm ranges)
            assume(not 0x4130 <= junk <= 0x415F and junk not in _tokens())
            value = (junk, junk)
        typed_error(lambda: parse_image_format(value), kinds=(ConfigError,))
        return
    if form in ("string", "names"):
        spelt = data.draw(_spelt(order)), data.draw(_spelt(data_type))
        value = "/".join(spelt) if form == "string" else spelt
        if o_name is None or t_name is None:
            bad = spelt[0] if o_name is None else spelt[1]
            typed_error(lambda: parse_image_format(value), bad.strip(), kinds=(ConfigError,))
            return
    elif o_name is None or t_name is None:
        return  # tokens exist only for known names
    elif form == "tokens":
        value = (getattr(C, f"CL_{o_name}"), np.int64(getattr(C, f"CL_{t_name}")))
    else:
        import pyopencl as cl

        value = cl.ImageFormat(getattr(C, f"CL_{o_name}"), getattr(C, f"CL_{t_name}"))
    layout = oracle.format_layout(o_name, t_name)
    if layout is None:
        typed_error(
            lambda: parse_image_format(value), f"CL_{o_name}/CL_{t_name}", kinds=(ConfigError,)
        )
        return
    fmt = parse_image_format(value)
    tokens = (getattr(C, f"CL_{o_name}"), getattr(C, f"CL_{t_name}"))
    assert (fmt.channel_order, fmt.channel_data_type) == tokens
    assert (fmt.channels, fmt.element_size, fmt.vendor) == (*layout, False)


_SIZE = st.one_of(
    st.integers(-2, 0),
    st.sampled_from([8193, 2**40, 2**64, 2**70]),
    st.floats(1, 4),
    st.booleans(),
    st.just("8"),
    st.none(),
)
_GOOD = st.one_of(st.integers(1, 24), st.integers(1, 8).map(np.int32))
_SHAPE = either(
    st.one_of(st.tuples(_GOOD, _GOOD), st.lists(_GOOD, min_size=2, max_size=2)),
    st.one_of(st.tuples(_GOOD | _SIZE, _SIZE), st.lists(_GOOD, max_size=3), _SIZE),
)
_FLAGS = either(
    st.sampled_from(["read_write", "READ-ONLY", " write_only"]),
    st.sampled_from(["rw", "", 7, -1, 2**70, None]),
)


@FUZZ
@given(
    shape=_SHAPE,
    flags=_FLAGS,
    seed=st.integers(0, 2**32 - 1),
    fmt=st.sampled_from(
        ["RGBA/UNORM_INT8", "R/FLOAT", "RG/UNSIGNED_INT16", "RGBA/HALF_FLOAT", "BGRA/SIGNED_INT8"]
    ),
)
def test_image_creation(ctx, queue, shape, fmt, seed, flags):
    counted("image shapes and dtypes")
    import pyopencl as cl

    limit = qcom_ext.probe().limits.image2d_max_size or (2**64, 2**64)
    sizes = list(shape) if isinstance(shape, (tuple, list)) else None
    if not isinstance(flags, str) or flags.strip().lower().replace("-", "_") not in (
        "read_write",
        "read_only",
        "write_only",
    ):
        named = repr(flags) if isinstance(flags, str) else "flags"
        typed_error(
            lambda: qcom_ext.create_image(ctx, (4, 4), fmt, flags=flags),
            named,
            kinds=(ConfigError,),
        )
        return
    if not (sizes and len(sizes) == 2 and all(oracle.is_int(s) and s >= 1 for s in sizes)):
        typed_error(lambda: qcom_ext.create_image(ctx, shape, fmt), kinds=(ConfigError,))
        return
    width, height = (int(s) for s in sizes)
    if width > limit[0] or height > limit[1]:
        too_big = str(width if width > limit[0] else height)
        typed_error(lambda: qcom_ext.create_image(ctx, shape, fmt), too_big, kinds=(ConfigError,))
        return
    listed = cl.get_supported_image_formats(
        ctx, cl.mem_flags.READ_WRITE, cl.mem_object_type.IMAGE2D
    )
    wanted = qcom_ext.parse_image_format(fmt)
    if not any((f.channel_order, f.channel_data_type) == wanted for f in listed):
        typed_error(
            lambda: qcom_ext.create_image(ctx, shape, fmt), str(wanted), kinds=(ConfigError,)
        )
        return
    image = qcom_ext.create_image(ctx, shape, fmt, flags=flags)
    element = image.format.element_size
    pixels = np.random.default_rng(seed).integers(0, 256, height * width * element, np.uint8)
    image.write(
        queue, pixels.view(image.format.dtype).reshape(height, width, *image.format.pixel_shape)
    )
    assert image.shape == (width, height) and not image.compressed
    assert image.read(queue).view(np.uint8).tobytes() == pixels.tobytes()  # bit for bit


# ---- weight images, box sizes, the accelerated image ops ---------------------------------


@st.composite
def weight_inputs(draw):
    """Consistent weight-image arguments, then (half the time) one of them spoilt."""
    separable = draw(st.booleans())
    phases = draw(st.sampled_from([1, 2, 4] if separable else [1, 4, 16]))
    n, m = draw(st.integers(1, 16)), draw(st.integers(1, 16))
    shape = (phases, 2, n) if separable else (phases, m, n)
    dtype = np.dtype(draw(st.sampled_from([np.float64, np.float32, np.int16])))
    if dtype.kind == "f":
        weights = draw(hnp.arrays(dtype, shape, elements=st.floats(-100, 100, width=32)))
    else:
        weights = draw(hnp.arrays(dtype, shape, elements=st.integers(-100, 100)))
    filter_size = None
    if separable and draw(st.booleans()):
        short = draw(st.integers(1, n))
        filter_size = draw(st.sampled_from([(n, short), (short, n)]))
        weights[:, 0, filter_size[0] :] = 0
        weights[:, 1, filter_size[1] :] = 0
    if phases == 1 and draw(st.booleans()):
        weights = weights[0]  # one phase, given without its axis
    fx, fy = filter_size or ((n, n) if separable else (n, m))
    center = (draw(st.integers(0, fx - 1)), draw(st.integers(0, fy - 1)))
    storage = draw(st.sampled_from([np.float16, np.float32]))
    args = {
        "weights": weights,
        "separable": separable,
        "filter_size": filter_size,
        "center": center,
        "storage": storage,
    }
    if draw(st.booleans()):
        spoil = draw(st.sampled_from(sorted(_SPOILERS)))
        args[spoil] = draw(_SPOILERS[spoil])
    return args


_SPOILERS = {
    "separable": st.sampled_from([1, "yes", None]),
    "storage": st.sampled_from([np.float64, np.int8, "junk", None]),
    "center": st.sampled_from([(-1, 0), (0, 17), (0.5, 0), (True, 0), None, (1,), "0,0"]),
    "filter_size": st.sampled_from([(0, 1), (17, 17), (1.0, 2), (True, 2), "3x3", 4, (40, 1)]),
    "weights": st.one_of(
        hnp.arrays(
            np.float64,
            st.sampled_from(
                [(3,), (0, 3), (3, 0, 3), (3, 3, 3), (2, 2, 2, 2), (1, 17, 3), (256, 1, 1)]
            ),
        ),
        st.sampled_from(
            [
                np.full((3, 3), np.nan),
                np.full((3, 3), np.inf),
                np.full((3, 3), 7e4),
                np.full((3, 3), 1e39),
                np.ones((3, 3), bool),
                np.ones((3, 3), complex),
                np.array([[1, "a"]], object),
                "weights",
                None,
            ]
        ),
    ),
}


@FUZZ
@given(args=weight_inputs(), phase=st.sampled_from([0, 1, 0.5, True, -1, 99, "0", None]))
def test_weight_images(ctx, queue, args, phase):
    counted("weight images")
    import pyopencl as cl

    expected = oracle.weight_oracle(**args)
    weights, storage = args.pop("weights"), args.pop("storage")

    def make():
        return WeightImage(ctx, weights, dtype=storage, **args)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy cast warning is no answer either
        if expected is None:
            typed_error(make, kinds=(ConfigError,))
            return
        image = make()
    array, (fx, fy) = expected
    stored = array.astype(storage)
    assert image.weights.dtype == np.dtype(storage) and np.array_equal(image.weights, stored)
    assert (image.filter_size, image.center, image.num_phases) == (
        (fx, fy),
        args["center"],
        len(array),
    )
    for p in range(len(array)):
        slice_ = stored[p].astype(np.float64)
        want = np.outer(slice_[1, :fy], slice_[0, :fx]) if args["separable"] else slice_
        assert np.array_equal(image.kernel_2d(p), want)
    if not (oracle.is_int(phase) and 0 <= phase < len(array)):
        typed_error(lambda: image.kernel_2d(phase), repr(phase), kinds=(ConfigError,), main=False)
    # what the portable qcom_convolve_imagef reads: a header texel pair, then the weights
    width, height = image.image.width, image.image.height
    texels = np.empty((height, width, 4), np.float32)
    cl.enqueue_copy(queue, texels, image.image, origin=(0, 0), region=(width, height))
    flat = texels.reshape(height, width * 4)
    per_axis = len(array) if args["separable"] else math.isqrt(len(array))
    header = [fx, fy, *args["center"], len(array), float(args["separable"]), per_axis, 1.0]
    assert flat[0, :8].tolist() == header and height == 1 + len(array) * array.shape[1]
    rows = stored.astype(np.float32).reshape(-1, array.shape[2])
    assert np.array_equal(flat[1:, : array.shape[2]], rows)
    image.release()


_NUMBER = either(
    st.one_of(
        st.floats(0.01, 8),
        st.integers(1, 8),
        st.integers(1, 8).map(np.int64),
        st.floats(0.5, 8).map(np.float16),
    ),
    st.sampled_from(
        [
            0,
            -2,
            0.0,
            -0.5,
            1e-50,
            16.000001,
            17,
            1e39,
            10**400,
            math.nan,
            math.inf,
            True,
            "2",
            None,
            [2],
            2j,
        ]
    ),
)


@FUZZ
@given(width=_NUMBER, height=_NUMBER, native=st.booleans())
def test_box_sizes(width, height, native):
    counted("box sizes")
    from qcom_ext.device.caps import Limits

    if native:
        limits = (16, 8)
        device = DeviceCaps.from_info(
            extensions="cl_qcom_accelerated_image_ops",
            disabled=(),
            limits=Limits(hof_max_filter_size=limits),
        )
    else:
        limits = oracle.FALLBACK_MAX_FILTER
        device = DeviceCaps.from_info(extensions="", disabled=())
    w, h = oracle.float32_of(width), oracle.float32_of(height)
    if not all(
        v is not None and math.isfinite(v) and 0 < v <= top
        for v, top in zip((w, h), limits, strict=True)
    ):
        typed_error(
            lambda: qcom_ext.box_size(width, height, device=device), "box", kinds=(ConfigError,)
        )
        return
    size = qcom_ext.box_size(width, height, device=device)
    assert (float(size["x"]), float(size["y"]), size.nbytes) == (w, h, 8)


_PIXELS = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 9), st.integers(1, 9), st.just(4)),
    elements=st.floats(-4, 4, width=32),
)


@FUZZ
@given(
    size=st.sampled_from([(2, 2), (3, 1.5)]),
    pixels=_PIXELS,
    method=st.sampled_from(["tiled", "blocked"]),
)
def test_box_filter_image(ctx, queue, size, pixels, method):
    counted("box filter image")
    from qcom_ext.ext.accelerated import whole_image as image_ops

    src = image_ops.rgba_image(ctx, pixels)
    dst = image_ops.empty_rgba_image(ctx, pixels.shape[1], pixels.shape[0])
    image_ops.box_filter_image(queue, src, size, dst, method=method).wait()
    want = accelerated_reference.box_filter_image(pixels, size)
    np.testing.assert_allclose(image_ops.read_rgba_image(queue, dst), want, rtol=1e-5, atol=1e-5)


@FUZZ
@given(
    weights=hnp.arrays(np.float64, (3, 3), elements=st.floats(-2, 2)),
    pixels=_PIXELS,
    method=st.sampled_from(["tiled", "blocked", "per_pixel"]),
)
def test_convolve_image(ctx, queue, weights, pixels, method):
    counted("convolve image")
    from qcom_ext.ext.accelerated import whole_image as image_ops

    image = WeightImage(ctx, weights, center=(1, 1), dtype=np.float32)
    src = image_ops.rgba_image(ctx, pixels)
    dst = image_ops.empty_rgba_image(ctx, pixels.shape[1], pixels.shape[0])
    image_ops.convolve_image(queue, src, image, dst, method=method).wait()
    want = accelerated_reference.convolve_image(pixels, image.kernel_2d(0), (1, 1))
    np.testing.assert_allclose(image_ops.read_rgba_image(queue, dst), want, rtol=1e-5, atol=1e-5)


# ---- recording updates -------------------------------------------------------------------

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


@pytest.fixture(scope="module", params=["own path", "replay"])
def recorded(request, ctx, queue):
    rec = Recorded(ctx, queue, request.param)
    assert request.param != "replay" or rec.rec.path == "replay"
    yield rec
    rec.rec.release()


_BAD_SCALAR = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.sampled_from(
        [
            1e300,
            math.nan,
            math.inf,
            10**400,
            True,
            None,
            "3",
            2**31,
            -(2**31) - 1,
            np.int64(1),
            np.int16(1),
            np.float16(1),
            b"abc",
            2.5,
        ]
    ),
)
_BAD_KEY = st.sampled_from(
    [(3, 0), (-1, 1), (0, 2), 0, (0,), (True, 1), (0, 1, 2), "0,1", (0.0, 1)]
)
_BAD_DIMS = st.sampled_from([0, -1, 2**64, 2**70, 1.5, None, "4", (), (4, 4), (1, 2, 3, 4), [0]])
_BAD_OFFSET = st.sampled_from([-1, 2**64 - 1, 2**70, 0.5, None, (0, 0)])
_BAD_INDEX = st.sampled_from([-1, 3, True, 1.0, "0", None])


@st.composite
def valid_args(draw):
    """Updates every recording takes: a buffer for argument 0, a scalar of the recorded
    type (numpy, a Python number that fits, raw bytes of its size) for argument 1."""
    keys = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), max_size=3, unique=True))
    out = {}
    for d, a in keys:
        if a == 0:
            out[(d, a)] = draw(st.sampled_from("ABF"))
        elif RECORDED[d][0] == "add":
            out[(d, a)] = draw(
                st.one_of(
                    st.integers(-50, 50),
                    st.integers(-50, 50).map(np.int32),
                    st.binary(min_size=4, max_size=4),
                )
            )
        else:
            out[(d, a)] = draw(
                st.one_of(st.floats(-9, 9), st.integers(-9, 9), st.floats(-9, 9).map(np.float32))
            )
    return out


_GS = st.one_of(st.integers(1, 10).map(lambda k: 4 * k), st.tuples(st.integers(1, 40)))
_SIZES = st.fixed_dictionaries(
    {},
    optional={
        "global_size": st.dictionaries(st.integers(0, 2), _GS, max_size=2),
        "local_size": st.dictionaries(st.just(0), st.sampled_from([1, 2, 4, (4,), [2]])),
        "global_offset": st.dictionaries(st.integers(0, 2), st.integers(0, 24), max_size=2),
    },
)
_UPDATES = one_spoilt(
    {"args": valid_args(), "sizes": _SIZES, "not_a_mapping": st.none()},
    {
        "args": st.one_of(
            st.dictionaries(_BAD_KEY, st.integers(0, 3), min_size=1, max_size=1),
            st.dictionaries(
                st.tuples(st.integers(0, 2), st.just(1)), _BAD_SCALAR, min_size=1, max_size=1
            ),
            st.dictionaries(
                st.tuples(st.integers(0, 2), st.just(0)),
                st.sampled_from([1, "nope", np.int32(0), b"\0" * 8]),
                min_size=1,
                max_size=1,
            ),
        ),
        "sizes": st.one_of(
            st.fixed_dictionaries(
                {
                    "global_size": st.dictionaries(
                        st.integers(0, 2) | _BAD_INDEX, _BAD_DIMS | _GS, min_size=1
                    )
                }
            ),
            st.fixed_dictionaries(
                {
                    "local_size": st.dictionaries(
                        st.integers(0, 2), _BAD_DIMS | st.integers(1, 16), min_size=1
                    )
                }
            ),
            st.fixed_dictionaries(
                {"global_offset": st.dictionaries(st.integers(0, 2), _BAD_OFFSET, min_size=1)}
            ),
        ),
        "not_a_mapping": st.sampled_from([5, "ab", [(0, 1)]]),
    },
)


@FUZZ
@given(updates=_UPDATES)
def test_recording_updates(recorded, updates):
    counted("recording updates")
    rec = recorded
    arg_updates, sizes, not_a_mapping = updates["args"], updates["sizes"], updates["not_a_mapping"]
    if not_a_mapping is not None:
        typed_error(
            lambda: rec.rec.replay(rec.queue, args=not_a_mapping), "args", kinds=(ConfigError,)
        )
        return
    args = {k: rec.buffers.get(v, v) if isinstance(v, str) else v for k, v in arg_updates.items()}
    plan = [[k, b, s.tobytes(), gs, ls, off] for k, b, s, gs, ls, off in RECORDED]
    ok = True
    for key, value in arg_updates.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(map(oracle.is_int, key))) or not (
            0 <= key[0] < 3 and 0 <= key[1] < 2
        ):
            ok = False
        elif key[1] == 0:  # the buffer
            ok &= isinstance(value, str) and value in rec.buffers
            plan[key[0]][1] = value
        else:
            raw = (
                None
                if isinstance(value, str)
                else oracle.scalar_oracle(value, RECORDED[key[0]][2].dtype)
            )
            ok &= raw is not None
            plan[key[0]][2] = raw
    for name, minimum, column in (
        ("global_size", 1, 3),
        ("local_size", 1, 4),
        ("global_offset", 0, 5),
    ):
        for d, value in sizes.get(name, {}).items():
            dims = oracle.dims_oracle(value, minimum)
            if not (oracle.is_int(d) and 0 <= d < 3) or dims is None:
                ok = False
                continue
            ok &= not (name == "local_size" and RECORDED[d][4] is None)
            plan[d][column] = dims
    for _, _, _, gs, ls, off in plan:
        ok &= len(gs) == 1
        if ls is not None:
            ok &= len(ls) == len(gs) and gs[0] % ls[0] == 0 and math.prod(ls) <= rec.max_wg
        if off is not None:
            ok &= len(off) == len(gs) and gs[0] + off[0] <= oracle.SIZE_MAX
    if not ok:
        typed_error(lambda: rec.run(args=args, **sizes), kinds=(ConfigError,))
        return
    got = rec.run(args=args, **sizes)
    memory = {name: np.zeros(N * 4, np.uint8) for name in "ABF"}
    for kernel, buf, raw, gs, _, off in plan:
        start = (off or (0,))[0]
        hit = slice(min(start, N), min(start + gs[0], N))
        if kernel == "add":
            view = memory[buf].view(np.int32)
            view[hit] = view[hit] + np.frombuffer(raw, np.int32)[0]  # wraps, as on the device
        else:
            memory[buf].view(np.float32)[hit] = np.frombuffer(raw, np.float32)[0]
    assert got == {name: data.tobytes() for name, data in memory.items()}


# ---- convolution ops: shapes, dtypes, parameters -----------------------------------------

_BAD_PARAMS = {
    "stride": st.sampled_from([0, -1, 1.5, 2.0, True, None, "1", (1,), (1, 1, 1), (1.0, 1)]),
    "padding": st.sampled_from([-1, 0.5, None, "0", (0, -1), (True, 0), [0, 0, 0]]),
    "dilation": st.sampled_from([0, 1.0, None, (1, 0), "2"]),
    "activation": st.sampled_from(["RELU", "gelu", "", 1, ["relu"], b"relu"]),
    "negative_slope": st.sampled_from([math.nan, math.inf, 1e39, "0.1", None, True, 1j, [0.1]]),
    "dtype": st.sampled_from(["junk", np.int32, np.complex64, np.bool_, "int", object, 3]),
    "pixels": st.sampled_from([3, 0, 16, 4.0, True, "4", None]),
}
_OPS = ("depthwise_conv2d", "conv2d", "conv2d_1x1")
_WEIGHTS = {"depthwise_conv2d": (4, 1, 3, 3), "conv2d": (4, 4, 3, 3), "conv2d_1x1": (4, 4)}


@FUZZ
@given(op=st.sampled_from(_OPS), param=st.sampled_from(sorted(_BAD_PARAMS)), data=st.data())
def test_conv_op_parameters(queue, op, param, data):
    counted("ops: conv parameters")
    value = data.draw(_BAD_PARAMS[param], label=param)
    if op == "conv2d_1x1" and param in ("padding", "dilation", "pixels"):  # what 1x1 takes
        param, value = ("tile", (3, 4)) if param == "pixels" else ("stride", value)
    if op == "conv2d" and param == "pixels":  # conv2d picks its own; its method is checked
        param, value = "method", {None: "IMAGE", True: None}.get(value, value)
    x, weight = np.ones((1, 4, 5, 5), np.float32), np.ones(_WEIGHTS[op], np.float32)
    typed_error(
        lambda: getattr(ops, op)(queue, x, weight, **{param: value}), param, kinds=(ConfigError,)
    )


_BAD_ARRAYS = st.sampled_from(
    [
        np.ones((4, 5, 5, 1, 1), np.float32),
        np.ones((1, 4, 0, 5), np.float32),
        np.ones((1, 4, 5, 5), np.complex64),
        np.ones((1, 4, 5, 5), np.int32),
        "x",
        [[[[1.0]]], [[[1.0, 2.0]]]],
        np.ones((1, 4, 5, 5), object),
        np.ones((2,), np.float32),
    ]
)


@FUZZ
@given(
    op=st.sampled_from(_OPS), which=st.sampled_from(["input", "weight", "bias"]), bad=_BAD_ARRAYS
)
def test_conv_op_arrays(queue, op, which, bad):
    counted("ops: conv arrays")
    arrays = {
        "input": np.ones((1, 4, 5, 5), np.float32),
        "bias": None,
        "weight": np.ones(_WEIGHTS[op], np.float32),
    }
    arrays[which] = bad
    call = lambda: getattr(ops, op)(queue, arrays["input"], arrays["weight"], arrays["bias"])  # noqa: E731
    typed_error(call, which, kinds=(ConfigError,))


@FUZZ
@given(
    n=st.integers(1, 2),
    c=st.integers(1, 9),
    h=st.integers(1, 8),
    w=st.integers(1, 8),
    padding=st.one_of(st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2))),
    layout=st.sampled_from(["NCHW", "NHWC"]),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_depthwise_shapes(queue, n, c, h, w, padding, layout, bias, seed):
    counted("ops: depthwise shapes")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32) if bias else None
    given_x = x if layout == "NCHW" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    ph, pw = (padding, padding) if isinstance(padding, int) else padding

    def call():
        return ops.depthwise_conv2d(queue, given_x, weight, b, padding=padding, layout=layout)

    if h + 2 * ph < 3 or w + 2 * pw < 3:
        typed_error(call, "smaller", kinds=(ConfigError,))
        return
    got = call()
    want = conv2d_reference(x, weight, b, padding=(ph, pw), groups=c)
    want = want if layout == "NCHW" else want.transpose(0, 2, 3, 1)
    assert got.shape == want.shape
    assert_close(got, want, np.float32)


# ---- bfloat16 ----------------------------------------------------------------------------

_F32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
_F32_BITS = st.integers(0, 0xFFFFFFFF).map(lambda b: np.array(b, np.uint32).view(np.float32)[()])


@FUZZ
@given(
    values=st.lists(st.one_of(_F32, _F32_BITS), min_size=1, max_size=8),
    a=st.integers(0, 0xFFFF),
    b=st.integers(0, 0xFFFF),
    acc=_F32,
    bad=st.sampled_from([1 + 2j, "1.0", [1, [2]], None, object()]),
    bad_bits=st.sampled_from([-1, 0x10000, 2**40, 1.5, np.float32(16256), "0x3f80", [1, -2]]),
)
def test_bfloat16_conversions(values, a, b, acc, bad, bad_bits):
    counted("bfloat16")
    from qcom_ext.ext.program.bfloat16 import from_bfloat16, mad32_bf16, to_bfloat16

    floats = np.array(values, np.float32)
    bits = to_bfloat16(floats)
    assert bits.dtype == np.uint16
    assert bits.tolist() == [oracle.to_bf16_reference(f) for f in floats]
    assert from_bfloat16(bits).view(np.uint32).tolist() == [v << 16 for v in bits.tolist()]
    got, want = float(mad32_bf16(a, b, acc)), oracle.mad32_bf16_reference(a, b, acc)
    assert (math.isnan(got) and math.isnan(want)) or (
        got == want and math.copysign(1, got) == math.copysign(1, want)
    ), (hex(a), hex(b), acc, got, want)
    typed_error(lambda: to_bfloat16(bad), "to_bfloat16", kinds=(ConfigError,), main=False)
    typed_error(lambda: from_bfloat16(bad_bits), "from_bfloat16", kinds=(ConfigError,), main=False)
    typed_error(lambda: mad32_bf16(a, b, bad), "acc", kinds=(ConfigError,), main=False)


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
    from qcom_ext.ext.program.build import define_options

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


# ---- what fuzzing found: each of these failed before its fix -----------------------------


def _weights(ctx, **kwargs):
    return WeightImage(ctx, np.ones((4, 3, 3)), center=(1, 1), **kwargs)


def _recording(ctx, queue):
    rec = Recorded(ctx, queue, "replay")
    return lambda **updates: rec.run(**updates)


def _default_device(spec: str):
    from qcom_ext.device.probe import _default, default_device

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYOPENCL_CTX", spec)
        _default.pop(spec, None)
        return default_device()


def _probe_answering(answers: dict[int, bytes]):
    from qcom_ext.device.probe import read_device

    info = adreno740_device_info()
    info.update(answers)
    with fake_driver(info, platform_info(), []):
        return read_device(DEVICE)


FOUND = {  # id: (call(ctx, queue), what must name it); every one a ConfigError or a subclass
    # a str, float or bool "handle" reached the driver (cffi made 'a' 97): a segfault
    "handle-str": (lambda c, q: qcom_ext.accelerated_limits("a"), "'a'"),
    "handle-float": (lambda c, q: qcom_ext.box_size(1, 1, device=3.7), "3.7"),
    "handle-bool": (lambda c, q: qcom_ext.probe(True), "True"),
    # a silent wrong result: bits beyond 16 wrapped (0x13F80 read as 1.0), floats truncated
    "bf16-wide-bits": (lambda c, q: bfloat16.from_bfloat16(0x13F80), "81792"),
    "bf16-float-bits": (lambda c, q: bfloat16.from_bfloat16(1.5), "float64"),
    "bf16-complex": (lambda c, q: bfloat16.to_bfloat16(1 + 2j), "complex"),
    # recording updates: TypeError, ValueError, pyopencl's std::bad_cast, a silent inf
    "update-not-a-mapping": (lambda c, q: _recording(c, q)(args=5), "args"),
    "update-float-size": (lambda c, q: _recording(c, q)(global_size={1: 4.0}), "4.0"),
    "update-size-t": (lambda c, q: _recording(c, q)(global_size={1: 2**70}), "size_t"),
    "update-offset-size-t": (
        lambda c, q: _recording(c, q)(global_offset={1: 2**64 - 1}),
        "CL_INVALID_GLOBAL_OFFSET",
    ),
    "update-float-overflow": (lambda c, q: _recording(c, q)(args={(1, 1): 1e300}), "1e+300"),
    "update-int-overflow": (lambda c, q: _recording(c, q)(args={(1, 1): 10**400}), "range"),
    # ops: TypeError / ValueError, or a float accepted and truncated into a -D value
    "ops-float-stride": (
        lambda c, q: ops.depthwise_conv2d(
            q, np.ones((1, 4, 5, 5), np.float32), np.ones((4, 1, 3, 3), np.float32), stride=1.5
        ),
        "1.5",
    ),
    "ops-bool-stride": (
        lambda c, q: ops.conv2d_1x1(
            q, np.ones((1, 4, 5, 5), np.float32), np.ones((4, 4), np.float32), stride=True
        ),
        "True",
    ),
    "ops-float-pixels": (
        lambda c, q: ops.depthwise_conv2d(
            q, np.ones((1, 4, 5, 5), np.float32), np.ones((4, 1, 3, 3), np.float32), pixels=4.0
        ),
        "4.0",
    ),
    "ops-float-tile": (
        lambda c, q: ops.conv2d_1x1(
            q, np.ones((1, 4, 5, 5), np.float32), np.ones((4, 4), np.float32), tile=(2.0, 4)
        ),
        "2.0",
    ),
    "ops-list-activation": (
        lambda c, q: ops.conv2d(
            q,
            np.ones((1, 4, 5, 5), np.float32),
            np.ones((4, 4, 3, 3), np.float32),
            activation=["relu"],
        ),
        "['relu']",
    ),
    "ops-str-slope": (
        lambda c, q: ops.conv2d(
            q,
            np.ones((1, 4, 5, 5), np.float32),
            np.ones((4, 4, 3, 3), np.float32),
            negative_slope="0.1",
        ),
        "'0.1'",
    ),
    "ops-float-shape": (lambda c, q: ops.BufferTensor.empty(c, (1, 2.5, 3, 3), np.float32), "2.5"),
    "ops-junk-dtype": (lambda c, q: ops.BufferTensor.empty(c, (1, 2, 3, 3), "junk"), "'junk'"),
    "box-huge-int": (lambda c, q: qcom_ext.box_size(10**400, 1, device=c), "box width"),
    "kernel-2d-half": (lambda c, q: _weights(c).kernel_2d(0.5), "0.5"),
    "kernel-2d-bool": (lambda c, q: _weights(c).kernel_2d(True), "True"),  # was a 4-D array
    "image-size-t": (lambda c, q: qcom_ext.create_image(c, (2**64, 4)), "size_t"),
    "image-too-wide": (lambda c, q: qcom_ext.create_image(c, (10**6, 4)), "IMAGE2D_MAX_WIDTH"),
    "image-unlisted-format": (
        lambda c, q: qcom_ext.create_image(c, (4, 4), "RG/UNSIGNED_INT16"),
        "CL_RG/CL_UNSIGNED_INT16",
    ),
    "define-not-ascii": (lambda c, q: define_options({"é": 1}), "'é'"),
    "define-nul": (lambda c, q: define_options({"A": "1\0-DB"}), "control"),
    "define-int-name": (lambda c, q: define_options({1: 1}), "1"),
    "unknown-extension": (
        lambda c, q: qcom_ext.probe().status(["cl_qcom_bitreverse"]),
        "cl_qcom_bitreverse",
    ),
    "pyopencl-ctx-superscript": (lambda c, q: _default_device("²"), "'²'"),  # a ValueError
    "driver-odd-width": (lambda c, q: _probe_answering({0x1016: b"\1\0\0"}), "0x1016"),
}


@pytest.mark.parametrize("found", sorted(FOUND))
def test_found_by_fuzzing(ctx, queue, found):
    call, named = FOUND[found]
    kinds = (DriverAnswerError,) if found.startswith("driver") else (ConfigError, KeyError)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
        exc = typed_error(lambda: call(ctx, queue), named, kinds=kinds, main=False)
    assert isinstance(exc, QcomExtError)


def test_found_by_fuzzing_names_not_utf8_are_kept():
    """A cl_name_version name that is not UTF-8 made the probe raise UnicodeDecodeError."""
    caps = _probe_answering({0x1060: struct.pack("<I64s", 1 << 22, b"cl_qcom_\xff")})
    assert caps.extension_versions == {"cl_qcom_\ufffd": "1.0.0"}


def test_found_by_fuzzing_long_driver_strings_are_linear():
    """A 32 kB driver string took 12 s to probe (two quadratic patterns); 1 MB must take
    well under the generous limit of this child process (it takes milliseconds)."""
    import subprocess
    import sys

    code = (
        "from qcom_ext.device.caps import DeviceCaps\n"
        "for text in ('1' * 10**6, 'Adreno' + ' ' * 10**6):\n"
        "    DeviceCaps.from_info(extensions='', device_version=text, driver_version=text,"
        " disabled=())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, env=env)
