"""Known driver and compiler quirks, each with its public source: :data:`QUIRKS`.

A quirk is keyed by the OpenCL implementation it belongs to (Qualcomm's own driver, any
driver on Adreno hardware, Oclgrind), optionally by Adreno model and by compiler version
ranges (one family per range: ``E031``, ``E17`` or ``DX``, see
:class:`~qcom_ext.device.compiler_version.CompilerVersion`). Its effect is ``-D`` flags
for every kernel qcom_ext builds (``DeviceCaps._quirks``, the one place quirk flags are
made), path downgrades (extension -> reason, through ``DeviceCaps.broken``, so the path
rule stays the one place paths are decided), or nothing: a quirk of another project's
kernels is reported, so that users who build their own kernels know of it.
``DeviceCaps.quirks`` holds the ones that apply to a device (docs/QUIRKS.md lists all).

>>> from qcom_ext.device.caps import DeviceCaps
>>> caps = DeviceCaps.from_info(extensions="", device_version="OpenCL 3.0 Adreno(TM) 660",
...     driver_version="OpenCL 3.0 QUALCOMM build: commit #1 Compiler E031.37.12.01",
...     platform_name="QUALCOMM Snapdragon(TM)", vendor_id=0x5143, disabled=())
>>> [q.id for q in caps.quirks][:2]
['adreno-mad24', 'e031-sub-group-reduce-sigsegv']
>>> "-DQCOM_EXT_QUIRK_NO_SUB_GROUP_REDUCE" in caps.compiler_options()
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from qcom_ext.device.compiler_version import FAMILIES, CompilerVersion

__all__ = [
    "ADRENO",
    "OCLGRIND",
    "QUALCOMM",
    "QUIRKS",
    "CompilerRange",
    "Quirk",
    "applying",
    "downgraded",
]

#: Qualcomm's proprietary OpenCL driver (Android, Linux, Windows on Snapdragon).
QUALCOMM = "qualcomm"
#: Any OpenCL driver on Adreno hardware (Qualcomm's, or Mesa rusticl on freedreno).
ADRENO = "adreno"
#: The Oclgrind simulator.
OCLGRIND = "oclgrind"
_DRIVERS = (QUALCOMM, ADRENO, OCLGRIND)

_FLAG = re.compile(r"-D[A-Za-z_][A-Za-z0-9_]*(=\S+)?")


@dataclass(frozen=True)
class CompilerRange:
    """Versions of one compiler family: from ``at_least`` (inclusive) to ``below``
    (exclusive); an open end where None.

    >>> r = CompilerRange("E031", below=(38, 11))
    >>> [r.contains(CompilerVersion.parse(f"Compiler {v}")) for v in
    ...  ("E031.38.10.99", "E031.38.11.00", "E17.30.00.00")]
    [True, False, False]
    """

    family: str
    at_least: tuple[int, ...] | None = None
    below: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"compiler family {self.family!r}: expected one of {FAMILIES}")

    def _bound(self, numbers: tuple[int, ...] | None) -> CompilerVersion | None:
        return None if numbers is None else CompilerVersion(self.family, numbers)

    def contains(self, version: CompilerVersion | None) -> bool:
        """Whether ``version`` is of this family and within the range."""
        if version is None or version.family != self.family:
            return False
        low, high = self._bound(self.at_least), self._bound(self.below)
        return (low is None or version >= low) and (high is None or version < high)

    def __str__(self) -> str:
        low, high = self._bound(self.at_least), self._bound(self.below)
        if low and high:
            return f"{low} <= compiler < {high}"
        if high:
            return f"below {high}"
        return f"from {low}" if low else f"every {self.family}"


@dataclass(frozen=True)
class Quirk:
    """One known driver or compiler quirk: what goes wrong, where it is reported, where
    it applies and what qcom_ext does about it."""

    id: str
    #: What goes wrong, as the public record says it.
    summary: str
    #: The public report (an issue or pull-request URL).
    source: str
    #: Which implementation it belongs to: QUALCOMM, ADRENO or OCLGRIND.
    driver: str = QUALCOMM
    #: The Adreno models it applies to (CL strings' form: ``"740"``); empty: every model.
    models: frozenset[str] = frozenset()
    #: The compiler versions it applies to; empty: every version, even an unknown one.
    compilers: tuple[CompilerRange, ...] = ()
    #: ``-D`` flags every kernel build gets where it applies.
    flags: tuple[str, ...] = ()
    #: (extension, reason) pairs: advertised extensions not to be used where it applies.
    downgrades: tuple[tuple[str, str], ...] = ()
    #: Related threads (the fix, other reports).
    see_also: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.driver not in _DRIVERS:
            raise ValueError(f"quirk {self.id}: driver {self.driver!r}, expected {_DRIVERS}")
        bad = [f for f in self.flags if not _FLAG.fullmatch(f)]
        if bad:
            raise ValueError(f"quirk {self.id}: flags {bad} are not -DNAME or -DNAME=value")

    def applies(
        self, driver: str | None, model: str | None, compiler: CompilerVersion | None
    ) -> bool:
        """Whether it applies to a device of implementation ``driver`` (QUALCOMM,
        ADRENO for other drivers on Adreno hardware, OCLGRIND, or None), Adreno
        ``model`` and ``compiler`` version. A QUALCOMM quirk never applies elsewhere; a
        quirk naming models or compilers never applies where those are unknown."""
        wanted = (QUALCOMM, ADRENO) if self.driver == ADRENO else (self.driver,)
        if driver not in wanted or (self.models and model not in self.models):
            return False
        return not self.compilers or any(r.contains(compiler) for r in self.compilers)

    @property
    def effect(self) -> str:
        """What qcom_ext does about it, in words: its flags, its downgrades, or
        ``report only``."""
        parts = [*self.flags, *(f"{ext} not used" for ext, _ in self.downgrades)]
        return ", ".join(parts) if parts else "report only"

    @property
    def where(self) -> str:
        """Where it applies, in words."""
        parts = {
            QUALCOMM: ["Qualcomm's driver"],
            ADRENO: ["Adreno, any driver"],
            OCLGRIND: ["Oclgrind"],
        }
        words = parts[self.driver]
        if self.models:
            words.append("Adreno " + "/".join(sorted(self.models)))
        if self.compilers:
            words.append(" or ".join(str(r) for r in self.compilers))
        return ", ".join(words)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``qcom-ext probe --json``'s ``quirks``)."""
        return {
            "id": self.id,
            "summary": self.summary,
            "source": self.source,
            "flags": list(self.flags),
            "downgrades": [list(pair) for pair in self.downgrades],
        }


_LLAMA = "https://github.com/ggml-org/llama.cpp"

#: Every known quirk, the ones whose effect is a flag first (their flags keep this order).
QUIRKS: tuple[Quirk, ...] = (
    Quirk(
        "adreno-mad24",
        "Not a defect: 24-bit integer multiply (mad24/mul24) is fast index arithmetic on "
        "Adreno and emulated, slower, elsewhere, so qcom_ext's convolution kernels use it "
        "on Adreno only (mobile kernel libraries such as MACE use it throughout)",
        "http://man.opencl.org/mad24.html",
        driver=ADRENO,
        flags=("-DUSE_MAD24",),
        see_also=(
            "https://github.com/XiaoMi/mace/blob/10ba3061443736df1509bc07ef789826e65bc716/"
            "mace/ops/opencl/cl/conv_2d_1x1_buffer.cl",
        ),
    ),
    Quirk(
        "oclgrind-bitreverse",
        "Oclgrind 21.10 cannot run the llvm.bitreverse intrinsic that clang makes of the "
        "portable mask-and-shift bit reverse ('Undefined external function', seen in this "
        "project); the compat header then uses a loop clang leaves alone",
        "https://github.com/google/clspv/issues/1074",
        driver=OCLGRIND,
        flags=("-DQCOM_EXT_QUIRK_OCLGRIND",),
    ),
    Quirk(
        "e031-sub-group-reduce-sigsegv",
        "The compiler crashes (SIGSEGV inside clBuildProgram, in QGPUPeepholeOptimizer::"
        "lowerPseudoSubgroupArithOpWithAdvSubgroupFeature) on kernels that call "
        "sub_group_reduce_* or sub_group_scan_*; reported on an Adreno 660 (Snapdragon "
        "888). qcom_ext's kernels call neither: the flag is for yours",
        f"{_LLAMA}/pull/22006",
        compilers=(CompilerRange("E031", below=(38, 11)),),
        flags=("-DQCOM_EXT_QUIRK_NO_SUB_GROUP_REDUCE",),
    ),
    Quirk(
        "e031-q6k-flat-mul-mat-wrong",
        "Wrong values from llama.cpp's flat q6_K mul_mat kernel (10 shapes of the m=16, "
        "k=256 family): reproduced with E031.38 (Adreno 642L) and E031.41 (Adreno 740), "
        "fixed by E031.45; llama.cpp builds it with -DADRENO_OLD_COMPILER=1 below E031.45",
        f"{_LLAMA}/pull/26476",
        compilers=(CompilerRange("E031", below=(45,)),),
        see_also=(f"{_LLAMA}/issues/25477",),
    ),
    Quirk(
        "e031-38-gqa-r4-attention-wrong",
        "Wrong attention values (repetitive model output) from llama.cpp's non-flash-"
        "attention grouped-query KQ kernel kernel_mul_mat_f16_f32_l4_x8_gqa_r4_img; seen "
        "on Adreno 730 with E031.38.11.14. llama.rn's fix turns that kernel off on A7x "
        "(730/740/750) with the E031.38 series",
        "https://github.com/mybigday/llama.rn/issues/386",
        models=frozenset({"730", "740", "750"}),
        compilers=(CompilerRange("E031", at_least=(38,), below=(39,)),),
        see_also=("https://github.com/mybigday/llama.rn/pull/387", f"{_LLAMA}/issues/29081"),
    ),
    Quirk(
        "e031-41-fa-mixed-type-build-crash",
        "The compiler crashes building llama.cpp's flash-attention kernels with mixed or "
        "quantized K/V types (f32_f16, q8_0, q4_0); seen on Adreno 740 with E031.41, while "
        "E031.45 (Adreno 750) builds them. E031.45 is the maintainers' rough upper edge",
        f"{_LLAMA}/pull/25697",
        compilers=(CompilerRange("E031", at_least=(41,), below=(45,)),),
        see_also=(f"{_LLAMA}/issues/25870",),
    ),
    Quirk(
        "a7x-moe-repack-miscompile",
        "llama.cpp's MoE weight-repack kernels, which alias a private ushort8 through a "
        "uchar*, are miscompiled (corrupted weights, garbage output): seen on Adreno 740 "
        "with E031.41 and Adreno 750 with E031.45; no fixed E031 version is known",
        f"{_LLAMA}/pull/25698",
        models=frozenset({"740", "750"}),
        compilers=(CompilerRange("E031"),),
    ),
    Quirk(
        "e17-fa-moe-build-crash",
        "llama.cpp turns its flash-attention and MoE weight-repack kernels off on the E17 "
        "compilers (Adreno 850): the compiler segfaults building the flash-attention "
        "kernels (to be revisited 'when its compiler is more mature')",
        f"{_LLAMA}/pull/25745",
        compilers=(CompilerRange("E17"),),
    ),
    Quirk(
        "no-vector-sub-group-broadcast",
        "Only newer compilers do sub_group_broadcast on vector types; llama.cpp uses it "
        "from E031.47 and DX.17 on (its gate also leaves every E17 out)",
        f"{_LLAMA}/pull/15029",
        compilers=(CompilerRange("E031", below=(47,)), CompilerRange("DX", below=(17,))),
    ),
)


def _compiler_of(caps: Any) -> CompilerVersion | None:
    """The device's compiler version (``DeviceCaps.compiler_version``: read under
    Qualcomm's driver only): the one place quirks read it."""
    return caps.compiler_version


def _driver_of(caps: Any) -> str | None:
    """QUALCOMM for Qualcomm's own driver, ADRENO for another driver on Adreno hardware
    (rusticl reports Mesa versions, no compiler), OCLGRIND, or None: the one place
    quirks tell implementations apart, from ``DeviceCaps.driver``."""
    if caps.driver == "oclgrind":
        return OCLGRIND
    if caps.qualcomm_driver:
        return QUALCOMM
    return ADRENO if caps.is_adreno else None


def applying(caps: Any, table: Iterable[Quirk] | None = None) -> tuple[Quirk, ...]:
    """The quirks of ``table`` (:data:`QUIRKS` by default) that apply to the device
    ``caps`` describes."""
    driver, compiler = _driver_of(caps), _compiler_of(caps)
    model = caps.adreno_model
    return tuple(
        q for q in (QUIRKS if table is None else table) if q.applies(driver, model, compiler)
    )


def downgraded(
    broken: Iterable[tuple[str, str]], quirks: Iterable[Quirk]
) -> tuple[tuple[str, str], ...]:
    """``broken`` plus the downgrades of ``quirks`` (an extension already there keeps
    its first reason); each reason names the quirk and its source.

    >>> q = Quirk("x", "it hangs", "https://example.org/1",
    ...           downgrades=(("cl_qcom_recordable_queues", "replays hang"),))
    >>> downgraded((), [q])
    (('cl_qcom_recordable_queues', 'replays hang (quirk x: https://example.org/1)'),)
    """
    merged = dict(broken)
    for quirk in quirks:
        for ext, reason in quirk.downgrades:
            merged.setdefault(ext, f"{reason} (quirk {quirk.id}: {quirk.source})")
    return tuple(merged.items())
