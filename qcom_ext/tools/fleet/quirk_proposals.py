"""Quirk entries proposed from the fleet: a path that fails on every report of a compiler
range and passes outside it, printed in :mod:`qcom_ext.device.quirks`' form.

The rule, over each identity's newest report (``aggregate.sql``'s ``outcomes``): for an
extension's path and one compiler family, first over every Adreno model together, then
(where that gives nothing) model by model, a report *fails* where one of its checks of
that path failed or crashed and *passes* where one passed and none failed. Sorted by
compiler version, the versions must read passing* failing+ passing*: every report of
each failing version fails, every report of every other version passes, with at least
:data:`MIN_FAILING` failing and :data:`MIN_PASSING` passing reports. The range runs
from the oldest failing version to below the oldest passing version above it (open
where none did: no fixed version is known): ``CompilerRange``'s form. Nothing is said
of versions older than the oldest failing one that no report ran.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from qcom_ext.device.compiler_version import CompilerVersion
from qcom_ext.device.quirks import CompilerRange

__all__ = ["MIN_FAILING", "MIN_PASSING", "Proposal", "propose"]

MIN_FAILING = 2
MIN_PASSING = 2
#: How many failing reports an entry's comment lists by name (the JSON lists them all).
SHOWN_SOURCES = 10


@dataclass(frozen=True)
class Proposal:
    """A proposed quirk: where a path fails, and the reports that say so."""

    extension: str
    path: str
    models: frozenset[str]
    compilers: CompilerRange
    failing: tuple[str, ...]  # "source identity_key" of each failing report
    passing: int

    @property
    def id(self) -> str:
        scope = "-".join(sorted(self.models)) or "adreno"
        name = self.extension.removeprefix("cl_qcom_").replace("_", "-")
        path = "".join(ch if ch.isalnum() else "-" for ch in self.path)
        return f"fleet-{self.compilers.family.lower()}-{scope.lower()}-{name}-{path}"

    def entry(self) -> str:
        """The entry for ``QUIRKS`` in ``qcom_ext/device/quirks.py``, its reports as
        comments above it."""
        summary = (
            f"{self.extension} on path {self.path} fails its selftest on every fleet "
            f"report with {self.compilers} ({len(self.failing)} reports) and passes on "
            f"the {self.passing} reports outside that range"
        )
        source = f"qcom-ext compat: {len(self.failing)} failing fleet reports (listed above)"
        # Every string from a report is a JSON string literal (valid Python, one line).
        lines = [f"# {_q(r)}" for r in self.failing[:SHOWN_SOURCES]]
        if len(self.failing) > SHOWN_SOURCES:
            lines.append(f"# ... and {len(self.failing) - SHOWN_SOURCES} more (--format json)")
        lines += ["Quirk(", f"    {_q(self.id)},", f"    {_q(summary)},", f"    {_q(source)},"]
        if self.models:
            models = ", ".join(_q(m) for m in sorted(self.models))
            lines.append(f"    models=frozenset({{{models}}}),")
        lines.append(f"    compilers=({_range_text(self.compilers)},),")
        if self.path == "native":
            reason = f"fails its selftest with {self.compilers} (fleet reports)"
            lines.append(f"    downgrades=(({_q(self.extension)}, {_q(reason)}),),")
        lines.append("),")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "extension": self.extension,
            "path": self.path,
            "models": sorted(self.models),
            "compilers": {
                "family": self.compilers.family,
                "at_least": _numbers(self.compilers.at_least),
                "below": _numbers(self.compilers.below),
            },
            "failing": list(self.failing),
            "passing": self.passing,
            "entry": self.entry(),
        }


def _q(text: str) -> str:
    """``text`` as a double-quoted string literal on one line (JSON's form, valid Python)."""
    return json.dumps(text)


def _numbers(numbers: tuple[int, ...] | None) -> list[int] | None:
    return None if numbers is None else list(numbers)


def _range_text(r: CompilerRange) -> str:
    args = [_q(r.family)]
    if r.at_least is not None:
        args.append(f"at_least={r.at_least!r}")
    if r.below is not None:
        args.append(f"below={r.below!r}")
    return f"CompilerRange({', '.join(args)})"


# One group's versions: version -> (failing reports, passing count).
_Versions = dict[CompilerVersion, tuple[list[str], int]]


def _range(versions: _Versions) -> tuple[CompilerRange, list[str], int] | None:
    """The failing range of one group's versions, its failing reports and the passing
    count, where the versions follow the rule; else None."""
    ordered = sorted(versions.items(), key=lambda item: item[0])
    marks = "".join(
        "F" if failing and not passing else "P" if passing and not failing else "M"
        for _, (failing, passing) in ordered
    )
    first, last = marks.find("F"), marks.rfind("F")
    if "M" in marks or first < 0 or "P" in marks[first:last]:
        return None
    failing = [r for _, (reports, _) in ordered[first : last + 1] for r in reports]
    passing = sum(p for _, (_, p) in ordered)
    if len(failing) < MIN_FAILING or passing < MIN_PASSING:
        return None
    low = ordered[first][0].numbers
    high = ordered[last + 1][0].numbers if last + 1 < len(ordered) else None
    return CompilerRange(ordered[first][0].family, at_least=low, below=high), failing, passing


def _add(versions: _Versions, version: CompilerVersion, row: dict[str, Any]) -> None:
    failing, passing = versions.get(version, ([], 0))
    versions[version] = ([*failing, *(row["failing"] or ())], passing + row["passing"])


def propose(outcomes: list[dict[str, Any]]) -> list[Proposal]:
    """The quirk proposals of ``aggregate.sql``'s ``outcomes`` rows."""
    every: dict[tuple[str, str, str], _Versions] = defaultdict(dict)
    by_model: dict[tuple[str, str, str, str], _Versions] = defaultdict(dict)
    for row in outcomes:
        version = CompilerVersion.parse(row["compiler_version"])
        if version is None or row["adreno_model"] is None:
            continue
        ext, path = row["extension"], row["path"]
        _add(every[(ext, path, version.family)], version, row)
        _add(by_model[(ext, path, version.family, row["adreno_model"])], version, row)
    proposals = []
    for (ext, path, family), versions in sorted(every.items()):
        found = _range(versions)
        if found:
            proposals.append(Proposal(ext, path, frozenset(), *_as_tuple(found)))
            continue
        for (e, p, f, model), per_model in sorted(by_model.items()):
            if (e, p, f) == (ext, path, family) and (found := _range(per_model)):
                proposals.append(Proposal(ext, path, frozenset({model}), *_as_tuple(found)))
    return proposals


def _as_tuple(
    found: tuple[CompilerRange, list[str], int],
) -> tuple[CompilerRange, tuple[str, ...], int]:
    compilers, failing, passing = found
    return compilers, tuple(failing), passing
