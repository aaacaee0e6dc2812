"""The one remembered-choice store of variant tuning (qcom_ext/ext/variant_store.py) and
the one chooser (qcom_ext/ops/variant_tuning.py): a whole-image op's choice is kept where
the op's ``tuned=True`` calls look, read back as untrusted input (an unreadable, foreign-
owned or foreign-keyed entry is a miss: the op runs its defaults), and the layers' and the
image ops' choices live side by side in the same files and memo."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import qcom_ext
from qcom_ext import ConfigError
from qcom_ext.ext import variant_store
from qcom_ext.ext.accelerated import whole_image
from qcom_ext.ext.accelerated.points import download, empty, upload
from qcom_ext.ext.accelerated.variants import filter_variants
from qcom_ext.ext.images import upscale as upscale_module
from qcom_ext.ext.variant_store import VariantCache, VariantKey, cached_variant, store_variant
from qcom_ext.ops import tuning
from qcom_ext.ops.variant_tuning import choose, choose_variant
from qcom_ext.reference import accelerated as accelerated_reference
from qcom_ext.reference.bicubic import upscale2x

NOBODY = 65534
SPACE = {"strips": (((1, 2),), ((8, 2),)), "blocked": (((2, 2),), ((4, 4),))}
KEY = VariantKey("pocl", "cpu", "6.0", "box_filter_image", "0" * 64, "fallback", (16, 12))
CHOICE = {"method": "blocked", "block": (2, 2), "local_size": (4, 4)}


@pytest.fixture
def queue(kernel_context, device_caps):
    import pyopencl as cl

    if not device_caps.image_support:
        pytest.skip(f"{device_caps.label} has no image support")
    return cl.CommandQueue(kernel_context)


def images(context, width=16, height=12):
    pixels = np.random.default_rng(3).random((height, width, 4)).astype(np.float32)
    return pixels, upload(context, pixels), empty(context, width, height)


def test_an_image_op_choice_round_trips_and_answers_its_key_only(tuning_cache_dir):
    store_variant(KEY, CHOICE, 900.0, [(CHOICE, 900.0), ({"method": "strips"}, 1200.0)])
    assert cached_variant(KEY, [CHOICE]) == CHOICE
    tuning.forget()
    cache = VariantCache(tuning_cache_dir)
    assert cache.load(KEY) == CHOICE  # lists come back as tuples
    entry = json.loads(cache.path(KEY).read_text())
    assert entry["variant"] == {"method": "blocked", "block": [2, 2], "local_size": [4, 4]}
    for field, value in [("shape", (16, 13)), ("device", "gpu"), ("driver", "6.1")]:
        assert cache.load(KEY._replace(**{field: value})) is None
    # an entry filed under another shape's name is another key's: a miss
    other = KEY._replace(shape=(16, 13))
    cache.path(other).write_text(cache.path(KEY).read_text())
    assert cached_variant(other, [CHOICE]) is None


@pytest.mark.parametrize(
    "variant",
    [
        {"method": 3},
        {"method": "x" * 40},
        {"block": [1, 2, 3, 4, 5]},
        {},
        [],
        {"m": [1.5]},
        [[1], 2],  # an unhashable item: a miss, not a TypeError
        {"block": [[2], 2]},
    ],
)
def test_malformed_choices_are_misses(tuning_cache_dir, variant):
    store_variant(KEY, CHOICE, 900.0, [])
    path = VariantCache(tuning_cache_dir).path(KEY)
    path.write_text(json.dumps({**json.loads(path.read_text()), "variant": variant}))
    tuning.forget()
    assert cached_variant(KEY, [CHOICE, {"method": 3}]) is None


def test_a_layer_choice_is_no_image_op_choice_and_back(tuning_cache_dir):
    store_variant(KEY, (4, 1, 0, 0), 10.0, [])
    assert cached_variant(KEY, {(4, 1, 0, 0)}) == (4, 1, 0, 0)
    assert cached_variant(KEY, [CHOICE]) is None
    store_variant(KEY, CHOICE, 10.0, [])
    assert cached_variant(KEY, {(4, 1, 0, 0)}) is None  # a dict is not in a set of tuples


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown an entry"
)
def test_an_entry_owned_by_another_user_is_a_miss(tuning_cache_dir):
    store_variant(KEY, CHOICE, 900.0, [])
    path = VariantCache(tuning_cache_dir).path(KEY)
    os.chown(path, NOBODY, NOBODY)
    tuning.forget()
    assert cached_variant(KEY, [CHOICE]) is None
    os.chown(path, os.geteuid(), os.getegid())
    tuning.forget()
    assert cached_variant(KEY, [CHOICE]) == CHOICE  # the same file, the user's again


def test_an_entry_in_a_directory_others_can_write_is_a_miss(tuning_cache_dir):
    store_variant(KEY, CHOICE, 900.0, [])
    tuning_cache_dir.chmod(0o777)
    tuning.forget()
    with pytest.warns(qcom_ext.QcomExtWarning, match="writable"):
        assert cached_variant(KEY, [CHOICE]) is None
    tuning_cache_dir.chmod(0o700)


def spy(monkeypatch):
    """The (kernel, global, local) of each launch of the whole-image filters."""
    launched = []
    enqueue = whole_image._enqueue

    def record(queue, kernel, args, sizes, wait_for):
        launched.append((kernel, tuple(sizes[0]), sizes[1] and tuple(sizes[1])))
        return enqueue(queue, kernel, args, sizes, wait_for)

    monkeypatch.setattr(whole_image, "_enqueue", record)
    return launched


def test_box_filter_runs_the_remembered_choice_after_tuning(
    tuning_cache_dir, kernel_context, queue, monkeypatch
):
    pixels, src, dst = images(kernel_context)
    want = accelerated_reference.box_filter_image(pixels, (3, 3))
    variants = filter_variants(queue, src, dst, size=(3, 3), space=SPACE)
    launched = spy(monkeypatch)
    qcom_ext.box_filter_image(queue, src, (3, 3), dst, tuned=True)  # nothing remembered
    default = launched[-1]
    if len(variants) == 1:  # native: one variant, no choice to remember
        choose_variant(variants, queue=queue, repeats=1, remember=True)
        assert not list(tuning_cache_dir.glob("*.json")) or all(
            json.loads(p.read_text())["format"] != "qcom_ext-variant"
            for p in tuning_cache_dir.glob("*.json")
        )
        return
    best = choose_variant(variants, queue=queue, repeats=1, remember=True)
    assert (best.kernel, best.global_size, best.local_size) != default  # SPACE lacks it
    qcom_ext.box_filter_image(queue, src, (3, 3), dst, tuned=True)
    assert launched[-1] == (best.kernel, best.global_size, best.local_size)
    np.testing.assert_allclose(download(queue, dst), want, atol=1e-5)
    tuning.forget()  # a new process: read back from the file
    qcom_ext.box_filter_image(queue, src, (3, 3), dst, tuned=True)
    assert launched[-1] == (best.kernel, best.global_size, best.local_size)
    qcom_ext.box_filter_image(queue, src, (3, 3), dst)  # not asked: the defaults
    assert launched[-1] == default
    _, other_src, other_dst = images(kernel_context, 20, 12)
    for args in [(src, (5, 5), dst), (other_src, (3, 3), other_dst)]:  # other keys
        qcom_ext.box_filter_image(queue, *args)
        qcom_ext.box_filter_image(queue, *args, tuned=True)
        assert launched[-1] == launched[-2]  # the defaults


def test_a_remembered_choice_the_device_refuses_falls_back_to_the_defaults(
    tuning_cache_dir, kernel_context, queue, monkeypatch
):
    pixels, src, dst = images(kernel_context)
    key = whole_image.filter_key(queue, src, dst, size=(3, 3))
    launched = spy(monkeypatch)
    qcom_ext.box_filter_image(queue, src, (3, 3), dst)
    default = launched[-1]
    store_variant(key, {"method": "strips", "block": (1, 2), "local_size": (4096, 4096)}, 1.0, [])
    qcom_ext.box_filter_image(queue, src, (3, 3), dst, tuned=True)
    assert launched[-1] == default
    want = accelerated_reference.box_filter_image(pixels, (3, 3))
    np.testing.assert_allclose(download(queue, dst), want, atol=1e-5)
    with pytest.raises(ConfigError, match="do not pass method"):
        qcom_ext.box_filter_image(queue, src, (3, 3), dst, tuned=True, method="strips")


def test_upscale_runs_the_remembered_choice_after_tuning(
    tuning_cache_dir, kernel_context, queue, monkeypatch
):
    pixels, src, _ = images(kernel_context, 8, 6)
    dst = empty(kernel_context, 16, 12)
    variants = [
        v
        for v in upscale_module.upscale2x_variants(queue, src, dst)
        if v.options["method"] == "blocks" or v.options.get("local_size") == (16, 8)
    ]
    fastest, timed = choose(variants, queue=queue, repeats=1)
    assert fastest is not None and len(timed) == len(variants)
    best = fastest.variant
    assert fastest.ns == min(t.ns for t in timed) and fastest.report.best_ns is not None
    key = upscale_module.upscale2x_key(queue, src, dst)
    assert cached_variant(key, [best.options]) == best.options
    assert VariantCache(tuning_cache_dir).load(key) == best.options
    calls = []
    launch = upscale_module.upscale2x_launch
    monkeypatch.setattr(
        upscale_module, "upscale2x_launch", lambda *a, **k: calls.append(k) or launch(*a, **k)
    )
    qcom_ext.upscale2x_image(queue, src, dst, tuned=True)
    assert {k: v for k, v in calls[-1].items() if v is not None} == best.options
    np.testing.assert_allclose(download(queue, dst), upscale2x(pixels), atol=2e-5)


def test_layers_and_image_ops_share_the_store_and_its_memo(tuning_cache_dir):
    layer_key = KEY._replace(op="depthwise_conv2d", shape=(1, 8, 9, 9))
    store_variant(layer_key, (4, 1, 0, 0), 10.0, [])
    store_variant(KEY, CHOICE, 10.0, [])
    entries = [json.loads(p.read_text()) for p in tuning_cache_dir.glob("*.json")]
    assert sorted(e["key"]["op"] for e in entries) == ["box_filter_image", "depthwise_conv2d"]
    assert {e["format"] for e in entries} == {"qcom_ext-variant"}
    for path in tuning_cache_dir.glob("*.json"):
        path.unlink()
    assert cached_variant(KEY, [CHOICE]) == CHOICE  # memoised
    tuning.forget()  # qcom_ext.tuning.forget drops the store's memo too
    assert cached_variant(KEY, [CHOICE]) is None
    assert cached_variant(layer_key, {(4, 1, 0, 0)}) is None
    assert variant_store.open_store() is not None
