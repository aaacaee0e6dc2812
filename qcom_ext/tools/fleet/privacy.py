"""Nothing private leaves in a report: the scrubber every report passes through whole.

:class:`Scrubber` rewrites every string of a JSON value, dictionary keys included (not
chosen fields: a driver string, an error message or a cache path may carry anything):

* home directories (``$HOME``, ``/home/<name>``, ``/Users/<name>``, ``C:\\Users\\<name>``,
  Termux's ``/data/data/com.termux/files/home``, ``/root``) become ``~``;
* MAC addresses become ``<mac>``, IPv4 and full IPv6 addresses ``<ip>``;
* a serial number after a label (``serial: R58M...``, ``S/N=...``) becomes ``<serial>``;
* this machine's host name, user name, ``ANDROID_SERIAL`` and machine id, wherever they
  appear as a whole word, become ``<host>``, ``<user>``, ``<serial>``, ``<machine-id>``.

Device strings keep everything else: ``QUALCOMM Adreno(TM)``, ``Compiler E031.38.11.12``,
``LA.UM.9.12.10.00.00.582.274`` (a version, not an address: no dot or word around it).

>>> scrub = Scrubber(home="/home/ann", names={"ann": "<user>", "ann-laptop": "<host>"})
>>> scrub("/home/ann/.cache/qcom_ext on ann-laptop (02:42:ac:11:00:02, 10.0.0.7)")
'~/.cache/qcom_ext on <host> (<mac>, <ip>)'
>>> scrub({"serial: RZ8N91XQ2LK": "Compiler E031.38.11.12 LA.UM.9.12.10.00.00.582.274"})
{'serial: <serial>': 'Compiler E031.38.11.12 LA.UM.9.12.10.00.00.582.274'}
"""

from __future__ import annotations

import contextlib
import getpass
import os
import platform
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["Scrubber", "scrub"]

_HOME_PATHS = re.compile(
    r"/data/data/com\.termux/files/home"
    r"|(?<![\w.])/(?:home|Users)/[^/\s\"'<>:;,)]+"
    r"|(?<![\w.])/root(?=/|\b)"
    r"|\b[A-Za-z]:\\(?:Users|Documents and Settings)\\[^\\\s\"'<>:;,)]+",
)
_MAC = re.compile(
    r"(?<![\w:-])[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}(?![\w:-])"
)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}(?![\w:])")
_SERIAL = re.compile(r"(?i)\b(serial(?:[ _-]?(?:no|number|num))?|s/n|sn)(\s*[:=#]\s*)[\w-]{4,}")
#: Names too short or too common to replace as words without eating device strings (and
#: that name nobody: a container's ``root``, a default ``localhost``).
_MIN_NAME = 3
_TOO_COMMON = frozenset({"localhost", "root", "user", "android", "linux"})


def _words(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", re.IGNORECASE)


class Scrubber:
    """Replace private strings in a JSON value: ``home`` (a home directory, becomes
    ``~``) and ``names`` (value -> its placeholder, replaced as whole words), on top of
    the patterns every scrubber applies."""

    def __init__(self, *, home: str | None = None, names: Mapping[str, str] = ()) -> None:
        self._home = home.rstrip("/\\") if home and home.rstrip("/\\") else None
        kept = {
            value: label
            for value, label in dict(names).items()
            if value and len(value) >= _MIN_NAME and value.lower() not in _TOO_COMMON
        }
        # Longest first: a host name that contains the user name goes whole.
        self._names = [(_words(v), kept[v]) for v in sorted(kept, key=len, reverse=True)]

    @classmethod
    def from_environment(cls) -> Scrubber:
        """A scrubber for this machine: its home, host, user, serial and machine id."""
        names: dict[str, str] = {}
        for host in (socket.gethostname(), platform.node()):
            names[host] = "<host>"
            names[host.split(".", 1)[0]] = "<host>"
        with contextlib.suppress(Exception):  # no user name (a container's bare uid)
            names[getpass.getuser()] = "<user>"
        for variable in ("USER", "LOGNAME", "USERNAME"):
            names[os.environ.get(variable, "")] = "<user>"
        names[os.environ.get("ANDROID_SERIAL", "")] = "<serial>"
        for source in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                names[Path(source).read_text(encoding="ascii").strip()] = "<machine-id>"
        home = os.environ.get("HOME") or os.environ.get("USERPROFILE")
        if not home:
            with contextlib.suppress(RuntimeError, KeyError):
                home = str(Path.home())
        return cls(home=home, names=names)

    def text(self, value: str) -> str:
        """``value`` with everything private replaced."""
        if self._home:
            value = value.replace(self._home, "~")
        value = _HOME_PATHS.sub("~", value)
        value = _MAC.sub("<mac>", value)
        value = _IPV6.sub("<ip>", value)
        value = _IPV4.sub("<ip>", value)
        value = _SERIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}<serial>", value)
        for pattern, label in self._names:
            value = pattern.sub(label, value)
        return value

    def __call__(self, value: Any) -> Any:
        """``value`` (a JSON value) with every string scrubbed, keys included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(item) for item in value]
        return value


def scrub(value: Any) -> Any:
    """``value`` scrubbed of this machine's private strings (:meth:`Scrubber.from_environment`)."""
    return Scrubber.from_environment()(value)
