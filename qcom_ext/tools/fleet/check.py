"""The structural check of one parsed fleet report (``qcom_ext/schemas/report-1.json``
written as code: fast enough for 100,000 reports, and tested to agree with the schema,
where it is not stricter: :data:`STRICTER`).

:func:`check_report` returns the report when it has the schema's shape, and raises
:class:`ReportError` with a one-line reason otherwise. The identity key is recomputed
from the identity, never trusted.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from typing import Any

from qcom_ext.errors import QcomExtError
from qcom_ext.tools.fleet.checks import VERDICTS
from qcom_ext.tools.fleet.identity import identity_key
from qcom_ext.tools.fleet.report import SCHEMA, SCHEMA_VERSION

__all__ = [
    "IDENTITY_FIELDS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "STRICTER",
    "VERDICTS",
    "ReportError",
    "check_report",
]

#: The identity's gpuinfo.org strings (never null), then the Adreno facts.
IDENTITY_FIELDS = (
    "device_name",
    "device_version",
    "driver_version",
    "os_name",
    "os_version",
    "architecture",
    "adreno_model",
    "compiler_version",
    "compiler_key",
)
#: Where the check is stricter than the schema (its tests list them): an identity key
#: that does not match, a check id not ``extension/path/...`` of its own extension and
#: path or twice in one report, a compiler key number that is not a JSON integer in
#: [0, 2**31), a number that is not finite (NaN is not JSON, Python reads it).
STRICTER = ("identity_key", "check id", "compiler_key bounds", "non-finite numbers")
_TOP = frozenset(
    [
        "schema",
        "schema_version",
        "created",
        "synthetic",
        "identity",
        "identity_key",
        "environment",
        "probe",
        "checks",
    ]
)
_ENVIRONMENT = frozenset(("python", "pyopencl", "qcom_ext", "platform_name", "platform_version"))
_PROBE = frozenset(("extensions", "paths", "quirks", "facts"))
_SELFTEST = frozenset(("ran", "seed", "only"))
_CHECK = frozenset(("id", "extension", "path", "verdict", "max_error", "seconds", "reason"))
_VERDICT_SET = frozenset(VERDICTS)
_CREATED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_EXTENSION = re.compile(r"cl_qcom_[a-z0-9_]+")
_PATH = re.compile(r"native|fallback|unavailable|khr:[A-Za-z0-9_]+")
_CHECK_ID = re.compile(rf"({_EXTENSION.pattern})/({_PATH.pattern})/[a-z0-9_]+")


class ReportError(QcomExtError, ValueError):
    """A fleet report that is not merged; the message is the one-line reason."""


def _shown(value: Any) -> str:
    """``value`` as a reason quotes it: short, on one line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _object(
    value: Any, where: str, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``value`` as an object with the ``required`` keys and no others but ``optional``
    (every key allowed where both are empty)."""
    if not isinstance(value, dict):
        raise ReportError(f"{where}: expected an object, got {type(value).__name__}")
    if required or optional:
        missing = sorted(required - value.keys())
        if missing:
            raise ReportError(f"{where}: missing {', '.join(missing)}")
        extra = sorted(value.keys() - required - optional)
        if extra:
            raise ReportError(f"{where}: unknown {_shown(', '.join(extra))}")
    return value


def _string(value: Any, where: str, *, null: bool = False, pattern: Any = None) -> None:
    if null and value is None:
        return
    if not isinstance(value, str):
        kind = "a string or null" if null else "a string"
        raise ReportError(f"{where}: expected {kind}, got {_shown(value)}")
    if pattern is not None and not pattern.fullmatch(value):
        raise ReportError(f"{where}: {_shown(value)} does not match {pattern.pattern}")


def _number(value: Any, where: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReportError(f"{where}: expected a number or null, got {_shown(value)}")
    if not math.isfinite(value) or value < 0:
        raise ReportError(f"{where}: expected a finite number >= 0, got {_shown(value)}")


def _head(report: Any) -> dict[str, Any]:
    """The report as an object of this schema and version, its created time checked."""
    if not isinstance(report, dict):
        raise ReportError(f"report: expected an object, got {type(report).__name__}")
    if report.get("schema") != SCHEMA:
        raise ReportError(f"wrong schema {_shown(report.get('schema'))}, expected {SCHEMA!r}")
    version = report.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ReportError(f"schema_version: expected an integer, got {_shown(version)}")
    if version > SCHEMA_VERSION:
        raise ReportError(f"future schema {version} (this qcom_ext reads {SCHEMA_VERSION})")
    if version != SCHEMA_VERSION:
        raise ReportError(f"schema_version {version}: expected {SCHEMA_VERSION}")
    optional = frozenset(("synthetic_note", "selftest"))
    _object(report, "report", _TOP, optional)
    _string(report["created"], "created", pattern=_CREATED)
    if not isinstance(report["synthetic"], bool):
        raise ReportError(f"synthetic: expected true or false, got {_shown(report['synthetic'])}")
    if report["synthetic"] or "synthetic_note" in report:
        _string(report.get("synthetic_note"), "synthetic_note")
        if not report["synthetic_note"]:
            raise ReportError("synthetic_note: empty")
    if "selftest" in report:
        _selftest(report["selftest"])
    return report


def _selftest(block: Any) -> None:
    optional = frozenset(("ok", "build_problem"))
    block = _object(block, "selftest", _SELFTEST, optional)
    if not isinstance(block["ran"], bool) or block.get("ok", None) not in (None, True, False):
        raise ReportError("selftest.ran/ok: expected true or false")
    seed = block["seed"]
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ReportError(f"selftest.seed: expected an integer or null, got {_shown(seed)}")
    only = block["only"]
    if only is not None and not (isinstance(only, list) and all(isinstance(o, str) for o in only)):
        raise ReportError("selftest.only: expected a list of strings or null")
    _string(block.get("build_problem"), "selftest.build_problem", null=True)


@functools.lru_cache(maxsize=4096)
def _key_of(values: tuple[str | None, ...], compiler_key: tuple[int, ...] | None) -> str:
    """:func:`~qcom_ext.tools.fleet.identity.identity_key` of an identity's values (cached:
    a fleet's reports share a few thousand identities)."""
    identity = dict(zip(IDENTITY_FIELDS, (*values, compiler_key), strict=True))
    identity["compiler_key"] = None if compiler_key is None else list(compiler_key)
    return identity_key(identity)


def _identity(report: dict[str, Any]) -> None:
    identity = _object(report["identity"], "identity", frozenset(IDENTITY_FIELDS))
    for name in IDENTITY_FIELDS[:6]:
        _string(identity[name], f"identity.{name}")
    for name in ("adreno_model", "compiler_version"):
        _string(identity[name], f"identity.{name}", null=True)
    compiler_key = key = identity["compiler_key"]
    if compiler_key is not None and not (
        isinstance(compiler_key, list)
        and compiler_key
        and all(type(n) is int and 0 <= n < 1 << 31 for n in compiler_key)
    ):
        raise ReportError(
            f"identity.compiler_key: expected a list of integers or null, got "
            f"{_shown(compiler_key)}"
        )
    _string(report["identity_key"], "identity_key", pattern=_HEX64)
    values = tuple(identity[k] for k in IDENTITY_FIELDS[:-1])
    if report["identity_key"] != _key_of(values, None if key is None else tuple(key)):
        raise ReportError("identity_key does not match identity")


def _environment_and_probe(report: dict[str, Any]) -> None:
    environment = _object(report["environment"], "environment", _ENVIRONMENT)
    for name in ("python", "qcom_ext", "platform_name", "platform_version"):
        _string(environment[name], f"environment.{name}")
    _string(environment["pyopencl"], "environment.pyopencl", null=True)
    probe = _object(report["probe"], "probe", _PROBE)
    extensions = probe["extensions"]
    if not isinstance(extensions, list) or not all(isinstance(e, str) for e in extensions):
        raise ReportError("probe.extensions: expected a list of strings")
    paths = _object(probe["paths"], "probe.paths", frozenset())
    entry_keys = frozenset(("path", "reason"))
    for name, entry in paths.items():
        if (  # the fast test; the field-by-field one below names the fault
            _EXTENSION.fullmatch(name)
            and type(entry) is dict
            and entry.keys() == entry_keys
            and type(entry["path"]) is str
            and _PATH.fullmatch(entry["path"])
            and type(entry["reason"]) is str
        ):
            continue
        _string(name, "probe.paths key", pattern=_EXTENSION)
        entry = _object(entry, f"probe.paths.{name}", entry_keys)
        _string(entry["path"], f"probe.paths.{name}.path", pattern=_PATH)
        _string(entry["reason"], f"probe.paths.{name}.reason")
    quirks = probe["quirks"]
    if not isinstance(quirks, list):
        raise ReportError("probe.quirks: expected a list")
    for quirk in quirks:
        quirk = _object(quirk, "probe.quirks[]", frozenset(("id", "reason")))
        _string(quirk["id"], "probe.quirks[].id")
        _string(quirk["reason"], "probe.quirks[].reason")
        if not quirk["id"]:
            raise ReportError("probe.quirks[].id: empty")
    _object(probe["facts"], "probe.facts", frozenset())


def _check(check: Any, where: str) -> None:
    """One check, field by field: the reason the fast test in :func:`_checks` failed."""
    check = _object(check, where, _CHECK)
    _string(check["extension"], f"{where}.extension", pattern=_EXTENSION)
    _string(check["path"], f"{where}.path", pattern=_PATH)
    _string(check["reason"], f"{where}.reason")
    _string(check["id"], f"{where}.id")
    if check["verdict"] not in VERDICTS:
        raise ReportError(
            f"{where}.verdict: expected one of {', '.join(VERDICTS)}, got "
            f"{_shown(check['verdict'])}"
        )
    _number(check["max_error"], f"{where}.max_error")
    _number(check["seconds"], f"{where}.seconds")
    raise ReportError(f"{where}.id {_shown(check['id'])}: expected extension/path/case")


def _finite(value: Any) -> bool:
    """None, or a number (not a bool) that is finite and >= 0."""
    kind = type(value)
    return value is None or ((kind is float or kind is int) and 0 <= value < math.inf)


#: (id, extension, path) triples already seen to agree: a fleet's reports share a few
#: hundred. Bounded: cleared when full.
_KNOWN_IDS: set[tuple[str, str, str]] = set()
_KNOWN_IDS_MAX = 100_000


def _id_agrees(check_id: Any, extension: Any, path: Any) -> bool:
    """Whether a check's id is ``<extension>/<path>/<case>`` of its own extension and
    path, each of the schema's form."""
    if type(check_id) is not str or type(extension) is not str or type(path) is not str:
        return False
    triple = (check_id, extension, path)
    if triple in _KNOWN_IDS:
        return True
    match = _CHECK_ID.fullmatch(check_id)
    if not (match and match.group(1) == extension and match.group(2) == path):
        return False
    if len(_KNOWN_IDS) >= _KNOWN_IDS_MAX:
        _KNOWN_IDS.clear()
    _KNOWN_IDS.add(triple)
    return True


_ID, _EXT, _PATH_OF, _VERDICT, _REASON, _ERROR, _SECONDS = (
    operator.itemgetter(k)
    for k in ("id", "extension", "path", "verdict", "reason", "max_error", "seconds")
)
_NUMBER_TYPES = frozenset((float, int, type(None)))


def _numbers_fine(values: list[Any]) -> bool:
    """Whether every one of ``values`` is None or a finite number >= 0 (a JSON number:
    no NaN, which the parser refuses; a huge one reads as infinity)."""
    if not set(map(type, values)) <= _NUMBER_TYPES:
        return False
    numbers = [v for v in values if v is not None]
    return not numbers or (min(numbers) >= 0 and max(numbers) < math.inf)


def _all_fine(checks: list[Any]) -> bool:
    """The fast test of a report's checks, each test over all of them at once."""
    if set(map(type, checks)) - {dict} or set(map(len, checks)) - {len(_CHECK)}:
        return False
    if set().union(*checks) - _CHECK:  # 7 keys each, none but these: exactly these
        return False
    ids, extensions, paths = (list(map(get, checks)) for get in (_ID, _EXT, _PATH_OF))
    if set(map(type, ids + extensions + paths)) - {str}:
        return False
    triples = set(zip(ids, extensions, paths, strict=True))
    return (
        len(set(ids)) == len(ids)
        and all(_id_agrees(*t) for t in triples - _KNOWN_IDS)
        and set(map(_VERDICT, checks)) <= _VERDICT_SET
        and not set(map(type, map(_REASON, checks))) - {str}
        and _numbers_fine(list(map(_ERROR, checks)))
        and _numbers_fine(list(map(_SECONDS, checks)))
    )


def _checks(report: dict[str, Any]) -> None:
    checks = report["checks"]
    if not isinstance(checks, list):
        raise ReportError(f"checks: expected a list, got {type(checks).__name__}")
    if checks and _all_fine(checks):
        return
    seen: set[str] = set()  # the slow way, check by check: the first fault's reason
    for number, check in enumerate(checks):
        if not (
            type(check) is dict
            and check.keys() == _CHECK
            and _id_agrees(check["id"], check["extension"], check["path"])
            and check["verdict"] in VERDICTS
            and type(check["reason"]) is str
            and _finite(check["max_error"])
            and _finite(check["seconds"])
        ):
            _check(check, f"checks[{number}]")
        if check["id"] in seen:
            raise ReportError(f"checks[{number}].id {_shown(check['id'])} appears twice")
        seen.add(check["id"])


def check_report(report: Any) -> dict[str, Any]:
    """``report`` when it has the shape of a version-1 fleet report; else
    :class:`ReportError` naming the first thing wrong."""
    checked = _head(report)
    _identity(checked)
    _environment_and_probe(checked)
    _checks(checked)
    return checked
