"""What a selftest case gets: :class:`Env`, in the selftest and in verify's child process.

A case runs on one path of one extension. The selftest gives it the device report for
that path (``probe(device, disabled=...)``), a context and queue on the device and a
random generator seeded per case. In a trial (``probe(verify=True)``, a case marked
``trial=...``) the same case runs in a child process with ``isolated=True``: its kernels
are compiled fresh, with the ``-D`` flag of the path under trial only (every other
extension compiles its portable code, so one broken builtin cannot fail another's
trial; :meth:`DeviceCaps.trial_options`), and the context and queue are made on first
use.

>>> from qcom_ext import probe
>>> env = Env(probe(), "cl_qcom_bitreverse", "khr:cl_khr_extended_bit_ops")
>>> env.tier, env.tested
('khr', 'cl_khr_extended_bit_ops')
"""

from __future__ import annotations

import copy
import zlib
from typing import Any

import numpy as np

from qcom_ext.device.caps import DeviceCaps
from qcom_ext.errors import ConfigError

__all__ = ["Env", "case_rng"]


def case_rng(extension: str, name: str, seed: int) -> np.random.Generator:
    """The generator of case ``name`` of ``extension``: the same on every path and in a
    trial's child process."""
    return np.random.default_rng([seed, zlib.crc32(f"{extension}/{name}".encode())])


class Env:
    """The device report, path, context, queue and generator of one case's run.

    ``extension`` is the ``cl_qcom_*`` extension, ``path`` the path being run (``native``,
    ``khr:<tier>``, ``fallback`` or ``unavailable``). ``context``, ``queue`` and ``device``
    are made on first use when not given; ``store`` is shared by the cases of one run.
    """

    def __init__(
        self,
        caps: DeviceCaps | None,
        extension: str,
        path: str,
        context: Any = None,
        queue: Any = None,
        *,
        device: Any = None,
        rng: np.random.Generator | None = None,
        isolated: bool = False,
    ) -> None:
        self._caps, self.extension, self.path = caps, extension, path
        self._context, self._queue, self._device = context, queue, device
        self.rng = rng if rng is not None else np.random.default_rng()
        self.isolated = isolated
        self.store: dict[Any, Any] = {}

    @property
    def caps(self) -> DeviceCaps:
        """The device report this run's path is taken under."""
        if self._caps is None:
            raise ConfigError(f"the run of {self.extension} has no device report")
        return self._caps

    @property
    def tier(self) -> str:
        """``native``, ``khr``, ``fallback`` or ``unavailable``."""
        return self.path.split(":", 1)[0]

    @property
    def tested(self) -> str:
        """The extension whose code this run exercises: the ``cl_qcom_*`` one natively,
        the Khronos tier on ``khr:<tier>`` (a trial's verdict is that extension's)."""
        return self.path.split(":", 1)[1] if self.tier == "khr" else self.extension

    @property
    def device(self) -> Any:
        """The ``pyopencl.Device`` of the run."""
        if self._device is None:
            if self._caps is None or not self._caps.device_id:
                raise ConfigError(f"the run of {self.tested} needs a device, and has none")
            self._device = self._caps.device()
        return self._device

    @property
    def context(self) -> Any:
        if self._context is None:
            import pyopencl

            self._context = pyopencl.Context([self.device])
        return self._context

    @property
    def queue(self) -> Any:
        if self._queue is None:
            import pyopencl

            self._queue = pyopencl.CommandQueue(self.context)
        return self._queue

    def for_case(self, name: str, seed: int) -> Env:
        """This run's environment with the generator of case ``name`` (same on every path)."""
        env = copy.copy(self)
        env.rng = case_rng(self.extension, name, seed)
        return env

    def program(self, source: str, **defines: Any) -> Any:
        """``qcom_ext.build_program`` of ``source`` (or of ``kernels/<source>`` when it
        names a file there), built once per run; isolated (a trial): compiled from source
        with this path's ``-D`` flag only, never from the program cache."""
        from qcom_ext._resources import kernels_dir
        from qcom_ext.ext.program.build import build_program

        key = ("program", source, tuple(sorted(defines.items())))
        if key not in self.store:
            text = (kernels_dir() / source).read_text() if source.endswith(".cl") else source
            if self.isolated:
                self.store[key] = self._isolated_build(text, defines)
            else:
                self.store[key] = build_program(self.context, text, defines=defines or None)
        return self.store[key]

    def _isolated_build(self, text: str, defines: dict[str, Any]) -> Any:
        import pyopencl

        from qcom_ext._resources import kernels_dir
        from qcom_ext.ext.program.build import PRELUDE, define_options

        options = [
            "-I",
            str(kernels_dir()),
            *self.caps.trial_options(self.extension, self.path),
            *define_options(defines),
        ]
        return pyopencl.Program(self.context, PRELUDE + text).build(options)

    def to_device(self, array: np.ndarray) -> Any:
        """A read-write buffer holding a copy of ``array``."""
        import pyopencl as cl

        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        return cl.Buffer(self.context, flags, hostbuf=np.ascontiguousarray(array))

    def empty(self, shape: Any, dtype: Any) -> tuple[Any, np.ndarray]:
        """A read-write buffer for ``shape`` x ``dtype`` and the host array to read it into."""
        import pyopencl as cl

        host = np.empty(shape, dtype)
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(host.nbytes, 1)), host

    def read(self, buffer: Any, host: np.ndarray) -> np.ndarray:
        """``host`` filled from ``buffer`` (blocking)."""
        import pyopencl as cl

        cl.enqueue_copy(self.queue, host, buffer)
        return host

    def release(self) -> None:
        """Drop the run's programs, queue and context (made here or given)."""
        self.store.clear()
        self._queue = self._context = None
