"""Build the convolution kernels once per context, device and variant; launch them with
the tuned local size when one is cached (the driver's choice otherwise)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from qcom_ext import _context_cache
from qcom_ext._resources import kernels_dir
from qcom_ext.ext.program.launch import enqueue
from qcom_ext.ops.tuning import KernelIdentity, cached_local_size, kernel_identity, padded

__all__ = ["Launcher", "kernel_for", "source_digest"]


@cache
def _source(filename: str) -> tuple[str, str]:
    """The text of ``kernels/<filename>`` and a hash of it and the headers it uses."""
    folder = kernels_dir()
    text = (folder / filename).read_text()
    digest = hashlib.sha256(text.encode())
    for header in sorted(folder.glob("*.h")) + sorted((folder / "compat").glob("*.h")):
        digest.update(header.name.encode() + b"\0" + header.read_bytes())
    return text, digest.hexdigest()


def source_digest(filename: str) -> str:
    """The hash of ``kernels/<filename>`` and the headers it may include."""
    return _source(filename)[1]


@dataclass
class Launcher:
    """One kernel of one built variant, with its tuning identity. Setting the arguments
    and enqueueing happen under a lock (``launch.enqueue``), so threads may share a
    layer."""

    kernel: Any
    identity: KernelIdentity
    device: Any
    _fits: dict[tuple[int, ...], bool] = field(default_factory=dict, repr=False)

    def local_size(self, global_size: Sequence[int]) -> tuple[int, ...] | None:
        """The cached tuned local size, or None (the driver's choice) when there is none or
        it is one this kernel cannot take on its device (a corrupt or altered entry)."""
        local = cached_local_size(self.identity, global_size, pad_global=True)
        if local is not None and local not in self._fits:
            import pyopencl as cl

            group = self.kernel.get_work_group_info(
                cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device
            )
            items = self.device.max_work_item_sizes
            self._fits[local] = len(local) == len(global_size) and (
                math.prod(local) <= group
                and all(v <= m for v, m in zip(local, items, strict=False))
            )
        return local if local is None or self._fits[local] else None

    def __call__(
        self,
        queue: Any,
        global_size: Sequence[int],
        *args: Any,
        local_size: Any = "tuned",
        wait_for: Any = None,
    ) -> Any:
        """Set ``args`` and enqueue (:func:`qcom_ext.ext.program.launch.enqueue`).
        ``local_size``: "tuned" (cached tuning or the driver's choice), None (the driver's
        choice) or a tuple; the global size is padded to it."""
        local = self.local_size(global_size) if local_size == "tuned" else local_size
        return enqueue(queue, self.kernel, padded(global_size, local), local, args, wait_for)


def _options_key(defines: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in defines.items() if v is not False))


def kernel_for(
    owner: Any, device: Any, filename: str, name: str, defines: Mapping[str, Any]
) -> Launcher:
    """The kernel ``name`` of ``kernels/<filename>`` built for ``device`` with ``defines``
    (and the device's quirk defines, as every build: :meth:`DeviceCaps.compiler_options`).
    Programs are cached for the context of ``owner``, the queue (or context) the caller
    holds, as long as it lives (qcom_ext._context_cache)."""
    import pyopencl as cl

    from qcom_ext.ext.program.build import build_program

    def build(context: Any) -> tuple[Any, str, dict[str, Launcher]]:
        text, _ = _source(filename)
        program = build_program(context, text, devices=[device], defines=defines)
        options = program.get_build_info(device, cl.program_build_info.OPTIONS) or ""
        return program, options, {}

    key = (__name__, device.int_ptr, filename, _options_key(defines))
    program, options, launchers = _context_cache.cached(owner, key, build)
    launcher = launchers.get(name)
    if launcher is None:
        kernel = cl.Kernel(program, name)
        _, digest = _source(filename)
        identity = kernel_identity(kernel, device, source=f"{filename}\0{digest}", options=options)
        launcher = launchers.setdefault(name, Launcher(kernel, identity, device))
    return launcher
