"""The ops' kernels, from the shared programs (:mod:`qcom_ext.ext.program.shared`), with
their tuning identities; launched with the tuned local size when one is cached (the
driver's choice otherwise)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qcom_ext.ext.program.launch import enqueue
from qcom_ext.ext.program.shared import kernels_digest, shared_program
from qcom_ext.ops.tuning import KernelIdentity, cached_local_size, kernel_identity, padded

__all__ = ["Launcher", "kernel_for"]


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


def kernel_for(
    owner: Any, device: Any, filename: str, name: str, defines: Mapping[str, Any]
) -> Launcher:
    """The kernel ``name`` of ``kernels/<filename>`` built for ``device`` with ``defines``
    (and the probe's flags, as every build: :meth:`DeviceCaps.compiler_options`), from
    the shared programs of the context of ``owner``, the queue (or context) the caller
    holds (:func:`qcom_ext.ext.program.shared.shared_program`), with its tuning
    identity."""
    shared = shared_program(owner, filename, defines, devices=[device])

    def launcher() -> Launcher:
        kernel = shared.kernels[name]
        source = f"{filename}\0{kernels_digest(filename)}"
        identity = kernel_identity(kernel, device, source=source, options=shared.options)
        return Launcher(kernel, identity, device)

    return shared.derived(("launcher", name), launcher)
