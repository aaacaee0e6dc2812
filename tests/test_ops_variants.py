"""The tuned-variant entries of the tuning cache (qcom_ext/ext/variant_store.py): every
entry read back is untrusted input, and anything but a well-formed entry for its own key
naming an allowed variant is a miss."""

from __future__ import annotations

import json

import pytest

from qcom_ext.ext.variant_store import VariantCache, VariantKey, cached_variant, store_variant
from qcom_ext.ops import tuning

KEY = VariantKey("pocl", "cpu", "6.0", "conv2d_1x1", "0" * 64, "CI=8 CO=8", (1, 4, 4, 8))
ALLOWED = {(2, 4, 0, 0), (4, 4, 8, 8)}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    tuning.forget()
    yield VariantCache(tuning.tuning_dir())
    tuning.forget()


def test_a_stored_variant_is_found_by_its_key_only(cache):
    store_variant(KEY, (4, 4, 8, 8), 1000.0, [((2, 4, 0, 0), 1500.0), ((4, 4, 8, 8), 1000.0)])
    assert cached_variant(KEY, ALLOWED) == (4, 4, 8, 8)
    tuning.forget()
    assert cache.load(KEY) == (4, 4, 8, 8)
    for field, value in [("shape", (1, 4, 4, 9)), ("driver", "6.1"), ("options", "CI=8")]:
        assert cache.load(KEY._replace(**{field: value})) is None
    entry = json.loads(cache.path(KEY).read_text())
    assert entry["measured"] == [[[2, 4, 0, 0], 1500.0], [[4, 4, 8, 8], 1000.0]]


@pytest.mark.parametrize(
    "change",
    [
        {"format": "qcom_ext-tuning"},
        {"version": 2},
        {"variant": [4, 4, 8]},  # not in the space
        {"variant": [4, 4, 8, True]},
        {"variant": [4.0, 4, 8, 8]},
        {"variant": "4,4,8,8"},
        {"variant": [4, 4, 8, -8]},
        {"key": {**KEY.as_dict(), "shape": [1, 4, 4, 9]}},  # another key's entry, renamed
    ],
)
def test_malformed_or_foreign_entries_are_misses(cache, change):
    store_variant(KEY, (4, 4, 8, 8), 1000.0, [])
    path = cache.path(KEY)
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    tuning.forget()
    assert cached_variant(KEY, ALLOWED) is None


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "null", "{" * 100_000, "x" * 70_000])
def test_unreadable_entries_are_misses(cache, text):
    store_variant(KEY, (4, 4, 8, 8), 1000.0, [])
    cache.path(KEY).write_text(text)
    tuning.forget()
    assert cached_variant(KEY, ALLOWED) is None


def test_a_variant_outside_the_allowed_ones_is_a_miss(cache):
    store_variant(KEY, (8, 8, 16, 16), 1000.0, [])
    assert cached_variant(KEY, ALLOWED) is None
    assert cached_variant(KEY, ALLOWED | {(8, 8, 16, 16)}) == (8, 8, 16, 16)


def test_without_a_cache_the_choice_lives_in_the_process(tmp_path, monkeypatch):
    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("QCOM_EXT_NO_CACHE", "1")
    tuning.forget()
    store_variant(KEY, (2, 4, 0, 0), 10.0, [])
    assert cached_variant(KEY, ALLOWED) == (2, 4, 0, 0)
    assert not list(tmp_path.rglob("*.json"))
    tuning.forget()
    assert cached_variant(KEY, ALLOWED) is None


@pytest.mark.slow
def test_qcom_ext_tune_searches_the_variants_and_later_layers_run_them(
    device_caps, kernel_context, tmp_path, monkeypatch
):
    """``qcom-ext tune`` (its default, ``--variants search``) on the 1x1 layers at a size
    where two have room for several variants: each row names its variant, the cache keeps
    one variant entry per layer with a choice, layers made later run those variants, and
    a second run is served from the cache."""
    import pyopencl as cl
    from test_samples import device_spec
    from test_tune_cli import run

    from qcom_ext.ops.conv_1x1 import TUNE_SPACE
    from qcom_ext.ops.suite import prepare, suite

    monkeypatch.setenv("QCOM_EXT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("QCOM_EXT_NO_CACHE", raising=False)
    args = ["tune", "--device", device_spec(device_caps), "--kinds", "1x1", "--scale", "0.02"]
    args += ["--budget-s", "0.2", "--repeats", "1"]
    env = {"QCOM_EXT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    first = run(*args, "--json", str(tmp_path / "a.json"), env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    rows = json.loads((tmp_path / "a.json").read_text())["results"]
    assert all(tuple(r["variant"]) in TUNE_SPACE for r in rows)
    queue = cl.CommandQueue(kernel_context)
    tuning.forget()
    choices = 0
    for layer, row in zip(suite(["1x1"], scale=0.02), rows, strict=True):
        op, x = prepare(queue, layer)
        choices += len(op.space(x.shape)) > 1
        assert op.variant_for(x.shape) == tuple(row["variant"]), layer.name
    assert choices == 2
    entries = [json.loads(p.read_text()) for p in (tmp_path / "cache" / "tuning").glob("*")]
    assert sum(e["format"] == "qcom_ext-variant" for e in entries) == choices
    second = run(*args, "--json", str(tmp_path / "b.json"), env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    again = json.loads((tmp_path / "b.json").read_text())["results"]
    assert all(r["from_cache"] for r in again)
    assert [r["variant"] for r in again] == [r["variant"] for r in rows]
    # a variant (th, tw, gh, gw) with a group (gh > 0) runs the staged GEMM, else the
    # register kernel (at this scale pocl's layers have no room for a staged group)
    staged = [r["variant"][2] > 0 for r in rows]
    assert [r["kernel"] for r in rows] == [
        "conv2d_1x1_staged" if s else "conv2d_1x1" for s in staged
    ]
    if device_caps.device_type == "cpu":
        assert not any(staged)
