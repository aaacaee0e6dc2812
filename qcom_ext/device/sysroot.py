"""The one root every read of the system's files goes through (``QCOM_EXT_SYSROOT``).

The kernel driver's sysfs (:mod:`~qcom_ext.device.kgsl`, :mod:`~qcom_ext.device.drm`)
and ``qcom-ext doctor`` (:mod:`qcom_ext.device.doctor`) read files such as
``/sys/class/kgsl/kgsl-3d0/gpu_model``, ``/vendor/lib64/libOpenCL.so`` and
``/etc/OpenCL/vendors/*.icd``. They name them as the device does and read them through
a :class:`Sysroot`, whose root is ``QCOM_EXT_SYSROOT`` (default ``/``): a test, or a user
inspecting a mounted device image, points it at another tree. Symbolic links are
followed inside the root (an absolute target starts again at the root), never out of it.

Every file is untrusted input: a missing, unreadable, oversized or non-regular file (a
FIFO would block) reads as None, never an exception.

>>> import tempfile, pathlib
>>> tree = pathlib.Path(tempfile.mkdtemp())
>>> (tree / "etc").mkdir(); _ = (tree / "etc" / "name").write_text("adreno\\n")
>>> (tree / "link").symlink_to("/etc/name")
>>> root = Sysroot(tree)
>>> root.read_text("/link"), root.resolve("/link"), root.read_text("/missing")
('adreno', '/etc/name', None)
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV_SYSROOT", "MAX_TEXT", "Sysroot", "ascii_text", "read_regular"]

ENV_SYSROOT = "QCOM_EXT_SYSROOT"
#: The most bytes :meth:`Sysroot.read_text` reads from one file.
MAX_TEXT = 4096
_MAX_LINKS = 40  # as the kernel's ELOOP limit
_MAX_ENTRIES = 512  # names one directory listing returns at most


@dataclass(frozen=True)
class Sysroot:
    """A directory standing for ``/``; paths given to its methods are the device's."""

    root: Path = Path("/")

    @classmethod
    def from_env(cls) -> Sysroot:
        """``QCOM_EXT_SYSROOT`` (an absolute directory), else ``/``."""
        value = os.environ.get(ENV_SYSROOT, "")
        return cls(Path(value)) if value and os.path.isabs(value) else cls()

    @property
    def is_host(self) -> bool:
        """Whether the root is this system's own ``/``."""
        return os.path.realpath(self.root) == os.path.realpath("/")

    def host_path(self, path: str) -> Path:
        """Where the device's ``path`` is on this machine (links not followed)."""
        parts = [p for p in posixpath.normpath("/" + path).split("/") if p]
        return self.root.joinpath(*parts) if parts else self.root

    def device_path(self, host: str) -> str:
        """The device path of a host path inside the root (``host_path``'s inverse); a
        path outside the root is returned as it is."""
        if self.is_host:
            return host
        base, real = os.path.realpath(self.root), os.path.realpath(host)
        if real == base:
            return "/"
        if real.startswith(base + os.sep):
            return "/" + os.path.relpath(real, base).replace(os.sep, "/")
        return host

    def resolve(self, path: str) -> str | None:
        """The device path ``path`` names once every link is followed inside the root;
        None when a component is missing or the links loop."""
        todo = [p for p in posixpath.normpath("/" + path).split("/") if p]
        done: list[str] = []
        hops = 0
        while todo:
            name = todo.pop(0)
            if name == "..":
                if done:
                    done.pop()
                continue
            if name == ".":
                continue
            host = self.root.joinpath(*done, name)
            try:
                mode = os.lstat(host).st_mode
            except OSError:
                return None
            if not stat.S_ISLNK(mode):
                done.append(name)
                continue
            hops += 1
            if hops > _MAX_LINKS:
                return None
            try:
                target = os.readlink(host)
            except OSError:
                return None
            parts = [p for p in target.split("/") if p]
            todo = parts + todo
            if target.startswith("/"):
                done = []
        return "/" + "/".join(done)

    def real_path(self, path: str) -> Path | None:
        """The host path of ``path`` with its links followed inside the root, or None."""
        resolved = self.resolve(path)
        return None if resolved is None else self.host_path(resolved)

    def is_file(self, path: str) -> bool:
        real = self.real_path(path)
        return real is not None and real.is_file()

    def is_dir(self, path: str) -> bool:
        real = self.real_path(path)
        return real is not None and real.is_dir()

    def exists(self, path: str) -> bool:
        return self.real_path(path) is not None

    def listdir(self, path: str) -> list[str]:
        """The sorted names in directory ``path`` (at most 512); [] where unreadable."""
        real = self.real_path(path)
        if real is None:
            return []
        try:
            with os.scandir(real) as entries:
                names = sorted(e.name for e in entries)
        except OSError:
            return []
        return names[:_MAX_ENTRIES]

    def glob(self, pattern: str) -> list[str]:
        """Device paths matching ``pattern`` (``*`` within one component), sorted."""
        found = ["/"]
        for part in [p for p in pattern.split("/") if p]:
            step: list[str] = []
            for base in found:
                if any(c in part for c in "*?["):
                    names = fnmatch.filter(self.listdir(base), part)
                    step.extend(posixpath.join(base, n) for n in names)
                elif self.exists(posixpath.join(base, part)):
                    step.append(posixpath.join(base, part))
            found = step
        return sorted(found)

    def read_bytes(self, path: str, limit: int = MAX_TEXT) -> bytes | None:
        """The bytes of a regular file of at most ``limit`` bytes; None otherwise."""
        real = self.real_path(path)
        if real is None:
            return None
        return read_regular(real, limit)

    def read_text(self, path: str, limit: int = MAX_TEXT) -> str | None:
        """The stripped printable ASCII text of a small regular file, or None."""
        return ascii_text(self.read_bytes(path, limit))

    def read_strings(self, path: str, limit: int = MAX_TEXT) -> tuple[str, ...] | None:
        """A NUL-separated list of printable strings (a device-tree ``compatible``)."""
        data = self.read_bytes(path, limit)
        if data is None:
            return None
        try:
            items = tuple(s for s in data.decode("ascii").split("\0") if s)
        except UnicodeDecodeError:
            return None
        return items if all(s.isprintable() for s in items) else None

    def link_name(self, path: str) -> str | None:
        """The last component of what the link ``path`` points to (a sysfs ``driver``)."""
        parent = self.resolve(posixpath.dirname(posixpath.normpath("/" + path)))
        if parent is None:
            return None
        link = self.host_path(posixpath.join(parent, posixpath.basename(path)))
        try:
            return posixpath.basename(os.readlink(link).rstrip("/")) or None
        except OSError:
            return None


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """At most ``limit`` bytes of a regular file (opened without blocking); None when it
    is missing, unreadable, not a regular file or longer than ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= limit else None


def ascii_text(data: bytes | None) -> str | None:
    """``data`` as stripped printable ASCII text; None for anything else.

    >>> ascii_text(b"Adreno740v2\\n"), ascii_text(b"\\xff"), ascii_text(b"a\\x1bb")
    ('Adreno740v2', None, None)
    """
    if data is None:
        return None
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() else None
