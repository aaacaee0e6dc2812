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

Program binaries are cached persistently (:mod:`qcom_ext.ext.program.cache`): a second
build of the same source, headers, options and device is loaded from its binary.
``QCOM_EXT_CACHE_DIR`` moves the cache, ``QCOM_EXT_NO_CACHE=1`` turns it off. Drivers
that cache their builds themselves (pocl, unless ``POCL_KERNEL_CACHE=0``) get no entries:
:func:`drivers_cache_builds`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from qcom_ext._resources import kernels_dir
from qcom_ext.errors import BuildError, ConfigError, QcomExtError
from qcom_ext.ext.program import cache as program_cache
from qcom_ext.ext.program.isolated import compile_isolated

log = logging.getLogger(__name__)

#: Files hashed into the cache key from every include directory (kernels/ and each -I).
HEADER_SUFFIXES = (".h", ".hpp", ".clh", ".cl", ".inc")

#: Prepended to every source; ``#line 1`` keeps the build log's line numbers the user's.
PRELUDE = "#include <qcom_ext.h>\n#line 1\n"

#: Qualcomm's compiler option for programs that touch cl_qcom_large_buffer buffers
#: (llama.cpp adds it to every kernel build once large buffers are on: ggml-opencl.cpp,
#: ``load_cl_kernels``). Other compilers do not know it: ``large_buffer=True`` adds it
#: on the native path only.
LARGE_BUFFER_OPTION = "-qcom-enable-large-buffer"

# A program loaded from cached binaries has no CL_PROGRAM_SOURCE. The SHA-256 of the text
# each was built from is kept here (binaries digest -> source digest, the latest few
# thousand), so that the tuner keys it as it keys the same program compiled from source.
_SOURCES_KEPT = 4096
_source_digests: dict[str, str] = {}
_source_lock = threading.Lock()


def binaries_digest(binaries: Sequence[bytes]) -> str:
    """The digest of a program's binaries, in its device order (SHA-256 of each, joined)."""
    return "".join(hashlib.sha256(bytes(b)).hexdigest() for b in binaries)


def source_digest(binaries: Sequence[bytes]) -> str | None:
    """The SHA-256 of the full source text :func:`build_program` built ``binaries`` from,
    when it loaded them from its cache in this process; None otherwise."""
    return _source_digests.get(binaries_digest(binaries))


def _remember_source(binaries: Sequence[bytes], text: str) -> None:
    key = binaries_digest(binaries)
    with _source_lock:
        _source_digests.pop(key, None)
        _source_digests[key] = hashlib.sha256(text.encode()).hexdigest()
        while len(_source_digests) > _SOURCES_KEPT:
            del _source_digests[next(iter(_source_digests))]


def define_options(defines: Mapping[str, Any] | None) -> list[str]:
    """``-D`` options for ``defines`` (``True`` = defined without a value).

    >>> define_options({"TILE": 8, "FAST": True, "SKIP": False})
    ['-DTILE=8', '-DFAST']
    """
    if defines and not isinstance(defines, Mapping):
        raise ConfigError(f"defines must be a mapping of names to values, got {defines!r}")
    options = []
    for name, value in (defines or {}).items():
        if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
            raise ConfigError(f"define name {name!r} is not a C identifier")
        if value is True:
            options.append(f"-D{name}")
        elif value is not False and value is not None:
            text = str(value)
            if any(ch.isspace() or not ch.isprintable() for ch in text):
                raise ConfigError(
                    f"define {name}={text!r}: values with whitespace or control characters "
                    "are not portable across OpenCL compilers; expected a single token"
                )
            options.append(f"-D{name}={text}")
    return options


def program_options(
    devices: Sequence[Any],
    options: Iterable[str] = (),
    defines: Mapping[str, Any] | None = None,
    *,
    large_buffer: bool = False,
) -> list[str]:
    """The full option list :func:`build_program` passes for ``devices``.

    All devices of one build must take the same kernel-side paths (one option string per
    build); build per device otherwise. ``large_buffer``: add :data:`LARGE_BUFFER_OPTION`
    where every device takes cl_qcom_large_buffer's native path.
    """
    from qcom_ext.device.probe import probe

    found = [probe(d) for d in devices]
    per_device = {tuple(caps.compiler_options()) for caps in found}
    if len(per_device) != 1:
        raise ConfigError(
            "the devices of one build take different kernel-side paths "
            f"({sorted(per_device)}); build one program per device (devices=[...])"
        )
    if isinstance(options, str):
        options = options.split()
    extra = _large_buffer_options(found) if large_buffer else []
    return [
        "-I",
        str(kernels_dir()),
        *per_device.pop(),
        *extra,
        *define_options(defines),
        *options,
    ]


def _large_buffer_options(found: Sequence[Any]) -> list[str]:
    """``[LARGE_BUFFER_OPTION]`` where every device of ``found`` (their reports) takes
    cl_qcom_large_buffer's native path, ``[]`` where none does."""
    from qcom_ext.device.shared import labels  # lazily, as build_options's probe

    native = {caps.path("cl_qcom_large_buffer") == "native" for caps in found}
    if len(native) > 1:
        raise ConfigError(
            "large_buffer=True: some devices of this build take cl_qcom_large_buffer's "
            f"native path and some do not ({labels(found, names=False)}); "
            "build one program per device (devices=[...])"
        )
    return [LARGE_BUFFER_OPTION] if native == {True} else []


def build_program(
    context: Any,
    source: str,
    options: Iterable[str] = (),
    *,
    devices: Sequence[Any] | None = None,
    defines: Mapping[str, Any] | None = None,
    isolate: bool = False,
    isolate_timeout: float | None = None,
    large_buffer: bool = False,
) -> Any:
    """A built ``pyopencl.Program`` of ``source`` with the compat header available.

    ``options`` are extra compiler options (a list, or one string), ``defines`` become
    ``-D`` flags; ``large_buffer=True`` for a program that touches buffers from
    :func:`~qcom_ext.create_large_buffer` (adds ``-qcom-enable-large-buffer`` on
    cl_qcom_large_buffer's native path, nothing elsewhere). Failures raise
    :class:`~qcom_ext.BuildError` with the build log and the options used. The binaries
    are cached (see :mod:`qcom_ext.ext.program.cache`); an entry the driver will not load
    is rebuilt from source.

    ``isolate=True`` compiles in a child process first (:mod:`qcom_ext.ext.program.isolated`;
    ``isolate_timeout`` seconds at most, 300 by default) and loads the binaries it leaves
    in the cache: a compiler crash raises :class:`~qcom_ext.errors.CompilerCrashError`
    instead of ending this process. A binary already cached is loaded as usual.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> src = "__kernel void k(__global uint *v) { v[0] = qcom_bitreverse(v[0]); }"
    >>> qcom_ext.build_program(ctx, src).k.function_name  # qcom_bitreverse on every device
    'k'
    """
    devices = list(devices) if devices is not None else list(context.devices)
    full = program_options(devices, options, defines, large_buffer=large_buffer)
    text = PRELUDE + source
    cache = program_cache.default_cache()
    identity = cache_identity(devices, text, full) if cache is not None else None
    if cache is not None and identity is not None:
        key, meta = identity
        binaries = cache.load(key, meta)
        if binaries is not None:
            program = _build_from_binaries(context, devices, binaries, full)
            if program is not None:
                _remember_source(binaries, text)
                return program
    if isolate:
        return _from_isolated_compile(context, devices, text, full, identity, isolate_timeout)
    program = _build_from_source(context, devices, text, full)
    if cache is not None and identity is not None and not drivers_cache_builds(devices):
        binaries = _binaries(program, devices)
        if binaries is not None:
            cache.store(identity[0], identity[1], binaries)
    return program


def drivers_cache_builds(devices: Sequence[Any]) -> bool:
    """Whether the driver of every one of ``devices`` keeps its own cache of built
    programs, so that qcom_ext stores no binaries of theirs.

    pocl (with ``POCL_KERNEL_CACHE`` unset or not ``0``) does: a build from source in a
    later process is a hit of its kernel cache, while asking it for the program's
    binaries compiles every kernel of the program once more (measured: a q8_0 ``Linear``'s
    first build took 4.2 CPU-s instead of 2.5 on pocl 3.1, 8.6 instead of 3.1 on pocl 3.0;
    the second process 0.1 CPU-s either way). Its binaries also carry host shared objects,
    code the store would keep; not storing them keeps them out of the cache directory.
    """
    from qcom_ext.device.probe import probe

    if os.environ.get("POCL_KERNEL_CACHE", "1").strip() == "0":
        return False
    return bool(devices) and all(probe(d).driver == "pocl" for d in devices)


def _from_isolated_compile(
    context: Any,
    devices: Sequence[Any],
    text: str,
    options: list[str],
    identity: tuple[str, dict[str, Any]] | None,
    timeout: float | None,
) -> Any:
    """The program of the binaries a child process compiled (:func:`compile_isolated`)."""
    binaries = compile_isolated(devices, text, options, identity, timeout=timeout)
    program = _build_from_binaries(context, devices, binaries, options)
    if program is None:
        from qcom_ext.device.probe import probe

        labels = ", ".join(probe(d).label for d in devices)
        raise QcomExtError(
            f"the driver refused the binaries the isolated compile for {labels} made"
        )
    _remember_source(binaries, text)
    return program


def kernels(program: Any) -> dict[str, Any]:
    """Every kernel of a built ``program``, by name.

    Not ``program.all_kernels()``: pyopencl (2026.1) wraps the kernels that
    ``clCreateKernelsInProgram`` returns with one reference too many, so they, their
    program and its context are never released.

    >>> import pyopencl as cl, qcom_ext
    >>> ctx = cl.Context([qcom_ext.probe().device()])
    >>> src = "__kernel void a(__global int *v) { v[0] = 1; } __kernel void b() {}"
    >>> sorted(kernels(build_program(ctx, src)))
    ['a', 'b']
    """
    import pyopencl as cl

    names = program.get_info(cl.program_info.KERNEL_NAMES)
    return {name: cl.Kernel(program, name) for name in names.split(";") if name}


def include_dirs(options: Sequence[str]) -> list[Path]:
    """The ``-I`` directories of ``options`` (``-I dir`` and ``-Idir``), as absolute paths.

    >>> [p.name for p in include_dirs(["-I", "/tmp/a", "-DX", "-I/tmp/b"])]
    ['a', 'b']
    """
    found, it = [], iter(options)
    for option in it:
        if option == "-I":
            folder = next(it, None)
        elif option.startswith("-I"):
            folder = option[2:]
        else:
            continue
        if folder:
            found.append(Path(folder).resolve())
    return found


def device_identity(device: Any) -> dict[str, Any]:
    """The strings a binary is only valid for: platform, device, driver, vendor."""
    from qcom_ext.device.probe import probe

    caps = probe(device)
    return {
        "platform": caps.platform_name,
        "platform_version": caps.platform_version,
        "device": caps.device_name,
        "device_version": caps.device_version,
        "driver_version": caps.driver_version,
        "opencl_c_version": caps.opencl_c_version,
        "vendor_id": caps.vendor_id,
    }


def cache_identity(
    devices: Sequence[Any], text: str, options: Sequence[str]
) -> tuple[str, dict[str, Any]] | None:
    """``(key, meta)`` of a build, or None when its headers are too many to hash.

    The key covers the full source, the content of every header under ``kernels/`` and
    the ``-I`` directories, the full options, ``PYOPENCL_BUILD_OPTIONS``, the device
    strings and the qcom_ext and pyopencl versions. ``meta`` (the device strings and
    versions) is stored in the entry and checked on load.
    """
    import pyopencl

    from qcom_ext._version import __version__

    headers = {}
    # build_program's own "-I kernels/" names kernels/ twice: hash each folder once (the
    # key is the same, hashing is most of the cost of a cache hit besides the driver's)
    for folder in dict.fromkeys([kernels_dir(), *include_dirs(options)]):
        digest = program_cache.directory_digest(folder, HEADER_SUFFIXES)
        if digest is None:
            log.info("not caching: too many headers to hash under %s", folder)
            return None
        headers[str(folder)] = digest
    meta = {
        "devices": [device_identity(d) for d in devices],
        "qcom_ext": __version__,
        "pyopencl": pyopencl.VERSION_TEXT,
    }
    key = program_cache.key_of(
        {
            "source": text,
            "options": list(options),
            "pyopencl_build_options": os.environ.get("PYOPENCL_BUILD_OPTIONS", ""),
            "headers": headers,
            **meta,
        }
    )
    return key, meta


def _build_from_source(
    context: Any, devices: Sequence[Any], text: str, options: Sequence[str]
) -> Any:
    import pyopencl as cl

    program = cl.Program(context, text)
    try:
        return program.build(options=list(options), devices=list(devices))
    except cl.Error as exc:
        logs = []
        for device in devices:
            try:
                log_text = program.get_build_info(device, cl.program_build_info.LOG)
            except cl.Error:
                log_text = ""
            logs.append(f"[{device.name}]\n{(log_text or str(exc)).strip()}")
        raise BuildError("\n".join(logs), options) from exc


def _build_from_binaries(
    context: Any, devices: Sequence[Any], binaries: Sequence[bytes], options: Sequence[str]
) -> Any | None:
    """The program built from cached binaries, or None when the driver refuses them."""
    import pyopencl as cl

    if len(binaries) != len(devices) or not all(binaries):
        return None
    try:
        return cl.Program(context, list(devices), list(binaries)).build(
            options=list(options), devices=list(devices)
        )
    except cl.Error as exc:
        log.info("cached program binary refused by the driver (%s): rebuilding", exc)
        return None


def _binaries(program: Any, devices: Sequence[Any]) -> list[bytes] | None:
    """The binary of each of ``devices`` in ``program``; None if a driver gives none."""
    import pyopencl as cl

    try:
        order = [d.int_ptr for d in program.get_info(cl.program_info.DEVICES)]
        found = program.get_info(cl.program_info.BINARIES)
    except cl.Error as exc:
        log.info("program binaries unavailable (%s): not caching", exc)
        return None
    by_device = dict(zip(order, found, strict=False))
    binaries = [bytes(by_device.get(d.int_ptr) or b"") for d in devices]
    return binaries if all(binaries) else None
