"""What the command line writes: the one console, terminal-safe text, output files.

Driver strings (device and platform names, versions, extension lists) are whatever the
driver returns: an escape sequence in one would reach the terminal raw. Everything the
``qcom-ext`` commands print goes through :func:`console` (whose every text segment passes
:func:`terminal_safe`) or, for a plain message, :func:`terminal_safe` itself. A file an
option names (``--json PATH``) is checked before the work starts and written with
:func:`write_text` (whole or not at all): an unwritable one is a
:class:`~qcom_ext.errors.ConfigError` naming the option, never a traceback. A long
command shows its progress on stderr, where a terminal reads it (:func:`stderr_progress`).

>>> terminal_safe("Adreno\\x1b[2J (TM)\\x07 740")
'Adreno\\ufffd[2J (TM)\\ufffd 740'
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.segment import Segment

from qcom_ext.errors import ConfigError

__all__ = [
    "check_writable",
    "console",
    "progress_bar",
    "stderr_progress",
    "terminal_safe",
    "with_extension_progress",
    "write_text",
]

# C0 controls but tab and newline, DEL, and the C1 controls (0x9b is a one-byte CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` with each control character (escape, bell, carriage return, C1, ...; not
    tab or newline) replaced by U+FFFD, so a string can neither move the cursor nor
    restyle or retitle the terminal. Lengths are kept (one character for one)."""
    return _CONTROL.sub("\ufffd", text)


class _SafeConsole(Console):
    """A rich console whose text segments pass :func:`terminal_safe`; rich's own styles
    and cursor controls (control segments) are left alone."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _CONTROL.search(segment.text):
                yield segment
            else:
                yield Segment(terminal_safe(segment.text), segment.style, segment.control)


def console(**options: Any) -> Console:
    """The console every ``qcom-ext`` command prints through (``rich.console.Console``'s
    options)."""
    return _SafeConsole(**options)


def check_writable(path: str | os.PathLike[str], option: str) -> Path:
    """``path`` if a file can be written there (its folder exists and is writable, and it
    is not a folder or a read-only file), else a ConfigError naming ``option``: checked
    before a long run rather than after it."""
    target = Path(path)
    folder = target.parent
    problem = None
    if target.is_dir():
        problem = "it is a folder"
    elif not folder.is_dir():
        problem = f"no folder {str(folder)!r}"
    elif not os.access(folder, os.W_OK | os.X_OK):
        problem = f"the folder {str(folder)!r} is not writable"
    elif target.exists() and not os.access(target, os.W_OK):
        problem = "the file is not writable"
    if problem:
        raise ConfigError(f"{option} {terminal_safe(str(path))!r}: cannot write there: {problem}")
    return target


def write_text(
    path: str | os.PathLike[str], text: str, option: str, *, private: bool = False
) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all: into a fresh
    :func:`tempfile.mkstemp` file in the same folder (nothing planted there is followed),
    renamed onto ``path``; no partial file is left behind. The file keeps the mode of the
    one it replaces; a new one gets 0644, or 0600 when ``private``. An OSError becomes a
    ConfigError naming ``option``."""
    target = Path(path)
    partial = None
    try:
        mode = stat.S_IMODE(target.stat().st_mode) if target.is_file() else None
        handle, partial = tempfile.mkstemp(
            prefix=f".{target.name[:40]}.", suffix=".tmp", dir=target.parent
        )
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(partial, mode if mode is not None else 0o600 if private else 0o644)
        os.replace(partial, target)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"{option} {terminal_safe(str(path))!r}: cannot write there: {reason}"
        ) from None
    finally:
        if partial is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)
    return target


def progress_bar(console: Console, *, transient: bool = True) -> Progress:
    """The command line's progress display (a task's description, bar, count and time),
    drawn on ``console`` and erased when done unless not ``transient``: ``qcom-ext
    bench``'s rounds, ``qcom-ext selftest``'s extensions, ``qcom-ext tune``'s layers."""
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    return Progress(*columns, console=console, transient=transient)


def stderr_progress(enabled: bool = True) -> Progress | None:
    """A :func:`progress_bar` on stderr, or None where it would not be read: when not
    ``enabled`` (a ``--json`` run) or when stderr is not a terminal (a pipe, a file, CI)."""
    err = console(stderr=True)
    return progress_bar(err) if enabled and err.is_terminal else None


def with_extension_progress(run: Callable[..., Any], enabled: bool = True) -> Any:
    """``run()``, or ``run(progress=advance)`` under a :func:`stderr_progress` bar that
    ``advance(extension, done, total)`` moves on, an extension at a time (``qcom-ext
    selftest``, ``qcom-ext report``); the bar is shown where :func:`stderr_progress` says."""
    bar = stderr_progress(enabled)
    if bar is None:
        return run()
    with bar:
        task = bar.add_task("selftest", total=None)

        def advance(extension: str, done: int, total: int) -> None:
            name = extension.removeprefix("cl_qcom_")
            bar.update(task, description=name, completed=done, total=total, refresh=True)

        return run(progress=advance)
