"""The walks docs/ARCHITECTURE.md quotes stay within their goals (tests/walks.py).

A public entry point decides its path once, as a :class:`~qcom_ext.device.shared.Route`,
and hands the route down: the context is not turned into reports again, the rule is not
asked twice, and the walk does not climb back into files it has left. These tests count
the stays of the context while the call runs (caches filled first) and fail when a
change re-derives the path along the way.
"""

from __future__ import annotations

import os
import warnings

import pyopencl as cl
import pytest
from conftest import DEVICES
from walks import walk

import qcom_ext

needs_memfd = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs memfd_create")


@pytest.fixture(scope="module")
def context():
    device = next((c for c in DEVICES if c.image_support), None)
    if device is None:
        pytest.skip("needs a device with images")
    return cl.Context([device.device()])


@pytest.fixture
def dmabuf():
    fd = os.memfd_create("walk")
    os.ftruncate(fd, 1 << 16)
    yield qcom_ext.ExternalMemory.dmabuf(fd)
    os.close(fd)


def measured(context, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qcom_ext.QcomExtWarning)
        call()  # caches filled: the walk is the steady one
        return walk(context, call)


def test_nv12_image_walk(context):
    seen = measured(context, lambda: qcom_ext.nv12_image(context, (64, 32)))
    assert len(seen.stays) <= 10 and seen.climbs <= 2, str(seen)
    assert [name for _, name in seen.stays].count("context_caps") == 1, str(seen)


@needs_memfd
def test_nv12_image_over_a_dmabuf_walk(context, dmabuf):
    seen = measured(context, lambda: qcom_ext.nv12_image(context, (64, 32), memory=dmabuf))
    assert len(seen.stays) <= 12 and seen.climbs <= 3, str(seen)
    assert [name for _, name in seen.stays].count("import_route") == 1, str(seen)


@needs_memfd
def test_import_memory_walk(context, dmabuf):
    seen = measured(context, lambda: qcom_ext.import_memory(context, dmabuf, 4096))
    assert len(seen.stays) <= 8 and seen.climbs <= 2, str(seen)
