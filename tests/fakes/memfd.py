"""Memfds standing in for dma-buf file descriptors in the host-pointer tests (the
portable fallback maps them, the fake drivers receive them), and the count of their
mappings in this process, which shows whether an import unmapped what it mapped.

>>> import os
>>> if hasattr(os, "memfd_create"):
...     with memfd(4096) as fd:
...         assert os.fstat(fd).st_size == 4096 and mappings() == 0
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

import pytest

#: The name test memfds carry (what :func:`mappings` looks for). A test file whose
#: imports really map memfds (the portable path) names its own, so that a mapping it
#: leaves to the garbage collector never shows in another file's absolute counts.
NAME = "qcom-ext-fake-dmabuf"

needs_memfd = pytest.mark.skipif(
    not hasattr(os, "memfd_create"), reason="memfds stand in for dma-bufs (Linux)"
)


@contextlib.contextmanager
def memfd(size: int = 0, content: bytes = b"", name: str = NAME) -> Iterator[int]:
    """A memfd called ``name`` of ``size`` bytes starting with ``content``, closed
    afterwards."""
    fd = os.memfd_create(name)
    try:
        if size:
            os.ftruncate(fd, size)
        if content:
            os.pwrite(fd, content, 0)
        yield fd
    finally:
        os.close(fd)


def mappings(name: str = NAME) -> int:
    """How many of this process's mappings are of memfds called ``name`` (after a
    collection)."""
    gc.collect()
    with open("/proc/self/maps") as maps:
        return sum(name in line for line in maps)
