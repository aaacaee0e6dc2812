"""Build OpenCL programs that call ``qcom_*`` builtins, on any device.

:func:`build_program` puts ``kernels/`` on the include path, includes the compat header
``qcom_ext.h`` ahead of the source (include-guarded, so ``#include <qcom_ext.h>`` in the
source is harmless), and adds the ``-D`` flags of :meth:`DeviceCaps.compiler_options`
that pick, per extension, the native builtin, a Khronos equivalent or portable code.

>>> import numpy as np, pyopencl as cl, pyopencl.array, qcom_ext
>>> ctx = cl.Context([qcom_ext.probe().device()])
>>> queue = cl.CommandQueue(ctx)
>>> src = "__kernel void k(__global uint *v) { v[0] = qcom_bitreverse(v[0]); }"
>>> prg = qcom_ext.build_program(ctx, src)
>>> v = cl.array.to_device(queue, np.array([0x1248EDBF], dtype=np.uint32))
>>> _ = prg.k(queue, (1,), None, v.data)
>>> hex(v.get()[0])
'0xfdb71248'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._resources import kernels_dir
from .errors import BuildError, ConfigError

#: Prepended to every source; ``#line 1`` keeps the build log's line numbers the user's.
PRELUDE = "#include <qcom_ext.h>\n#line 1\n"


def define_options(defines: Mapping[str, Any] | None) -> list[str]:
    """``-D`` options for ``defines`` (``True`` = defined without a value).

    >>> define_options({"TILE": 8, "FAST": True, "SKIP": False})
    ['-DTILE=8', '-DFAST']
    """
    options = []
    for name, value in (defines or {}).items():
        if not name.isidentifier():
            raise ConfigError(f"define name {name!r} is not a C identifier")
        if value is True:
            options.append(f"-D{name}")
        elif value is not False and value is not None:
            text = str(value)
            if any(ch.isspace() for ch in text):
                raise ConfigError(
                    f"define {name}={text!r}: values with whitespace are not portable "
                    "across OpenCL compilers; expected a single token"
                )
            options.append(f"-D{name}={text}")
    return options


def program_options(
    devices: Sequence[Any], options: Iterable[str] = (), defines: Mapping[str, Any] | None = None
) -> list[str]:
    """The full option list :func:`build_program` passes for ``devices``.

    All devices of one build must take the same kernel-side paths (one option string per
    build); build per device otherwise.
    """
    from .probe import probe

    per_device = {tuple(probe(d).compiler_options()) for d in devices}
    if len(per_device) != 1:
        raise ConfigError(
            "the devices of one build take different kernel-side paths "
            f"({sorted(per_device)}); build one program per device (devices=[...])"
        )
    if isinstance(options, str):
        options = options.split()
    return ["-I", str(kernels_dir()), *per_device.pop(), *define_options(defines), *options]


def build_program(
    context: Any,
    source: str,
    options: Iterable[str] = (),
    *,
    devices: Sequence[Any] | None = None,
    defines: Mapping[str, Any] | None = None,
) -> Any:
    """A built ``pyopencl.Program`` of ``source`` with the compat header available.

    ``options`` are extra compiler options (a list, or one string), ``defines`` become
    ``-D`` flags. Failures raise :class:`~qcom_ext.BuildError` with the build log and the
    options used.
    """
    import pyopencl as cl

    devices = list(devices) if devices is not None else list(context.devices)
    full = program_options(devices, options, defines)
    program = cl.Program(context, PRELUDE + source)
    try:
        return program.build(options=full, devices=devices)
    except cl.RuntimeError as exc:
        logs = []
        for device in devices:
            try:
                log = program.get_build_info(device, cl.program_build_info.LOG)
            except cl.Error:
                log = ""
            logs.append(f"[{device.name}]\n{(log or str(exc)).strip()}")
        raise BuildError("\n".join(logs), full) from exc
