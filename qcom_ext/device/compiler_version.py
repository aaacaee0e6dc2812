"""The Adreno OpenCL compiler version as an ordered value.

Qualcomm's driver names its compiler inside ``CL_DRIVER_VERSION`` (or the platform
version) in one of three forms seen in the field:

* ``E031.MM.mm.pp``: Android and Linux drivers up to 2024 (``Compiler E031.38.11.12``,
  after ``commit #``/``changeid #``/``Date:`` fields, or bare);
* ``E17.MM.mm.pp``: newer Android drivers (Adreno 8xx, e.g. ``E17.51``);
* ``DX.MM.mm.pp``: Windows on Snapdragon (``Compiler DX.18.05.00``, or ``VDX.17.75.00``
  with no word "Compiler").

Versions compare within one family (``E031.41 < E031.45.02.06``); comparing two
families raises ``TypeError``, since nothing public orders one against the other.

>>> v = CompilerVersion.parse("OpenCL 3.0 QUALCOMM build: 0838.2 Compiler E031.45.02.06")
>>> v, v.family, v.numbers
(CompilerVersion('E031.45.02.06'), 'E031', (45, 2, 6))
>>> v >= CompilerVersion.of("E031", 45)
True
>>> CompilerVersion.parse("... VDX.17.75.00").family
'DX'
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

__all__ = ["FAMILIES", "CompilerVersion"]

#: The compiler families, oldest first as far as the public record goes.
FAMILIES = ("E031", "E17", "DX")

# One family token, then dot-separated numbers. The family must not continue a longer
# word or number on the left (``XE031`` is not a compiler) except for the ``V`` of
# Windows' ``VDX``. Linear time on any text: no two adjacent parts overlap.
_VERSION = re.compile(r"(?<![A-UW-Za-z0-9])V?(E031|E17|DX)\.(\d{1,4}(?:\.\d{1,4}){0,3})(?!\d)")
_AFTER_COMPILER = re.compile(r"Compiler\s+V?(E031|E17|DX)\.(\d{1,4}(?:\.\d{1,4}){0,3})(?!\d)")


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class CompilerVersion:
    """An Adreno compiler version: ``family`` (``"E031"``, ``"E17"``, ``"DX"``) and
    ``numbers`` (``(45, 2, 6)``). Missing trailing numbers count as 0 when comparing and
    hashing, however many numbers there are: ``E031.45 == E031.45.00.00.00``. ``text``
    keeps the form the driver printed."""

    family: str
    numbers: tuple[int, ...]
    text: str = field(default="")

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"compiler family {self.family!r}: expected one of {FAMILIES}")
        if not self.numbers or any(not isinstance(n, int) or n < 0 for n in self.numbers):
            raise ValueError(f"compiler version numbers {self.numbers!r}: expected ints >= 0")
        if not self.text:
            parts = [f"{self.numbers[0]}", *(f"{n:02d}" for n in self.numbers[1:])]
            object.__setattr__(self, "text", ".".join([self.family, *parts]))

    @classmethod
    def of(cls, family: str, *numbers: int) -> CompilerVersion:
        """``CompilerVersion.of("E031", 38, 11)``: a version to compare against."""
        return cls(family, tuple(numbers))

    @classmethod
    def parse(cls, *texts: str | None) -> CompilerVersion | None:
        """The compiler named in the first of ``texts`` that names one, else None.

        A version after the word ``Compiler`` wins over a bare one in the same text.

        >>> CompilerVersion.parse("", "OpenCL 2.0 QUALCOMM build: Compiler E031.37.12.01")
        CompilerVersion('E031.37.12.01')
        >>> CompilerVersion.parse("OpenCL 3.0 pocl") is None
        True
        """
        for text in texts:
            if not text:
                continue
            match = _AFTER_COMPILER.search(text) or _VERSION.search(text)
            if match:
                numbers = tuple(int(n) for n in match.group(2).split("."))
                return cls(match.group(1), numbers, f"{match.group(1)}.{match.group(2)}")
        return None

    def _key(self) -> tuple[int, ...]:
        """The numbers without trailing zeros: equal for ``45`` and ``45.0.0.0.0``, and
        ordered as zero-padded tuples of any length are."""
        numbers = list(self.numbers)
        while numbers and numbers[-1] == 0:
            numbers.pop()
        return tuple(numbers)

    def _same_family(self, other: object) -> CompilerVersion:
        if not isinstance(other, CompilerVersion):
            return NotImplemented
        if other.family != self.family:
            raise TypeError(
                f"cannot order compiler {self.text} against {other.text}: "
                "versions compare only within one family"
            )
        return other

    def sort_key(self) -> tuple[int, ...]:
        """A key that orders versions as they compare within a family: the family's
        place in :data:`FAMILIES`, then the numbers without trailing zeros (the family's
        place orders families only for a stable listing: nothing public orders them).

        >>> CompilerVersion.parse("Compiler E031.42.02.00").sort_key()
        (0, 42, 2)
        """
        return (FAMILIES.index(self.family), *self._key())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompilerVersion):
            return NotImplemented
        return self.family == other.family and self._key() == other._key()

    def __lt__(self, other: object) -> bool:
        checked = self._same_family(other)
        if checked is NotImplemented:
            return NotImplemented
        return self._key() < checked._key()

    def __hash__(self) -> int:
        return hash((self.family, self._key()))

    def __repr__(self) -> str:
        return f"CompilerVersion({self.text!r})"

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, object]:
        """JSON form: ``{"text": "E031.45.02.06", "family": "E031", "numbers": [45, 2, 6]}``."""
        return {"text": self.text, "family": self.family, "numbers": list(self.numbers)}
